//! Alarms in SQLite.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};
use uuid::Uuid;
use zonecast_model::{AlarmKey, AlarmUpdate, Shelf, ShelfTarget, StoredAlarm};

use super::{id as text_id, write};
use crate::alarm_rows::{self, AlarmRow, COLUMNS, Raise};
use crate::codec;
use crate::sqlite::{Db, SqliteStore};
use crate::{AlarmChanged, AlarmQuery, AlarmReader, AlarmWriter, Raised, Result};

/// An alarm row's columns as SQLite gives them.
type Row = (
    (String, String, Option<String>, Option<String>, Option<String>, Option<String>, i64, String, String),
    (Option<String>, Option<i64>, Option<String>),
    (Option<String>, Option<i64>, Option<String>),
    (i64, i64, String, bool, Option<i64>),
);

fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?),
        (r.get(9)?, r.get(10)?, r.get(11)?),
        (r.get(12)?, r.get(13)?, r.get(14)?),
        (r.get(15)?, r.get(16)?, r.get(17)?, r.get(18)?, r.get(19)?),
    ))
}

fn row(
    (
        (id, kind, mac, zone_id, zone_name, collision_id, raised_us, event, state),
        acknowledged,
        resolved,
        (count, last_raised_us, last_event_id, active, cleared_us),
    ): Row,
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
        count,
        last_raised_us,
        last_event_id: codec::uuid(&last_event_id)?,
        active,
        cleared_us,
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

/// The unresolved alarm of `key`.
fn by_key(conn: &rusqlite::Connection, key: &str) -> Result<Option<StoredAlarm>> {
    let found = conn.prepare_cached(&alarm_rows::by_key()).db()?.query_row([key], read).optional().db()?;
    found.map(row).transpose()
}

/// Writes back what a raise or a clearing changed in `a`.
fn save(conn: &rusqlite::Connection, a: &StoredAlarm) -> Result<()> {
    let r = &a.record;
    conn.prepare_cached(alarm_rows::SAVE)
        .db()?
        .execute(params![
            text_id(&r.alarm_id),
            codec::counter(r.count),
            r.last_raised_at.timestamp_micros(),
            text_id(&r.last_event_id),
            r.active,
            alarm_rows::micros(r.cleared_at),
            r.state.as_str(),
            r.resolved_by,
            alarm_rows::micros(r.resolved_at),
            r.resolved_note,
        ])
        .db()?;
    Ok(())
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
                       AND (?9 IS NULL OR type = ?9)
                       AND (?10 IS NULL OR active = ?10)
                       AND (?11 IS NULL OR raised_us < ?11)
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
                        limit,
                        query.kind.map(|k| k.as_str()),
                        query.active,
                        query.raised_before.map(|t| t.timestamp_micros()),
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

    async fn list_shelves(&self, now: DateTime<Utc>) -> Result<Vec<Shelf>> {
        self.run(move |conn| {
            let mut stmt = conn.prepare_cached(alarm_rows::SHELVES).db()?;
            let rows = stmt
                .query_map([now.timestamp_micros()], |r| {
                    Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter()
                .map(|(target, at, until, by, note)| alarm_rows::shelf(&target, at, until, by, note))
                .collect()
        })
        .await
    }
}

#[async_trait::async_trait]
impl AlarmWriter for SqliteStore {
    async fn record_alarm(&self, alarm: &StoredAlarm) -> Result<Raised> {
        let event = alarm_rows::event_text(alarm)?;
        let alarm = alarm.clone();
        self.run(move |conn| {
            let tx = write(conn)?;
            let (id, key) = (text_id(&alarm.record.alarm_id), alarm.record.key().text());
            let cleared = tx
                .prepare_cached(&alarm_rows::cleared("max"))
                .db()?
                .query_row(params![key, alarm_rows::NEVER], |r| r.get(0))
                .db()?;
            let cleared = alarm_rows::last_cleared(cleared)?;
            let known: bool = tx.prepare_cached(alarm_rows::KNOWN).db()?.query_row([&id], |r| r.get(0)).db()?;
            if known {
                return Ok(Raised::Copy);
            }
            let (zone, device) = alarm_rows::shelf_targets(&alarm.record.key());
            let shelved: bool = tx
                .prepare_cached(alarm_rows::SHELVED)
                .db()?
                .query_row(params![zone, device, alarm.record.raised_at.timestamp_micros()], |r| r.get(0))
                .db()?;
            if shelved {
                return Ok(Raised::Shelved);
            }
            let (counted_on, raised) = match alarm_rows::raise(by_key(&tx, &key)?, &alarm, cleared) {
                Raise::Insert(a) => {
                    let r = &a.record;
                    tx.prepare_cached(alarm_rows::INSERT)
                        .db()?
                        .execute(params![
                            id,
                            r.kind.as_str(),
                            r.mac.as_ref().map(|m| m.as_str()),
                            r.zone_id.as_ref().map(text_id),
                            r.zone_name,
                            r.collision_id.as_ref().map(text_id),
                            r.raised_at.timestamp_micros(),
                            event,
                            r.state.as_str(),
                            r.acknowledged_by,
                            alarm_rows::micros(r.acknowledged_at),
                            r.acknowledged_note,
                            r.resolved_by,
                            alarm_rows::micros(r.resolved_at),
                            r.resolved_note,
                            codec::counter(r.count),
                            r.last_raised_at.timestamp_micros(),
                            text_id(&r.last_event_id),
                            r.active,
                            alarm_rows::micros(r.cleared_at),
                            key,
                        ])
                        .db()?;
                    (id.clone(), Raised::Opened)
                }
                Raise::Count(a) => {
                    save(&tx, &a)?;
                    (text_id(&a.record.alarm_id), Raised::Counted)
                }
            };
            tx.prepare_cached(alarm_rows::COUNTED).db()?.execute(params![id, counted_on]).db()?;
            tx.commit().db()?;
            Ok(raised)
        })
        .await
    }

    async fn clear_alarm(&self, key: &AlarmKey, at: DateTime<Utc>) -> Result<Option<StoredAlarm>> {
        let (key_zone, key) = (key.zone_id, key.text());
        self.run(move |conn| {
            let tx = write(conn)?;
            let latest: i64 = tx
                .prepare_cached(&alarm_rows::cleared("max"))
                .db()?
                .query_row(params![key, at.timestamp_micros()], |r| r.get(0))
                .db()?;
            let needs_acknowledgement = match key_zone {
                Some(zone) => {
                    let spec: Option<String> = tx
                        .prepare_cached(alarm_rows::ZONE_SPEC)
                        .db()?
                        .query_row([text_id(&zone)], |r| r.get(0))
                        .optional()
                        .db()?;
                    let spec: Option<serde_json::Value> = spec.as_deref().and_then(|s| serde_json::from_str(s).ok());
                    alarm_rows::needs_acknowledgement(spec.as_ref())
                }
                None => true,
            };
            let changed = match by_key(&tx, &key)? {
                Some(a) => alarm_rows::clear(a, codec::time(latest)?, needs_acknowledgement),
                None => None,
            };
            if let Some(a) = &changed {
                save(&tx, a)?;
            }
            tx.commit().db()?;
            Ok(changed)
        })
        .await
    }

    async fn shelve(&self, shelf: &Shelf) -> Result<()> {
        let target = shelf.target().ok_or_else(|| crate::StoreError::Backend("a shelf of nothing".into()))?;
        let shelf = shelf.clone();
        self.run(move |conn| {
            let tx = write(conn)?;
            tx.prepare_cached(alarm_rows::SHELVE)
                .db()?
                .execute(params![
                    target.text(),
                    shelf.shelved_at.timestamp_micros(),
                    shelf.until.timestamp_micros(),
                    shelf.by,
                    shelf.note
                ])
                .db()?;
            tx.commit().db()
        })
        .await
    }

    async fn unshelve(&self, target: &ShelfTarget, now: DateTime<Utc>) -> Result<bool> {
        let target = target.text();
        self.run(move |conn| {
            let tx = write(conn)?;
            let taken = tx.prepare_cached(alarm_rows::UNSHELVE).db()?.execute(params![target, now.timestamp_micros()]);
            let taken = taken.db()?;
            tx.commit().db()?;
            Ok(taken > 0)
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
