//! Where the engine's outputs go: events stored in the journal (and so published) before
//! anything acts on them, http-request actions after their events, collision changes to their
//! writer, lag recorded, and the lines an operator reads.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;
use zonecast_bus::journal::Record;
use zonecast_bus::{Bus, Journal, Subjects};
use zonecast_model::{ActionRequest, Content, EventType, PositionFix};
use zonecast_runtime::backoff::Backoff;
use zonecast_runtime::ratelog::RateLimited;

use super::{Engine, Output};
use crate::collisions;

/// Where the engine's outputs go.
pub(super) struct Shell {
    pub(super) bus: Arc<dyn Bus>,
    /// Events are stored here (and so published) before anything acts on them.
    pub(super) journal: Arc<dyn Journal>,
    /// The events of the outputs being emitted, appended together.
    pub(super) records: Vec<Record>,
    /// The http-request actions of the outputs being emitted, appended after their events.
    pub(super) requests: Vec<Record>,
    pub(super) subjects: Subjects,
    /// Where each turn's collision changes go, with the stored batches it evaluated.
    pub(super) collisions: mpsc::UnboundedSender<collisions::Turn>,
    /// The collision changes of the turn under way.
    pub(super) changes: Vec<collisions::Change>,
    /// The zones with occupancy limits to count once the turn is written.
    pub(super) recounts: Vec<crate::occupancy::Recount>,
    /// Turns sent to the writer.
    pub(super) turns: u64,
    /// When the last turn was sent.
    pub(super) last_turn: tokio::time::Instant,
    pub(super) publish_log: RateLimited,
    pub(super) positions_total: metrics::Counter,
    /// `zonecast_evaluator_events_total` of each type, looked up once.
    pub(super) events_total: HashMap<EventType, metrics::Counter>,
    /// Positions older than the last one applied for their device, not applied.
    pub(super) out_of_order_total: metrics::Counter,
    pub(super) out_of_order_log: RateLimited,
    pub(super) lag: metrics::Histogram,
    /// The largest lag among the positions taken from the bus together, not yet recorded.
    pub(super) batch_lag: Option<f64>,
    /// How long the positions evaluated have waited since acceptance, for the lag reports.
    pub(super) accepted_lag: Arc<super::lag::Lag>,
    /// When the oldest of the positions taken together was accepted (Unix ms), not yet
    /// recorded.
    pub(super) batch_accepted_ms: Option<u64>,
    /// Ends the retries of events that cannot be stored.
    pub(super) shutdown: zonecast_runtime::Shutdown,
    /// Events of the turn under way could not be stored before `shutdown`: the turn must end
    /// with nothing written or acknowledged.
    pub(super) abandoned: bool,
}

impl Shell {
    pub(super) fn position(
        &mut self,
        engine: &mut Engine,
        fix: Result<PositionFix, String>,
        unreadable_log: &mut RateLimited,
        out: &mut Vec<Output>,
    ) {
        match fix {
            Ok(p) => {
                let now = Utc::now();
                self.positions_total.increment(1);
                // Lag: measurement to evaluation (includes ingestion and the bus).
                let lag = (now - p.timestamp).num_microseconds().unwrap_or(0) as f64 / 1e6;
                self.batch_lag = Some(self.batch_lag.map_or(lag, |l| l.max(lag)));
                if let Some(accepted) = p.event_id.and_then(zonecast_model::lag::accepted_ms) {
                    self.batch_accepted_ms = Some(self.batch_accepted_ms.map_or(accepted, |a| a.min(accepted)));
                }
                if !engine.on_fix(&p, now, out) {
                    self.out_of_order_total.increment(1);
                    if let Some(held_back) = self.out_of_order_log.allow() {
                        tracing::info!(
                            mac = %p.mac.as_str(),
                            timestamp = %zonecast_model::format_timestamp(&p.timestamp),
                            held_back,
                            "position older than the last one applied for its device skipped"
                        );
                    }
                }
            }
            Err(reason) => {
                metrics::counter!("zonecast_evaluator_bad_messages_total").increment(1);
                if let Some(held_back) = unreadable_log.allow() {
                    tracing::warn!(%reason, held_back, "position message skipped");
                }
            }
        }
    }

    /// Records the lag of the positions taken together (a turn's) as one sample, their
    /// largest, and their age since acceptance for the lag reports: once per batch instead of
    /// per position.
    pub(super) fn record_lag(&mut self) {
        if let Some(lag) = self.batch_lag.take() {
            self.lag.record(lag.max(0.0));
        }
        if let Some(accepted) = self.batch_accepted_ms.take() {
            self.accepted_lag.evaluated(accepted);
        }
    }

