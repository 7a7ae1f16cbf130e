//! The round shapes: sphere, circle (a disc in XY, infinite in z) and capped cylinder.

use crate::aabb::Aabb;
use crate::limits::{AABB_PAD_M, FLAT_Z_BOUND_M};
use crate::vector::{Vec3, add, dot, norm, scale, sub};

/// Distance from `p` to the ball `(centre, radius)`; 0 inside.
#[inline]
pub(crate) fn sphere_distance(centre: Vec3, radius: f64, p: Vec3) -> f64 {
    (norm(sub(p, centre)) - radius).max(0.0)
}

/// Distance in XY from `p` to the disc `(centre, radius)`; 0 inside, whatever the z.
#[inline]
pub(crate) fn circle_distance(centre: [f64; 2], radius: f64, p: Vec3) -> f64 {
    // Not `hypot`: its overflow care costs several times the arithmetic, and site coordinates
    // are nowhere near overflowing a square.
    let (dx, dy) = (p[0] - centre[0], p[1] - centre[1]);
    ((dx * dx + dy * dy).sqrt() - radius).max(0.0)
}

/// Box of a ball.
pub(crate) fn sphere_aabb(centre: Vec3, radius: f64) -> Aabb {
    Aabb::around(centre, radius + AABB_PAD_M)
}

/// Box of a disc, with the z bounds of a 2D shape.
pub(crate) fn circle_aabb(centre: [f64; 2], radius: f64) -> Aabb {
    let r = radius + AABB_PAD_M;
    Aabb { min: [centre[0] - r, centre[1] - r, -FLAT_Z_BOUND_M], max: [centre[0] + r, centre[1] + r, FLAT_Z_BOUND_M] }
}

/// A capped cylinder: `0 ≤ (p − origin)·axis ≤ height` and distance from the axis line ≤ `radius`.
#[derive(Clone, Debug)]
pub(crate) struct Cylinder {
    pub(crate) origin: Vec3,
    pub(crate) axis: Vec3,
    pub(crate) height: f64,
    pub(crate) radius: f64,
}

impl Cylinder {
    /// Distance from `p`; 0 inside. The solid is the product of a segment (along the axis) and a
    /// disc (across it), so the distance is the hypotenuse of the two one-sided excesses.
    #[inline]
    pub(crate) fn distance(&self, p: Vec3) -> f64 {
        let d = sub(p, self.origin);
        let s = dot(d, self.axis);
        // The radial part as a vector, not as |d|² − s², which cancels badly far along the axis.
        let radial = norm(sub(d, scale(self.axis, s)));
        let along = (-s).max(s - self.height).max(0.0);
        let across = (radial - self.radius).max(0.0);
        (along * along + across * across).sqrt()
    }

    /// Exact box: each end disc reaches `radius · √(1 − axisᵢ²)` along world axis `i`.
    pub(crate) fn aabb(&self) -> Aabb {
        let top = add(self.origin, scale(self.axis, self.height));
        let reach = self.axis.map(|a| self.radius * (1.0 - a * a).max(0.0).sqrt() + AABB_PAD_M);
        Aabb {
            min: [0, 1, 2].map(|i| self.origin[i].min(top[i]) - reach[i]),
            max: [0, 1, 2].map(|i| self.origin[i].max(top[i]) + reach[i]),
        }
    }

    /// Midpoint of the axis segment.
    pub(crate) fn centre(&self) -> Vec3 {
        add(self.origin, scale(self.axis, self.height / 2.0))
    }
}
