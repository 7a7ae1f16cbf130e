//! The journal consumers `alarms-<pattern>`: they record every alarm event of the events journal
//! (`SITE_ALARM`, `DEVICE_ALARM`, `ZONE_DWELL_EXCEEDED`, `ZONE_OCCUPANCY_EXCEEDED`,
//! `ZONE_OCCUPANCY_BELOW`, `DEVICE_OFFLINE`; [`EventType::ALARMS`]) in the store, where it opens
//! an alarm or counts on the unresolved one of its condition (type, device, zone), and clear
//! the alarms whose condition ended (`ALARM_CLEARED`, and the zone's next occupancy event for an
//! occupancy alarm; [`AlarmKey::cleared_by`]). An acknowledged alarm whose condition cleared is
//! resolved by zonecast, and that change is published as a person's is. Each event is
//! acknowledged once the store has it, so none is lost: while the store is away it is tried
//! again with backoff and the journal keeps the events not yet acknowledged, and what is in
//! hand when the API stops is delivered again. An event of another type delivered to them is
//! acknowledged at once.
//!
//! Every API replica takes from the same durable consumers, so the journal hands each event to
//! one of them at a time; a copy (a redelivery, or the event appended twice) changes nothing:
//! the store knows the `EventID`s each alarm counted, and a clearing read again finds the alarm
//! cleared already. There is one consumer per subject pattern of
//! the alarm events (`alarms-zone-dwell`, `alarms-alarm-site`, …), narrowed to it, so that the
//! journal (JetStream, or the in-process one) hands the API alarm events only rather than every
//! enter and exit. The consumer `alarms` of every event that earlier releases recorded from is
//! read up to the moment the narrowed ones exist, then removed ([`retire`]). The loop is the
//! one every journal consumer runs ([`zonecast_runtime::consume`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinSet;
use zonecast_bus::journal::{Ack, Delivery, Kind};
use zonecast_bus::{Journal, Subjects};
use zonecast_model::{AlarmChange, AlarmKey, AlarmState, Event, EventType, StoredAlarm};
use zonecast_runtime::Shutdown;
use zonecast_runtime::backoff::Backoff;
use zonecast_runtime::consume::{self, Held, Take};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_store::{AlarmWriter, Raised};

use crate::alarm_changes::ChangeEvents;

/// The beginning of the name of each durable consumer of the events journal that the alarms
/// are recorded from, shared by every API replica; in releases before the narrowed ones, the
/// name of the one consumer of every event.
pub const ALARMS_CONSUMER: &str = "alarms";

/// Alarm events held at once by each consumer, being written; the rest wait in the journal.
pub const ALARMS_IN_HAND: usize = 256;

/// The consumers the alarms are recorded from, one per subject pattern of the alarm events and
/// of `ALARM_CLEARED`, each with the pattern it is narrowed to (the occupancy alarms share
/// theirs with `ZONE_OCCUPANCY_RESTORED`).
fn consumers(subjects: &Subjects) -> Vec<(String, String)> {
    let events = format!("{}.events.", subjects.prefix());
    let types: Vec<EventType> = EventType::ALARMS.into_iter().chain([EventType::AlarmCleared]).collect();
    subjects
        .events_narrowed(&types, &[])
        .into_iter()
        .map(|pattern| {
            let tokens = pattern.strip_prefix(&events).unwrap_or(&pattern).split('.');
            let named: Vec<&str> = tokens.filter(|t| *t != "*" && *t != ">").collect();
            (format!("{ALARMS_CONSUMER}-{}", named.join("-")), pattern)
        })
        .collect()
}

/// Makes `consumers` (those that exist are left as they are).
async fn create(journal: &dyn Journal, consumers: &[(String, String)]) -> Result<(), zonecast_bus::BusError> {
    for (name, filter) in consumers {
        journal.create_narrowed(Kind::Events, name, filter, ALARMS_IN_HAND).await?;
    }
    Ok(())
}

/// How long the API's start waits for the consumer to be made.
const PREPARE_FOR: Duration = Duration::from_secs(2);

