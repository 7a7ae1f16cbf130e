//! Distance building blocks shared by the shapes: segments, parallelograms and point-in-polygon,
//! all in `f64` and exact up to rounding.

use crate::simple::Point2;
use crate::vector::{Vec3, dot, sub};

/// Squared distance from `p` to the segment from `a` to `a + dir`.
#[inline]
pub(crate) fn segment_distance2(p: Vec3, a: Vec3, dir: Vec3) -> f64 {
    let d = sub(p, a);
    let len2 = dot(dir, dir);
    let t = if len2 > 0.0 { (dot(d, dir) / len2).clamp(0.0, 1.0) } else { 0.0 };
    let r = [d[0] - t * dir[0], d[1] - t * dir[1], d[2] - t * dir[2]];
    dot(r, r)
}

/// Squared distance from `p` to the 2D segment from `a` to `b`, given `1/|b − a|²` (0 for a
/// degenerate segment).
#[inline]
pub(crate) fn segment_distance2_2d(p: Point2, a: Point2, b: Point2, inv_len2: f64) -> f64 {
    let d = [p[0] - a[0], p[1] - a[1]];
    let dir = [b[0] - a[0], b[1] - a[1]];
    let t = ((d[0] * dir[0] + d[1] * dir[1]) * inv_len2).clamp(0.0, 1.0);
    let r = [d[0] - t * dir[0], d[1] - t * dir[1]];
    r[0] * r[0] + r[1] * r[1]
}

/// `1/|b − a|²`, or 0 when `a == b`.
#[inline]
pub(crate) fn inv_len2(a: Point2, b: Point2) -> f64 {
    let len2 = (b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]);
    if len2 > 0.0 { 1.0 / len2 } else { 0.0 }
}

/// Squared distance from `p` to the filled parallelogram `{q + u·U + v·V : u, v ∈ [0, 1]}`.
///
/// The orthogonal projection of `p` onto the plane is found from the 2×2 normal equations; when it
/// falls inside, the distance is the plane distance, otherwise the closest point lies on one of
/// the (at most two) edges whose lines the projection is beyond — the parallelogram is convex.
pub(crate) fn parallelogram_distance2(p: Vec3, q: Vec3, e1: Vec3, e2: Vec3) -> f64 {
    let d = sub(p, q);
    let (a, b, c) = (dot(e1, e1), dot(e1, e2), dot(e2, e2));
    let (r1, r2) = (dot(d, e1), dot(d, e2));
    let det = a * c - b * b;
    let far1 = [q[0] + e1[0], q[1] + e1[1], q[2] + e1[2]];
    let far2 = [q[0] + e2[0], q[1] + e2[1], q[2] + e2[2]];
    if !(det > 0.0 && det.is_finite()) {
        // Degenerate (only for shapes not made by `validate`): measure all four edges.
        return segment_distance2(p, q, e2)
            .min(segment_distance2(p, far1, e2))
            .min(segment_distance2(p, q, e1))
            .min(segment_distance2(p, far2, e1));
    }
    let inv = 1.0 / det;
    let u = (c * r1 - b * r2) * inv;
    let v = (a * r2 - b * r1) * inv;
    if (0.0..=1.0).contains(&u) && (0.0..=1.0).contains(&v) {
        let r = [0, 1, 2].map(|i| d[i] - u * e1[i] - v * e2[i]);
        return dot(r, r);
    }
    let mut best = f64::INFINITY;
    if u < 0.0 {
        best = best.min(segment_distance2(p, q, e2));
    } else if u > 1.0 {
        best = best.min(segment_distance2(p, far1, e2));
    }
    if v < 0.0 {
        best = best.min(segment_distance2(p, q, e1));
    } else if v > 1.0 {
        best = best.min(segment_distance2(p, far2, e1));
    }
    best
}

/// Whether the edge from `prev` to `cur` crosses the ray from `p` towards +x: the crossing-number
/// (even–odd) rule counts these. Half-open in y, so a vertex at the ray's height counts once.
/// Points exactly on an edge may go either way; callers that need inclusive boundaries measure
/// the distance to the boundary when the count says outside.
#[inline]
pub(crate) fn crosses(p: Point2, prev: Point2, cur: Point2) -> bool {
    if (cur[1] > p[1]) == (prev[1] > p[1]) {
        return false;
    }
    let x = cur[0] + (p[1] - cur[1]) * (prev[0] - cur[0]) / (prev[1] - cur[1]);
    p[0] < x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_distance_clamps_to_the_end_points() {
        assert_eq!(segment_distance2([0.0, 1.0, 0.0], [0.0; 3], [2.0, 0.0, 0.0]), 1.0);
        assert_eq!(segment_distance2([-3.0, 4.0, 0.0], [0.0; 3], [2.0, 0.0, 0.0]), 25.0);
        assert_eq!(segment_distance2([5.0, 0.0, 4.0], [0.0; 3], [2.0, 0.0, 0.0]), 25.0);
        assert_eq!(segment_distance2_2d([1.0, -2.0], [0.0, 0.0], [2.0, 0.0], 0.25), 4.0);
        assert_eq!(segment_distance2_2d([3.0, 4.0], [0.0, 0.0], [0.0, 0.0], inv_len2([0.0; 2], [0.0; 2])), 25.0);
    }

    #[test]
    fn parallelogram_distance_uses_the_plane_inside_and_the_edges_outside() {
        let (q, e1, e2) = ([0.0; 3], [2.0, 0.0, 0.0], [1.0, 1.0, 0.0]);
        assert_eq!(parallelogram_distance2([1.5, 0.5, 3.0], q, e1, e2), 9.0);
        // Beyond the far corner q + e1 + e2 = (3, 1, 0).
        assert!((parallelogram_distance2([4.0, 2.0, 1.0], q, e1, e2) - 3.0).abs() < 1e-12);
        // Left of the slanted edge q → q + e2: distance to the line y = x is |x − y|/√2.
        assert!((parallelogram_distance2([0.0, 0.5, 0.0], q, e1, e2) - 0.125).abs() < 1e-12);
    }

    fn inside(p: Point2, ring: &[Point2]) -> bool {
        (0..ring.len()).fold(false, |acc, k| acc ^ crosses(p, ring[(k + ring.len() - 1) % ring.len()], ring[k]))
    }

    #[test]
    fn crossing_test_handles_a_concave_ring() {
        let l = [[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [1.0, 1.0], [1.0, 2.0], [0.0, 2.0]];
        assert!(inside([0.5, 1.5], &l));
        assert!(inside([1.5, 0.5], &l));
        assert!(!inside([1.5, 1.5], &l));
        assert!(!inside([-0.5, 0.5], &l));
        // A ray through a vertex at the point's height counts once.
        assert!(inside([0.5, 1.0], &l));
        assert!(!inside([0.5, 0.5], &[]));
    }
}
