//! Entry point of validation, the shared row rules, and the five shapes with a fixed row count.

use crate::error::GeometryError;
use crate::kind::GeometryType;
use crate::limits::{MAX_AXIS_COS, MIN_AXIS_TILT};
use crate::polygon;
use crate::rows::{all_finite, positive, unit_axis};
use crate::shape::Shape;
use crate::vector::{Vec3, cross, dot, normalize};

/// Validates `rows` as `GeometryData` of `kind` and returns the normalised shape.
///
/// Checks, in order: the row count, that every number is finite, then the kind's own rules row by
/// row (lengths > 0, axes non-zero and not (nearly) parallel, polygon planarity, simplicity, area
/// and sweep axis). The first broken rule is returned; its `row` indexes `rows`.
///
/// Polygons: a last vertex within [`crate::SAME_POINT_M`] of the first only closes the ring and
/// is dropped; any number of vertices may remain ([`validate_within`] bounds them). In messages, edge `k`
/// runs from vertex `k` to vertex `k + 1`, the last edge back to vertex 0.
///
/// Besides being pairwise not (nearly) parallel, a cuboid's three axes must not be (nearly)
/// coplanar (`|det(âl, âw, âh)| ≥` [`MIN_AXIS_TILT`]): with coplanar axes the three slabs bound no
/// volume.
pub fn validate(kind: GeometryType, rows: &[Vec3]) -> Result<Shape, GeometryError> {
    validate_within(kind, rows, usize::MAX)
}

/// [`validate`], refusing a polygon of more than `max_polygon_vertices` vertices (not counting
/// a closing vertex) before its quadratic checks run: what a service takes from clients.
pub fn validate_within(kind: GeometryType, rows: &[Vec3], max_polygon_vertices: usize) -> Result<Shape, GeometryError> {
    match kind {
        GeometryType::Sphere => {
            let [centre, r] = fixed(kind, rows)?;
            Ok(Shape::Sphere { centre, radius: positive(1, r[0], "radius")? })
        }
        GeometryType::Circle => {
            let [centre, r] = fixed(kind, rows)?;
            Ok(Shape::Circle { centre, radius: positive(1, r[0], "radius")? })
        }
        GeometryType::Cuboid => cuboid(fixed(kind, rows)?),
        GeometryType::Square => square(fixed(kind, rows)?),
        GeometryType::Cylinder => {
            let [origin, axis, hr] = fixed(kind, rows)?;
            Ok(Shape::Cylinder {
                origin,
                axis: unit_axis(1, axis)?,
                height: positive(2, hr[0], "height")?,
                radius: positive(2, hr[1], "radius")?,
            })
        }
        GeometryType::Polygon => polygon::validate(rows, max_polygon_vertices),
    }
}

/// The rows of a kind that takes exactly `N` of them, all finite.
fn fixed<const N: usize>(kind: GeometryType, rows: &[Vec3]) -> Result<[Vec3; N], GeometryError> {
    let rows: [Vec3; N] =
        rows.try_into().map_err(|_| GeometryError::list(format!("{kind} takes {N} rows, got {}", rows.len())))?;
    all_finite(&rows)?;
    Ok(rows)
}

/// Rejects unit axes `a` and `b` (named `names`) whose `|cos|` reaches [`MAX_AXIS_COS`].
fn not_parallel(row: usize, a: Vec3, b: Vec3, names: &str) -> Result<(), GeometryError> {
    if dot(a, b).abs() < MAX_AXIS_COS {
        Ok(())
    } else {
        Err(GeometryError::at(row, format!("axes {names} are (nearly) parallel")))
    }
}

/// `[origin]`, `[l,w,h]`, `[axis_l]`, `[axis_w]`, `[axis_h]`.
fn cuboid([origin, lwh, al, aw, ah]: [Vec3; 5]) -> Result<Shape, GeometryError> {
    let extents = [positive(1, lwh[0], "length")?, positive(1, lwh[1], "width")?, positive(1, lwh[2], "height")?];
    let al = unit_axis(2, al)?;
    let aw = unit_axis(3, aw)?;
    not_parallel(3, al, aw, "l and w")?;
    let ah = unit_axis(4, ah)?;
    not_parallel(4, al, ah, "l and h")?;
    not_parallel(4, aw, ah, "w and h")?;
    if dot(cross(al, aw), ah).abs() < MIN_AXIS_TILT {
        return Err(GeometryError::at(4, "axes l, w and h are (nearly) coplanar"));
    }
    Ok(Shape::Cuboid { origin, extents, axes: [al, aw, ah] })
}

/// `[bottom_left]`, `[l,w,0]`, `[axis_l]`, `[axis_w]`; the axes' z is ignored.
fn square([bottom_left, lw, al, aw]: [Vec3; 4]) -> Result<Shape, GeometryError> {
    let extents = [positive(1, lw[0], "length")?, positive(1, lw[1], "width")?];
    let al = xy_axis(2, al)?;
    let aw = xy_axis(3, aw)?;
    not_parallel(3, al, aw, "l and w")?;
    Ok(Shape::Square { bottom_left, extents, axes: [al, aw] })
}

/// A square's axis: x and y of `axis` at unit length, z set to 0.
fn xy_axis(row: usize, axis: Vec3) -> Result<Vec3, GeometryError> {
    normalize([axis[0], axis[1], 0.0])
        .ok_or_else(|| GeometryError::at(row, "axis must not be zero in x and y (square axes ignore z)"))
}
