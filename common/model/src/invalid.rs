//! The one validation error: which field broke which rule.

use std::fmt;

/// Invalid input data: `field` is the JSON path of the offending value (e.g. `GeometryData[1]`),
/// `message` the rule it breaks. Displayed as `field: message`, which is what the API returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// JSON path of the offending value; empty for the whole document.
    pub field: String,
    /// The rule that was broken, in plain words.
    pub message: String,
}

impl Invalid {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }

    /// The same error with `prefix` put in front of its field path (`[2]` + `Name` → `[2].Name`).
    pub fn within(mut self, prefix: &str) -> Self {
        self.field = if self.field.is_empty() {
            prefix.to_owned()
        } else if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() { f.write_str(&self.message) } else { write!(f, "{}: {}", self.field, self.message) }
    }
}

impl std::error::Error for Invalid {}
