//! Occupancy limits in PostgreSQL: each zone's state, moved on from its count of collisions
//! under a row lock, so that evaluators counting the same zone at once take turns.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::occupancy::{Stored, next};
use crate::postgres::{Db, PgStore};
use crate::{OccupancyChange, OccupancyLimits, OccupancyState, OccupancyWriter, Result, codec};

#[async_trait::async_trait]
impl OccupancyWriter for PgStore {
    async fn count_occupancy(&self, zones: &[OccupancyLimits], now: DateTime<Utc>) -> Result<Vec<OccupancyChange>> {
        let mut zones = zones.to_vec();
        zones.sort_by_key(|z| z.zone);
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        let mut changes = Vec::new();
        for limits in &zones {
            if limits.max.is_none() && limits.min.is_none() {
                tx.execute("DELETE FROM zone_occupancy WHERE zone_id = $1", &[&limits.zone]).await.db()?;
                continue;
            }
            // The zone's row is locked first (a zone deleted meanwhile has none), in a mode that
            // collision writes do not wait for: whoever counts the zone next waits, and counts
            // after this transaction.
            let zone =
                tx.query_opt("SELECT id FROM zones WHERE id = $1 FOR NO KEY UPDATE", &[&limits.zone]).await.db()?;
            if zone.is_none() {
                continue;
            }
            let count: i64 =
                tx.query_one("SELECT count(*) FROM collisions WHERE zone_id = $1", &[&limits.zone]).await.db()?.get(0);
            let stored = tx
                .query_opt(
                    "SELECT state, count, generation, changed_at, published FROM zone_occupancy WHERE zone_id = $1",
                    &[&limits.zone],
                )
                .await
                .db()?
                .map(|r| {
                    Ok::<_, crate::StoreError>(Stored {
                        state: OccupancyState::parse(r.try_get(0).db()?)?,
                        count: u64::try_from(r.try_get::<_, i64>(1).db()?).unwrap_or(0),
                        generation: u64::try_from(r.try_get::<_, i64>(2).db()?).unwrap_or(0),
                        changed_at: r.try_get(3).db()?,
                        published: r.try_get(4).db()?,
                    })
                })
                .transpose()?;
            let (row, fresh) = match (next(stored.as_ref(), *limits, u64::try_from(count).unwrap_or(0), now), stored) {
                (Some(row), _) => {
                    tx.execute(
                        "INSERT INTO zone_occupancy (zone_id, state, count, generation, changed_at, published)
                         VALUES ($1, $2, $3, $4, $5, $6)
                         ON CONFLICT (zone_id) DO UPDATE SET state = EXCLUDED.state, count = EXCLUDED.count,
                             generation = EXCLUDED.generation, changed_at = EXCLUDED.changed_at,
                             published = EXCLUDED.published",
                        &[
                            &limits.zone,
                            &row.state.as_str(),
                            &codec::counter(row.count),
                            &codec::counter(row.generation),
                            &row.changed_at,
                            &row.published,
                        ],
                    )
                    .await
                    .db()?;
                    (row, true)
                }
                (None, Some(stored)) => (stored, false),
                (None, None) => continue,
            };
            changes.extend(row.unpublished(limits.zone, fresh));
        }
        tx.commit().await.db()?;
        Ok(changes)
    }

    async fn occupancy_published(&self, zone: Uuid, generation: u64) -> Result<()> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE zone_occupancy SET published = true WHERE zone_id = $1 AND generation = $2",
                &[&zone, &codec::counter(generation)],
            )
            .await
            .db()
            .map(drop)
    }
}
