//! Why an element of a position payload was rejected, and why a whole payload was: typed, with
//! the messages the HTTP answer and the logs show as their `Display`.

/// What is wrong with one field of a position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The field is missing.
    #[error("is required")]
    Required,
    /// The field is not a string.
    #[error("must be a string")]
    NotAString,
    /// The MAC does not parse; the model's reason.
    #[error("{0}")]
    BadMac(String),
    /// `Position` or `Velocity` is not three finite numbers.
    #[error("must be an array of three finite numbers")]
    NotThreeFinite,
    /// `Orientation` is not four finite numbers.
    #[error("must be an array of four finite numbers (w, x, y, z)")]
    NotFourFinite,
    /// `Timestamp` is a string but not an ISO 8601 time.
    #[error("'{0}' is not an ISO 8601 time")]
    NotIsoTime(String),
    /// `Timestamp` is not a string.
    #[error("must be an ISO 8601 string")]
    NotIsoString,
    /// `Sequence` is not a non-negative integer.
    #[error("must be a non-negative integer")]
    NotNonNegativeInteger,
}

/// Why one element of a payload was rejected (`{"index", "message"}` of the HTTP answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// Neither an event nor the compact form.
    #[error("must be a position object (a LOCATION_RAW_UPDATE event or {{\"MAC\", \"Position\"}})")]
    NotAPosition,
    /// An event of a type that carries no position.
    #[error("Type: '{0}' is not a position event (LOCATION_RAW_UPDATE or LOCATION_BATCH_UPDATE)")]
    NotAPositionType(String),
    /// A `LOCATION_BATCH_UPDATE` without its list.
    #[error("Content: a LOCATION_BATCH_UPDATE holds a list of raw updates")]
    BatchWithoutList,
    /// A `LOCATION_RAW_UPDATE` whose Content is not an object.
    #[error("Content: must be an object with Position")]
    ContentNotAnObject,
    /// One field is wrong.
    #[error("{field}: {problem}")]
    Field {
        /// The field's path, e.g. `Source.MAC`.
        field: &'static str,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A value the JSON parser cannot read (a number beyond the range of a double).
    #[error("{}", unreadable_message(.path, .reason))]
    Unreadable {
        /// Where the value is, e.g. `Content.Position[2]`; empty for the element itself.
        path: String,
        /// The parser's reason, e.g. `number out of range`; empty when it gave none.
        reason: String,
    },
    /// Item `index` of a batch's list, in a top-level array.
    #[error("Content[{index}]: {reason}")]
    InBatch {
        /// Index in the batch's list.
        index: usize,
        /// Why the item was rejected.
        reason: Box<Rejection>,
    },
}

impl Rejection {
    /// `field` has `problem`.
    pub(crate) fn field(field: &'static str, problem: Problem) -> Self {
        Self::Field { field, problem }
    }
}

fn unreadable_message(path: &str, reason: &str) -> String {
    match (path.is_empty(), reason.is_empty()) {
        (_, true) => "could not be read".to_owned(),
        (true, false) => reason.to_owned(),
        (false, false) => format!("{path}: {reason}"),
    }
}

/// Why a whole payload was refused (HTTP 400): only when it is not JSON at all, or JSON that
/// is neither an object nor an array.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// Not JSON; the parser's reason.
    #[error("not valid JSON: {0}")]
    NotJson(String),
    /// JSON, but a scalar.
    #[error("body must be a JSON object or array")]
    NotObjectOrArray,
}
