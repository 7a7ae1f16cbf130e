//! Polygon prisms: a planar simple polygon (convex or not) swept along a possibly oblique axis.
//!
//! The base lies in the polygon's best-fit plane (vertex centroid, Newell normal, as validation
//! fits it), with the vertices projected onto it; validation allows them 1 mm off that plane.
//! In the plane's 2D coordinates the ring is counter-clockwise about the normal, and the normal
//! points to the side the axis sweeps to.

use crate::aabb::Aabb;
use crate::limits::{AABB_PAD_M, BOUNDARY_TOLERANCE_M as EPS};
use crate::polygon::Plane;
use crate::region::primitives::{crossing_inside, parallelogram_distance2, segment_distance2_2d};
use crate::simple::{Point2, signed_area};
use crate::vector::{Vec3, add, cross, dot, norm, scale, sub};

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
    /// `axis·normal`: how far along the normal one metre along the axis goes.
    lift: f64,
    /// The axis in 2D plane coordinates: how a point moves in the plane per metre along the axis.
    axis_2d: Point2,
    /// The sweep in 2D plane coordinates: the top polygon is the base ring moved by this.
    sweep_2d: Point2,
    /// `n` ring vertices (plane coordinates, counter-clockwise), then `n` side-face vectors: for
    /// edge `k`, the 2D vector `m` such that `(q − ringₖ)·m` is the signed distance to the plane of
    /// side face `k` of any 3D point whose axial projection onto the base plane is `q`. One
    /// allocation keeps a prism's data together in memory.
    data: Vec<Point2>,
}

impl Prism {
    pub(crate) fn new(vertices: &[Vec3], height: f64, axis: Vec3) -> Self {
        let fallback = || Plane {
            origin: vertices.first().copied().unwrap_or([0.0; 3]),
            normal: [0.0, 0.0, 1.0],
            u: [1.0, 0.0, 0.0],
            w: [0.0, 1.0, 0.0],
        };
        let mut plane = Plane::fit(vertices).unwrap_or_else(|_| fallback());
        if dot(axis, plane.normal) < 0.0 {
            // Flip the normal and swap the in-plane axes so the frame stays right-handed.
            plane = Plane { origin: plane.origin, normal: scale(plane.normal, -1.0), u: plane.w, w: plane.u };
        }
        let mut ring: Vec<Point2> = vertices.iter().map(|v| plane.project(*v)).collect();
        if signed_area(&ring) < 0.0 {
            ring.reverse();
        }
        let lift = dot(axis, plane.normal);
        let n = ring.len();
        let mut data = Vec::with_capacity(2 * n);
        data.extend_from_slice(&ring);
        for k in 0..n {
            let (a, b) = (ring[k], ring[(k + 1) % n]);
            let e = [b[0] - a[0], b[1] - a[1]];
            // The side face spans the 3D edge E and the axis; its outward unit normal is
            // (E × axis)/|E × axis|. For a point q + t·axis that is lift·(q − a)·(e_y, −e_x) over
            // |E × axis|: the in-plane right-hand normal of the counter-clockwise edge.
            let edge_3d = add(scale(plane.u, e[0]), scale(plane.w, e[1]));
            let area = norm(cross(edge_3d, axis));
            let k = if area > 0.0 { lift / area } else { 0.0 };
            data.push([e[1] * k, -e[0] * k]);
        }
        let axis_2d = [dot(axis, plane.u), dot(axis, plane.w)];
        Self {
            origin: plane.origin,
            normal: plane.normal,
            u: plane.u,
            w: plane.w,
            sweep: scale(axis, height),
            thickness: height * lift,
            lift,
            axis_2d,
            sweep_2d: axis_2d.map(|c| c * height),
            data,
        }
    }

    fn ring(&self) -> &[Point2] {
        &self.data[..self.data.len() / 2]
    }

    /// A point of the base plane, from its plane coordinates.
    fn corner(&self, q: Point2) -> Vec3 {
        add(self.origin, add(scale(self.u, q[0]), scale(self.w, q[1])))
    }

    /// Distance from `p`; 0 inside.
    ///
    /// Containment: `p` is moved along the axis onto the base plane (by its axial height `t`); it
    /// is inside when `0 ≤ t ≤ height` and the moved point is in the polygon. Outside, the closest
    /// boundary point lies on a face whose plane `p` is beyond (at a convex edge or vertex the
    /// outward normals of the faces meeting there span the directions to `p`; a reflex edge is
    /// never closest), so only those faces are measured: the base cap when `p` is below the base
    /// plane, the top cap when above the top, and the side quads `p` is outside of. A face whose
    /// plane is already farther than the best distance so far is skipped.
    pub(crate) fn distance(&self, p: Vec3) -> f64 {
        let d = sub(p, self.origin);
        let above_base = dot(d, self.normal);
        let flat = [dot(d, self.u), dot(d, self.w)];
        let t = above_base / self.lift;
        let moved = [flat[0] - t * self.axis_2d[0], flat[1] - t * self.axis_2d[1]];
        let ring = self.ring();
        let in_slab = above_base >= -EPS && above_base <= self.thickness + EPS;
        if in_slab && crossing_inside(moved, ring) {
            return 0.0;
        }
        let mut best = f64::INFINITY;
        if above_base < EPS {
            best = best.min(above_base * above_base + self.ring_distance2(flat));
        }
        let above_top = above_base - self.thickness;
        if above_top > -EPS {
            let on_top = [flat[0] - self.sweep_2d[0], flat[1] - self.sweep_2d[1]];
            best = best.min(above_top * above_top + self.ring_distance2(on_top));
        }
        let n = ring.len();
        let outward = &self.data[n..];
        for k in 0..n {
            let a = ring[k];
            let m = outward[k];
            let beyond = (moved[0] - a[0]) * m[0] + (moved[1] - a[1]) * m[1];
            if beyond > -EPS && beyond * beyond < best {
                let b = ring[(k + 1) % n];
                let corner = self.corner(a);
                let edge = add(scale(self.u, b[0] - a[0]), scale(self.w, b[1] - a[1]));
                best = best.min(parallelogram_distance2(p, corner, edge, self.sweep));
            }
        }
        best.sqrt()
    }

    /// Squared 2D distance from `q` to the filled base ring: 0 inside.
    fn ring_distance2(&self, q: Point2) -> f64 {
        let ring = self.ring();
        if crossing_inside(q, ring) {
            return 0.0;
        }
        let n = ring.len();
        (0..n)
            .map(|k| {
                let (a, b) = (ring[k], ring[(k + 1) % n]);
                segment_distance2_2d(q, a, [b[0] - a[0], b[1] - a[1]])
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// The box of the base and top corners, padded.
    pub(crate) fn aabb(&self) -> Aabb {
        let all = self.ring().iter().flat_map(|q| {
            let c = self.corner(*q);
            [c, add(c, self.sweep)]
        });
        Aabb::enclosing(all).unwrap_or(Aabb { min: self.origin, max: self.origin }).expanded(AABB_PAD_M)
    }

    /// The area centroid of the base polygon moved half the sweep along the axis.
    pub(crate) fn centre(&self) -> Vec3 {
        let ring = self.ring();
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
        size_of::<Self>() + self.data.capacity() * size_of::<Point2>()
    }
}
