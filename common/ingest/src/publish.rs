//! Publishing normalised positions on `<prefix>.positions.<P>.<MAC>`.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use zonecast_bus::{Bus, BusError, Encode, Subjects};
use zonecast_model::{EventId, PositionFix, PositionUpdate};

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
    Malformed(crate::Malformed),
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
        outcome.accepted = self.publish(valid, now).await?;
        metrics::counter!("zonecast_ingest_accepted_total", "input" => input).increment(outcome.accepted as u64);
        metrics::counter!("zonecast_ingest_rejected_total", "input" => input).increment(outcome.rejected.len() as u64);
        Ok(outcome)
    }

    /// Publishes `updates`, produced at `now`, returning how many. Refuses everything when the
    /// bus is not connected.
    pub async fn publish(&self, updates: Vec<PositionUpdate>, now: DateTime<Utc>) -> Result<usize, PublishError> {
        if !self.ready() {
            return Err(PublishError::Disconnected);
        }
        let local: Arc<str> = zonecast_model::format_timestamp(&now).into();
        // Positions of one batch mostly share their timestamp: format it once.
        let mut last: Option<(DateTime<Utc>, Arc<str>)> = None;
        let mut count = 0;
        for update in updates {
            let subject = self.subjects.positions(update.mac.partition(self.partitions), update.mac.as_str());
            let timestamp = match &last {
                Some((t, text)) if *t == update.timestamp => text.clone(),
                _ => last
                    .insert((update.timestamp, zonecast_model::format_timestamp(&update.timestamp).into()))
                    .1
                    .clone(),
            };
            let event = Published {
                fix: update.fix(),
                update,
                event_id: EventId::generate(now),
                site_id: self.site_id,
                timestamp,
                local: local.clone(),
            };
            if self.bus.hands_over_decoded() {
                // In one process the evaluator takes the fix as it is, and the bytes are written
                // only if a subscriber reads them.
                self.bus.publish_decoded(subject, Arc::new(event)).await?;
            } else {
                self.bus.publish(subject, event.encode()).await?;
            }
            count += 1;
        }
        Ok(count)
    }
}

/// A position as published: its fix, which the evaluator takes as it is in one process, and
/// what its event bytes are written from.
#[derive(Debug)]
struct Published {
    fix: PositionFix,
    update: PositionUpdate,
    /// Drawn when the position is published, so every copy of its event carries the same.
    event_id: EventId,
    site_id: i64,
    /// The update's Timestamp and the LocalTimestamp, formatted (shared across a batch).
    timestamp: Arc<str>,
    local: Arc<str>,
}

impl Encode for Published {
    fn decoded(&self) -> &(dyn std::any::Any + Send + Sync) {
        &self.fix
    }

    fn encode(&self) -> Bytes {
        self.update.event_bytes(self.site_id, self.event_id, &self.timestamp, &self.local).into()
    }
}
