//! The store's error type: typed outcomes the API maps to 404/422, and opaque failures.

/// Result of every store operation.
pub type Result<T> = std::result::Result<T, StoreError>;

/// What went wrong in the store. `Display` never carries SQL, connection strings or
/// secrets: `NotFound`, `InUse` and `Reference` reach HTTP clients; the `String` of
/// `Unavailable` and `Backend` is for logs only.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The addressed row does not exist (`id`: upper-case UUID or MAC).
    #[error("{what} {id} not found")]
    NotFound {
        /// Kind of row, e.g. `"zone"`.
        what: &'static str,
        /// Its identity as the API shows it.
        id: String,
    },
    /// The row cannot be deleted because another row refers to it.
    #[error("{what} {id} is used by {by}")]
    InUse {
        /// Kind of row, e.g. `"certificate profile"`.
        what: &'static str,
        /// Its identity as the API shows it.
        id: String,
        /// The referring row, e.g. `"connection <ID>"`.
        by: String,
    },
    /// A written row refers to a row that does not exist.
    #[error("{field}: {what} {id} does not exist")]
    Reference {
        /// Field of the written row, e.g. `"CertificateProfileID"`.
        field: &'static str,
        /// Kind of the missing row.
        what: &'static str,
        /// Identity of the missing row.
        id: String,
    },
    /// A row cannot be added: `max` of its kind exist already.
    #[error("at most {max} {what}s may exist; delete one first")]
    Full {
        /// Kind of row, e.g. `"MQTT connection"`.
        what: &'static str,
        /// The bound.
        max: usize,
    },
    /// A conditional write found the row at another version than the writer read: a
    /// concurrent write came first. Read again and retry, or report the stale precondition.
    #[error("{what} {id} was changed by another write")]
    Conflict {
        /// Kind of row, e.g. `"zone"`.
        what: &'static str,
        /// Its identity as the API shows it.
        id: String,
    },
    /// A collision write named partitions at an older ownership epoch than the store holds:
    /// another evaluator owns them now, and the write was refused whole.
    #[error("partitions {partitions:?} are owned by another evaluator now")]
    Fenced {
        /// The partitions lost.
        partitions: Vec<u32>,
    },
    /// The database cannot be reached (connect, pool, busy). The text is for logs only.
    #[error("store unavailable")]
    Unavailable(String),
    /// Any other failure. The text is for logs only.
    #[error("store error")]
    Backend(String),
}

impl StoreError {
    /// The error with its cause, for operators (start-up errors, logs); never for clients.
    pub fn detail(&self) -> String {
        match self {
            Self::Unavailable(cause) => format!("store unavailable: {cause}"),
            Self::Backend(cause) => format!("store error: {cause}"),
            other => other.to_string(),
        }
    }

    /// `NotFound` for `what` with the API's upper-case spelling of `id`.
    pub(crate) fn not_found(what: &'static str, id: &uuid::Uuid) -> Self {
        Self::NotFound { what, id: zonecast_model::format_id(id) }
    }

    /// `Conflict` for `what` with the API's upper-case spelling of `id`.
    pub(crate) fn conflict(what: &'static str, id: &uuid::Uuid) -> Self {
        Self::Conflict { what, id: zonecast_model::format_id(id) }
    }

    /// The certificate profile a connection names does not exist.
    pub(crate) fn missing_profile(id: Option<uuid::Uuid>) -> Self {
        Self::Reference {
            field: "CertificateProfileID",
            what: "certificate profile",
            id: id.as_ref().map(zonecast_model::format_id).unwrap_or_default(),
        }
    }

    /// A certificate profile is still used by connection `by`.
    pub(crate) fn profile_in_use(id: &uuid::Uuid, by: &uuid::Uuid) -> Self {
        Self::InUse {
            what: "certificate profile",
            id: zonecast_model::format_id(id),
            by: format!("connection {}", zonecast_model::format_id(by)),
        }
    }

    /// A row with this identity exists already; a caller bug (identities are fresh UUIDs),
    /// so it is a backend error rather than a client-facing one.
    pub(crate) fn duplicate(what: &'static str, id: &uuid::Uuid) -> Self {
        Self::Backend(format!("duplicate {what} {}", zonecast_model::format_id(id)))
    }
}
