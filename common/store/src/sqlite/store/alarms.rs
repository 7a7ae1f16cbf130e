//! Alarms in SQLite.

use rusqlite::{OptionalExtension, params};
use uuid::Uuid;
use zonecast_model::{AlarmUpdate, StoredAlarm};

use super::{id as text_id, write};
use crate::alarm_rows::{self, AlarmRow, COLUMNS};
use crate::codec;
use crate::sqlite::{Db, SqliteStore};
use crate::{AlarmChanged, AlarmQuery, AlarmReader, AlarmWriter, Result};

/// An alarm row's columns as SQLite gives them.
type Row = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    String,
    String,
    (Option<String>, Option<i64>, Option<String>),
    (Option<String>, Option<i64>, Option<String>),
);

fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        (r.get(9)?, r.get(10)?, r.get(11)?),
        (r.get(12)?, r.get(13)?, r.get(14)?),
    ))
}

fn row(
    (id, kind, mac, zone_id, zone_name, collision_id, raised_us, event, state, acknowledged, resolved): Row,
) -> Result<StoredAlarm> {
    let uuid = |text: Option<String>| text.as_deref().map(codec::uuid).transpose();
    AlarmRow {
        id: codec::uuid(&id)?,
        kind,
        mac,
        zone_id: uuid(zone_id)?,
        zone_name,
        collision_id: uuid(collision_id)?,
        raised_us,
        event,
        state,
        acknowledged,
        resolved,
    }
    .decode()
}

fn alarm_by_id(conn: &rusqlite::Connection, id: &Uuid) -> Result<Option<StoredAlarm>> {
    let found = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM alarms WHERE alarm_id = ?1"))
        .db()?
        .query_row([text_id(id)], read)
        .optional()
        .db()?;
    found.map(row).transpose()
}

#[async_trait::async_trait]
impl AlarmReader for SqliteStore {
    async fn get_alarm(&self, id: Uuid) -> Result<StoredAlarm> {
        self.run(move |conn| alarm_by_id(conn, &id)?.ok_or_else(|| alarm_rows::missing(&id))).await
    }

    async fn list_alarms(&self, query: &AlarmQuery) -> Result<Vec<StoredAlarm>> {
        use zonecast_model::AlarmState::{Acknowledged, Open, Resolved};
        let query = query.clone();
        self.run(move |conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM alarms
                     WHERE ((?1 AND state = 'open') OR (?2 AND state = 'acknowledged') OR (?3 AND state = 'resolved'))
                       AND (?4 IS NULL OR mac = ?4)
                       AND (?5 IS NULL OR zone_id = ?5)
                       AND (?6 IS NULL OR raised_us < ?6 OR (raised_us = ?6 AND alarm_id < ?7))
                     ORDER BY raised_us DESC, alarm_id DESC LIMIT ?8"
                ))
                .db()?;
            let mac = query.mac.as_ref().map(|m| m.as_str());
            let zone = query.zone.as_ref().map(text_id);
            let after = query.after.map(|(t, _)| t.timestamp_micros());
            let after_id = query.after.map(|(_, id)| text_id(&id));
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(
                    params![
                        query.takes(Open),
                        query.takes(Acknowledged),
                        query.takes(Resolved),
                        mac,
                        zone,
                        after,
                        after_id,
                        limit
                    ],
                    read,
                )
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter().map(row).collect()
        })
        .await
    }
}

#[async_trait::async_trait]
impl AlarmWriter for SqliteStore {
    async fn record_alarm(&self, alarm: &StoredAlarm) -> Result<bool> {
        let event = alarm_rows::event_text(alarm)?;
        let a = alarm.record.clone();
        self.run(move |conn| {
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO alarms (alarm_id, type, mac, zone_id, zone_name, collision_id, raised_us, event, state,
                         acknowledged_by, acknowledged_us, acknowledged_note, resolved_by, resolved_us, resolved_note)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
                     ON CONFLICT (alarm_id) DO NOTHING",
                )
                .db()?
                .execute(params![
                    text_id(&a.alarm_id),
                    a.kind.as_str(),
                    a.mac.as_ref().map(|m| m.as_str()),
                    a.zone_id.as_ref().map(text_id),
                    a.zone_name,
                    a.collision_id.as_ref().map(text_id),
                    a.raised_at.timestamp_micros(),
                    event,
                    a.state.as_str(),
                    a.acknowledged_by,
                    alarm_rows::micros(a.acknowledged_at),
                    a.acknowledged_note,
                    a.resolved_by,
                    alarm_rows::micros(a.resolved_at),
                    a.resolved_note,
                ])
                .db()?;
            Ok(inserted > 0)
        })
        .await
    }

    async fn change_alarm(&self, id: Uuid, update: &AlarmUpdate) -> Result<AlarmChanged> {
        let update = update.clone();
        self.run(move |conn| {
            let tx = write(conn)?;
            let changed = tx
                .prepare_cached(&alarm_rows::update(update.change, '?'))
                .db()?
                .query_row(params![text_id(&id), update.by, update.at.timestamp_micros(), update.note], read)
                .optional()
                .db()?;
            let outcome = match changed {
                Some(r) => AlarmChanged::Changed(row(r)?),
                // Unchanged: the alarm is unknown, or in a state the change cannot start from.
                None => AlarmChanged::Refused(alarm_by_id(&tx, &id)?.ok_or_else(|| alarm_rows::missing(&id))?),
            };
            tx.commit().db()?;
            Ok(outcome)
        })
        .await
    }
}
