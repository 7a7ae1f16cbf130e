//! Polygon prisms: vertex count, best-fit plane and planarity, simplicity, area and sweep axis.

use crate::error::GeometryError;
use crate::limits::{MIN_AXIS_TILT, MIN_POLYGON_AREA_M2, PLANARITY_TOLERANCE_M, SAME_POINT_M};
use crate::rows::{all_finite, positive, unit_axis};
use crate::shape::Shape;
use crate::simple::{Defect, Point2, find_clash, signed_area};
use crate::vector::{Vec3, add, cross, distance, dot, is_finite, norm, normalize, scale, sub};

/// Validates `[v1]…[vN]`, `[h,0,0]`, `[axis]`.
///
/// A last vertex within [`SAME_POINT_M`] of the first closes the ring and is dropped. Edge `k`
/// runs from vertex `k` to vertex `k + 1` (the last edge back to vertex 0); messages about edges
/// use these numbers. The polygon's plane is the Newell normal through the vertex centroid; when
/// the Newell normal vanishes (a symmetric bow-tie, or no area at all) a plane through three
/// far-apart vertices is used instead so that the real problem can be named. More than
/// `max_vertices` vertices are refused before any of that work (the simplicity check is
/// quadratic in them).
pub(crate) fn validate(rows: &[Vec3], max_vertices: usize) -> Result<Shape, GeometryError> {
    let (mut vertices, height_row, axis_row) = match rows {
        [vertices @ .., h, a] if rows.len() >= crate::GeometryType::MIN_POLYGON_ROWS => (vertices, h, a),
        _ => {
            return Err(GeometryError::list(format!(
                "polygon takes at least 5 rows (3 or more vertices, [h,0,0], [axis]), got {}",
                rows.len()
            )));
        }
    };
    all_finite(rows)?;
    let height_at = vertices.len();
    let axis_at = height_at + 1;

    if let [first, .., last] = vertices
        && distance(*first, *last) <= SAME_POINT_M
    {
        vertices = &vertices[..vertices.len() - 1];
    }
    if vertices.len() < 3 {
        return Err(GeometryError::list(format!(
            "polygon needs at least 3 vertices, got {} (not counting the closing vertex)",
            vertices.len()
        )));
    }
    if vertices.len() > max_vertices {
        return Err(GeometryError::list(format!(
            "polygon takes at most {max_vertices} vertices, got {}",
            vertices.len()
        )));
    }
    let height = positive(height_at, height_row[0], "height")?;
    let axis = unit_axis(axis_at, *axis_row)?;

    no_zero_length_edge(vertices)?;
    let plane = Plane::fit(vertices)?;
    plane.check_coplanar(vertices)?;
    let flat: Vec<Point2> = vertices.iter().map(|v| plane.project(*v)).collect();
    if let Some(clash) = find_clash(&flat, SAME_POINT_M) {
        let verb = match clash.defect {
            Defect::Cross => "intersect",
            Defect::Touch => "touch",
            Defect::Overlap => "overlap",
        };
        return Err(GeometryError::list(format!("polygon edges {} and {} {verb}", clash.first, clash.second)));
    }
    if signed_area(&flat).abs() < MIN_POLYGON_AREA_M2 {
        return Err(zero_area());
    }
    if dot(axis, plane.normal).abs() < MIN_AXIS_TILT {
        return Err(GeometryError::at(axis_at, "axis lies in the polygon's plane"));
    }
    Ok(Shape::Polygon { vertices: vertices.to_vec(), height, axis })
}

fn zero_area() -> GeometryError {
    GeometryError::list("polygon has zero area")
}

/// Rejects a vertex that repeats the one before it (the ring is closed, so the last vertex is
/// compared with the first too).
fn no_zero_length_edge(vertices: &[Vec3]) -> Result<(), GeometryError> {
    for (i, v) in vertices.iter().enumerate() {
        let next = (i + 1) % vertices.len();
        if distance(*v, vertices[next]) <= SAME_POINT_M {
            return Err(if next == 0 {
                GeometryError::at(i, "vertex repeats the first vertex (zero-length edge)")
            } else {
                GeometryError::at(next, "vertex repeats the previous one (zero-length edge)")
            });
        }
    }
    Ok(())
}

/// A plane through `origin` with unit `normal`, and unit in-plane axes `u`, `w` for 2D coordinates;
/// `(u, w, normal)` is right-handed.
pub(crate) struct Plane {
    /// The vertex centroid, a point of the plane.
    pub(crate) origin: Vec3,
    /// Unit normal (the Newell normal when the polygon has area).
    pub(crate) normal: Vec3,
    /// First in-plane unit axis.
    pub(crate) u: Vec3,
    /// Second in-plane unit axis, `normal × u`.
    pub(crate) w: Vec3,
}