/// Makes the consumers, so that alarms raised from now on wait for them even before the loops
/// have opened them; a journal away at start (or slower than [`PREPARE_FOR`]) is logged, and
/// the loops make them once the journal answers.
pub async fn prepare(journal: &dyn Journal, subjects: &Subjects) {
    let made = tokio::time::timeout(PREPARE_FOR, create(journal, &consumers(subjects))).await;
    match made {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "alarms consumer not made at start; it is made when the journal answers")
        }
        Err(_) => tracing::warn!("alarms consumer not made within 2 s of start; it is made when the journal answers"),
    }
}

/// Registers at 0 the alarm counters of every alarm type.
pub fn register_metrics() {
    for kind in EventType::ALARMS {
        for name in [
            "zonecast_api_alarm_raises_total",
            "zonecast_api_alarms_opened_total",
            "zonecast_api_alarm_raises_shelved_total",
        ] {
            zonecast_runtime::metrics::register_series(name, &[("type", kind.as_str().to_owned())]);
        }
    }
}

/// Starts recording, a loop per consumer, each with a look every [`consume::LOSS_EVERY`] for
/// alarm events that left the journal unrecorded (counted in
/// `zonecast_api_alarm_events_lost_total`): the task ends after `shutdown`, once every row being
/// written is written or left to the journal.
pub fn spawn(events: ChangeEvents, store: Arc<dyn AlarmWriter>, shutdown: Shutdown) -> tokio::task::JoinHandle<()> {
    let log = Arc::new(Mutex::new(RateLimited::new(Duration::from_secs(30))));
    let journal = events.journal.clone();
    let consumers = consumers(&events.subjects);
    let recorder = || Recorder {
        running: JoinSet::new(),
        store: store.clone(),
        events: events.clone(),
        shutdown: shutdown.clone(),
        log: log.clone(),
    };
    let mut loops = JoinSet::new();
    loops.spawn(retire(journal.clone(), consumers.clone(), recorder(), shutdown.clone()));
    for (name, filter) in consumers {
        loops.spawn(consume::look_for_losses(journal.clone(), Kind::Events, name.clone(), shutdown.clone(), |lost| {
            metrics::counter!("zonecast_api_alarm_events_lost_total").increment(lost);
            tracing::warn!(
                events = lost,
                "alarm events lost: they left the event journal (older than ZONECAST_EVENT_RETENTION_SECS, or beyond its size) before any API recorded them"
            );
        }));
        let (journal, shutdown, mut recorder) = (journal.clone(), shutdown.clone(), recorder());
        loops.spawn(async move {
            consume::run(
                journal.as_ref(),
                Kind::Events,
                &name,
                Some(&filter),
                ALARMS_IN_HAND,
                &shutdown,
                &mut recorder,
            )
            .await;
            while recorder.running.join_next().await.is_some() {}
        });
    }
    tokio::spawn(async move { while loops.join_next().await.is_some() {} })
}

/// Removes the consumer [`ALARMS_CONSUMER`] of every event that earlier releases recorded from,
/// once the alarms it holds are recorded. The `narrowed` consumers are made first, so that
/// they hold every event appended from then on; the old consumer is then read up to that point
/// (each alarm recorded, each other event acknowledged) and removed. Nothing it held is lost:
/// an API that stops before the end leaves it to the next start, which reads it again (a
/// copy changes nothing). The journal away is tried again with backoff.
async fn retire(
    journal: Arc<dyn Journal>,
    narrowed: Vec<(String, String)>,
    mut recorder: Recorder,
    shutdown: Shutdown,
) {
    let log = recorder.log.clone();
    let looked = until_done(&shutdown, &log, "consumer `alarms` of earlier releases not looked at yet", || async {
        if journal.state(Kind::Events, ALARMS_CONSUMER).await?.is_none() {
            return Ok(None);
        }
        create(journal.as_ref(), &narrowed).await?;
        // The next record to be appended: the narrowed consumers hold it and what follows.
        let until = journal.read(Kind::Events, None).await?.0;
        // At least the records before it that the old consumer holds.
        let left = journal.state(Kind::Events, ALARMS_CONSUMER).await?.map_or(0, |s| s.backlog);
        Ok::<_, zonecast_bus::BusError>(Some((until, left)))
    })
    .await;
    let Some(Some((until, left))) = looked else { return };
    if left > 0 {
        let read = shutdown.child_token();
        let mut retiring = Retiring { recorder: &mut recorder, until, left, taken: HashSet::new(), read: read.clone() };
        consume::run(journal.as_ref(), Kind::Events, ALARMS_CONSUMER, None, ALARMS_IN_HAND, &read, &mut retiring).await;
        while recorder.running.join_next().await.is_some() {}
    }
    until_done(&shutdown, &log, "consumer `alarms` of earlier releases not removed yet", || {
        journal.remove_consumer(Kind::Events, ALARMS_CONSUMER)
    })
    .await;
}

