//! Occupancy limits: after each write of collision changes, the zones with limits whose
//! collisions it changed are counted in the store, over the collisions every evaluator wrote
//! (the count is site-wide, not per partition). The store moves each zone's state on and keeps
//! every change whose event is not stored yet; the evaluator whose count found a change stores
//! its event in the journal and marks it stored. One that stops in between leaves it to the
//! next count of the zone after [`ORPHANED`], which stores it with the same EventID.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_bus::journal::Record;
use zonecast_bus::{Journal, Subjects};
use zonecast_model::{Content, Event, EventId, EventSource, IdSource, ZoneOccupancy};
use zonecast_store::{EvaluatorStore, OccupancyChange, OccupancyLimits, OccupancyState};

/// How long a change found by another count may wait for its event before this evaluator
/// stores it: its finder has stopped.
const ORPHANED: chrono::Duration = chrono::Duration::seconds(5);

/// A zone whose count may have changed: its limits, name and AlertLevel as the evaluator has
/// them (no limits: the zone has none any more).
#[derive(Debug, Clone, PartialEq)]
pub struct Recount {
    /// The zone and its limits.
    pub limits: OccupancyLimits,
    /// The zone's name, for the event.
    pub name: String,
    /// The zone's AlertLevel, for the event.
    pub alert_level: u64,
}

/// The zones to count after the next write, and where their events go.
pub struct Occupancy {
    journal: Arc<dyn Journal>,
    subjects: Subjects,
    site_id: i64,
    pending: BTreeMap<Uuid, Recount>,
}

impl Occupancy {
    /// Counts for an evaluator of site `site_id` storing events in `journal`.
    pub fn new(journal: Arc<dyn Journal>, subjects: Subjects, site_id: i64) -> Self {
        Self { journal, subjects, site_id, pending: BTreeMap::new() }
    }

    /// Counts `recount`'s zone after the next write (its latest limits win).
    pub fn add(&mut self, recount: Recount) {
        self.pending.insert(recount.limits.zone, recount);
    }

    /// Whether no zone waits to be counted.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Counts the zones waiting, stores the event of each change found and marks it stored.
    /// On an error they wait for the next try.
    pub async fn count(&mut self, store: &dyn EvaluatorStore) -> Result<(), String> {
        let limits: Vec<OccupancyLimits> = self.pending.values().map(|r| r.limits).collect();
        let now = Utc::now();
        let changes = store.count_occupancy(&limits, now).await.map_err(|e| e.detail())?;
        // A change another count found is its finder's to store, unless that one has stopped.
        for change in changes.into_iter().filter(|c| c.fresh || now - c.changed_at >= ORPHANED) {
            let Some(zone) = self.pending.get(&change.zone) else { continue };
            let event = event(&change, zone, self.site_id, Utc::now());
            let Some(subject) = self.subjects.of_event(&event) else { continue };
            let payload = serde_json::to_vec(&event).map_err(|e| e.to_string())?;
            let record = Record { subject, payload: payload.into(), id: event.event_id.to_string() };
            self.journal.append(vec![record]).await.map_err(|e| e.to_string())?;
            metrics::counter!("zonecast_evaluator_events_total", "type" => event.kind().as_str()).increment(1);
            store.occupancy_published(change.zone, change.generation).await.map_err(|e| e.detail())?;
        }
        self.pending.clear();
        Ok(())
    }
}

/// The event of `change` in `zone`, produced at `now`. Its IDs are keyed by the zone and the
/// change's generation: the same change stored again is recognised as the same event.
fn event(change: &OccupancyChange, zone: &Recount, site_id: i64, now: DateTime<Utc>) -> Event {
    let content = ZoneOccupancy {
        zone_id: change.zone,
        zone_name: zone.name.clone(),
        alert_level: zone.alert_level,
        count: change.count,
        max_occupancy: zone.limits.max,
        min_occupancy: zone.limits.min,
    };
    let content = match change.state {
        OccupancyState::Above => Content::ZoneOccupancyExceeded(content),
        OccupancyState::Below => Content::ZoneOccupancyBelow(content),
        OccupancyState::Within => Content::ZoneOccupancyRestored(content),
    };
    let mut ids = IdSource::keyed(change.changed_at, &[change.zone.as_bytes(), &change.generation.to_be_bytes()]);
    Event {
        event_id: EventId(ids.next(change.changed_at)),
        timestamp: change.changed_at,
        local_timestamp: now,
        source: EventSource { mac: None, gateway_uri: None, site_id },
        content,
        device: None,
    }
}
