//! Position ingestion shared by every input path (NATS, MQTT, HTTP): payloads become validated
//! [`PositionUpdate`]s ([`normalize`]), which are published on their device's partition subject
//! ([`Publisher`]).

mod normalize;
mod publish;

pub use normalize::{Element, normalize};
pub use publish::{PublishError, Publisher};
pub use zonecast_model::PositionUpdate;

/// The HTTP answer for `results`: `{"accepted": n, "rejected": [{"index", "message"}]}`.
pub fn answer(results: &[Element]) -> serde_json::Value {
    let rejected: Vec<serde_json::Value> = results
        .iter()
        .filter_map(|e| e.result.as_ref().err().map(|m| serde_json::json!({"index": e.index, "message": m})))
        .collect();
    serde_json::json!({"accepted": results.len() - rejected.len(), "rejected": rejected})
}