/// Runs `attempt` until it succeeds, logging its failures (`what`) at most every 30 s through
/// `log` and waiting with backoff (100 ms doubling to 10 s) before the next; `None` once
/// `shutdown` comes first (what the attempt was for is left to the journal: delivered again
/// after the restart, or to another replica).
async fn until_done<T, E, F>(
    shutdown: &Shutdown,
    log: &Mutex<RateLimited>,
    what: &str,
    mut attempt: impl FnMut() -> F,
) -> Option<T>
where
    E: std::fmt::Display,
    F: Future<Output = Result<T, E>>,
{
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
    while !shutdown.is_cancelled() {
        match attempt().await {
            Ok(done) => return Some(done),
            Err(e) => {
                if let Some(skipped) = log.lock().unwrap_or_else(PoisonError::into_inner).allow() {
                    tracing::warn!(error = %e, skipped, "{what}; will retry");
                }
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => return None,
                    () = tokio::time::sleep(backoff.next_delay()) => {}
                }
            }
        }
    }
    None
}

/// Records the alarms of the old consumer [`ALARMS_CONSUMER`] before record `until`, and ends
/// the reading (`read`) once it has taken the `left` records the consumer held (counted when
/// `until` was read, so perhaps a few after it as well), or at the first record from `until`
/// on: the narrowed consumers hold those.
struct Retiring<'a> {
    recorder: &'a mut Recorder,
    until: u64,
    left: u64,
    /// The records before `until` taken (a record handed out again counts once).
    taken: HashSet<u64>,
    read: Shutdown,
}

impl Take for Retiring<'_> {
    type Held = Held;

    fn take(&mut self, delivery: Delivery, permit: OwnedSemaphorePermit) -> Option<Arc<Held>> {
        if delivery.sequence >= self.until {
            self.read.cancel();
            return None;
        }
        self.taken.insert(delivery.sequence);
        if self.taken.len() as u64 >= self.left {
            self.read.cancel();
        }
        self.recorder.take(delivery, permit)
    }

    fn again(&mut self, held: &Held, ack: Ack) {
        self.recorder.again(held, ack);
    }
}

/// Writes each alarm event and clearing taken from the journal on a task of its own.
struct Recorder {
    running: JoinSet<()>,
    store: Arc<dyn AlarmWriter>,
    /// Where the resolutions by zonecast are told.
    events: ChangeEvents,
    shutdown: Shutdown,
    log: Arc<Mutex<RateLimited>>,
}

/// The part of an event read to tell whether it is an alarm.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "Type", borrow)]
    kind: &'a str,
}

/// What an event read from the journal does to the alarms: the alarm it raises, and the
/// conditions it ends as of `at`, its `Timestamp` (an occupancy alarm does both: it raises its
/// own and ends the other limit's).
#[derive(Debug)]
struct Effect {
    raise: Option<StoredAlarm>,
    clear: Vec<AlarmKey>,
    at: DateTime<Utc>,
}