    /// Stores the events among `out` in the journal first, with the requests of http-request
    /// actions after them (sent from the journal by the actions' consumer), then acts on the
    /// rest (collision records, source hints): nothing acts on an event before it is stored.
    /// `out` is empty afterwards.
    pub(super) async fn emit(&mut self, out: &mut Vec<Output>) {
        // Taken out where they lie: the rest stays in `out`, in order, with nothing copied.
        for output in out.extract_if(.., |o| matches!(o, Output::Publish(_) | Output::Http { .. })) {
            match output {
                Output::Publish(event) => self.record(&event),
                Output::Http { zone, action, uri, method, headers, event, secret } => {
                    self.request(&zone, action, &ActionRequest { uri, method, headers, event, secret });
                }
                _ => {}
            }
        }
        if !self.store_events().await {
            out.clear();
            return;
        }
        for output in out.drain(..) {
            match output {
                // Stored above.
                Output::Publish(_) | Output::Http { .. } => {}
                Output::Entered(c) => self.collision(collisions::Change::Entered(c)),
                Output::Exited { zone, mac } => self.collision(collisions::Change::Exited(zone, mac)),
                Output::Presence(p) => self.collision(collisions::Change::Presence(p)),
                Output::Recount(recount) => self.recounts.push(recount),
                Output::Source(hint) => {
                    let subject = self.subjects.source_position(hint.mac.as_str());
                    let Ok(payload) = serde_json::to_vec(&hint) else { continue };
                    if let Err(e) = self.bus.publish(subject, payload.into()).await {
                        tracing::warn!(error = %e, mac = %hint.mac.as_str(), "mobile-zone source position not told to the other evaluators");
                    }
                }
            }
        }
    }

    /// A collision change of the turn under way.
    pub(super) fn collision(&mut self, change: collisions::Change) {
        self.changes.push(change);
    }

    /// Ends a turn of the loop: its collision changes go to the writer together with the
    /// stored batches it evaluated (their events are stored by now) and the partitions held
    /// with their epochs (so that the store refuses them once another evaluator owns one), so
    /// that the store never holds part of a turn. An idle evaluator still ends a turn every
    /// [`MARK_EVERY`], so that its time mark stays recent. Returns the turn's number, which the
    /// writer counts once written.
    pub(super) fn end_turn(&mut self, batches: Vec<(u32, u64)>, epochs: impl FnOnce() -> Vec<(u32, u64)>) -> u64 {
        // Its events are stored: nothing of it waits any more.
        self.accepted_lag.turn_ended();
        let idle = self.changes.is_empty() && self.recounts.is_empty() && batches.is_empty();
        if idle && self.last_turn.elapsed() < MARK_EVERY {
            return self.turns;
        }
        self.last_turn = tokio::time::Instant::now();
        let turn = collisions::Turn {
            changes: std::mem::take(&mut self.changes),
            batches,
            at: Utc::now(),
            epochs: epochs(),
            recounts: std::mem::take(&mut self.recounts),
        };
        if self.collisions.send(turn).is_ok() {
            self.turns += 1;
        }
        self.turns
    }

