//! The validation error: which `GeometryData` row broke which rule.

use std::fmt;

/// Why a `GeometryData` list is not a valid shape.
///
/// Displays as `GeometryData[1]: radius must be > 0` for a problem in one row and as
/// `GeometryData: sphere takes 2 rows, got 3` for one in the list as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("GeometryData{}: {message}", RowLabel(*.row))]
pub struct GeometryError {
    /// Index into `GeometryData` of the offending row, or `None` for the whole list.
    pub row: Option<usize>,
    /// The broken rule, short and human, without the `GeometryData[i]` prefix.
    pub message: String,
}

impl GeometryError {
    /// A problem in row `row`.
    pub(crate) fn at(row: usize, message: impl Into<String>) -> Self {
        Self { row: Some(row), message: message.into() }
    }

    /// A problem with the list as a whole.
    pub(crate) fn list(message: impl Into<String>) -> Self {
        Self { row: None, message: message.into() }
    }
}

/// `[i]` or nothing, as `Display` needs it.
struct RowLabel(Option<usize>);

impl fmt::Display for RowLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(row) => write!(f, "[{row}]"),
            None => Ok(()),
        }
    }
}
