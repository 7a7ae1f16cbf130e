//! Zone geometry for zonecast: turns a `GeometryType` and its `GeometryData` rows into a validated,
//! normalised [`Shape`], or a [`GeometryError`] naming the offending row and the broken rule.
//!
//! The row layouts (the region each describes is documented on [`Shape`]):
//!
//! | kind | rows |
//! |---|---|
//! | `sphere`, `circle` | `[centre]`, `[r,0,0]` |
//! | `cuboid` | `[origin]`, `[l,w,h]`, `[axis_l]`, `[axis_w]`, `[axis_h]` |
//! | `square` | `[bottom_left]`, `[l,w,0]`, `[axis_l]`, `[axis_w]` (axes use x,y only) |
//! | `cylinder` | `[origin]`, `[axis]`, `[h,r,0]` |
//! | `polygon` | `[v1]…[vN]`, `[h,0,0]`, `[axis]` |
//!
//! Numbers a layout shows as `0` are ignored (but must still be finite). A polygon may repeat its
//! first vertex at the end to close the ring (that vertex is dropped); [`validate_within`] bounds
//! its vertex count (the service's configured limit). Axis rows may have any
//! non-zero length; the shape carries them at unit length. The tolerances the checks use
//! are the constants re-exported here ([`SAME_POINT_M`] and friends).
//!
//! A validated shape becomes a [`Region`]: its exact distance query (boundaries inclusive, within
//! [`BOUNDARY_TOLERANCE_M`]), axis-aligned box ([`Aabb`]) and mobile-zone centre. A [`Scene`]
//! indexes a site's regions — static zones in a grid of tiles (the few much larger than the typical
//! one in a bounding-volume hierarchy), mobile zones in a spatial hash grid — so a position is
//! measured only against the regions whose boxes it is near.
//!
//! Everything here is pure, synchronous arithmetic on plain data, in `f64`: parry3d's `f32`
//! shapes would round site coordinates to tens of micrometres (see `docs/benchmarks.md`).

mod aabb;
mod error;
mod kind;
mod limits;
mod polygon;
mod region;
mod rows;
mod scene;
mod shape;
mod simple;
mod validate;
mod vector;

pub use aabb::Aabb;
pub use error::GeometryError;
pub use kind::{GeometryType, UnknownGeometryType};
pub use limits::{
    AABB_PAD_M, BOUNDARY_TOLERANCE_M, FLAT_Z_BOUND_M, MAX_AXIS_COS, MIN_AXIS_TILT, MIN_POLYGON_AREA_M2,
    PLANARITY_TOLERANCE_M, SAME_POINT_M,
};
pub use region::Region;
pub use scene::{Nearby, Scene, SceneMemory};
pub use shape::Shape;
pub use validate::{validate, validate_within};
pub use vector::Vec3;
