//! Axis-aligned bounding boxes in the site frame.

use crate::vector::Vec3;

/// An axis-aligned box `[min, max]`, closed on every side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lowest corner.
    pub min: Vec3,
    /// Highest corner.
    pub max: Vec3,
}

impl Aabb {
    /// The cube of half-side `radius` around `p`: the box of the ball `(p, radius)`.
    pub fn around(p: Vec3, radius: f64) -> Self {
        Self { min: p.map(|c| c - radius), max: p.map(|c| c + radius) }
    }

    /// The smallest box holding every point of `points`; `None` when there are none.
    pub fn enclosing(points: impl IntoIterator<Item = Vec3>) -> Option<Self> {
        let mut points = points.into_iter();
        let first = points.next()?;
        Some(points.fold(Self { min: first, max: first }, |b, p| Self {
            min: [0, 1, 2].map(|i| b.min[i].min(p[i])),
            max: [0, 1, 2].map(|i| b.max[i].max(p[i])),
        }))
    }

    /// This box grown by `margin` on every side.
    pub fn expanded(&self, margin: f64) -> Self {
        Self { min: self.min.map(|c| c - margin), max: self.max.map(|c| c + margin) }
    }

    /// This box moved by `offset`.
    pub fn translated(&self, offset: Vec3) -> Self {
        Self { min: [0, 1, 2].map(|i| self.min[i] + offset[i]), max: [0, 1, 2].map(|i| self.max[i] + offset[i]) }
    }

    /// Whether the two closed boxes share at least one point (touching counts).
    #[inline]
    pub fn intersects(&self, other: &Aabb) -> bool {
        (0..3).all(|i| self.min[i] <= other.max[i] && other.min[i] <= self.max[i])
    }

    /// Whether `p` lies in the closed box.
    pub fn contains(&self, p: Vec3) -> bool {
        (0..3).all(|i| self.min[i] <= p[i] && p[i] <= self.max[i])
    }

    /// The smallest box holding both.
    pub fn union(&self, other: &Aabb) -> Self {
        Self {
            min: [0, 1, 2].map(|i| self.min[i].min(other.min[i])),
            max: [0, 1, 2].map(|i| self.max[i].max(other.max[i])),
        }
    }

    /// The centre point.
    pub fn centre(&self) -> Vec3 {
        [0, 1, 2].map(|i| 0.5 * (self.min[i] + self.max[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_boxes_intersect_and_separated_ones_do_not() {
        let a = Aabb { min: [0.0; 3], max: [1.0; 3] };
        assert!(a.intersects(&Aabb { min: [1.0, 0.0, 0.0], max: [2.0, 1.0, 1.0] }));
        assert!(!a.intersects(&Aabb { min: [1.0 + 1e-12, 0.0, 0.0], max: [2.0, 1.0, 1.0] }));
        assert!(a.expanded(0.5).contains([1.5, -0.5, 0.0]));
        assert_eq!(a.translated([1.0, 2.0, 3.0]).min, [1.0, 2.0, 3.0]);
        assert_eq!(Aabb::enclosing([[1.0, 5.0, 0.0], [3.0, 2.0, -1.0]]).map(|b| b.max), Some([3.0, 5.0, 0.0]));
        assert_eq!(a.union(&Aabb::around([3.0; 3], 1.0)).max, [4.0; 3]);
        assert_eq!(a.centre(), [0.5; 3]);
    }
}