    /// Counts and logs an event and adds it to the records to store.
    pub(super) fn record(&mut self, event: &zonecast_model::Event) {
        let kind = event.kind();
        self.events_total
            .entry(kind)
            .or_insert_with(|| metrics::counter!("zonecast_evaluator_events_total", "type" => kind.as_str()))
            .increment(1);
        log_event(event);
        let Some(subject) = self.subjects.of_event(event) else {
            tracing::error!(r#type = kind.as_str(), "event without a subject not published");
            return;
        };
        // Room for a zone event at once, rather than grown from a few bytes by doubling.
        let mut payload = Vec::with_capacity(ENCODED);
        match serde_json::to_writer(&mut payload, event) {
            // Shrunk to its length: the journal holds it until every consumer has it.
            Ok(()) => self.records.push(Record {
                subject,
                payload: payload.into_boxed_slice().into(),
                id: event.event_id.to_string(),
            }),
            Err(e) => tracing::error!(error = %e, "cannot encode event"),
        }
    }

    /// Adds the request of an http-request action to the records to store.
    pub(super) fn request(&mut self, zone: &uuid::Uuid, action: usize, request: &ActionRequest) {
        match action_record(&self.subjects, zone, action, request) {
            Ok(record) => self.requests.push(record),
            Err(reason) => {
                metrics::counter!("zonecast_evaluator_http_actions_unstored_total").increment(1);
                tracing::error!(%reason, "http-request action not stored");
            }
        }
    }

    /// Appends the events gathered by [`Shell::emit`], then the action requests, to the
    /// journal in one call, trying again until they are stored (NATS or JetStream away, a
    /// stream electing a new leader): nothing is acknowledged or written meanwhile, and the
    /// evaluator reports itself as late as it has waited, so ingest pushes back. Each failed
    /// try is counted in `zonecast_evaluator_publish_failures_total`. Returns `false` only when
    /// `shutdown` came first: the turn is then abandoned ([`Shell::abandoned`]), its positions
    /// left unacknowledged for whoever evaluates them next.
    pub(super) async fn store_events(&mut self) -> bool {
        if self.records.is_empty() && self.requests.is_empty() {
            return true;
        }
        let mut records = std::mem::take(&mut self.records);
        let count = records.len();
        records.append(&mut self.requests);
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
        let since = tokio::time::Instant::now();
        loop {
            let e = match self.journal.append(records.clone()).await {
                Ok(()) => return true,
                Err(e) => e,
            };
            metrics::counter!("zonecast_evaluator_publish_failures_total").increment(1);
            let waited = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.accepted_lag.waited(waited);
            if let Some(held_back) = self.publish_log.allow() {
                tracing::warn!(error = %e, events = count, waited_ms = waited, held_back, "events not stored yet; trying again");
            }
            tokio::select! {
                () = self.shutdown.cancelled() => {
                    tracing::warn!(events = count, "stopping with events not stored: their positions are evaluated again by the next owner");
                    self.abandoned = true;
                    return false;
                }
                () = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
    }
}

/// The room an event's JSON is written into: a zone entry or exit takes 400–500 bytes.
const ENCODED: usize = 512;

/// How often an idle evaluator renews its time mark in the store.
const MARK_EVERY: Duration = Duration::from_secs(10);

/// The log lines of an event: every entry at debug (target `zonecast::entry`; entries are
/// events, kept in the journal and history, and would flood an operator's log at info), and the
/// message of every info event at info (target `zonecast::zone_info`: writing that message is
/// the action its zone asks for).
pub(super) fn log_event(event: &zonecast_model::Event) {
    let mac = event.source.mac.as_ref().map_or("", |m| m.as_str());
    match &event.content {
        Content::ZoneEnter(c) => tracing::debug!(
            target: "zonecast::entry",
            zone = %zonecast_model::format_id(&c.zone_id),
            name = %c.zone_name,
            mac = %mac,
            alarm = c.alarm.as_str(),
            "zone entered"
        ),
        Content::ZoneInfo(c) => {
            tracing::info!(target: "zonecast::zone_info", zone = %c.zone_name, mac = %mac, "{}", c.message);
        }
        _ => {}
    }
}

/// The journal record of `request`, the `action`-th of `zone`'s actions: on the zone's subject,
/// its id `<EventID>:<action>`, so that appending it again stores it once. Fails when the
/// secret is not sealed (a secret in clear is never written).
fn action_record(
    subjects: &Subjects,
    zone: &uuid::Uuid,
    action: usize,
    request: &ActionRequest,
) -> Result<Record, String> {
    let payload = serde_json::to_vec(request).map_err(|e| format!("cannot encode the request: {e}"))?;
    Ok(Record {
        subject: subjects.http_action(&zonecast_model::format_id(zone)),
        payload: payload.into(),
        id: format!("{}:{action}", request.event.event_id),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use zonecast_model::{ActionSecret, Event};
    use zonecast_runtime::Keys;

    use super::*;

    #[test]
    fn a_request_is_stored_with_its_secret_sealed_under_the_id_of_its_event_and_action() {
        let sealed = test_keys().seal_text("a-receiver-secret-1").unwrap();
        let request = ActionRequest {
            uri: "https://hooks.example.com/z".into(),
            method: "PUT".into(),
            headers: vec![("X-Site".into(), "north".into())],
            event: event(),
            secret: Some(ActionSecret::Sealed(sealed.clone())),
        };
        let zone = uuid::Uuid::from_u128(0xab);
        let record = action_record(&Subjects::new("p"), &zone, 2, &request).unwrap();
        assert_eq!(record.subject, "p.actions.http.00000000-0000-0000-0000-0000000000AB");
        assert_eq!(record.id, "01900000-0000-7000-8000-000000000001:2");
        let text = String::from_utf8(record.payload.to_vec()).unwrap();
        assert!(text.contains(&sealed) && !text.contains("a-receiver-secret-1"), "{text}");
        let back: ActionRequest = serde_json::from_slice(&record.payload).unwrap();
        assert_eq!(back, request);
        let clear =
            ActionRequest { secret: Some(ActionSecret::Given(zonecast_model::Secret::new("x".repeat(16)))), ..request };
        assert!(action_record(&Subjects::new("p"), &zone, 0, &clear).is_err(), "a secret in clear is never written");
    }

    fn event() -> Event {
        serde_json::from_str(
            r#"{"Category":"ZONE","Type":"ZONE_ENTER","EventID":"01900000-0000-7000-8000-000000000001",
            "Timestamp":"2026-11-21T10:00:00.100Z","LocalTimestamp":"2026-11-21T10:00:00.104Z",
            "Source":{"MAC":"00:AA:BB:CC:DD:EE","GatewayURI":null,"SiteID":501},
            "Content":{"ZoneID":"00000000-0000-0000-0000-0000000000AB","ZoneName":"dock","AlertLevel":5,
            "Alarm":"device","CollisionID":"00000000-0000-0000-0000-0000000000CD",
            "EntryTime":"2026-11-21T10:00:00.100Z","Position":[0.5,1.0,0.0]}}"#,
        )
        .unwrap()
    }

    fn test_keys() -> Keys {
        let secret = zonecast_runtime::Secret::new(zonecast_runtime::keys::random_base64(32).unwrap());
        Keys::from_secret(&secret).unwrap()
    }
}
