//! The alarm row shared by both dialects: its columns, how an alarm is read back from them,
//! and the conditional update each change of state is.

use uuid::Uuid;
use zonecast_model::{AlarmChange, AlarmRecord, StoredAlarm};

use crate::codec::{self, from_json};
use crate::{Result, StoreError};

/// The columns an alarm is read back from, in [`AlarmRow`]'s order.
pub(crate) const COLUMNS: &str = "alarm_id, type, mac, zone_id, zone_name, collision_id, raised_us, event, state, \
     acknowledged_by, acknowledged_us, acknowledged_note, resolved_by, resolved_us, resolved_note";

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
/// the alarm is in a state the change may start from, and returns it changed.
pub(crate) fn update(change: AlarmChange, mark: char) -> String {
    let to = change.to().as_str();
    let from: Vec<String> = change.from().iter().map(|s| format!("'{}'", s.as_str())).collect();
    format!(
        "UPDATE alarms SET state = '{to}', {to}_by = ?2, {to}_us = ?3, {to}_note = ?4
         WHERE alarm_id = ?1 AND state IN ({}) RETURNING {COLUMNS}",
        from.join(", ")
    )
    .replace('?', &mark.to_string())
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
        assert!(sql.contains("state = 'resolved', resolved_by = $2, resolved_us = $3, resolved_note = $4"));
        assert!(sql.contains("WHERE alarm_id = $1 AND state IN ('open', 'acknowledged')"));
        assert!(update(AlarmChange::Acknowledge, '?').contains("state IN ('open')"));
    }
}
