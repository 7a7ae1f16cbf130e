//! Helpers shared by the integration tests: validate expecting acceptance or a rejection.
// Each test crate uses a different subset of these.
#![allow(dead_code)]

use zonecast_geometry::{GeometryError, GeometryType, Shape, Vec3, validate};

/// The shape `rows` validate to; fails the test with the error otherwise.
pub fn accept(kind: GeometryType, rows: &[Vec3]) -> Shape {
    match validate(kind, rows) {
        Ok(shape) => shape,
        Err(e) => panic!("expected {kind} {rows:?} to validate, got: {e}"),
    }
}

/// The error `rows` are rejected with; fails the test if they validate.
pub fn reject(kind: GeometryType, rows: &[Vec3]) -> GeometryError {
    match validate(kind, rows) {
        Ok(shape) => panic!("expected {kind} {rows:?} to be rejected, got {shape:?}"),
        Err(e) => e,
    }
}

/// The displayed error `rows` are rejected with.
pub fn message(kind: GeometryType, rows: &[Vec3]) -> String {
    reject(kind, rows).to_string()
}

/// Asserts `a` and `b` agree to within `1e-12` in every component.
pub fn assert_close(a: Vec3, b: Vec3) {
    assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12), "{a:?} != {b:?}");
}

/// Euclidean length.
pub fn length(v: Vec3) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}
