//! Alarms in PostgreSQL.

use uuid::Uuid;
use zonecast_model::{AlarmUpdate, StoredAlarm};

use crate::alarm_rows::{self, AlarmRow, COLUMNS};
use crate::postgres::{Db, PgStore};
use crate::{AlarmChanged, AlarmQuery, AlarmReader, AlarmWriter, Result};

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
                 ORDER BY raised_us DESC, alarm_id DESC LIMIT $8"
            ))
            .await
            .db()?;
        let (open, acknowledged, resolved) = (query.takes(Open), query.takes(Acknowledged), query.takes(Resolved));
        let mac = query.mac.as_ref().map(|m| m.as_str());
        let after = query.after.map(|(t, _)| t.timestamp_micros());
        let after_id = query.after.map(|(_, id)| id);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = client
            .query(&stmt, &[&open, &acknowledged, &resolved, &mac, &query.zone, &after, &after_id, &limit])
            .await
            .db()?;
        rows.iter().map(row).collect()
    }
}

#[async_trait::async_trait]
impl AlarmWriter for PgStore {
    async fn record_alarm(&self, alarm: &StoredAlarm) -> Result<bool> {
        let a = &alarm.record;
        let event = alarm_rows::event_text(alarm)?;
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO alarms (alarm_id, type, mac, zone_id, zone_name, collision_id, raised_us, event, state,
                     acknowledged_by, acknowledged_us, acknowledged_note, resolved_by, resolved_us, resolved_note)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                 ON CONFLICT (alarm_id) DO NOTHING",
            )
            .await
            .db()?;
        let inserted = client
            .execute(
                &stmt,
                &[
                    &a.alarm_id,
                    &a.kind.as_str(),
                    &a.mac.as_ref().map(|m| m.as_str()),
                    &a.zone_id,
                    &a.zone_name,
                    &a.collision_id,
                    &a.raised_at.timestamp_micros(),
                    &event,
                    &a.state.as_str(),
                    &a.acknowledged_by,
                    &alarm_rows::micros(a.acknowledged_at),
                    &a.acknowledged_note,
                    &a.resolved_by,
                    &alarm_rows::micros(a.resolved_at),
                    &a.resolved_note,
                ],
            )
            .await
            .db()?;
        Ok(inserted > 0)
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
