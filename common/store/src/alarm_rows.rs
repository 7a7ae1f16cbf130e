//! The alarm row shared by both dialects: its columns, how an alarm is read back from them,
//! the conditional update each change of state is, and how a raise or a clearing of its
//! condition changes it.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_model::{
    AlarmChange, AlarmKey, AlarmRecord, AlarmState, CLEARED_NOTE, RESOLVED_BY_ZONECAST, Shelf, ShelfTarget, StoredAlarm,
};

use crate::codec::{self, from_json};
use crate::{Result, StoreError};

/// The columns an alarm is read back from, in [`AlarmRow`]'s order.
pub(crate) const COLUMNS: &str = "alarm_id, type, mac, zone_id, zone_name, collision_id, raised_us, event, state, \
     acknowledged_by, acknowledged_us, acknowledged_note, resolved_by, resolved_us, resolved_note, \
     raise_count, last_raised_us, last_event_id, active, cleared_us";

/// The columns an alarm is inserted with: [`COLUMNS`] and its `open_key`.
pub(crate) const INSERT: &str = "INSERT INTO alarms (alarm_id, type, mac, zone_id, zone_name, collision_id, raised_us, \
     event, state, acknowledged_by, acknowledged_us, acknowledged_note, resolved_by, resolved_us, resolved_note, \
     raise_count, last_raised_us, last_event_id, active, cleared_us, open_key) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)";

/// The update that writes back what a raise or a clearing changed (parameters `?1` the alarm,
/// then its count, latest raise and event, whether it is active, when it cleared, and its
/// state with who resolved it, when and why); a resolved alarm gives its key up.
pub(crate) const SAVE: &str = "UPDATE alarms SET raise_count = ?2, last_raised_us = ?3, last_event_id = ?4, \
     active = ?5, cleared_us = ?6, state = ?7, resolved_by = ?8, resolved_us = ?9, resolved_note = ?10, \
     open_key = CASE WHEN ?7 = 'resolved' THEN NULL ELSE open_key END WHERE alarm_id = ?1";

/// The unresolved alarm of a key (`?1`).
pub(crate) fn by_key() -> String {
    format!("SELECT {COLUMNS} FROM alarms WHERE open_key = ?1")
}

/// Whether an event (`?1`) was counted already, by an alarm of this release or raised by it
/// in an earlier one.
pub(crate) const KNOWN: &str = "SELECT EXISTS (SELECT 1 FROM alarm_events WHERE event_id = ?1) \
     OR EXISTS (SELECT 1 FROM alarms WHERE alarm_id = ?1)";

/// Records that an alarm (`?2`) counted an event (`?1`).
pub(crate) const COUNTED: &str = "INSERT INTO alarm_events (event_id, alarm_id) VALUES (?1, ?2)";

/// Notes that a key's condition (`?1`) cleared at `?2` (the latest clearing wins) and returns
/// the latest; `greatest` is the dialect's function of two values. With [`NEVER`] for `?2` it
/// only reads when the condition last cleared. Either way it locks the key's row until the
/// transaction ends, so that a raise and a clearing of one key follow each other, each seeing
/// what the other wrote.
pub(crate) fn cleared(greatest: &str) -> String {
    format!(
        "INSERT INTO alarm_clears (open_key, cleared_us) VALUES (?1, ?2) ON CONFLICT (open_key) \
         DO UPDATE SET cleared_us = {greatest}(alarm_clears.cleared_us, excluded.cleared_us) RETURNING cleared_us"
    )
}

/// The clearing time of a condition that never cleared.
pub(crate) const NEVER: i64 = i64::MIN;

/// When a condition last cleared, from what [`cleared`] returns.
pub(crate) fn last_cleared(micros: i64) -> Result<Option<DateTime<Utc>>> {
    if micros == NEVER { Ok(None) } else { codec::time(micros).map(Some) }
}

/// `sql` with the dialect's parameter mark (`$` for PostgreSQL, `?` for SQLite).
pub(crate) fn marked(sql: &str, mark: char) -> String {
    sql.replace('?', &mark.to_string())
}

/// Whether the zone (`?1`) or the device (`?2`, each `''` when the alarm has none) of an alarm
/// raised at `?3` was shelved then.
pub(crate) const SHELVED: &str = "SELECT EXISTS (SELECT 1 FROM shelves WHERE target IN (?1, ?2) \
     AND shelved_us <= ?3 AND until_us > ?3)";

/// Shelves a target (`?1`) from `?2` to `?3`, by `?4`, for `?5`; a later shelving of the same
/// target replaces the earlier.
pub(crate) const SHELVE: &str = "INSERT INTO shelves (target, shelved_us, until_us, shelved_by, note) \
     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (target) DO UPDATE SET shelved_us = excluded.shelved_us, \
     until_us = excluded.until_us, shelved_by = excluded.shelved_by, note = excluded.note";

