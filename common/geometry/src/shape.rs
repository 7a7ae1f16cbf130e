//! The validated, normalised shape a zone's geometry describes.

use crate::kind::GeometryType;
use crate::vector::Vec3;

/// A validated shape: every length positive, every axis at unit length, every rule of
/// [`crate::validate`] checked. Only `validate` makes one from `GeometryData`. Every region
/// includes its boundary.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Points within `radius` of `centre`.
    Sphere {
        /// Centre of the ball.
        centre: Vec3,
        /// Radius, > 0.
        radius: f64,
    },
    /// Points whose XY distance to `centre` is within `radius`, at any z.
    Circle {
        /// Centre of the disc; its z is kept but plays no part in the region.
        centre: Vec3,
        /// Radius, > 0.
        radius: f64,
    },
    /// Oriented box with a corner at `origin`: the points with `0 ≤ (p − origin)·axes[i] ≤
    /// extents[i]` for each `i` (a parallelepiped when the axes are not orthogonal).
    Cuboid {
        /// The corner the axes start from.
        origin: Vec3,
        /// Length, width and height, each > 0.
        extents: Vec3,
        /// Unit axes for length, width and height; pairwise not (nearly) parallel, not coplanar.
        axes: [Vec3; 3],
    },
    /// Rectangle in XY with a corner at `bottom_left`: the points with `0 ≤ (p − bottom_left)·axes[i]
    /// ≤ extents[i]` for both `i`, in XY, at any z (a parallelogram when the axes are not
    /// orthogonal).
    Square {
        /// The corner the axes start from; its z is kept but plays no part in the region.
        bottom_left: Vec3,
        /// Length and width, each > 0.
        extents: [f64; 2],
        /// Unit axes for length and width, in XY (z component 0), not (nearly) parallel.
        axes: [Vec3; 2],
    },
    /// Cylinder whose base disc is centred on `origin`, extending `height` along `axis`.
    Cylinder {
        /// Centre of the base disc.
        origin: Vec3,
        /// Unit direction from the base to the top.
        axis: Vec3,
        /// Height along the axis, > 0.
        height: f64,
        /// Radius, > 0.
        radius: f64,
    },
    /// Prism: the planar simple polygon `vertices` swept `height` along `axis`.
    Polygon {
        /// The base polygon's vertices in the given order, at least 3, without a closing repeat of
        /// the first; coplanar within 1 mm.
        vertices: Vec<Vec3>,
        /// Sweep distance along the axis, > 0.
        height: f64,
        /// Unit sweep direction, not in the polygon's plane.
        axis: Vec3,
    },
}

impl Shape {
    /// The kind of geometry this shape is.
    pub fn kind(&self) -> GeometryType {
        match self {
            Shape::Sphere { .. } => GeometryType::Sphere,
            Shape::Circle { .. } => GeometryType::Circle,
            Shape::Cuboid { .. } => GeometryType::Cuboid,
            Shape::Square { .. } => GeometryType::Square,
            Shape::Cylinder { .. } => GeometryType::Cylinder,
            Shape::Polygon { .. } => GeometryType::Polygon,
        }
    }
}
