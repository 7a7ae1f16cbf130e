//! Tolerances and limits the validation rules use; lengths in metres, areas in square metres.

/// How far a polygon vertex may lie from the polygon's best-fit plane (1 mm).
pub const PLANARITY_TOLERANCE_M: f64 = 0.001;

/// Polygons with a smaller area than this are rejected as having zero area.
pub const MIN_POLYGON_AREA_M2: f64 = 1e-6;

/// Points closer than this (1 µm) are the same point: a closing polygon vertex this close to the
/// first is dropped, a shorter polygon edge has zero length, and non-adjacent edges this close touch.
pub const SAME_POINT_M: f64 = 1e-6;

/// Two cuboid or square axes with `|cos|` of their angle at or above this are (nearly) parallel.
pub const MAX_AXIS_COS: f64 = 0.999;

/// A polygon's sweep axis with `|â·n̂|` below this lies in the polygon's plane; also the least
/// `|det(âl, âw, âh)|` of a cuboid's three axes.
pub const MIN_AXIS_TILT: f64 = 1e-3;

/// Boundary tolerance of the region tests (1 nm): a point this close outside a face, or this close
/// to the boundary by distance, counts as on the boundary, which is inclusive, so its distance is
/// 0. It absorbs the rounding of the slab and projection arithmetic, far below any positioning
/// accuracy.
pub const BOUNDARY_TOLERANCE_M: f64 = 1e-9;

/// Extra margin on every [`crate::Region::aabb`] in x, y and (3D shapes) z (1 µm), so the box also
/// holds the points within [`BOUNDARY_TOLERANCE_M`] of the region despite rounding of the corners.
pub const AABB_PAD_M: f64 = 1e-6;

/// The z bounds (±) of the box of a 2D shape (circle, square), which is infinite in z.
pub const FLAT_Z_BOUND_M: f64 = 1e9;
