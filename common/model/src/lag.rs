//! How far behind a stage of the pipeline is: what each evaluator and forwarder replica reports
//! on `<prefix>.pipeline.lag`, and what ingest pushes back on.

use uuid::Uuid;

use crate::EventId;

/// A stage that reports its lag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Stage {
    /// Evaluation: accepted positions not yet evaluated.
    #[serde(rename = "evaluator")]
    Evaluator,
    /// MQTT forwarding: stored events not yet acknowledged by a connected broker.
    #[serde(rename = "forwarder")]
    Forwarder,
}

impl Stage {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Evaluator => "evaluator",
            Self::Forwarder => "forwarder",
        }
    }
}

/// One replica's lag: how long ago the oldest thing it is working on, or has just finished,
/// was accepted (a position, or the position that caused an event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LagReport {
    /// The replica (drawn when it starts).
    #[serde(rename = "Replica")]
    pub replica: Uuid,
    /// What it does.
    #[serde(rename = "Stage")]
    pub stage: Stage,
    /// Milliseconds.
    #[serde(rename = "LagMs")]
    pub lag_ms: u64,
}

/// When `id` was drawn, in Unix milliseconds (its time, as a version 7 UUID); `None` for an ID
/// without a time. Positions get their ID when ingest accepts them, and what a position causes
/// takes the same time, so this is when the position was accepted.
pub fn accepted_ms(id: EventId) -> Option<u64> {
    let (secs, nanos) = id.uuid().get_timestamp()?.to_unix();
    Some(secs * 1000 + u64::from(nanos / 1_000_000))
}

/// Milliseconds from [`accepted_ms`] of `id` until `now_ms`.
pub fn age_ms(id: EventId, now_ms: u64) -> Option<u64> {
    Some(now_ms.saturating_sub(accepted_ms(id)?))
}

/// The Unix time in milliseconds.
pub fn now_ms() -> u64 {
    u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_ids_age_is_counted_from_its_time() {
        let id = EventId::generate(chrono::Utc::now() - chrono::Duration::milliseconds(1500));
        let age = age_ms(id, now_ms()).unwrap();
        assert!((1500..2500).contains(&age), "{age}");
        assert_eq!(age_ms(EventId(Uuid::nil()), now_ms()), None);
        let report = LagReport { replica: Uuid::nil(), stage: Stage::Forwarder, lag_ms: 7 };
        let text = serde_json::to_string(&report).unwrap();
        assert_eq!(text, r#"{"Replica":"00000000-0000-0000-0000-000000000000","Stage":"forwarder","LagMs":7}"#);
        assert_eq!(serde_json::from_str::<LagReport>(&text).unwrap(), report);
    }
}
