//! Polygon prisms: a planar simple polygon (convex or not) swept along a possibly oblique axis.
//!
//! The base lies in the polygon's best-fit plane (vertex centroid, Newell normal, as validation
//! fits it), with the vertices projected onto it; validation allows them 1 mm off that plane.
//! In the plane's 2D coordinates the ring is counter-clockwise about the normal, and the normal
//! points to the side the axis sweeps to.

use crate::aabb::Aabb;
use crate::limits::{AABB_PAD_M, BOUNDARY_TOLERANCE_M as EPS};
use crate::polygon::Plane;
use crate::region::primitives::{crosses, inv_len2, parallelogram_distance2, segment_distance2_2d};
use crate::simple::{Point2, signed_area};
use crate::vector::{Vec3, add, cross, dot, normalize, scale, sub};

/// A prism over a polygon, prepared for distance queries.
#[derive(Clone, Debug)]
pub(crate) struct Prism {
    /// A point of the base plane (the vertex centroid).
    origin: Vec3,
    /// Unit normal of the base plane, with `axis·normal > 0`.
    normal: Vec3,
    /// In-plane unit axes; `(u, w, normal)` is right-handed.
    u: Vec3,
    w: Vec3,
    /// `height · axis`: the sweep from the base to the top.
    sweep: Vec3,
    /// Height of the top plane above the base plane, measured along the normal.
    thickness: f64,
    /// The sweep in 2D plane coordinates: the top polygon is the base ring moved by this.
    sweep_2d: Point2,
    /// Unit axes of the plane perpendicular to the axis; `(g1, g2, axis)` is right-handed.
    g1: Vec3,
    g2: Vec3,
    /// Whether the axis is the plane normal: the prism is then the product of the polygon and a
    /// segment, and its distance the hypotenuse of the in-plane and the axial distances.
    right: bool,
    /// One record per vertex, in ring order (counter-clockwise about the normal), for the edge
    /// from that vertex to the next; one allocation keeps a prism's data together in memory.
    edges: Vec<Edge>,
}

/// A vertex and the edge to the next one, in the base plane and projected along the axis onto the
/// plane perpendicular to it. Every side face projects onto its projected edge, so the 2D distance
/// to that edge is a lower bound on the distance to the face.
#[derive(Clone, Copy, Debug)]
struct Edge {
    /// The vertex in base-plane coordinates.
    at: Point2,
    /// `1 / |edge|²` in the base plane.
    inv_len2: f64,
    /// The vertex in `(g1, g2)` coordinates.
    projected: Point2,
    /// `1 / |projected edge|²`.
    projected_inv_len2: f64,
}

impl Prism {
    pub(crate) fn new(vertices: &[Vec3], height: f64, axis: Vec3) -> Self {
        let fallback = || Plane {
            origin: vertices.first().copied().unwrap_or([0.0; 3]),
            normal: [0.0, 0.0, 1.0],
            u: [1.0, 0.0, 0.0],
            w: [0.0, 1.0, 0.0],
        };
        // Validated polygons always fit a plane; anything else gets a fallback, not a panic.
        let fitted = if vertices.len() >= 3 { Plane::fit(vertices).ok() } else { None };
        let mut plane = fitted.unwrap_or_else(fallback);
        if dot(axis, plane.normal) < 0.0 {
            // Flip the normal and swap the in-plane axes so the frame stays right-handed.
            plane = Plane { origin: plane.origin, normal: scale(plane.normal, -1.0), u: plane.w, w: plane.u };
        }
        let mut ring: Vec<Point2> = vertices.iter().map(|v| plane.project(*v)).collect();
        if signed_area(&ring) < 0.0 {
            ring.reverse();
        }
        let lift = dot(axis, plane.normal);
        let g1 = least_aligned_perpendicular(axis);
        let g2 = cross(axis, g1);
        let n = ring.len();
        let projected: Vec<Point2> = ring
            .iter()
            .map(|q| {
                let v = add(scale(plane.u, q[0]), scale(plane.w, q[1]));
                [dot(v, g1), dot(v, g2)]
            })
            .collect();
        let edges = (0..n)
            .map(|k| Edge {
                at: ring[k],
                inv_len2: inv_len2(ring[k], ring[(k + 1) % n]),
                projected: projected[k],
                projected_inv_len2: inv_len2(projected[k], projected[(k + 1) % n]),
            })
            .collect();
        let axis_2d = [dot(axis, plane.u), dot(axis, plane.w)];
        Self {
            origin: plane.origin,
            normal: plane.normal,
            u: plane.u,
            w: plane.w,
            sweep: scale(axis, height),
            thickness: height * lift,
            sweep_2d: axis_2d.map(|c| c * height),
            g1,
            g2,
            right: (1.0 - lift).abs() <= 1e-12,
            edges,
        }
    }

