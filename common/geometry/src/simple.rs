//! Simplicity of a closed 2D polygon: no two edges may cross, touch or overlap except where
//! neighbours share their common vertex.

/// A point in a polygon's plane coordinates.
pub(crate) type Point2 = [f64; 2];

/// How two edges meet where they must not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Defect {
    /// Non-adjacent edges cross at a point inside both.
    Cross,
    /// Non-adjacent edges come within the tolerance of each other without crossing.
    Touch,
    /// Adjacent edges fold back onto each other beyond their shared vertex.
    Overlap,
}

/// The first offending pair of edges; edge `k` runs from point `k` to point `k + 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Clash {
    /// The lower edge number.
    pub(crate) first: usize,
    /// The higher edge number.
    pub(crate) second: usize,
    /// How they meet.
    pub(crate) defect: Defect,
}

/// The first pair of edges of the closed ring `points` that meet other than at a shared vertex,
/// with `eps` as the distance at which edges touch; `None` for a simple polygon.
///
/// Quadratic in the number of edges, with a bounding-box test in front; the vertex limit keeps
/// that to half a million cheap pair tests at most.
pub(crate) fn find_clash(points: &[Point2], eps: f64) -> Option<Clash> {
    let n = points.len();
    let edge = |k: usize| (points[k], points[(k + 1) % n]);
    let boxes: Vec<[f64; 4]> = (0..n)
        .map(|k| {
            let (a, b) = edge(k);
            [a[0].min(b[0]) - eps, a[1].min(b[1]) - eps, a[0].max(b[0]) + eps, a[1].max(b[1]) + eps]
        })
        .collect();
    for first in 0..n {
        for second in first + 1..n {
            let (a, b) = edge(first);
            let (c, d) = edge(second);
            let defect = if second == first + 1 {
                // a→b then c(=b)→d: they share b.
                overlaps(a, b, d, eps)
            } else if first == 0 && second == n - 1 {
                // c→d(=a) then a→b: they share a.
                overlaps(c, a, b, eps)
            } else if disjoint(boxes[first], boxes[second]) {
                None
            } else {
                meet(a, b, c, d, eps)
            };
            if let Some(defect) = defect {
                return Some(Clash { first, second, defect });
            }
        }
    }
    None
}

/// Twice the signed area (shoelace); positive for a counter-clockwise ring. Halved here.
pub(crate) fn signed_area(points: &[Point2]) -> f64 {
    let n = points.len();
    let twice: f64 = (0..n)
        .map(|k| {
            let (p, q) = (points[k], points[(k + 1) % n]);
            p[0] * q[1] - q[0] * p[1]
        })
        .sum();
    twice / 2.0
}

fn disjoint(p: [f64; 4], q: [f64; 4]) -> bool {
    p[2] < q[0] || q[2] < p[0] || p[3] < q[1] || q[3] < p[1]
}

/// Edges `a→b` and `b→c` overlap when either far end lies on the other edge.
fn overlaps(a: Point2, b: Point2, c: Point2, eps: f64) -> Option<Defect> {
    (distance_to_segment(c, a, b) <= eps || distance_to_segment(a, b, c) <= eps).then_some(Defect::Overlap)
}

/// How non-adjacent edges `a→b` and `c→d` meet, if they do. Segments that meet without crossing
/// properly have an end point on (within `eps` of) the other segment.
fn meet(a: Point2, b: Point2, c: Point2, d: Point2, eps: f64) -> Option<Defect> {
    let straddles = |p: f64, q: f64| (p > 0.0 && q < 0.0) || (p < 0.0 && q > 0.0);
    if straddles(orient(a, b, c), orient(a, b, d)) && straddles(orient(c, d, a), orient(c, d, b)) {
        return Some(Defect::Cross);
    }
    let gap = distance_to_segment(c, a, b)
        .min(distance_to_segment(d, a, b))
        .min(distance_to_segment(a, c, d))
        .min(distance_to_segment(b, c, d));
    (gap <= eps).then_some(Defect::Touch)
}

/// Positive when `p` is left of `a→b`, negative when right, zero when on the line.
fn orient(a: Point2, b: Point2, p: Point2) -> f64 {
    (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
}

fn distance_to_segment(p: Point2, a: Point2, b: Point2) -> f64 {
    let ab = [b[0] - a[0], b[1] - a[1]];
    let ap = [p[0] - a[0], p[1] - a[1]];
    let len2 = ab[0] * ab[0] + ab[1] * ab[1];
    let t = if len2 > 0.0 { ((ap[0] * ab[0] + ap[1] * ab[1]) / len2).clamp(0.0, 1.0) } else { 0.0 };
    (ap[0] - t * ab[0]).hypot(ap[1] - t * ab[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPS: f64 = 1e-6;

    fn clash(points: &[Point2]) -> Option<(usize, usize, Defect)> {
        find_clash(points, EPS).map(|c| (c.first, c.second, c.defect))
    }

    #[test]
    fn a_square_is_simple() {
        assert_eq!(clash(&[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]), None);
    }

    #[test]
    fn a_concave_l_shape_is_simple() {
        let l = [[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [1.0, 1.0], [1.0, 2.0], [0.0, 2.0]];
        assert_eq!(clash(&l), None);
    }

    #[test]
    fn a_bow_tie_crosses() {
        let bow = [[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]];
        assert_eq!(clash(&bow), Some((0, 2, Defect::Cross)));
    }

    #[test]
    fn a_vertex_on_a_far_edge_touches() {
        let pts = [[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [1.0, 0.0], [0.0, 2.0]];
        assert_eq!(clash(&pts), Some((0, 2, Defect::Touch)));
    }

    #[test]
    fn a_vertex_just_clear_of_a_far_edge_is_simple() {
        let pts = [[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [1.0, 1e-5], [0.0, 2.0]];
        assert_eq!(clash(&pts), None);
    }

    #[test]
    fn a_spike_folding_back_overlaps() {
        let pts = [[0.0, 0.0], [2.0, 0.0], [1.0, 0.0], [1.0, 1.0]];
        assert_eq!(clash(&pts), Some((0, 1, Defect::Overlap)));
    }

    #[test]
    fn the_closing_edge_pair_is_checked_for_overlap() {
        // Edge 3 runs (3,0)→(0,0) and edge 0 runs (0,0)→(2,0): they fold onto each other.
        let pts = [[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [3.0, 0.0]];
        assert_eq!(clash(&pts), Some((0, 3, Defect::Overlap)));
    }

    #[test]
    fn signed_area_is_positive_counter_clockwise() {
        let ccw = [[0.0, 0.0], [2.0, 0.0], [2.0, 3.0], [0.0, 3.0]];
        assert_eq!(signed_area(&ccw), 6.0);
        let cw: Vec<Point2> = ccw.iter().rev().copied().collect();
        assert_eq!(signed_area(&cw), -6.0);
    }
}