/// Takes the shelf of a target (`?1`) back at `?2`, if it has not expired by then: it ends
/// then, and still covers the events raised before (read late, they open no alarm either).
pub(crate) const UNSHELVE: &str = "UPDATE shelves SET until_us = ?2 WHERE target = ?1 AND until_us > ?2";

/// The shelves that have not expired by `?1`, the soonest to expire first.
pub(crate) const SHELVES: &str = "SELECT target, shelved_us, until_us, shelved_by, note FROM shelves \
     WHERE until_us > ?1 ORDER BY until_us, target";

/// The shelf targets of the zone and the device of `key` (`''` for none), for [`SHELVED`].
pub(crate) fn shelf_targets(key: &AlarmKey) -> (String, String) {
    let zone = key.zone_id.map(|z| ShelfTarget::Zone(z).text()).unwrap_or_default();
    let device = key.mac.clone().map(|m| ShelfTarget::Device(m).text()).unwrap_or_default();
    (zone, device)
}

/// A shelf row read back.
pub(crate) fn shelf(target: &str, shelved_us: i64, until_us: i64, by: String, note: Option<String>) -> Result<Shelf> {
    let target =
        ShelfTarget::parse(target).ok_or_else(|| StoreError::Backend(format!("stored shelf of '{target}'")))?;
    let (zone_id, mac) = match target {
        ShelfTarget::Zone(id) => (Some(id), None),
        ShelfTarget::Device(mac) => (None, Some(mac)),
    };
    Ok(Shelf { zone_id, mac, shelved_at: codec::time(shelved_us)?, until: codec::time(until_us)?, by, note })
}

/// What a raise does to the store: insert a new alarm, or save the one of its key.
pub(crate) enum Raise {
    /// The alarm to insert.
    Insert(StoredAlarm),
    /// The unresolved alarm of the key, counted.
    Count(StoredAlarm),
}

/// The raise of `alarm` (as the event raises it) given the unresolved alarm of its key and
/// when its condition last cleared: an event no later than that clearing leaves the alarm
/// cleared, whatever order the two were read in.
pub(crate) fn raise(existing: Option<StoredAlarm>, alarm: &StoredAlarm, cleared: Option<DateTime<Utc>>) -> Raise {
    let at = alarm.record.raised_at;
    let settle = |mut a: StoredAlarm| {
        let r = &mut a.record;
        r.active = cleared.is_none_or(|c| r.last_raised_at > c);
        r.cleared_at = if r.active { None } else { cleared.max(r.cleared_at) };
        a
    };
    match existing {
        None => Raise::Insert(settle(alarm.clone())),
        Some(mut a) => {
            a.record.count += 1;
            if at >= a.record.last_raised_at {
                a.record.last_raised_at = at;
                a.record.last_event_id = alarm.record.alarm_id;
            }
            Raise::Count(settle(a))
        }
    }
}

/// The unresolved alarm `existing` once its condition cleared at `at` (the latest clearing of
/// its key); `None` when that changes nothing: it is cleared already, or was raised again
/// after `at`. An acknowledged alarm is resolved by zonecast then (someone is on it and its
/// condition is over), and so is an open one when its zone's alarms need no acknowledgement.
pub(crate) fn clear(mut existing: StoredAlarm, at: DateTime<Utc>, needs_acknowledgement: bool) -> Option<StoredAlarm> {
    let r = &mut existing.record;
    if !r.active || r.last_raised_at > at {
        return None;
    }
    r.active = false;
    r.cleared_at = Some(at);
    if r.state == AlarmState::Acknowledged || !needs_acknowledgement {
        resolve_by_zonecast(r, at);
    }
    Some(existing)
}

/// The zone (`?1`) of an alarm being cleared, as the store keeps it.
pub(crate) const ZONE_SPEC: &str = "SELECT spec FROM zones WHERE id = ?1";

/// Whether the alarms of the zone stored as `spec` (JSON; none for an alarm without a zone, or
/// a zone deleted since) wait for a person once cleared.
pub(crate) fn needs_acknowledgement(spec: Option<&serde_json::Value>) -> bool {
    spec.and_then(|s| s.get("AlarmsNeedAcknowledgement")).and_then(serde_json::Value::as_bool).unwrap_or(true)
}

/// `r` resolved by zonecast at `at`, its condition cleared.
fn resolve_by_zonecast(r: &mut AlarmRecord, at: DateTime<Utc>) {
    r.state = AlarmState::Resolved;
    r.resolved_by = Some(RESOLVED_BY_ZONECAST.to_owned());
    r.resolved_at = Some(at);
    r.resolved_note = Some(CLEARED_NOTE.to_owned());
}

