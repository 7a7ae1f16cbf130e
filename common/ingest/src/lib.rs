//! Position ingestion shared by every input path (NATS, MQTT, HTTP): payloads become validated
//! [`PositionUpdate`]s ([`normalize`]), which are published on their device's partition subject
//! ([`Publisher`]).

mod normalize;
mod publish;
mod rejection;

pub use normalize::{Element, normalize, normalize_bytes};
pub use publish::{AcceptError, PublishError, Publisher};
pub use rejection::{Malformed, Problem, Rejection};
pub use zonecast_model::PositionUpdate;

/// What became of a payload: how many positions were published, and each rejected element
/// with its index and reason.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// Positions published.
    pub accepted: usize,
    /// `(index, reason)` of each rejected element.
    pub rejected: Vec<(usize, Rejection)>,
}

impl Outcome {
    /// The HTTP answer: `{"accepted": n, "rejected": [{"index", "message"}]}`.
    pub fn answer(&self) -> serde_json::Value {
        let rejected: Vec<serde_json::Value> =
            self.rejected.iter().map(|(i, m)| serde_json::json!({"index": i, "message": m.to_string()})).collect();
        serde_json::json!({"accepted": self.accepted, "rejected": rejected})
    }
}
