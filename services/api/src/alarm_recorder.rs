//! The journal consumer `alarms`: it records an open alarm in the store for every alarm event
//! of the events journal (`SITE_ALARM`, `DEVICE_ALARM`, `ZONE_DWELL_EXCEEDED`,
//! `DEVICE_OFFLINE`; [`EventType::ALARMS`]) and acknowledges the event once its row is written,
//! so none is lost: while the store is away the row is tried again with backoff and the
//! journal keeps the events not yet acknowledged, and what is in hand when the API stops is
//! delivered again. Other events are acknowledged at once.
//!
//! Every API replica takes from the same durable consumers, so the journal hands each event to
//! one of them at a time; a copy (a redelivery, or the event appended twice) changes nothing,
//! the row being keyed by the event's `EventID`. Over NATS there is one consumer per subject
//! pattern of the alarm events, `alarms-<pattern>` (`alarms-zone-dwell`, `alarms-alarm-site`,
//! …), so that JetStream hands the API alarm events only rather than every enter and exit; in
//! one process a single consumer, `alarms`, takes every event and passes over the others. The
//! loop is the one every journal consumer runs ([`zonecast_runtime::consume`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinSet;
use zonecast_bus::journal::{Ack, Delivery, Kind};
use zonecast_bus::{Journal, Subjects};
use zonecast_model::{Event, EventType, StoredAlarm};
use zonecast_runtime::Shutdown;
use zonecast_runtime::backoff::Backoff;
use zonecast_runtime::consume::{self, Held, Take};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_store::AlarmWriter;

/// The durable consumer of the events journal that the alarms are recorded from, shared by
/// every API replica; over NATS, the beginning of the name of each narrowed one.
pub const ALARMS_CONSUMER: &str = "alarms";

/// Alarm events held at once by each consumer, being written; the rest wait in the journal.
pub const ALARMS_IN_HAND: usize = 256;

/// The consumers the alarms are recorded from, each with the subject pattern it is narrowed
/// to: where the journal narrows, one per pattern of the alarm events; elsewhere one of every
/// event.
fn consumers(journal: &dyn Journal, subjects: &Subjects) -> Vec<(String, Option<String>)> {
    if !journal.narrows() {
        return vec![(ALARMS_CONSUMER.to_owned(), None)];
    }
    let events = format!("{}.events.", subjects.prefix());
    subjects
        .events_narrowed(&EventType::ALARMS, &[])
        .into_iter()
        .map(|pattern| {
            let tokens = pattern.strip_prefix(&events).unwrap_or(&pattern).split('.');
            let named: Vec<&str> = tokens.filter(|t| *t != "*" && *t != ">").collect();
            (format!("{ALARMS_CONSUMER}-{}", named.join("-")), Some(pattern))
        })
        .collect()
}

/// How long the API's start waits for the consumer to be made.
const PREPARE_FOR: Duration = Duration::from_secs(2);

/// Makes the consumers, so that alarms raised from now on wait for them even before the loops
/// have opened them; a journal away at start (or slower than [`PREPARE_FOR`]) is logged, and
/// the loops make them once the journal answers. Where the journal narrows, the single
/// consumer of every event that earlier releases read is removed.
pub async fn prepare(journal: &dyn Journal, subjects: &Subjects) {
    let made = tokio::time::timeout(PREPARE_FOR, async {
        for (name, filter) in consumers(journal, subjects) {
            match filter {
                Some(filter) => journal.create_narrowed(Kind::Events, &name, &filter, ALARMS_IN_HAND).await?,
                None => journal.create_consumer(Kind::Events, &name, ALARMS_IN_HAND).await?,
            }
        }
        if journal.narrows() {
            journal.remove_consumer(Kind::Events, ALARMS_CONSUMER).await?;
        }
        Ok::<_, zonecast_bus::BusError>(())
    })
    .await;
    match made {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "alarms consumer not made at start; it is made when the journal answers")
        }
        Err(_) => tracing::warn!("alarms consumer not made within 2 s of start; it is made when the journal answers"),
    }
}

