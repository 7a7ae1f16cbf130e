//! The slab shapes: cuboid (three slabs, a parallelepiped when the axes are not orthogonal) and
//! square (two slabs in XY, infinite in z).
//!
//! Slab `i` is `0 ≤ (p − origin)·âᵢ ≤ extentᵢ`. The region's corners solve the slab equations:
//! `origin + Σ tᵢ·Eᵢ` with `tᵢ ∈ {0, 1}` and edge vectors `Eᵢ = extentᵢ·bᵢ`, where `bᵢ` is the dual
//! basis of the axes (`bᵢ·âⱼ = δᵢⱼ`). The region is the parallelepiped spanned by the `Eᵢ`.

use crate::aabb::Aabb;
use crate::limits::{AABB_PAD_M, BOUNDARY_TOLERANCE_M as EPS, FLAT_Z_BOUND_M};
use crate::region::primitives::{inv_len2, parallelogram_distance2, segment_distance2_2d};
use crate::vector::{Vec3, add, cross, dot, scale, sub};

/// Largest `|cos|` between axes that still counts as orthogonal: a rounding-level difference, far
/// below anything that changes a distance measurably.
const ORTHOGONAL_COS: f64 = 1e-12;

/// An oriented box with possibly oblique axes.
#[derive(Clone, Debug)]
pub(crate) struct Cuboid {
    /// Whether the axes are orthogonal (to rounding): the box is then a rectangular one and its
    /// distance is the length of the per-axis excesses.
    orthogonal: bool,
    origin: Vec3,
    axes: [Vec3; 3],
    extents: [f64; 3],
    /// Edge vectors `Eᵢ` from `origin`.
    edges: [Vec3; 3],
}

impl Cuboid {
    pub(crate) fn new(origin: Vec3, extents: [f64; 3], axes: [Vec3; 3]) -> Self {
        let det = dot(axes[0], cross(axes[1], axes[2]));
        let edges = [0, 1, 2].map(|i| {
            let dual = cross(axes[(i + 1) % 3], axes[(i + 2) % 3]);
            scale(dual, extents[i] / det)
        });
        let orthogonal = (0..3).all(|i| dot(axes[i], axes[(i + 1) % 3]).abs() <= ORTHOGONAL_COS);
        Self { orthogonal, origin, axes, extents, edges }
    }

    /// Distance from `p`; 0 inside. Containment is three slab tests. Outside a rectangular box the
    /// distance is the length of the per-axis excesses; outside an oblique one it is the least
    /// distance to the faces `p` is beyond (a convex region's closest point lies on one), measured
    /// most-violated first so that faces whose plane is already farther can be skipped.
    ///
    /// Beyond a slab by more than `limit`, that excess (a lower bound, the slab holding the box)
    /// is returned at once.
    pub(crate) fn distance(&self, p: Vec3, limit: f64) -> f64 {
        let d = sub(p, self.origin);
        let s = self.axes.map(|a| dot(d, a));
        let excess = [0, 1, 2].map(|i| (-s[i]).max(s[i] - self.extents[i]));
        let most = excess[0].max(excess[1]).max(excess[2]);
        if most <= EPS {
            return 0.0;
        }
        if most > limit {
            return most;
        }
        if self.orthogonal {
            return excess.iter().map(|e| e.max(0.0) * e.max(0.0)).sum::<f64>().sqrt();
        }
        let mut order = [0, 1, 2];
        order.sort_unstable_by(|a, b| excess[*b].total_cmp(&excess[*a]));
        let mut best = f64::INFINITY;
        for i in order {
            // Faces within the tolerance are measured too: extra faces never make the minimum wrong.
            if excess[i] <= -EPS || excess[i] * excess[i] >= best {
                continue;
            }
            let (j, k) = ((i + 1) % 3, (i + 2) % 3);
            // The face of the slab that `p` is beyond (or nearest, within the tolerance).
            let q = if 2.0 * s[i] < self.extents[i] { self.origin } else { add(self.origin, self.edges[i]) };
            best = best.min(parallelogram_distance2(p, q, self.edges[j], self.edges[k]));
        }
        best.sqrt()
    }