/// One alarm row as read, before decoding.
pub(crate) struct AlarmRow {
    pub id: Uuid,
    pub kind: String,
    pub mac: Option<String>,
    pub zone_id: Option<Uuid>,
    pub zone_name: Option<String>,
    pub collision_id: Option<Uuid>,
    pub raised_us: i64,
    pub event: String,
    pub state: String,
    pub acknowledged: (Option<String>, Option<i64>, Option<String>),
    pub resolved: (Option<String>, Option<i64>, Option<String>),
    pub count: i64,
    pub last_raised_us: i64,
    pub last_event_id: Uuid,
    pub active: bool,
    pub cleared_us: Option<i64>,
}

/// A stored time, if one is set.
fn time(micros: Option<i64>) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
    micros.map(codec::time).transpose()
}

impl AlarmRow {
    /// The alarm these columns hold.
    pub(crate) fn decode(self) -> Result<StoredAlarm> {
        let bad = |what: &str, e: String| StoreError::Backend(format!("stored alarm's {what}: {e}"));
        Ok(StoredAlarm {
            record: AlarmRecord {
                alarm_id: self.id,
                kind: self.kind.parse().map_err(|e: zonecast_model::UnknownName| bad("type", e.to_string()))?,
                mac: self.mac.as_deref().map(codec::mac).transpose()?,
                zone_id: self.zone_id,
                zone_name: self.zone_name,
                collision_id: self.collision_id,
                raised_at: codec::time(self.raised_us)?,
                count: u64::try_from(self.count).map_err(|e| bad("count", e.to_string()))?,
                last_raised_at: codec::time(self.last_raised_us)?,
                last_event_id: self.last_event_id,
                active: self.active,
                cleared_at: time(self.cleared_us)?,
                state: self.state.parse().map_err(|e| bad("state", e))?,
                acknowledged_by: self.acknowledged.0,
                acknowledged_at: time(self.acknowledged.1)?,
                acknowledged_note: self.acknowledged.2,
                resolved_by: self.resolved.0,
                resolved_at: time(self.resolved.1)?,
                resolved_note: self.resolved.2,
            },
            event: from_json(&self.event, "alarm's event")?,
        })
    }
}

/// The conditional update of `change` with parameters `<mark>1` (the alarm), `<mark>2` (who),
/// `<mark>3` (when, in microseconds) and `<mark>4` (the note): it touches the row only while
/// the alarm is in a state the change may start from, and returns it changed. A resolved
/// alarm gives its key up; one acknowledged after its condition cleared is resolved by
/// zonecast at once, as one cleared while acknowledged is.
pub(crate) fn update(change: AlarmChange, mark: char) -> String {
    let to = change.to().as_str();
    let from: Vec<String> = change.from().iter().map(|s| format!("'{}'", s.as_str())).collect();
    let set = match change {
        AlarmChange::Resolve => "state = 'resolved', open_key = NULL".to_owned(),
        AlarmChange::Acknowledge => format!(
            "state = CASE WHEN active THEN 'acknowledged' ELSE 'resolved' END,
             resolved_by = CASE WHEN active THEN resolved_by ELSE '{RESOLVED_BY_ZONECAST}' END,
             resolved_us = CASE WHEN active THEN resolved_us ELSE ?3 END,
             resolved_note = CASE WHEN active THEN resolved_note ELSE '{CLEARED_NOTE}' END,
             open_key = CASE WHEN active THEN open_key ELSE NULL END"
        ),
    };
    let sql = format!(
        "UPDATE alarms SET {set}, {to}_by = ?2, {to}_us = ?3, {to}_note = ?4
         WHERE alarm_id = ?1 AND state IN ({}) RETURNING {COLUMNS}",
        from.join(", ")
    );
    marked(&sql, mark)
}

/// `NotFound` for alarm `id`.
pub(crate) fn missing(id: &Uuid) -> StoreError {
    StoreError::not_found("alarm", id)
}

/// The event of `alarm` as the row keeps it.
pub(crate) fn event_text(alarm: &StoredAlarm) -> Result<String> {
    codec::to_json(&alarm.event)
}

/// An optional time as the row keeps it.
pub(crate) fn micros(t: Option<chrono::DateTime<chrono::Utc>>) -> Option<i64> {
    t.map(|t| t.timestamp_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_updates_only_from_the_states_it_may_start_from() {
        let sql = update(AlarmChange::Resolve, '$');
        assert!(
            sql.contains("state = 'resolved', open_key = NULL, resolved_by = $2, resolved_us = $3, resolved_note = $4")
        );
        assert!(sql.contains("WHERE alarm_id = $1 AND state IN ('open', 'acknowledged')"));
        assert!(update(AlarmChange::Acknowledge, '?').contains("state IN ('open')"));
    }
}
