//! Occupancy limits in SQLite: each zone's state, moved on from its count of collisions.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};
use uuid::Uuid;

use super::{id, write};
use crate::occupancy::{Stored, next};
use crate::sqlite::{Db, SqliteStore};
use crate::{OccupancyChange, OccupancyLimits, OccupancyState, OccupancyWriter, Result, codec};

#[async_trait::async_trait]
impl OccupancyWriter for SqliteStore {
    async fn count_occupancy(&self, zones: &[OccupancyLimits], now: DateTime<Utc>) -> Result<Vec<OccupancyChange>> {
        let mut zones = zones.to_vec();
        zones.sort_by_key(|z| z.zone);
        self.run(move |conn| {
            let tx = write(conn)?;
            let mut changes = Vec::new();
            for limits in &zones {
                let zone = id(&limits.zone);
                if limits.max.is_none() && limits.min.is_none() {
                    tx.execute("DELETE FROM zone_occupancy WHERE zone_id = ?1", [&zone]).db()?;
                    continue;
                }
                let exists: bool =
                    tx.query_row("SELECT EXISTS (SELECT 1 FROM zones WHERE id = ?1)", [&zone], |r| r.get(0)).db()?;
                if !exists {
                    continue;
                }
                let count: i64 =
                    tx.query_row("SELECT count(*) FROM collisions WHERE zone_id = ?1", [&zone], |r| r.get(0)).db()?;
                let stored = tx
                    .query_row(
                        "SELECT state, count, generation, changed_at_us, published FROM zone_occupancy
                         WHERE zone_id = ?1",
                        [&zone],
                        |r| {
                            Ok((
                                r.get::<_, String>(0)?,
                                r.get::<_, i64>(1)?,
                                r.get::<_, i64>(2)?,
                                r.get::<_, i64>(3)?,
                                r.get::<_, bool>(4)?,
                            ))
                        },
                    )
                    .optional()
                    .db()?
                    .map(|(state, count, generation, at, published)| {
                        Ok::<_, crate::StoreError>(Stored {
                            state: OccupancyState::parse(&state)?,
                            count: u64::try_from(count).unwrap_or(0),
                            generation: u64::try_from(generation).unwrap_or(0),
                            changed_at: codec::time(at)?,
                            published,
                        })
                    })
                    .transpose()?;
                let (row, fresh) =
                    match (next(stored.as_ref(), *limits, u64::try_from(count).unwrap_or(0), now), stored) {
                        (Some(row), _) => {
                            tx.execute(
                            "INSERT INTO zone_occupancy (zone_id, state, count, generation, changed_at_us, published)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                             ON CONFLICT (zone_id) DO UPDATE SET state = excluded.state, count = excluded.count,
                                 generation = excluded.generation, changed_at_us = excluded.changed_at_us,
                                 published = excluded.published",
                            params![
                                zone,
                                row.state.as_str(),
                                codec::counter(row.count),
                                codec::counter(row.generation),
                                row.changed_at.timestamp_micros(),
                                row.published
                            ],
                        )
                        .db()?;
                            (row, true)
                        }
                        (None, Some(stored)) => (stored, false),
                        (None, None) => continue,
                    };
                changes.extend(row.unpublished(limits.zone, fresh));
            }
            tx.commit().db()?;
            Ok(changes)
        })
        .await
    }

    async fn occupancy_published(&self, zone: Uuid, generation: u64) -> Result<()> {
        self.run(move |conn| {
            conn.execute(
                "UPDATE zone_occupancy SET published = 1 WHERE zone_id = ?1 AND generation = ?2",
                params![id(&zone), codec::counter(generation)],
            )
            .db()
            .map(drop)
        })
        .await
    }
}
