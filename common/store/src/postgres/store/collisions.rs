//! Collisions in PostgreSQL: the devices inside each zone, and collision batches retried when they
//! lose a race with a zone delete.

use chrono::{DateTime, Utc};
use tokio_postgres::error::SqlState;
use uuid::Uuid;
use zonecast_model::{CollidingDevice, Mac};

use super::sorted_collisions;
use crate::postgres::{Db, PgStore, detail, is_code};
use crate::{Collision, CollisionMarks, CollisionReader, CollisionWriter, Presence, Result, StoreError, codec};

/// How often a collision batch is retried when it loses a race (a zone deleted under it, a
/// deadlock with a zone delete) before the error is returned.
const COLLISION_TRIES: usize = 3;

/// Why one attempt at a collision batch failed.
enum Attempt {
    /// Lost a race worth retrying (a zone deleted under the batch, a deadlock).
    Race(String),
    /// Anything else.
    Failed(StoreError),
}

impl From<StoreError> for Attempt {
    fn from(e: StoreError) -> Self {
        Self::Failed(e)
    }
}

impl From<tokio_postgres::Error> for Attempt {
    fn from(e: tokio_postgres::Error) -> Self {
        let race = is_code(&e, &SqlState::FOREIGN_KEY_VIOLATION)
            || is_code(&e, &SqlState::T_R_DEADLOCK_DETECTED)
            || is_code(&e, &SqlState::T_R_SERIALIZATION_FAILURE);
        if race { Self::Race(detail(&e)) } else { Self::Failed(crate::postgres::unavailable_or_backend(e)) }
    }
}

impl PgStore {
    /// One attempt at [`CollisionWriter::write_collisions`].
    async fn try_write_collisions(
        &self,
        entered: &[Collision],
        exited: &[(Uuid, Mac)],
        presence: &[Presence],
        marks: &[(String, i64)],
        epochs: &[(String, i64)],
    ) -> std::result::Result<(), Attempt> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        if !epochs.is_empty() {
            // The epoch rows are locked until the end of the transaction: a new owner's fence
            // waits for an old owner's write under way, and the old owner's next one sees it.
            let names: Vec<&str> = epochs.iter().map(|(n, _)| n.as_str()).collect();
            let values: Vec<i64> = epochs.iter().map(|(_, v)| *v).collect();
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO collision_marks (name, value) SELECT * FROM unnest($1::text[], $2::bigint[])
                     ON CONFLICT (name) DO UPDATE SET value = GREATEST(collision_marks.value, EXCLUDED.value)
                     RETURNING name, value",
                )
                .await?;
            let stored = tx.query(&stmt, &[&names, &values]).await?;
            let lost = CollisionMarks::fenced(epochs, stored.iter().map(|r| (r.get(0), r.get(1))));
            if !lost.is_empty() {
                return Err(Attempt::Failed(StoreError::Fenced { partitions: lost }));
            }
        }
        if !entered.is_empty() {
            let zones: Vec<Uuid> = entered.iter().map(|c| c.zone_id).collect();
            let macs: Vec<&str> = entered.iter().map(|c| c.mac.as_str()).collect();
            let ids: Vec<Uuid> = entered.iter().map(|c| c.collision_id).collect();
            let times: Vec<DateTime<Utc>> = entered.iter().map(|c| c.entry_time).collect();
            let dwelt: Vec<bool> = entered.iter().map(|c| c.dwell_reported).collect();
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO collisions (zone_id, mac, collision_id, entry_time, dwell_reported)
                     SELECT u.zone_id, u.mac, u.collision_id, u.entry_time, u.dwell_reported
                     FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[], $5::boolean[])
                          AS u(zone_id, mac, collision_id, entry_time, dwell_reported)
                     WHERE EXISTS (SELECT 1 FROM zones z WHERE z.id = u.zone_id)
                     ON CONFLICT (zone_id, mac) DO UPDATE
                     SET collision_id = EXCLUDED.collision_id, entry_time = EXCLUDED.entry_time,
                         dwell_reported = EXCLUDED.dwell_reported",
                )
                .await?;
            tx.execute(&stmt, &[&zones, &macs, &ids, &times, &dwelt]).await?;
        }
        if !exited.is_empty() {
            let zones: Vec<Uuid> = exited.iter().map(|(z, _)| *z).collect();
            let macs: Vec<&str> = exited.iter().map(|(_, m)| m.as_str()).collect();
            let stmt = tx
                .prepare_cached(
                    "DELETE FROM collisions c USING unnest($1::uuid[], $2::text[]) AS u(zone_id, mac)
                     WHERE c.zone_id = u.zone_id AND c.mac = u.mac",
                )
                .await?;
            tx.execute(&stmt, &[&zones, &macs]).await?;
        }
        if !presence.is_empty() {
            let macs: Vec<&str> = presence.iter().map(|p| p.mac.as_str()).collect();
            let seen: Vec<DateTime<Utc>> = presence.iter().map(|p| p.last_seen).collect();
            let offline: Vec<bool> = presence.iter().map(|p| p.offline).collect();
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO device_presence (mac, last_seen, offline)
                     SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::boolean[])
                     ON CONFLICT (mac) DO UPDATE SET last_seen = EXCLUDED.last_seen, offline = EXCLUDED.offline",
                )
                .await?;
            tx.execute(&stmt, &[&macs, &seen, &offline]).await?;
        }
        if !marks.is_empty() {
            let names: Vec<&str> = marks.iter().map(|(n, _)| n.as_str()).collect();
            let values: Vec<i64> = marks.iter().map(|(_, v)| *v).collect();
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO collision_marks (name, value) SELECT * FROM unnest($1::text[], $2::bigint[])
                     ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                )
                .await?;
            tx.execute(&stmt, &[&names, &values]).await?;
        }
        Ok(tx.commit().await?)
    }
}

