//! Tolerances and limits the validation rules use; lengths in metres, areas in square metres.

/// Most vertices a polygon may have (after dropping a closing vertex), which bounds the
/// quadratic self-intersection check.
pub const MAX_POLYGON_VERTICES: usize = 1000;

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