impl Plane {
    /// The best-fit plane of `vertices` (at least 3).
    pub(crate) fn fit(vertices: &[Vec3]) -> Result<Plane, GeometryError> {
        // Dividing before summing keeps the centroid finite for any finite input.
        let k = 1.0 / vertices.len() as f64;
        let origin = vertices.iter().fold([0.0; 3], |c, v| add(c, scale(*v, k)));
        let newell = vertices.iter().enumerate().fold([0.0; 3], |n, (i, v)| {
            let next = vertices[(i + 1) % vertices.len()];
            add(n, cross(sub(*v, origin), sub(next, origin)))
        });
        if !is_finite(newell) {
            return Err(GeometryError::list("polygon coordinates are too large"));
        }
        let normal =
            if norm(newell) / 2.0 >= MIN_POLYGON_AREA_M2 { normalize(newell) } else { spanning_normal(vertices) }
                .ok_or_else(zero_area)?;
        // Any direction not parallel to the normal gives an in-plane axis; the world axis the
        // normal is least aligned with is the best conditioned.
        let least = (0..3).min_by(|a, b| normal[*a].abs().total_cmp(&normal[*b].abs())).unwrap_or(0);
        let mut world = [0.0; 3];
        world[least] = 1.0;
        let u = normalize(cross(normal, world)).ok_or_else(zero_area)?;
        let w = cross(normal, u);
        Ok(Plane { origin, normal, u, w })
    }

    /// Rejects the vertex farthest from the plane if it is off by more than the tolerance.
    fn check_coplanar(&self, vertices: &[Vec3]) -> Result<(), GeometryError> {
        let mut worst = (0, 0.0);
        for (i, v) in vertices.iter().enumerate() {
            let off = dot(sub(*v, self.origin), self.normal).abs();
            if off > worst.1 || off.is_nan() {
                worst = (i, off);
            }
        }
        let (row, off) = worst;
        if off.is_nan() {
            return Err(GeometryError::list("polygon coordinates are too large"));
        }
        if off > PLANARITY_TOLERANCE_M {
            return Err(GeometryError::at(
                row,
                format!(
                    "vertices are not coplanar ({} m off the plane, tolerance {PLANARITY_TOLERANCE_M} m)",
                    metres_above(off, PLANARITY_TOLERANCE_M)
                ),
            ));
        }
        Ok(())
    }

    /// `v` in the plane's 2D coordinates.
    pub(crate) fn project(&self, v: Vec3) -> Point2 {
        let d = sub(v, self.origin);
        [dot(d, self.u), dot(d, self.w)]
    }
}

/// Normal of the plane through vertex 0, the vertex farthest from it and the vertex farthest from
/// the line through those two; `None` when all vertices are collinear.
fn spanning_normal(vertices: &[Vec3]) -> Option<Vec3> {
    let a = vertices[0];
    let far = |score: &dyn Fn(Vec3) -> f64| vertices.iter().copied().max_by(|p, q| score(*p).total_cmp(&score(*q)));
    let b = far(&|p| distance(p, a))?;
    let line = sub(b, a);
    let c = far(&|p| norm(cross(line, sub(p, a))))?;
    normalize(cross(line, sub(c, a)))
}

/// `value` with four decimals, or more when four would not show it to be above `limit`.
fn metres_above(value: f64, limit: f64) -> String {
    (4..10)
        .map(|decimals| format!("{value:.decimals$}"))
        .find(|s| s.parse::<f64>().is_ok_and(|shown| shown > limit))
        .unwrap_or_else(|| format!("{value:e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_show_enough_decimals_to_exceed_the_tolerance() {
        assert_eq!(metres_above(0.0123, 0.001), "0.0123");
        assert_eq!(metres_above(0.00104, 0.001), "0.00104");
        assert_eq!(metres_above(2.5, 0.001), "2.5000");
    }

    #[test]
    fn spanning_normal_of_collinear_points_is_none() {
        assert_eq!(spanning_normal(&[[0.0; 3], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]), None);
    }

    #[test]
    fn spanning_normal_of_a_symmetric_bow_tie_is_the_plane_normal() {
        let bow_tie = [[0.0, 0.0, 5.0], [1.0, 1.0, 5.0], [1.0, 0.0, 5.0], [0.0, 1.0, 5.0]];
        let Some(n) = spanning_normal(&bow_tie) else { panic!("no normal") };
        assert!((n[2].abs() - 1.0).abs() < 1e-12, "{n:?}");
    }
}
