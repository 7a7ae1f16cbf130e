//! Collisions in SQLite: the devices inside each zone, entered and exited.

use rusqlite::params;
use uuid::Uuid;
use zonecast_model::{CollidingDevice, Mac};

use super::{collisions_of, id, write};
use crate::codec;
use crate::sqlite::{Db, SqliteStore};
use crate::{Collision, CollisionMarks, CollisionReader, CollisionWriter, Presence, Result, StoreError};

#[async_trait::async_trait]
impl CollisionReader for SqliteStore {
    async fn colliding_devices(&self, zone: Uuid) -> Result<Vec<CollidingDevice>> {
        self.run(move |conn| Ok(collisions_of(conn, Some(&zone))?.into_iter().map(CollidingDevice::from).collect()))
            .await
    }

    async fn all_collisions(&self) -> Result<Vec<Collision>> {
        self.run(|conn| collisions_of(conn, None)).await
    }

    async fn collision_marks(&self) -> Result<CollisionMarks> {
        self.run(|conn| {
            let mut stmt = conn.prepare_cached("SELECT name, value FROM collision_marks").db()?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).db()?;
            Ok(CollisionMarks::from_rows(rows.collect::<rusqlite::Result<Vec<(String, i64)>>>().db()?))
        })
        .await
    }

    async fn all_presence(&self) -> Result<Vec<Presence>> {
        self.run(|conn| {
            let mut stmt =
                conn.prepare_cached("SELECT mac, last_seen_us, offline FROM device_presence ORDER BY mac").db()?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, bool>(2)?)))
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter()
                .map(|(mac, seen, offline)| {
                    Ok(Presence { mac: codec::mac(&mac)?, last_seen: codec::time(seen)?, offline })
                })
                .collect()
        })
        .await
    }
}

#[async_trait::async_trait]
impl CollisionWriter for SqliteStore {
    async fn write_collisions(
        &self,
        entered: &[Collision],
        exited: &[(Uuid, Mac)],
        presence: &[Presence],
        marks: &CollisionMarks,
    ) -> Result<()> {
        let entered = codec::coalesce_entered(entered);
        let exited = exited.to_vec();
        let presence = codec::coalesce_presence(presence);
        let epochs = marks.epoch_rows();
        let marks = marks.rows();
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut epoch = tx
                    .prepare_cached(
                        "INSERT INTO collision_marks (name, value) VALUES (?1, ?2)
                         ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)
                         RETURNING name, value",
                    )
                    .db()?;
                let mut stored = Vec::with_capacity(epochs.len());
                for (name, value) in &epochs {
                    stored.push(epoch.query_row(params![name, value], |r| Ok((r.get(0)?, r.get(1)?))).db()?);
                }
                let lost = CollisionMarks::fenced(&epochs, stored);
                if !lost.is_empty() {
                    return Err(StoreError::Fenced { partitions: lost });
                }
                let mut upsert = tx
                    .prepare_cached(
                        "INSERT INTO collisions (zone_id, mac, collision_id, entry_time_us, dwell_reported)
                         SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM zones WHERE id = ?1)
                         ON CONFLICT (zone_id, mac) DO UPDATE
                         SET collision_id = excluded.collision_id, entry_time_us = excluded.entry_time_us,
                             dwell_reported = excluded.dwell_reported",
                    )
                    .db()?;
                for c in &entered {
                    upsert
                        .execute(params![
                            id(&c.zone_id),
                            c.mac.as_str(),
                            id(&c.collision_id),
                            c.entry_time.timestamp_micros(),
                            c.dwell_reported
                        ])
                        .db()?;
                }
                let mut delete = tx.prepare_cached("DELETE FROM collisions WHERE zone_id = ?1 AND mac = ?2").db()?;
                for (zone, mac) in &exited {
                    delete.execute(params![id(zone), mac.as_str()]).db()?;
                }
                let mut seen = tx
                    .prepare_cached(
                        "INSERT INTO device_presence (mac, last_seen_us, offline) VALUES (?1, ?2, ?3)
                         ON CONFLICT (mac) DO UPDATE
                         SET last_seen_us = excluded.last_seen_us, offline = excluded.offline",
                    )
                    .db()?;
                for p in &presence {
                    seen.execute(params![p.mac.as_str(), p.last_seen.timestamp_micros(), p.offline]).db()?;
                }
                let mut mark = tx
                    .prepare_cached(
                        "INSERT INTO collision_marks (name, value) VALUES (?1, ?2)
                         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    )
                    .db()?;
                for (name, value) in &marks {
                    mark.execute(params![name, value]).db()?;
                }
            }
            tx.commit().db()
        })
        .await
    }
}