/// What `payload` does to the alarms: `None` for an event that neither raises nor clears one,
/// an error for bytes that are no event.
fn effect_of(payload: &[u8]) -> Result<Option<Effect>, serde_json::Error> {
    let head: Head<'_> = serde_json::from_slice(payload)?;
    let Ok(kind) = head.kind.parse::<EventType>() else { return Ok(None) };
    if !kind.is_alarm() && kind != EventType::AlarmCleared && kind != EventType::ZoneOccupancyRestored {
        return Ok(None);
    }
    let json: serde_json::Value = serde_json::from_slice(payload)?;
    let event = Event::deserialize(&json)?;
    let clear = AlarmKey::cleared_by(&event);
    Ok(Some(Effect { at: event.timestamp, raise: StoredAlarm::raised(&event, json), clear }))
}

/// Puts `effect` in the store: the alarm raised (counted in `zonecast_api_alarm_raises_total`
/// and, when it opened a new alarm, `zonecast_api_alarms_opened_total`; in
/// `zonecast_api_alarm_raises_shelved_total` when its zone or device was shelved), then each condition
/// cleared, publishing the resolution of an acknowledged alarm that zonecast resolved. Whether
/// all of it is stored (false: `shutdown` came first).
async fn apply(
    effect: Effect,
    store: &dyn AlarmWriter,
    events: &ChangeEvents,
    shutdown: &Shutdown,
    log: &Mutex<RateLimited>,
) -> bool {
    if let Some(alarm) = &effect.raise {
        let recording = || async { store.record_alarm(alarm).await.map_err(|e| e.detail()) };
        let Some(raised) = until_done(shutdown, log, "alarm not recorded yet", recording).await else {
            return false;
        };
        let kind = alarm.record.kind.as_str();
        if matches!(raised, Raised::Opened | Raised::Counted) {
            metrics::counter!("zonecast_api_alarm_raises_total", "type" => kind).increment(1);
        }
        match raised {
            Raised::Opened => metrics::counter!("zonecast_api_alarms_opened_total", "type" => kind).increment(1),
            Raised::Shelved => {
                metrics::counter!("zonecast_api_alarm_raises_shelved_total", "type" => kind).increment(1)
            }
            Raised::Counted | Raised::Copy => {}
        }
    }
    for key in &effect.clear {
        let clearing = || async { store.clear_alarm(key, effect.at).await.map_err(|e| e.detail()) };
        let Some(changed) = until_done(shutdown, log, "alarm not cleared yet", clearing).await else {
            return false;
        };
        if let Some(alarm) = changed.filter(|a| a.record.state == AlarmState::Resolved) {
            events.publish(AlarmChange::Resolve, &alarm.record, effect.at).await;
        }
    }
    true
}

impl Take for Recorder {
    type Held = Held;

