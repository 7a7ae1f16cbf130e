//! Checks of single `GeometryData` rows that every kind's validation shares: each rejects a
//! row with an error naming it.

use crate::error::GeometryError;
use crate::vector::{Vec3, is_finite, normalize};

/// Rejects the first row holding NaN or an infinity.
pub(crate) fn all_finite(rows: &[Vec3]) -> Result<(), GeometryError> {
    match rows.iter().position(|row| !is_finite(*row)) {
        Some(i) => Err(GeometryError::at(i, "numbers must be finite")),
        None => Ok(()),
    }
}

/// `value` if it is > 0, else "`name` must be > 0" at `row`.
pub(crate) fn positive(row: usize, value: f64, name: &str) -> Result<f64, GeometryError> {
    if value > 0.0 { Ok(value) } else { Err(GeometryError::at(row, format!("{name} must be > 0"))) }
}

/// The axis in `row` at unit length; a zero axis is rejected.
pub(crate) fn unit_axis(row: usize, axis: Vec3) -> Result<Vec3, GeometryError> {
    normalize(axis).ok_or_else(|| GeometryError::at(row, "axis must not be zero"))
}
