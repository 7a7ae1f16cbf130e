//! Visits and occupancy of one zone from its `ZONE_ENTER` and `ZONE_EXIT` events, as pure
//! functions over plain data: a `ZONE_ENTER` opens a visit, the `ZONE_EXIT` with the same
//! `CollisionID` closes it. No I/O; the handlers feed the events from the history.

use std::collections::HashMap;

use chrono::{DateTime, TimeDelta, Utc};
use uuid::Uuid;
use zonecast_model::{Content, Event, ExitReason};

/// One stay of one device in the zone.
#[derive(Debug, Clone, PartialEq)]
pub struct Visit {
    /// The device.
    pub mac: String,
    /// The stay's identity, shared by its enter and exit.
    pub collision_id: Uuid,
    /// When it entered (the exit carries it too, so it is known even when the enter has left
    /// the log).
    pub entry_time: DateTime<Utc>,
    /// When it left; `None` while it is still inside.
    pub exit_time: Option<DateTime<Utc>>,
    /// Why it left; `None` while it is still inside.
    pub reason: Option<ExitReason>,
}

impl Visit {
    /// Seconds inside: to the exit, or, while still inside, to `end` (the report's end or now,
    /// whichever is earlier); never negative.
    pub fn dwell_seconds(&self, end: DateTime<Utc>) -> f64 {
        let until = self.exit_time.unwrap_or(end);
        (until - self.entry_time).num_milliseconds().max(0) as f64 / 1000.0
    }

    /// Whether it overlaps `[from, to)`.
    fn overlaps(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
        self.entry_time < to && self.exit_time.is_none_or(|exit| exit > from)
    }
}

/// The visits of one zone, built from its events in log order.
#[derive(Debug, Default)]
pub struct Visits {
    /// Visits entered and not yet left, by CollisionID.
    open: HashMap<Uuid, Visit>,
    /// Visits left, by CollisionID (a copy of an exit closes nothing twice).
    closed: HashMap<Uuid, Visit>,
}

impl Visits {
    /// No visits yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event of the zone; other types than enter and exit change nothing.
    pub fn add(&mut self, event: &Event) {
        let mac = || event.source.mac.as_ref().map(|m| m.as_str().to_owned()).unwrap_or_default();
        match &event.content {
            // A copy of an enter after its exit opens nothing again.
            Content::ZoneEnter(enter) if !self.closed.contains_key(&enter.collision_id) => {
                self.open.entry(enter.collision_id).or_insert_with(|| Visit {
                    mac: mac(),
                    collision_id: enter.collision_id,
                    entry_time: enter.entry_time,
                    exit_time: None,
                    reason: None,
                });
            }
            Content::ZoneExit(exit) => {
                let id = exit.enter.collision_id;
                let entered = self.open.remove(&id);
                self.closed.entry(id).or_insert_with(|| Visit {
                    mac: entered.as_ref().map_or_else(mac, |v| v.mac.clone()),
                    collision_id: id,
                    entry_time: entered.map_or(exit.enter.entry_time, |v| v.entry_time),
                    exit_time: Some(exit.exit_time),
                    reason: Some(exit.reason),
                });
            }
            _ => {}
        }
    }

    /// Whether later events can no longer change the visits overlapping a window ending at
    /// `to`, once events up to `seen` were taken: no visit that began before `to` is open.
    pub fn settled(&self, seen: DateTime<Utc>, to: DateTime<Utc>) -> bool {
        seen >= to && self.open.values().all(|v| v.entry_time >= to)
    }

    /// The visits overlapping `[from, to)`, by entry time (then MAC and CollisionID).
    pub fn within(self, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Visit> {
        let mut out: Vec<Visit> =
            self.open.into_values().chain(self.closed.into_values()).filter(|v| v.overlaps(from, to)).collect();
        out.sort_by(|a, b| (a.entry_time, &a.mac, a.collision_id).cmp(&(b.entry_time, &b.mac, b.collision_id)));
        out
    }
}

/// The zone's occupancy over one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Its start (it lasts until the next step's).
    pub start: DateTime<Utc>,
    /// Devices inside at its start.
    pub inside: usize,
    /// The most devices inside at once during it.
    pub peak: usize,
    /// Devices that entered during it.
    pub entries: usize,
}

/// How many steps of `step` cover `[from, to)` (the last may end after `to`).
pub fn step_count(from: DateTime<Utc>, to: DateTime<Utc>, step: TimeDelta) -> i64 {
    let span = (to - from).num_milliseconds().max(0);
    let step = step.num_milliseconds().max(1);
    (span + step - 1) / step
}