/// Starts recording, a loop per consumer, each with a look every [`consume::LOSS_EVERY`] for
/// alarm events that left the journal unrecorded (counted in
/// `zonecast_api_alarm_events_lost_total`): the task ends after `shutdown`, once every row being
/// written is written or left to the journal.
pub fn spawn(
    journal: Arc<dyn Journal>,
    subjects: &Subjects,
    store: Arc<dyn AlarmWriter>,
    shutdown: Shutdown,
) -> tokio::task::JoinHandle<()> {
    let log = Arc::new(Mutex::new(RateLimited::new(Duration::from_secs(30))));
    let mut loops = JoinSet::new();
    for (name, filter) in consumers(journal.as_ref(), subjects) {
        loops.spawn(consume::look_for_losses(journal.clone(), Kind::Events, name.clone(), shutdown.clone(), |lost| {
            metrics::counter!("zonecast_api_alarm_events_lost_total").increment(lost);
            tracing::warn!(
                events = lost,
                "alarm events lost: they left the event journal (older than ZONECAST_EVENT_RETENTION_SECS, or beyond its size) before any API recorded them"
            );
        }));
        let (journal, shutdown) = (journal.clone(), shutdown.clone());
        let mut recorder =
            Recorder { running: JoinSet::new(), store: store.clone(), shutdown: shutdown.clone(), log: log.clone() };
        loops.spawn(async move {
            let filter = filter.as_deref();
            consume::run(journal.as_ref(), Kind::Events, &name, filter, ALARMS_IN_HAND, &shutdown, &mut recorder).await;
            while recorder.running.join_next().await.is_some() {}
        });
    }
    tokio::spawn(async move { while loops.join_next().await.is_some() {} })
}

/// Writes each alarm taken from the journal on a task of its own.
struct Recorder {
    running: JoinSet<()>,
    store: Arc<dyn AlarmWriter>,
    shutdown: Shutdown,
    log: Arc<Mutex<RateLimited>>,
}

/// The part of an event read to tell whether it is an alarm.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "Type", borrow)]
    kind: &'a str,
}

/// The alarm an event raises; `None` for any other event, and for bytes that are no event.
fn alarm_of(payload: &[u8]) -> Result<Option<StoredAlarm>, serde_json::Error> {
    let head: Head<'_> = serde_json::from_slice(payload)?;
    if !head.kind.parse::<EventType>().is_ok_and(EventType::is_alarm) {
        return Ok(None);
    }
    let json: serde_json::Value = serde_json::from_slice(payload)?;
    let event = Event::deserialize(&json)?;
    Ok(StoredAlarm::raised(&event, json))
}

impl Take for Recorder {
    type Held = Held;

    /// Writes the alarm on a task of its own, which acknowledges the event once the row is
    /// written. An event that raises no alarm is acknowledged at once; one that cannot be read
    /// is acknowledged, logged and left out.
    fn take(&mut self, delivery: Delivery, permit: OwnedSemaphorePermit) -> Option<Arc<Held>> {
        while self.running.try_join_next().is_some() {}
        let alarm = match alarm_of(&delivery.payload) {
            Ok(Some(alarm)) => alarm,
            Ok(None) => {
                delivery.ack.ack();
                return None;
            }
            Err(e) => {
                if let Some(skipped) = self.log.lock().unwrap_or_else(PoisonError::into_inner).allow() {
                    tracing::warn!(subject = %delivery.subject, error = %e, skipped, "journal event unreadable; no alarm recorded");
                }
                delivery.ack.ack();
                return None;
            }
        };
        let holding = Arc::new(Held::new(delivery.ack, permit));
        let (held, store, shutdown, log) =
            (holding.clone(), self.store.clone(), self.shutdown.clone(), self.log.clone());
        self.running.spawn(async move {
            let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
            loop {
                match store.record_alarm(&alarm).await {
                    Ok(_) => {
                        held.ack.ack();
                        return;
                    }
                    Err(e) => {
                        if let Some(skipped) = log.lock().unwrap_or_else(PoisonError::into_inner).allow() {
                            tracing::warn!(error = %e.detail(), skipped, "alarm not recorded yet; will retry");
                        }
                    }
                }
                tokio::select! {
                    biased;
                    // Left to the journal: delivered again after the restart, or to another replica.
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(backoff.next_delay()) => {}
                }
            }
        });
        Some(holding)
    }

    /// The alarm being written takes the newest acknowledgement instead of being written twice.
    fn again(&mut self, held: &Held, ack: Ack) {
        held.ack.renew(ack);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_alarm_events_raise_alarms() {
        let alarm = br#"{"Category":"ALARM","Type":"SITE_ALARM","EventID":"01900000-0000-7000-8000-000000000001",
            "Timestamp":"2026-11-21T10:00:00.100Z","LocalTimestamp":"2026-11-21T10:00:00.104Z",
            "Source":{"MAC":"00:AA:BB:CC:DD:EE","GatewayURI":null,"SiteID":1},
            "Content":{"ZoneID":"00000000-0000-0000-0000-0000000000AB","ZoneName":"z","AlertLevel":9,
                       "CollisionID":"00000000-0000-0000-0000-0000000000CD"}}"#;
        let recorded = alarm_of(alarm).unwrap().unwrap();
        assert_eq!(recorded.record.kind, EventType::SiteAlarm);
        assert_eq!(recorded.event["Content"]["ZoneName"], "z");
        let enter = br#"{"Category":"ZONE","Type":"ZONE_ENTER","Content":{}}"#;
        assert!(alarm_of(enter).unwrap().is_none(), "read no further than the type");
        assert!(alarm_of(b"not json").is_err());
    }
}
