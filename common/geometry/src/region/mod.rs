//! [`Region`]: a validated [`Shape`] prepared for distance queries, with its box and centre.
//!
//! All arithmetic is `f64` and follows the region definitions on [`Shape`] exactly; parry3d's
//! `f32` shapes would round site coordinates to tens of micrometres, too coarse for the inclusive
//! boundaries, and parry3d-f64's shapes take 1.8 to 41 times as long per distance, its convex
//! polyhedra now and then missing the closest point (see `docs/benchmarks.md`). Containment is
//! tested first with half-space arithmetic, and a full distance is computed only for points
//! outside.

mod boxes;
mod primitives;
mod prism;

mod round;

use crate::aabb::Aabb;
use crate::limits::BOUNDARY_TOLERANCE_M;
use crate::shape::Shape;
use crate::vector::{Vec3, sub};
use boxes::{Cuboid, Rect};
use prism::Prism;
use round::Cylinder;

/// A prepared zone region for queries, built once from a validated [`Shape`].
///
/// Boundaries are inclusive: a point on the boundary, or within [`BOUNDARY_TOLERANCE_M`] of it,
/// is inside and at distance 0. A `Shape` built by hand rather than by [`crate::validate`] never
/// makes these methods panic, but its distances are unspecified.
#[derive(Clone, Debug)]
pub struct Region {
    kind: Kind,
}

/// The shapes, the larger ones boxed so that a `Region` stays small.
#[derive(Clone, Debug)]
enum Kind {
    Sphere { centre: Vec3, radius: f64 },
    Circle { centre: Vec3, radius: f64 },
    Cuboid(Box<Cuboid>),
    Square(Box<Rect>),
    Cylinder(Cylinder),
    Prism(Box<Prism>),
}

impl Region {
    /// Prepares `shape` for queries: dual bases, face normals, the polygon's plane frame.
    pub fn new(shape: &Shape) -> Self {
        let kind = match shape {
            Shape::Sphere { centre, radius } => Kind::Sphere { centre: *centre, radius: *radius },
            Shape::Circle { centre, radius } => Kind::Circle { centre: *centre, radius: *radius },
            Shape::Cuboid { origin, extents, axes } => Kind::Cuboid(Box::new(Cuboid::new(*origin, *extents, *axes))),
            Shape::Square { bottom_left, extents, axes } => {
                Kind::Square(Box::new(Rect::new(*bottom_left, *extents, *axes)))
            }
            Shape::Cylinder { origin, axis, height, radius } => {
                Kind::Cylinder(Cylinder { origin: *origin, axis: *axis, height: *height, radius: *radius })
            }
            Shape::Polygon { vertices, height, axis } => Kind::Prism(Box::new(Prism::new(vertices, *height, *axis))),
        };
        Self { kind }
    }

    /// Euclidean distance from `p` to the region, 0.0 when inside (boundaries inclusive). 2D
    /// shapes (circle, square) are infinite in z: distance measured in the XY plane.
    #[inline]
    pub fn distance(&self, p: Vec3) -> f64 {
        self.distance_within(p, f64::INFINITY)
    }

    /// [`Region::distance`] when it is at most `limit`; otherwise some value above `limit` (a
    /// lower bound of the distance), found with less work. Slab shapes and prisms stop once `p`
    /// is beyond one of their face pairs by more than `limit`, before measuring any face: most of
    /// the candidates a position's box finds are rejected that way. What the evaluator needs, as
    /// it only compares a distance with the device radius plus the exit tolerance.
    #[inline]
    pub fn distance_within(&self, p: Vec3, limit: f64) -> f64 {
        let d = match &self.kind {
            Kind::Sphere { centre, radius } => round::sphere_distance(*centre, *radius, p),
            Kind::Circle { centre, radius } => round::circle_distance([centre[0], centre[1]], *radius, p),
            Kind::Cuboid(c) => c.distance(p, limit),
            Kind::Square(r) => r.distance(p, limit),
            Kind::Cylinder(c) => c.distance(p),
            Kind::Prism(prism) => prism.distance(p, limit),
        };
        if d <= BOUNDARY_TOLERANCE_M { 0.0 } else { d }
    }

    /// The same for the region translated by `offset` (mobile zones), without rebuilding.
    #[inline]
    pub fn distance_offset(&self, p: Vec3, offset: Vec3) -> f64 {
        self.distance(sub(p, offset))
    }

    /// Whether `p` is in the region (boundaries inclusive): `distance(p) == 0.0`.
    #[inline]
    pub fn contains(&self, p: Vec3) -> bool {
        self.distance(p) == 0.0
    }

    /// Axis-aligned bounds, padded by [`crate::AABB_PAD_M`]; 2D shapes use z bounds of
    /// ±[`crate::FLAT_Z_BOUND_M`] (1e9).
    pub fn aabb(&self) -> Aabb {
        match &self.kind {
            Kind::Sphere { centre, radius } => round::sphere_aabb(*centre, *radius),
            Kind::Circle { centre, radius } => round::circle_aabb([centre[0], centre[1]], *radius),
            Kind::Cuboid(c) => c.aabb(),
            Kind::Square(r) => r.aabb(),
            Kind::Cylinder(c) => c.aabb(),
            Kind::Prism(prism) => prism.aabb(),
        }
    }

    /// Mobile-zone centre, the point of the zone that follows its source device: sphere and circle
    /// centre; cuboid and square the centre of the box/rectangle; cylinder the midpoint of its
    /// axis segment; polygon the centroid (area centroid) of the base polygon moved h/2 along the
    /// axis. For circle and square the z is that of the first row, which plays no part in the
    /// region.
    pub fn centre(&self) -> Vec3 {
        match &self.kind {
            Kind::Sphere { centre, .. } | Kind::Circle { centre, .. } => *centre,
            Kind::Cuboid(c) => c.centre(),
            Kind::Square(r) => r.centre(),
            Kind::Cylinder(c) => c.centre(),
            Kind::Prism(prism) => prism.centre(),
        }
    }

    /// Asks the processor to load the region's heap data, if any, into cache ahead of a distance
    /// query (reads the region itself, to find it).
    #[inline]
    pub(crate) fn prefetch_heap(&self) {
        match &self.kind {
            Kind::Cuboid(c) => c.prefetch(),
            Kind::Square(r) => r.prefetch(),
            Kind::Prism(prism) => prism.prefetch(),
            Kind::Sphere { .. } | Kind::Circle { .. } | Kind::Cylinder(_) => {}
        }
    }

    /// Whether the region is a 2D shape (circle, square), infinite in z.
    pub fn is_flat(&self) -> bool {
        matches!(self.kind, Kind::Circle { .. } | Kind::Square(_))
    }

    /// Bytes this region holds, inline and on the heap.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + match &self.kind {
                Kind::Cuboid(c) => c.heap_bytes(),
                Kind::Square(r) => r.heap_bytes(),
                Kind::Prism(prism) => prism.heap_bytes(),
                Kind::Sphere { .. } | Kind::Circle { .. } | Kind::Cylinder(_) => 0,
            }
    }
}

/// Asks the processor to load the cache line of `value` into cache, without waiting for it (no
/// effect but on speed).
#[inline]
pub(crate) fn prefetch<T>(value: &T) {
    mem_prefetch::prefetch_read_data::<T, 3>(value);
}