    /// Stores what the event does to the alarms on a task of its own, which acknowledges the
    /// event once it is stored. An event that does nothing to them is acknowledged at once; one
    /// that cannot be read is acknowledged, logged and left out.
    fn take(&mut self, delivery: Delivery, permit: OwnedSemaphorePermit) -> Option<Arc<Held>> {
        while self.running.try_join_next().is_some() {}
        let effect = match effect_of(&delivery.payload) {
            Ok(Some(effect)) => effect,
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
        let (held, store, events, shutdown, log) =
            (holding.clone(), self.store.clone(), self.events.clone(), self.shutdown.clone(), self.log.clone());
        self.running.spawn(async move {
            if apply(effect, store.as_ref(), &events, &shutdown, &log).await {
                held.ack.ack();
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
        let effect = effect_of(alarm).unwrap().unwrap();
        let recorded = effect.raise.unwrap();
        assert_eq!(recorded.record.kind, EventType::SiteAlarm);
        assert_eq!(recorded.event["Content"]["ZoneName"], "z");
        assert!(effect.clear.is_empty());
        let enter = br#"{"Category":"ZONE","Type":"ZONE_ENTER","Content":{}}"#;
        assert!(effect_of(enter).unwrap().is_none(), "read no further than the type");
        assert!(effect_of(b"not json").is_err());

        let cleared = br#"{"Category":"ALARM","Type":"ALARM_CLEARED","EventID":"01900000-0000-7000-8000-000000000002",
            "Timestamp":"2026-11-21T10:00:05.000Z","LocalTimestamp":"2026-11-21T10:00:05.004Z",
            "Source":{"MAC":"00:AA:BB:CC:DD:EE","GatewayURI":null,"SiteID":1},
            "Content":{"Type":"SITE_ALARM","ZoneID":"00000000-0000-0000-0000-0000000000AB","ZoneName":"z",
                       "CollisionID":"00000000-0000-0000-0000-0000000000CD"}}"#;
        let effect = effect_of(cleared).unwrap().unwrap();
        assert!(effect.raise.is_none());
        assert_eq!(effect.clear, [recorded.record.key()], "the key of the alarm it clears");
        assert_eq!(effect.at, "2026-11-21T10:00:05Z".parse::<DateTime<Utc>>().unwrap());

        let occupancy = |kind: &str| {
            format!(
                r#"{{"Category":"ZONE","Type":"{kind}","EventID":"01900000-0000-7000-8000-000000000003",
                "Timestamp":"2026-11-21T10:00:06.000Z","LocalTimestamp":"2026-11-21T10:00:06.004Z",
                "Source":{{"MAC":null,"GatewayURI":null,"SiteID":1}},
                "Content":{{"ZoneID":"00000000-0000-0000-0000-0000000000AB","ZoneName":"z","AlertLevel":0,"Count":0,
                           "MaxOccupancy":3,"MinOccupancy":1}}}}"#
            )
        };
        let kinds = |e: &Effect| e.clear.iter().map(|k| k.kind).collect::<Vec<_>>();
        let restored = effect_of(occupancy("ZONE_OCCUPANCY_RESTORED").as_bytes()).unwrap().unwrap();
        assert!(restored.raise.is_none());
        assert_eq!(kinds(&restored), [EventType::ZoneOccupancyExceeded, EventType::ZoneOccupancyBelow]);
        let below = effect_of(occupancy("ZONE_OCCUPANCY_BELOW").as_bytes()).unwrap().unwrap();
        assert_eq!(below.raise.as_ref().unwrap().record.kind, EventType::ZoneOccupancyBelow);
        assert_eq!(kinds(&below), [EventType::ZoneOccupancyExceeded], "past the other limit");
    }

    /// An event as the evaluator appends it: a site alarm (or an enter, `alarm` false) of
    /// device `n`, with an `EventID` of its own.
    fn event(subjects: &Subjects, n: u8, alarm: bool) -> zonecast_bus::journal::Record {
        use zonecast_model::{AlarmKind, ZoneEventKind};
        let (mac, id) = (format!("00:AA:BB:CC:DD:{n:02X}"), format!("01900000-0000-7000-8000-0000000000{n:02x}"));
        let (category, kind, subject) = match alarm {
            true => ("ALARM", "SITE_ALARM", subjects.alarm(AlarmKind::Site, &mac)),
            false => (
                "ZONE",
                "ZONE_ENTER",
                subjects.zone_event("00000000-0000-0000-0000-0000000000ab", ZoneEventKind::Enter),
            ),
        };
        let payload = serde_json::json!({"Category": category, "Type": kind, "EventID": id,
            "Timestamp": "2026-11-21T10:00:00.100Z", "LocalTimestamp": "2026-11-21T10:00:00.104Z",
            "Source": {"MAC": mac, "GatewayURI": null, "SiteID": 1},
            "Content": {"ZoneID": "00000000-0000-0000-0000-0000000000ab", "ZoneName": "z", "AlertLevel": 9,
                        "CollisionID": "00000000-0000-0000-0000-0000000000cd"}});
        zonecast_bus::journal::Record { subject, payload: serde_json::to_vec(&payload).unwrap().into(), id }
    }

    /// An API started where earlier releases recorded from the one consumer `alarms` records
    /// the alarms that consumer still held, then removes it; later alarms come through the
    /// narrowed consumers, which hold no enter. Over NATS or in one process.
    async fn the_consumer_of_earlier_releases_is_read_to_its_end_then_removed(nats: bool) {
        use zonecast_bus::{Bus, InProcessBus, JournalSettings, NatsBus};
        use zonecast_store::{AlarmReader, SqliteStore};
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("zonecast.sqlite")).unwrap());
        let bus: Arc<dyn Bus> = match nats {
            true => match NatsBus::connect("nats://127.0.0.1:4222", "zonecast-alarm-recorder-test").await {
                Ok(bus) => Arc::new(bus),
                Err(e) => panic!(
                    "this test needs NATS with JetStream on 127.0.0.1:4222 ({e}); start it with: \
                     start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
                     -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log"
                ),
            },
            false => Arc::new(InProcessBus::new()),
        };
        // jt + 32 hex digits: a prefix that CI removes from NATS should the test not end.
        let prefix = format!("jt{}", uuid::Uuid::new_v4().simple());
        let subjects = Subjects::new(prefix.clone());
        let journal = bus.journal(&prefix, JournalSettings { max_bytes: 64 << 20, ..JournalSettings::default() });
        journal.create_consumer(Kind::Events, ALARMS_CONSUMER, 10).await.unwrap();
        journal
            .append(vec![event(&subjects, 1, true), event(&subjects, 2, false), event(&subjects, 3, true)])
            .await
            .unwrap();

