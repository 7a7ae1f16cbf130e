//! Tiny `[f64; 3]` helpers: just enough vector maths to validate shapes and measure distances.

/// A point or direction `[x, y, z]` in the site frame, metres.
pub type Vec3 = [f64; 3];

/// `a - b`.
pub(crate) fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// `a + b`.
pub(crate) fn add(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// `v * k`.
pub(crate) fn scale(v: Vec3, k: f64) -> Vec3 {
    [v[0] * k, v[1] * k, v[2] * k]
}

/// Dot product.
pub(crate) fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Cross product `a × b`.
pub(crate) fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// Euclidean length.
pub(crate) fn norm(v: Vec3) -> f64 {
    dot(v, v).sqrt()
}

/// Distance between two points.
pub(crate) fn distance(a: Vec3, b: Vec3) -> f64 {
    norm(sub(a, b))
}

/// True when every component is finite.
pub(crate) fn is_finite(v: Vec3) -> bool {
    v.iter().all(|c| c.is_finite())
}

/// `v` at unit length, or `None` for the zero vector (or a non-finite one).
///
/// Dividing by the largest component first keeps the squared length from overflowing or
/// underflowing, so any finite non-zero vector normalises, from 1e-300 to 1e300.
pub(crate) fn normalize(v: Vec3) -> Option<Vec3> {
    let largest = v.iter().fold(0.0_f64, |m, c| m.max(c.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return None;
    }
    let scaled = scale(v, 1.0 / largest);
    let unit = scale(scaled, 1.0 / norm(scaled));
    is_finite(unit).then_some(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_gives_unit_length_in_the_same_direction() {
        for v in [[3.0, 4.0, 0.0], [1e-300, -2e-300, 0.0], [1e300, 1e300, -1e300], [0.0, 0.0, -7.0]] {
            let Some(u) = normalize(v) else { panic!("{v:?} did not normalise") };
            assert!((norm(u) - 1.0).abs() < 1e-15, "{u:?}");
            assert!(dot(u, scale(v, 1.0 / v.iter().fold(0.0, |m: f64, c| m.max(c.abs())))) > 0.0);
        }
    }

    #[test]
    fn normalize_rejects_zero_and_non_finite_vectors() {
        assert_eq!(normalize([0.0, 0.0, 0.0]), None);
        assert_eq!(normalize([-0.0, 0.0, 0.0]), None);
        assert_eq!(normalize([f64::NAN, 1.0, 0.0]), None);
        assert_eq!(normalize([f64::INFINITY, 1.0, 0.0]), None);
    }

    #[test]
    fn cross_follows_the_right_hand_rule() {
        assert_eq!(cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]), [0.0, 0.0, 1.0]);
        assert_eq!(add([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]), [2.0, 3.0, 4.0]);
        assert_eq!(distance([1.0, 1.0, 1.0], [1.0, 4.0, 5.0]), 5.0);
    }
}