#[async_trait::async_trait]
impl CollisionReader for PgStore {
    async fn colliding_devices(&self, zone: Uuid) -> Result<Vec<CollidingDevice>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT zone_id, mac, collision_id, entry_time, dwell_reported FROM collisions WHERE zone_id = $1",
            )
            .await
            .db()?;
        let inside = sorted_collisions(&client.query(&stmt, &[&zone]).await.db()?)?;
        Ok(inside.into_iter().map(CollidingDevice::from).collect())
    }

    async fn all_collisions(&self) -> Result<Vec<Collision>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT zone_id, mac, collision_id, entry_time, dwell_reported FROM collisions")
            .await
            .db()?;
        sorted_collisions(&client.query(&stmt, &[]).await.db()?)
    }

    async fn collision_marks(&self) -> Result<CollisionMarks> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT name, value FROM collision_marks").await.db()?;
        let rows = client.query(&stmt, &[]).await.db()?;
        Ok(CollisionMarks::from_rows(rows.iter().map(|r| (r.get(0), r.get(1)))))
    }

    async fn all_presence(&self) -> Result<Vec<Presence>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT mac, last_seen, offline FROM device_presence").await.db()?;
        let mut rows = client
            .query(&stmt, &[])
            .await
            .db()?
            .iter()
            .map(|r| {
                Ok(Presence {
                    mac: codec::mac(r.try_get(0).db()?)?,
                    last_seen: r.try_get(1).db()?,
                    offline: r.try_get(2).db()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // Sorted here rather than in SQL: the server's collation may not order text bytewise.
        rows.sort_by(|a, b| a.mac.cmp(&b.mac));
        Ok(rows)
    }
}

#[async_trait::async_trait]
impl CollisionWriter for PgStore {
    async fn write_collisions(
        &self,
        entered: &[Collision],
        exited: &[(Uuid, Mac)],
        presence: &[Presence],
        marks: &CollisionMarks,
    ) -> Result<()> {
        let epochs = marks.epoch_rows();
        let marks = marks.rows();
        if entered.is_empty() && exited.is_empty() && presence.is_empty() && marks.is_empty() && epochs.is_empty() {
            return Ok(());
        }
        let entered = codec::coalesce_entered(entered);
        let presence = codec::coalesce_presence(presence);
        let mut exited = exited.to_vec();
        exited.sort();
        let mut tries = 0;
        loop {
            tries += 1;
            match self.try_write_collisions(&entered, &exited, &presence, &marks, &epochs).await {
                Ok(()) => return Ok(()),
                Err(Attempt::Failed(e)) => return Err(e),
                Err(Attempt::Race(m)) if tries < COLLISION_TRIES => {
                    tracing::debug!(error = %m, tries, "retrying a collision batch that lost a race");
                }
                Err(Attempt::Race(m)) => return Err(StoreError::Backend(format!("collision batch: {m}"))),
            }
        }
    }
}