    /// A point of the base plane, from its plane coordinates.
    fn corner(&self, q: Point2) -> Vec3 {
        add(self.origin, add(scale(self.u, q[0]), scale(self.w, q[1])))
    }

    /// Distance from `p`; 0 inside.
    ///
    /// Containment: `p` is inside when it lies between the cap planes and its projection along
    /// the axis falls in the polygon (tested on the projection onto the plane perpendicular to the
    /// axis, which keeps inside and outside).
    ///
    /// Outside, the distance is the least distance to the faces. Each face has a cheap lower
    /// bound — for a cap, the distance beyond the cap plane; for a side face, also the 2D distance
    /// from `p`'s perpendicular projection to the face's projected edge — so faces are measured
    /// smallest bound first and skipped once their bound reaches the best distance so far. A cap
    /// is measured only when `p` is beyond its plane (the closest point of a face whose plane `p`
    /// is not beyond is never the closest point of the solid), and settles the answer at once
    /// when `p`'s foot on the cap plane lies in the cap.
    ///
    /// Beyond the cap planes' slab by more than `limit`, that excess (a lower bound) is returned
    /// before any edge is read; farther than `limit` from every face's bound, the least bound.
    pub(crate) fn distance(&self, p: Vec3, limit: f64) -> f64 {
        let d = sub(p, self.origin);
        let above_base = dot(d, self.normal);
        let above_top = above_base - self.thickness;
        // Distance beyond the slab between the cap planes (negative inside it).
        let excess = (-above_base).max(above_top);
        if excess > limit {
            return excess;
        }
        let flat = [dot(d, self.u), dot(d, self.w)];
        if self.right {
            if excess <= EPS && self.crossing(flat, |e| e.at) {
                return 0.0;
            }
            let axial = excess.max(0.0);
            return (axial * axial + self.ring_distance2(flat)).sqrt();
        }
        let across_axis = [dot(d, self.g1), dot(d, self.g2)];
        if excess <= EPS && self.crossing(across_axis, |e| e.projected) {
            return 0.0;
        }
        let mut best = f64::INFINITY;
        if excess > -EPS {
            let foot =
                if -above_base >= above_top { flat } else { [flat[0] - self.sweep_2d[0], flat[1] - self.sweep_2d[1]] };
            let across = self.ring_distance2(foot);
            if across == 0.0 {
                return excess.max(0.0);
            }
            best = excess * excess + across;
        }
        let floor = excess.max(0.0) * excess.max(0.0);
        let n = self.edges.len();
        let bound = |k: usize| {
            let (e, next) = (&self.edges[k], &self.edges[(k + 1) % n]);
            segment_distance2_2d(across_axis, e.projected, next.projected, e.projected_inv_len2).max(floor)
        };
        let side = |k: usize| {
            let (a, b) = (self.edges[k].at, self.edges[(k + 1) % n].at);
            let edge = add(scale(self.u, b[0] - a[0]), scale(self.w, b[1] - a[1]));
            parallelogram_distance2(p, self.corner(a), edge, self.sweep)
        };
        // Bounds of up to 16 faces are kept on the stack; larger polygons recompute them.
        let mut kept = [0.0; 16];
        let mut closest = (f64::INFINITY, 0);
        for k in 0..n {
            let b = bound(k);
            if let Some(slot) = kept.get_mut(k) {
                *slot = b;
            }
            if b < closest.0 {
                closest = (b, k);
            }
        }
        // Each side face lies at least its bound away, so when every bound and the cap measured
        // lie beyond the limit, the least of them is a lower bound above it: most candidates of
        // a position's box end here, before any face is measured.
        let least = closest.0.min(best);
        if least > limit * limit {
            return least.sqrt();
        }
        if closest.0 < best {
            best = best.min(side(closest.1));
        }
        for k in (0..n).filter(|k| *k != closest.1) {
            let b = kept.get(k).copied().unwrap_or_else(|| bound(k));
            if b < best {
                best = best.min(side(k));
            }
        }
        best.sqrt()
    }

