//! Alarms in PostgreSQL.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_model::{AlarmKey, AlarmUpdate, Shelf, ShelfTarget, StoredAlarm};

use crate::alarm_rows::{self, AlarmRow, COLUMNS, Raise, marked};
use crate::codec;
use crate::postgres::{Db, PgStore};
use crate::{AlarmChanged, AlarmQuery, AlarmReader, AlarmWriter, Raised, Result};

fn row(r: &tokio_postgres::Row) -> Result<StoredAlarm> {
    AlarmRow {
        id: r.try_get(0).db()?,
        kind: r.try_get(1).db()?,
        mac: r.try_get(2).db()?,
        zone_id: r.try_get(3).db()?,
        zone_name: r.try_get(4).db()?,
        collision_id: r.try_get(5).db()?,
        raised_us: r.try_get(6).db()?,
        event: r.try_get(7).db()?,
        state: r.try_get(8).db()?,
        acknowledged: (r.try_get(9).db()?, r.try_get(10).db()?, r.try_get(11).db()?),
        resolved: (r.try_get(12).db()?, r.try_get(13).db()?, r.try_get(14).db()?),
        count: r.try_get(15).db()?,
        last_raised_us: r.try_get(16).db()?,
        last_event_id: r.try_get(17).db()?,
        active: r.try_get(18).db()?,
        cleared_us: r.try_get(19).db()?,
    }
    .decode()
}

/// Alarm `id` read over `client` (one the caller holds already); `NotFound`.
async fn alarm_by_id(client: &deadpool_postgres::Object, id: Uuid) -> Result<StoredAlarm> {
    let stmt = client.prepare_cached(&format!("SELECT {COLUMNS} FROM alarms WHERE alarm_id = $1")).await.db()?;
    match client.query_opt(&stmt, &[&id]).await.db()? {
        Some(r) => row(&r),
        None => Err(alarm_rows::missing(&id)),
    }
}

/// The unresolved alarm of `key`, its row locked until the transaction ends.
async fn by_key(tx: &deadpool_postgres::Transaction<'_>, key: &str) -> Result<Option<StoredAlarm>> {
    let stmt = tx.prepare_cached(&format!("{} FOR UPDATE", marked(&alarm_rows::by_key(), '$'))).await.db()?;
    tx.query_opt(&stmt, &[&key]).await.db()?.as_ref().map(row).transpose()
}

/// Writes back what a raise or a clearing changed in `a`.
async fn save(tx: &deadpool_postgres::Transaction<'_>, a: &StoredAlarm) -> Result<()> {
    let r = &a.record;
    let stmt = tx.prepare_cached(&marked(alarm_rows::SAVE, '$')).await.db()?;
    tx.execute(
        &stmt,
        &[
            &r.alarm_id,
            &codec::counter(r.count),
            &r.last_raised_at.timestamp_micros(),
            &r.last_event_id,
            &r.active,
            &alarm_rows::micros(r.cleared_at),
            &r.state.as_str(),
            &r.resolved_by,
            &alarm_rows::micros(r.resolved_at),
            &r.resolved_note,
        ],
    )
    .await
    .db()?;
    Ok(())
}

#[async_trait::async_trait]
impl AlarmReader for PgStore {
    async fn get_alarm(&self, id: Uuid) -> Result<StoredAlarm> {
        alarm_by_id(&self.client().await?, id).await
    }

