//! The one error type: where in the chain a rule is broken, and which rule.

/// Why a `FilterChain` was rejected.
///
/// `path` locates the offending part inside the chain, starting at the filter index, e.g.
/// `[0].Children.all[1].Match`, so callers can prefix it with where the chain sits
/// (`topics[0].FilterChain`). It is empty when the chain itself is wrong (not an array).
/// Displays as `{path}: {message}`, or just the message when the path is empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}{sep}{message}", sep = separator(.path))]
pub struct FilterError {
    /// Location inside the chain, e.g. `[0].Children.all[1].Match`.
    pub path: String,
    /// The rule broken, e.g. `Match must be a number for lt`.
    pub message: String,
}

impl FilterError {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self { path: path.into(), message: message.into() }
    }
}

fn separator(path: &str) -> &'static str {
    if path.is_empty() { "" } else { ": " }
}

#[cfg(test)]
mod tests {
    use super::FilterError;

    #[test]
    fn display_joins_path_and_message() {
        let err = FilterError::new("[0].Type", "unknown filter type 'foo'");
        assert_eq!(err.to_string(), "[0].Type: unknown filter type 'foo'");
    }

    #[test]
    fn display_without_path_is_the_message() {
        let err = FilterError::new("", "must be a JSON array of filters, got string");
        assert_eq!(err.to_string(), "must be a JSON array of filters, got string");
    }
}