        prepare(journal.as_ref(), &subjects).await;
        let shutdown = Shutdown::new();
        let events = ChangeEvents { journal: journal.clone(), subjects: subjects.clone(), site_id: 1 };
        let recording = spawn(events, store.clone(), shutdown.clone());
        journal.append(vec![event(&subjects, 4, false), event(&subjects, 5, true)]).await.unwrap();

        let recorded = || async {
            let all = store.list_alarms(&zonecast_store::AlarmQuery { limit: 10, ..Default::default() }).await.unwrap();
            let mut macs: Vec<String> =
                all.iter().map(|a| a.event["Source"]["MAC"].as_str().unwrap().to_owned()).collect();
            macs.sort();
            macs
        };
        let gone = || async { journal.state(Kind::Events, ALARMS_CONSUMER).await.unwrap().is_none() };
        tokio::time::timeout(Duration::from_secs(20), async {
            while recorded().await.len() < 3 || !gone().await {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the old consumer's alarms are recorded and it is removed");
        assert_eq!(recorded().await, ["00:AA:BB:CC:DD:01", "00:AA:BB:CC:DD:03", "00:AA:BB:CC:DD:05"]);
        // An event is acknowledged just after the store has it: wait for the acknowledgements.
        let acknowledged = || async {
            for (name, _) in consumers(&subjects) {
                if journal.state(Kind::Events, &name).await.unwrap().is_none_or(|s| s.backlog > 0) {
                    return false;
                }
            }
            true
        };
        tokio::time::timeout(Duration::from_secs(20), async {
            while !acknowledged().await {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("every recorded event acknowledged");
        for (name, _) in consumers(&subjects) {
            assert!(name.starts_with("alarms-"), "{name}");
            let state = journal.state(Kind::Events, &name).await.unwrap().unwrap();
            assert_eq!((state.backlog, state.lost), (0, 0), "{name} holds nothing");
        }
        shutdown.cancel();
        recording.await.unwrap();
        journal.remove_all().await.unwrap();
    }

    #[tokio::test]
    async fn in_process_the_consumer_of_earlier_releases_is_read_to_its_end_then_removed() {
        the_consumer_of_earlier_releases_is_read_to_its_end_then_removed(false).await;
    }

    #[tokio::test]
    async fn nats_the_consumer_of_earlier_releases_is_read_to_its_end_then_removed() {
        the_consumer_of_earlier_releases_is_read_to_its_end_then_removed(true).await;
    }
}