    /// Whether `q` is inside the ring whose vertices `vertex` picks, by the crossing rule.
    #[inline]
    fn crossing(&self, q: Point2, vertex: impl Fn(&Edge) -> Point2) -> bool {
        let mut inside = false;
        let Some(last) = self.edges.last() else { return false };
        let mut prev = vertex(last);
        for e in &self.edges {
            let cur = vertex(e);
            inside ^= crosses(q, prev, cur);
            prev = cur;
        }
        inside
    }

    /// Squared 2D distance from `q` to the filled base ring: 0 inside.
    fn ring_distance2(&self, q: Point2) -> f64 {
        if self.crossing(q, |e| e.at) {
            return 0.0;
        }
        let n = self.edges.len();
        (0..n)
            .map(|k| {
                let (e, next) = (&self.edges[k], &self.edges[(k + 1) % n]);
                segment_distance2_2d(q, e.at, next.at, e.inv_len2)
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Prefetches the header and the edge records (see `Region::prefetch_heap`).
    pub(crate) fn prefetch(&self) {
        super::prefetch(&self.origin);
        super::prefetch(&self.g2);
        for e in &self.edges {
            super::prefetch(e);
        }
    }

    /// The box of the base and top corners, padded.
    pub(crate) fn aabb(&self) -> Aabb {
        let all = self.edges.iter().flat_map(|e| {
            let c = self.corner(e.at);
            [c, add(c, self.sweep)]
        });
        Aabb::enclosing(all).unwrap_or(Aabb { min: self.origin, max: self.origin }).expanded(AABB_PAD_M)
    }

    /// The area centroid of the base polygon moved half the sweep along the axis.
    pub(crate) fn centre(&self) -> Vec3 {
        let ring: Vec<Point2> = self.edges.iter().map(|e| e.at).collect();
        let n = ring.len();
        let (mut twice_area, mut cx, mut cy) = (0.0, 0.0, 0.0);
        // Relative to the first vertex, so large coordinates do not cancel.
        let base = ring.first().copied().unwrap_or([0.0, 0.0]);
        for k in 0..n {
            let a = [ring[k][0] - base[0], ring[k][1] - base[1]];
            let b = [ring[(k + 1) % n][0] - base[0], ring[(k + 1) % n][1] - base[1]];
            let cross = a[0] * b[1] - b[0] * a[1];
            twice_area += cross;
            cx += (a[0] + b[0]) * cross;
            cy += (a[1] + b[1]) * cross;
        }
        let c = if twice_area != 0.0 {
            [base[0] + cx / (3.0 * twice_area), base[1] + cy / (3.0 * twice_area)]
        } else {
            base
        };
        let on_base = add(self.origin, add(scale(self.u, c[0]), scale(self.w, c[1])));
        add(on_base, scale(self.sweep, 0.5))
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        size_of::<Self>() + self.edges.capacity() * size_of::<Edge>()
    }
}

/// A unit vector perpendicular to unit `v`, from the world axis `v` is least aligned with.
fn least_aligned_perpendicular(v: Vec3) -> Vec3 {
    let least = (0..3).min_by(|a, b| v[*a].abs().total_cmp(&v[*b].abs())).unwrap_or(0);
    let mut world = [0.0; 3];
    world[least] = 1.0;
    normalize(cross(v, world)).unwrap_or([1.0, 0.0, 0.0])
}
