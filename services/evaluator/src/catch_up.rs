//! Collisions brought up to date from the event journal at start, where positions are not
//! stored (the all-in-one): the journal keeps every `ZONE_ENTER`, `ZONE_EXIT` and
//! `ZONE_DWELL_EXCEEDED` it stored,
//! and the store's time mark says before when every collision change was written. An event
//! stored just before a crash whose collision change was not written yet is replayed onto the
//! collisions, so a device the journal says is inside is inside, and its stay is closed by the
//! next `ZONE_EXIT`.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_bus::journal::{HistoryQuery, HistoryStart};
use zonecast_bus::{BusError, Journal, Subjects};
use zonecast_model::{Collision, Content, Event, EventType, Mac};

use crate::collisions::Change;

/// How far before the time mark the replay starts: an event is stored before its collision
/// change is made, within one turn of the evaluator's loop, and the margin covers a clock step.
const MARGIN: Duration = Duration::from_secs(60);

/// Events read per page.
const PAGE: usize = 1000;

/// The collision changes that bring `rows` up to date with the zone entries, exits and dwell
/// events the journal stored since `through` (since the oldest kept when there is no mark).
pub async fn from_journal(
    journal: &dyn Journal,
    subjects: &Subjects,
    rows: &[Collision],
    through: Option<DateTime<Utc>>,
) -> Result<Vec<Change>, BusError> {
    let start = match through {
        Some(t) => HistoryStart::At(SystemTime::from(t).checked_sub(MARGIN).unwrap_or(SystemTime::UNIX_EPOCH)),
        None => HistoryStart::Oldest,
    };
    let mut query = HistoryQuery::new(start, PAGE, PAGE);
    query.subjects =
        subjects.events_narrowed(&[EventType::ZoneEnter, EventType::ZoneExit, EventType::ZoneDwellExceeded], &[]);
    let mut events = Vec::new();
    loop {
        let page = journal.history(&query).await?;
        for record in &page.records {
            match serde_json::from_slice::<Event>(&record.payload) {
                Ok(event) => events.push(event),
                Err(e) => tracing::warn!(sequence = record.sequence, error = %e, "journal event not read at start"),
            }
        }
        match page.next {
            Some(next) => query.start = HistoryStart::Sequence(next),
            None => break,
        }
    }
    Ok(replay(rows, &events))
}

/// The changes that events, in journal order, make to `rows`. Replaying an event the rows
/// already reflect changes nothing in the end: an entry sets the stay it starts, and its exit,
/// later in the journal, ends it again; an exit only ends the stay it names, and a dwell event
/// only marks the stay it names as reported.
pub fn replay(rows: &[Collision], events: &[Event]) -> Vec<Change> {
    let before: BTreeMap<(Uuid, Mac), &Collision> = rows.iter().map(|c| ((c.zone_id, c.mac.clone()), c)).collect();
    let mut now: BTreeMap<(Uuid, Mac), Option<Collision>> =
        before.iter().map(|(key, c)| (key.clone(), Some((*c).clone()))).collect();
    for event in events {
        let Some(mac) = event.source.mac.clone() else { continue };
        match &event.content {
            Content::ZoneEnter(enter) => {
                let stay = Collision {
                    zone_id: enter.zone_id,
                    mac: mac.clone(),
                    collision_id: enter.collision_id,
                    entry_time: enter.entry_time,
                    dwell_reported: false,
                };
                now.insert((enter.zone_id, mac), Some(stay));
            }
            Content::ZoneExit(exit) => {
                let key = (exit.enter.zone_id, mac);
                if now.get(&key).is_some_and(|c| c.as_ref().is_some_and(|c| c.collision_id == exit.enter.collision_id))
                {
                    now.insert(key, None);
                }
            }
            Content::ZoneDwellExceeded(dwell) => {
                let key = (dwell.enter.zone_id, mac);
                if let Some(Some(stay)) = now.get_mut(&key)
                    && stay.collision_id == dwell.enter.collision_id
                {
                    stay.dwell_reported = true;
                }
            }
            _ => {}
        }
    }
    now.into_iter()
        .filter(|(key, stay)| stay.as_ref() != before.get(key).copied())
        .map(|((zone, mac), stay)| match stay {
            Some(c) => Change::Entered(c),
            None => Change::Exited(zone, mac),
        })
        .collect()
}

