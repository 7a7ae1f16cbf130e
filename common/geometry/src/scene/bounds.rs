//! Boxes in `f32`, rounded outward, for the static index: half the bytes of `f64`, so twice as
//! many stay in cache. A stored box holds its exact `f64` box, so a test against it never misses
//! an item; where the test is decided only by rounding (within about an `f32` ulp of a face), the
//! exact box, which the caller keeps, decides.

use crate::aabb::Aabb;

/// A query box, exact and rounded outward to `f32` for the tests against stored boxes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Query {
    pub(crate) exact: Aabb,
    pub(crate) min: [f32; 3],
    pub(crate) max: [f32; 3],
}

impl Query {
    pub(crate) fn new(exact: Aabb) -> Self {
        Self { exact, min: exact.min.map(outward_down), max: exact.max.map(outward_up) }
    }
}

/// Whether an item whose exact box rounded outward to `f32` is `[min, max]` surely intersects the
/// query: the exact bound lies within one `f32` ulp inside the stored one, so only a query ending
/// within (a little more than) that band needs the exact box.
#[inline]
pub(crate) fn surely_overlaps(min: [f32; 3], max: [f32; 3], query: &Query) -> bool {
    (0..3).fold(true, |acc, i| {
        acc & (inward_up(min[i]) <= query.exact.max[i]) & (query.exact.min[i] <= inward_down(max[i]))
    })
}

/// A little more than two `f32` ulps, relative: rounding to the nearest `f32` moves a value by at
/// most half an ulp, so a value moved by this first still ends up on the same side.
const F32_SLACK: f64 = 1.0 / (1u64 << 22) as f64;

/// An `f32` at or below `x`, without branches (so, for a query, cheaply); a few ulps low.
fn outward_down(x: f64) -> f32 {
    (x - x.abs() * F32_SLACK - f64::from(f32::MIN_POSITIVE)) as f32
}

/// An `f32` at or above `x`, without branches; a few ulps high.
fn outward_up(x: f64) -> f32 {
    (x + x.abs() * F32_SLACK + f64::from(f32::MIN_POSITIVE)) as f32
}

/// A value at or above the next `f32` above `f`: exact bounds stored as `f32` rounded down lie
/// below it.
fn inward_up(f: f32) -> f64 {
    let x = f64::from(f);
    x + x.abs() * F32_SLACK + f64::from(f32::MIN_POSITIVE)
}

/// A value at or below the next `f32` below `f`.
fn inward_down(f: f32) -> f64 {
    let x = f64::from(f);
    x - x.abs() * F32_SLACK - f64::from(f32::MIN_POSITIVE)
}

/// The largest `f32` not above `x` (NaN stays NaN, which then matches nothing).
pub(crate) fn round_down(x: f64) -> f32 {
    let f = x as f32;
    if f as f64 > x { f.next_down() } else { f }
}

/// The smallest `f32` not below `x`.
pub(crate) fn round_up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x { f.next_up() } else { f }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outward_rounding_goes_outward() {
        for x in [0.1_f64, -0.1, 1e9, -1e9, 0.0, 123.456_789, 1e-40] {
            assert!(f64::from(outward_down(x)) <= x && f64::from(outward_up(x)) >= x, "{x}");
            let f = outward_down(x);
            assert!(inward_up(f) >= f64::from(f.next_up()), "{x}");
            let f = outward_up(x);
            assert!(inward_down(f) <= f64::from(f.next_down()), "{x}");
        }
        assert_eq!(round_down(0.1) as f64, 0.1_f32.next_down() as f64);
        assert_eq!(round_up(1e9), 1e9_f32);
    }
}
