//! Position ingestion shared by every input path (NATS, MQTT, HTTP): payloads become validated
//! [`PositionUpdate`]s ([`normalize`]), which are published on their device's partition subject
//! ([`Publisher`]).

mod normalize;
mod pressure;
mod publish;
mod rejection;

pub use normalize::{Element, normalize, normalize_bytes};
pub use pressure::{Behind, Pressure};
pub use publish::{AcceptError, PublishError, Publisher, Taken};
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
    pub fn answer(&self) -> PositionAnswer {
        let rejected =
            self.rejected.iter().map(|(index, m)| RejectedElement { index: *index, message: m.to_string() }).collect();
        PositionAnswer { accepted: self.accepted, rejected }
    }
}

/// The body of position input over HTTP: one `LOCATION_RAW_UPDATE` or `LOCATION_BATCH_UPDATE`
/// event, a compact `{"MAC", "Position", "Timestamp"?}` object, or an array of these. Each
/// element is answered on its own, so any object or array is taken.
#[derive(schemars::JsonSchema)]
#[schemars(transform = object_or_array)]
pub struct PositionInput {}

fn object_or_array(schema: &mut schemars::Schema) {
    schema.insert("type".into(), serde_json::json!(["object", "array"]));
}

/// The answer to position input over HTTP.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PositionAnswer {
    /// Positions published.
    pub accepted: usize,
    /// The elements refused, each with its reason.
    pub rejected: Vec<RejectedElement>,
}

/// One refused element of position input.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RejectedElement {
    /// Index of the element in the top-level array (0 for a single object).
    pub index: usize,
    /// Why, naming the field.
    pub message: String,
}