    async fn list_alarms(&self, query: &AlarmQuery) -> Result<Vec<StoredAlarm>> {
        use zonecast_model::AlarmState::{Acknowledged, Open, Resolved};
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM alarms
                 WHERE (($1::bool AND state = 'open') OR ($2::bool AND state = 'acknowledged')
                        OR ($3::bool AND state = 'resolved'))
                   AND ($4::text IS NULL OR mac = $4::text)
                   AND ($5::uuid IS NULL OR zone_id = $5::uuid)
                   AND ($6::bigint IS NULL OR raised_us < $6::bigint
                        OR (raised_us = $6::bigint AND alarm_id < $7::uuid))
                   AND ($9::text IS NULL OR type = $9::text)
                   AND ($10::bool IS NULL OR active = $10::bool)
                   AND ($11::bigint IS NULL OR raised_us < $11::bigint)
                 ORDER BY raised_us DESC, alarm_id DESC LIMIT $8"
            ))
            .await
            .db()?;
        let (open, acknowledged, resolved) = (query.takes(Open), query.takes(Acknowledged), query.takes(Resolved));
        let mac = query.mac.as_ref().map(|m| m.as_str());
        let after = query.after.map(|(t, _)| t.timestamp_micros());
        let after_id = query.after.map(|(_, id)| id);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let kind = query.kind.map(|k| k.as_str());
        let before = query.raised_before.map(|t| t.timestamp_micros());
        let rows = client
            .query(
                &stmt,
                &[
                    &open,
                    &acknowledged,
                    &resolved,
                    &mac,
                    &query.zone,
                    &after,
                    &after_id,
                    &limit,
                    &kind,
                    &query.active,
                    &before,
                ],
            )
            .await
            .db()?;
        rows.iter().map(row).collect()
    }

    async fn list_shelves(&self, now: DateTime<Utc>) -> Result<Vec<Shelf>> {
        let client = self.client().await?;
        let rows = client.query(&marked(alarm_rows::SHELVES, '$'), &[&now.timestamp_micros()]).await.db()?;
        rows.iter()
            .map(|r| {
                let target: String = r.try_get(0).db()?;
                alarm_rows::shelf(
                    &target,
                    r.try_get(1).db()?,
                    r.try_get(2).db()?,
                    r.try_get(3).db()?,
                    r.try_get(4).db()?,
                )
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl AlarmWriter for PgStore {
    async fn record_alarm(&self, alarm: &StoredAlarm) -> Result<Raised> {
        let key = alarm.record.key().text();
        let event = alarm_rows::event_text(alarm)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        let id = alarm.record.alarm_id;
        // The key locked first: a copy being recorded at the same time is then known.
        let cleared = tx
            .query_one(&marked(&alarm_rows::cleared("GREATEST"), '$'), &[&key, &alarm_rows::NEVER])
            .await
            .db()?
            .try_get(0)
            .db()?;
        let cleared = alarm_rows::last_cleared(cleared)?;
        let known: bool = tx.query_one(&marked(alarm_rows::KNOWN, '$'), &[&id]).await.db()?.try_get(0).db()?;
        if known {
            return Ok(Raised::Copy);
        }
        let (zone, device) = alarm_rows::shelf_targets(&alarm.record.key());
        let raised_us = alarm.record.raised_at.timestamp_micros();
        let shelved = tx.query_one(&marked(alarm_rows::SHELVED, '$'), &[&zone, &device, &raised_us]).await.db()?;
        if shelved.try_get::<_, bool>(0).db()? {
            return Ok(Raised::Shelved);
        }
        let (counted_on, raised) = match alarm_rows::raise(by_key(&tx, &key).await?, alarm, cleared) {
            Raise::Insert(a) => {
                let r = &a.record;
                let stmt = tx.prepare_cached(&marked(alarm_rows::INSERT, '$')).await.db()?;
                tx.execute(
                    &stmt,
                    &[
                        &r.alarm_id,
                        &r.kind.as_str(),
                        &r.mac.as_ref().map(|m| m.as_str()),
                        &r.zone_id,
                        &r.zone_name,
                        &r.collision_id,
                        &r.raised_at.timestamp_micros(),
                        &event,
                        &r.state.as_str(),
                        &r.acknowledged_by,
                        &alarm_rows::micros(r.acknowledged_at),
                        &r.acknowledged_note,
                        &r.resolved_by,
                        &alarm_rows::micros(r.resolved_at),
                        &r.resolved_note,
                        &codec::counter(r.count),
                        &r.last_raised_at.timestamp_micros(),
                        &r.last_event_id,
                        &r.active,
                        &alarm_rows::micros(r.cleared_at),
                        &key,
                    ],
                )
                .await
                .db()?;
                (r.alarm_id, Raised::Opened)
            }
            Raise::Count(a) => {
                save(&tx, &a).await?;
                (a.record.alarm_id, Raised::Counted)
            }
        };
        tx.execute(&marked(alarm_rows::COUNTED, '$'), &[&id, &counted_on]).await.db()?;
        tx.commit().await.db()?;
        Ok(raised)
    }

    async fn clear_alarm(&self, key: &AlarmKey, at: DateTime<Utc>) -> Result<Option<StoredAlarm>> {
        let (key_zone, key) = (key.zone_id, key.text());
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        let latest: i64 = tx
            .query_one(&marked(&alarm_rows::cleared("GREATEST"), '$'), &[&key, &at.timestamp_micros()])
            .await
            .db()?
            .try_get(0)
            .db()?;
        let needs_acknowledgement = match key_zone {
            Some(zone) => {
                let spec = tx.query_opt(&marked(alarm_rows::ZONE_SPEC, '$'), &[&zone]).await.db()?;
                let spec: Option<serde_json::Value> = spec.map(|r| r.try_get(0)).transpose().db()?;
                alarm_rows::needs_acknowledgement(spec.as_ref())
            }
            None => true,
        };
        let changed = match by_key(&tx, &key).await? {
            Some(a) => alarm_rows::clear(a, codec::time(latest)?, needs_acknowledgement),
            None => None,
        };
        if let Some(a) = &changed {
            save(&tx, a).await?;
        }
        tx.commit().await.db()?;
        Ok(changed)
    }

    async fn shelve(&self, shelf: &Shelf) -> Result<()> {
        let target = shelf.target().ok_or_else(|| crate::StoreError::Backend("a shelf of nothing".into()))?;
        let client = self.client().await?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
            &target.text(),
            &shelf.shelved_at.timestamp_micros(),
            &shelf.until.timestamp_micros(),
            &shelf.by,
            &shelf.note,
        ];
        client.execute(&marked(alarm_rows::SHELVE, '$'), &params).await.db()?;
        Ok(())
    }

    async fn unshelve(&self, target: &ShelfTarget, now: DateTime<Utc>) -> Result<bool> {
        let client = self.client().await?;
        let (sql, target, now) = (marked(alarm_rows::UNSHELVE, '$'), target.text(), now.timestamp_micros());
        Ok(client.execute(&sql, &[&target, &now]).await.db()? > 0)
    }

    async fn change_alarm(&self, id: Uuid, update: &AlarmUpdate) -> Result<AlarmChanged> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(&alarm_rows::update(update.change, '$')).await.db()?;
        let at = update.at.timestamp_micros();
        if let Some(r) = client.query_opt(&stmt, &[&id, &update.by, &at, &update.note]).await.db()? {
            return row(&r).map(AlarmChanged::Changed);
        }
        // Unchanged: the alarm is unknown, or in a state the change cannot start from.
        alarm_by_id(&client, id).await.map(AlarmChanged::Refused)
    }
}
