//! Publishing normalised positions on `<prefix>.positions.<P>.<MAC>`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use zonecast_bus::{Bus, BusError, Subjects};
use zonecast_model::PositionUpdate;

/// Why positions were not published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The bus is not connected: nothing was accepted.
    #[error("the message bus is not connected")]
    Disconnected,
    /// Publishing failed part-way.
    #[error("publishing failed: {0}")]
    Bus(#[from] BusError),
}

/// Why a payload was not taken.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// Not JSON, or not an object or array (HTTP 400).
    #[error("request body is {0}")]
    Malformed(String),
    /// The positions could not be published (HTTP 503).
    #[error(transparent)]
    Publish(#[from] PublishError),
}

/// Publishes positions on their partition subjects.
#[derive(Clone)]
pub struct Publisher {
    bus: Arc<dyn Bus>,
    subjects: Subjects,
    partitions: u32,
    site_id: i64,
}

impl Publisher {
    /// A publisher on `bus` with `partitions` partitions, stamping `site_id`.
    pub fn new(bus: Arc<dyn Bus>, subjects: Subjects, partitions: u32, site_id: i64) -> Self {
        Self { bus, subjects, partitions, site_id }
    }

    /// Whether publishing can work now (the HTTP input answers 503 otherwise).
    pub fn ready(&self) -> bool {
        self.bus.is_connected()
    }

    /// Normalises `payload` (raw bytes) received now on `input` (`http`, `nats`, `mqtt`),
    /// publishes what is valid and counts both outcomes.
    pub async fn accept(&self, payload: &[u8], input: &'static str) -> Result<crate::Outcome, AcceptError> {
        let now = Utc::now();
        let results = match crate::normalize_bytes(payload, now) {
            Ok(r) => r,
            Err(reason) => {
                metrics::counter!("zonecast_ingest_rejected_total", "input" => input).increment(1);
                return Err(AcceptError::Malformed(reason));
            }
        };
        let mut valid = Vec::with_capacity(results.len());
        let mut outcome = crate::Outcome::default();
        for element in results {
            match element.result {
                Ok(update) => valid.push(update),
                Err(reason) => outcome.rejected.push((element.index, reason)),
            }
        }
        outcome.accepted = self.publish(&valid, now).await?;
        metrics::counter!("zonecast_ingest_accepted_total", "input" => input).increment(outcome.accepted as u64);
        metrics::counter!("zonecast_ingest_rejected_total", "input" => input).increment(outcome.rejected.len() as u64);
        Ok(outcome)
    }

    /// Publishes `updates`, produced at `now`, returning how many. Refuses everything when the
    /// bus is not connected.
    pub async fn publish(&self, updates: &[PositionUpdate], now: DateTime<Utc>) -> Result<usize, PublishError> {
        if !self.ready() {
            return Err(PublishError::Disconnected);
        }
        let local = zonecast_model::format_timestamp(&now);
        // Positions of one batch mostly share their timestamp: format it once.
        let mut last: Option<(DateTime<Utc>, String)> = None;
        let mut count = 0;
        for update in updates {
            let subject = self.subjects.positions(update.mac.partition(self.partitions), update.mac.as_str());
            let stamp = match &last {
                Some((t, text)) if *t == update.timestamp => text,
                _ => &last.insert((update.timestamp, zonecast_model::format_timestamp(&update.timestamp))).1,
            };
            let payload = update.event_bytes(self.site_id, stamp, &local);
            if self.bus.hands_over_decoded() {
                // In one process the evaluator takes the fix as it is, without parsing the bytes.
                self.bus.publish_decoded(subject, payload.into(), Arc::new(update.fix())).await?;
            } else {
                self.bus.publish(subject, payload.into()).await?;
            }
            count += 1;
        }
        Ok(count)
    }
}