    fn corners(&self) -> impl Iterator<Item = Vec3> + '_ {
        (0..8).map(|bits: usize| (0..3).filter(|i| bits >> i & 1 == 1).fold(self.origin, |c, i| add(c, self.edges[i])))
    }

    /// The box of the eight corners, padded.
    pub(crate) fn aabb(&self) -> Aabb {
        Aabb::enclosing(self.corners()).unwrap_or(Aabb { min: self.origin, max: self.origin }).expanded(AABB_PAD_M)
    }

    /// Prefetches every part of the box (see `Region::prefetch_heap`).
    pub(crate) fn prefetch(&self) {
        super::prefetch(&self.origin);
        super::prefetch(&self.axes[2]);
        super::prefetch(&self.edges[2]);
    }

    /// `origin + (E₀ + E₁ + E₂)/2`.
    pub(crate) fn centre(&self) -> Vec3 {
        add(self.origin, scale(add(add(self.edges[0], self.edges[1]), self.edges[2]), 0.5))
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

/// A parallelogram in XY with a corner at `origin`, infinite in z.
#[derive(Clone, Debug)]
pub(crate) struct Rect {
    /// Whether the axes are orthogonal (to rounding): a rectangle.
    orthogonal: bool,
    origin: [f64; 2],
    /// z of the `bottom_left` row: no part of the region, kept for the centre.
    z: f64,
    axes: [[f64; 2]; 2],
    extents: [f64; 2],
    /// Edge vectors `Eᵢ` from `origin`.
    edges: [[f64; 2]; 2],
    /// `1/|Eᵢ|²`.
    inv_len2: [f64; 2],
}

impl Rect {
    pub(crate) fn new(bottom_left: Vec3, extents: [f64; 2], axes: [Vec3; 2]) -> Self {
        let [[a, b, _], [c, d, _]] = axes;
        let det = a * d - b * c;
        // Dual basis: the columns of the inverse of the matrix whose rows are the axes.
        let edges = [[d * extents[0] / det, -c * extents[0] / det], [-b * extents[1] / det, a * extents[1] / det]];
        Self {
            orthogonal: (a * c + b * d).abs() <= ORTHOGONAL_COS,
            origin: [bottom_left[0], bottom_left[1]],
            z: bottom_left[2],
            axes: [[a, b], [c, d]],
            extents,
            edges,
            inv_len2: edges.map(|e| inv_len2([0.0, 0.0], e)),
        }
    }

    /// Distance in XY from `p`; 0 inside, whatever the z. Outside, as for the cuboid: the
    /// per-axis excesses for a rectangle, else the least distance to the edges `p` is beyond.
    pub(crate) fn distance(&self, p: Vec3, limit: f64) -> f64 {
        let d = [p[0] - self.origin[0], p[1] - self.origin[1]];
        let s = self.axes.map(|a| d[0] * a[0] + d[1] * a[1]);
        let excess = [0, 1].map(|i| (-s[i]).max(s[i] - self.extents[i]));
        let most = excess[0].max(excess[1]);
        if most <= EPS {
            return 0.0;
        }
        if most > limit {
            return most;
        }
        if self.orthogonal {
            let [x, y] = excess.map(|e| e.max(0.0));
            return (x * x + y * y).sqrt();
        }
        let q = [p[0], p[1]];
        let mut best = f64::INFINITY;
        for i in 0..2 {
            if excess[i] > -EPS {
                let start = if 2.0 * s[i] < self.extents[i] {
                    self.origin
                } else {
                    [self.origin[0] + self.edges[i][0], self.origin[1] + self.edges[i][1]]
                };
                let (edge, inv) = (self.edges[1 - i], self.inv_len2[1 - i]);
                best = best.min(segment_distance2_2d(q, start, [start[0] + edge[0], start[1] + edge[1]], inv));
            }
        }
        best.sqrt()
    }

    /// The box of the four corners, padded, with the z bounds of a 2D shape.
    pub(crate) fn aabb(&self) -> Aabb {
        let [e0, e1] = self.edges;
        let o = self.origin;
        let xs = [o[0], o[0] + e0[0], o[0] + e1[0], o[0] + e0[0] + e1[0]];
        let ys = [o[1], o[1] + e0[1], o[1] + e1[1], o[1] + e0[1] + e1[1]];
        let lo = |v: [f64; 4]| v.iter().copied().fold(f64::INFINITY, f64::min) - AABB_PAD_M;
        let hi = |v: [f64; 4]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max) + AABB_PAD_M;
        Aabb { min: [lo(xs), lo(ys), -FLAT_Z_BOUND_M], max: [hi(xs), hi(ys), FLAT_Z_BOUND_M] }
    }

    /// Prefetches every part of the parallelogram (see `Region::prefetch_heap`).
    pub(crate) fn prefetch(&self) {
        super::prefetch(&self.origin);
        super::prefetch(&self.inv_len2);
    }

    /// Centre of the parallelogram, at the z of the `bottom_left` row.
    pub(crate) fn centre(&self) -> Vec3 {
        let [e0, e1] = self.edges;
        [self.origin[0] + 0.5 * (e0[0] + e1[0]), self.origin[1] + 0.5 * (e0[1] + e1[1]), self.z]
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}