/// The occupancy of each step of `[from, to)` from `visits` (any order; those overlapping the
/// range, at least). A device is inside from its entry (included) to its exit (excluded); one
/// still inside is inside up to `now`, not in steps after it. At the same instant exits count
/// before entries.
pub fn occupancy(
    visits: &[Visit],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    step: TimeDelta,
    now: DateTime<Utc>,
) -> Vec<Step> {
    // (time, change): exits (-1) sort before entries (+1) at the same instant.
    let mut changes: Vec<(DateTime<Utc>, i64)> = Vec::with_capacity(visits.len() * 2);
    for visit in visits {
        changes.push((visit.entry_time, 1));
        changes.push((visit.exit_time.unwrap_or(now.max(visit.entry_time)), -1));
    }
    changes.sort();
    let mut next = 0;
    let mut inside: i64 = 0;
    let mut out = Vec::new();
    for n in 0..step_count(from, to, step) {
        let start = from + step * (n as i32);
        let end = start + step;
        let mut entries = 0;
        while next < changes.len() && changes[next].0 <= start {
            inside += changes[next].1;
            if changes[next].1 > 0 && changes[next].0 == start {
                entries += 1;
            }
            next += 1;
        }
        let at_start = inside.max(0) as usize;
        let mut peak = at_start;
        while next < changes.len() && changes[next].0 < end {
            inside += changes[next].1;
            if changes[next].1 > 0 {
                entries += 1;
            }
            peak = peak.max(inside.max(0) as usize);
            next += 1;
        }
        out.push(Step { start, inside: at_start, peak, entries });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    const ZONE: &str = "6F1C4C0E-2B1E-4C55-9E59-0A3E1A2B3C4D";

    fn t(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn id(n: u8) -> Uuid {
        Uuid::from_bytes([n; 16])
    }

    fn event(kind: &str, mac: &str, collision: Uuid, entry: i64, exit: Option<(i64, &str)>) -> Event {
        let time = exit.map_or(entry, |(at, _)| at);
        let mut content = json!({"ZoneID": ZONE, "ZoneName": "Dock", "AlertLevel": 1, "Alarm": "log",
            "CollisionID": collision.to_string(), "EntryTime": zonecast_model::format_timestamp(&t(entry)), "Position": null});
        if let Some((at, reason)) = exit {
            content["ExitTime"] = json!(zonecast_model::format_timestamp(&t(at)));
            content["Reason"] = json!(reason);
        }
        serde_json::from_value(json!({"Category": "ZONE", "Type": kind, "EventID": Uuid::new_v4().to_string(),
            "Timestamp": zonecast_model::format_timestamp(&t(time)), "LocalTimestamp": zonecast_model::format_timestamp(&t(time)),
            "Source": {"MAC": mac, "GatewayURI": null, "SiteID": 1}, "Content": content}))
        .unwrap()
    }

    fn enter(mac: &str, collision: Uuid, at: i64) -> Event {
        event("ZONE_ENTER", mac, collision, at, None)
    }

    fn exit(mac: &str, collision: Uuid, entry: i64, at: i64, reason: &str) -> Event {
        event("ZONE_EXIT", mac, collision, entry, Some((at, reason)))
    }

    const A: &str = "00:00:00:00:00:0A";
    const B: &str = "00:00:00:00:00:0B";
    const C: &str = "00:00:00:00:00:0C";

    fn visits_of(events: &[Event], from: i64, to: i64) -> Vec<Visit> {
        let mut visits = Visits::new();
        for e in events {
            visits.add(e);
        }
        visits.within(t(from), t(to))
    }

    #[test]
    fn an_enter_and_its_exit_make_one_visit_with_its_reason() {
        let got = visits_of(&[enter(A, id(1), 10), exit(A, id(1), 10, 70, "position")], 0, 100);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].mac, A);
        assert_eq!(
            (got[0].entry_time, got[0].exit_time, got[0].reason),
            (t(10), Some(t(70)), Some(ExitReason::Position))
        );
        assert_eq!(got[0].dwell_seconds(t(100)), 60.0);
    }

    #[test]
    fn timeouts_and_configuration_changes_end_visits_with_their_reason() {
        let events = [
            enter(A, id(1), 0),
            enter(B, id(2), 5),
            exit(A, id(1), 0, 30, "timeout"),
            exit(B, id(2), 5, 40, "deactivated"),
        ];
        let reasons: Vec<_> = visits_of(&events, 0, 100).into_iter().map(|v| v.reason).collect();
        assert_eq!(reasons, [Some(ExitReason::Timeout), Some(ExitReason::Deactivated)]);
    }

    #[test]
    fn a_device_still_inside_has_no_exit_and_dwells_until_the_end_of_the_report() {
        let got = visits_of(&[enter(A, id(1), 10)], 0, 100);
        assert_eq!((got[0].exit_time, got[0].reason), (None, None));
        assert_eq!(got[0].dwell_seconds(t(50)), 40.0);
    }

    #[test]
    fn an_exit_without_its_enter_takes_the_entry_time_it_carries() {
        let got = visits_of(&[exit(A, id(1), -500, 20, "geometry")], 0, 100);
        assert_eq!((got[0].entry_time, got[0].exit_time), (t(-500), Some(t(20))));
        assert_eq!(got[0].dwell_seconds(t(100)), 520.0);
    }

    #[test]
    fn only_visits_overlapping_the_window_are_listed_and_copies_count_once() {
        let events = [
            enter(A, id(1), 0),
            exit(A, id(1), 0, 10, "position"),
            enter(B, id(2), 5),
            enter(B, id(2), 5),
            exit(B, id(2), 5, 60, "position"),
            exit(B, id(2), 5, 60, "position"),
            enter(C, id(3), 200),
        ];
        // A left at the window's start: outside of it; C entered at its end: outside too.
        let got = visits_of(&events, 10, 200);
        assert_eq!(got.iter().map(|v| v.mac.as_str()).collect::<Vec<_>>(), [B]);
        // A visit that began before the window and is still open overlaps it.
        let got = visits_of(&[enter(A, id(1), -1000)], 0, 10);
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn later_events_cannot_change_a_settled_report() {
        let mut visits = Visits::new();
        visits.add(&enter(A, id(1), 0));
        assert!(!visits.settled(t(50), t(40)), "A, inside since before the end, may still leave");
        visits.add(&exit(A, id(1), 0, 45, "position"));
        assert!(visits.settled(t(50), t(40)));
        assert!(!visits.settled(t(30), t(40)), "events before the end are still to come");
    }

    #[test]
    fn occupancy_counts_inside_at_each_start_the_peak_and_the_entries() {
        let visits = vec![
            Visit { mac: A.into(), collision_id: id(1), entry_time: t(-5), exit_time: Some(t(15)), reason: None },
            Visit { mac: B.into(), collision_id: id(2), entry_time: t(2), exit_time: Some(t(4)), reason: None },
            Visit { mac: C.into(), collision_id: id(3), entry_time: t(5), exit_time: None, reason: None },
            Visit { mac: B.into(), collision_id: id(4), entry_time: t(10), exit_time: Some(t(12)), reason: None },
        ];
        let rows = |now| -> Vec<(DateTime<Utc>, usize, usize, usize)> {
            let steps = occupancy(&visits, t(0), t(25), TimeDelta::seconds(10), now);
            steps.iter().map(|s| (s.start, s.inside, s.peak, s.entries)).collect()
        };
        assert_eq!(rows(t(100)), [(t(0), 1, 2, 2), (t(10), 3, 3, 1), (t(20), 1, 1, 0)]);
        // A device still inside is not counted in steps after now.
        assert_eq!(rows(t(18)), [(t(0), 1, 2, 2), (t(10), 3, 3, 1), (t(20), 0, 0, 0)]);
    }

    #[test]
    fn an_exit_and_an_entry_at_the_same_instant_do_not_add_up() {
        let visits = vec![
            Visit { mac: A.into(), collision_id: id(1), entry_time: t(0), exit_time: Some(t(5)), reason: None },
            Visit { mac: B.into(), collision_id: id(2), entry_time: t(5), exit_time: None, reason: None },
        ];
        let steps = occupancy(&visits, t(0), t(10), TimeDelta::seconds(10), t(100));
        assert_eq!((steps[0].inside, steps[0].peak, steps[0].entries), (1, 1, 2));
        // A device that entered exactly at a step's start is inside at it and counts as an
        // entry of it; one that left then is not inside.
        let steps = occupancy(&visits, t(5), t(6), TimeDelta::seconds(1), t(100));
        assert_eq!((steps[0].inside, steps[0].peak, steps[0].entries), (1, 1, 1));
    }

    #[test]
    fn steps_cover_the_range_the_last_one_possibly_longer() {
        assert_eq!(step_count(t(0), t(25), TimeDelta::seconds(10)), 3);
        assert_eq!(step_count(t(0), t(20), TimeDelta::seconds(10)), 2);
        assert_eq!(step_count(t(0), t(0), TimeDelta::seconds(10)), 0);
        assert!(occupancy(&[], t(0), t(0), TimeDelta::seconds(1), t(100)).is_empty());
    }
}
