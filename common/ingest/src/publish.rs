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

    /// Normalises `payload` received now on `input` (`http`, `nats`, `mqtt`), publishes what is
    /// valid and counts both outcomes. Returns every element with its outcome.
    pub async fn accept(&self, payload: &serde_json::Value, input: &'static str) -> Result<Vec<crate::Element>, PublishError> {
        let now = Utc::now();
        let results = crate::normalize(payload, now);
        let accepted: Vec<PositionUpdate> = results.iter().filter_map(|e| e.result.as_ref().ok().cloned()).collect();
        self.publish(&accepted, now).await?;
        metrics::counter!("zonecast_ingest_accepted_total", "input" => input).increment(accepted.len() as u64);
        metrics::counter!("zonecast_ingest_rejected_total", "input" => input).increment((results.len() - accepted.len()) as u64);
        Ok(results)
    }

    /// Publishes `updates`, produced at `now`. Refuses everything when the bus is not connected.
    pub async fn publish(&self, updates: &[PositionUpdate], now: DateTime<Utc>) -> Result<(), PublishError> {
        if !self.ready() {
            return Err(PublishError::Disconnected);
        }
        for update in updates {
            let subject = self.subjects.positions(update.mac.partition(self.partitions), update.mac.as_str());
            let event = update.to_event(self.site_id, now);
            // An envelope of strings and numbers always serialises.
            let payload = serde_json::to_vec(&event).unwrap_or_default();
            self.bus.publish(subject, payload.into()).await?;
        }
        Ok(())
    }
}