/// `rows` with `changes` made to them.
pub fn apply(rows: Vec<Collision>, changes: &[Change]) -> Vec<Collision> {
    let mut now: BTreeMap<(Uuid, Mac), Collision> = rows.into_iter().map(|c| ((c.zone_id, c.mac.clone()), c)).collect();
    for change in changes {
        match change {
            Change::Entered(c) => now.insert((c.zone_id, c.mac.clone()), c.clone()),
            Change::Exited(zone, mac) => now.remove(&(*zone, mac.clone())),
            Change::Presence(_) => None,
        };
    }
    now.into_values().collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::TimeZone;
    use zonecast_model::{AlarmKind, EventId, EventSource, ExitReason, ZoneEnter, ZoneExit};

    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_795_000_000 + s, 0).unwrap()
    }

    fn stay(zone: u128, mac: &str, id: u128, s: i64) -> Collision {
        Collision {
            zone_id: Uuid::from_u128(zone),
            mac: mac.parse().unwrap(),
            collision_id: Uuid::from_u128(id),
            entry_time: at(s),
            dwell_reported: false,
        }
    }

    fn event(c: &Collision, content: fn(ZoneEnter) -> Content) -> Event {
        let enter = ZoneEnter {
            zone_id: c.zone_id,
            zone_name: "cell".into(),
            alert_level: 0,
            alarm: AlarmKind::Log,
            collision_id: c.collision_id,
            entry_time: c.entry_time,
            position: None,
        };
        Event {
            event_id: EventId(Uuid::new_v4()),
            timestamp: c.entry_time,
            local_timestamp: c.entry_time,
            source: EventSource { mac: Some(c.mac.clone()), gateway_uri: None, site_id: 1 },
            content: content(enter),
            device: None,
        }
    }

    fn enter(c: &Collision) -> Event {
        event(c, Content::ZoneEnter)
    }

    fn exit(c: &Collision) -> Event {
        event(c, |enter| Content::ZoneExit(ZoneExit { enter, exit_time: at(100), reason: ExitReason::Position }))
    }

    #[test]
    fn an_entry_the_rows_miss_is_added_and_one_they_hold_changes_nothing() {
        let (held, missed) = (stay(1, "00:00:00:00:00:01", 10, 1), stay(1, "00:00:00:00:00:02", 11, 2));
        let changes = replay(std::slice::from_ref(&held), &[enter(&held), enter(&missed)]);
        assert_eq!(changes, vec![Change::Entered(missed.clone())]);
        assert_eq!(apply(vec![held.clone()], &changes), vec![held, missed]);
    }

    #[test]
    fn an_exit_the_rows_miss_ends_the_stay_it_names_only() {
        let first = stay(1, "00:00:00:00:00:01", 10, 1);
        let again = stay(1, "00:00:00:00:00:01", 12, 5);
        // The rows hold the first stay; the journal has its exit and a new entry since.
        assert_eq!(
            replay(std::slice::from_ref(&first), &[exit(&first)]),
            vec![Change::Exited(first.zone_id, first.mac.clone())]
        );
        assert_eq!(
            replay(std::slice::from_ref(&first), &[exit(&first), enter(&again)]),
            vec![Change::Entered(again.clone())]
        );
        // The rows hold the new stay already: an older stay's exit does not end it.
        assert!(replay(std::slice::from_ref(&again), &[enter(&first), exit(&first), enter(&again)]).is_empty());
        assert!(replay(std::slice::from_ref(&again), &[exit(&first)]).is_empty());
    }

    #[test]
    fn a_dwell_event_marks_the_stay_it_names_only() {
        let first = stay(1, "00:00:00:00:00:01", 10, 1);
        let again = stay(1, "00:00:00:00:00:01", 12, 5);
        let dwell = |c: &Collision| {
            event(c, |enter| {
                Content::ZoneDwellExceeded(zonecast_model::ZoneDwell {
                    enter,
                    dwell_seconds: 61.5,
                    max_dwell_seconds: 60.0,
                })
            })
        };
        let reported = Collision { dwell_reported: true, ..first.clone() };
        assert_eq!(replay(std::slice::from_ref(&first), &[dwell(&first)]), vec![Change::Entered(reported.clone())]);
        assert!(replay(std::slice::from_ref(&reported), &[dwell(&first)]).is_empty());
        // The dwell event of an earlier stay leaves the new one as it is.
        assert!(replay(std::slice::from_ref(&again), &[dwell(&first)]).is_empty());
    }

    #[test]
    fn a_stay_entered_and_left_within_the_replay_leaves_no_trace() {
        let passing = stay(2, "00:00:00:00:00:03", 20, 3);
        assert!(replay(&[], &[enter(&passing), exit(&passing)]).is_empty());
        assert!(replay(&[], &[exit(&passing)]).is_empty());
    }
}
