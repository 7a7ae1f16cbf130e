//! Zones in PostgreSQL: reading, writing, and clearing a zone's collisions.

use tokio_postgres::error::SqlState;
use tokio_postgres::types::Json;
use uuid::Uuid;
use zonecast_model::ZoneSpec;

use super::{missed_zone, sorted_collisions, zone};
use crate::postgres::{Db, PgStore, is_code};
use crate::{Collision, Result, StoreError, ZoneReader, ZoneWriter, codec};

#[async_trait::async_trait]
impl ZoneReader for PgStore {
    async fn list_zones(&self) -> Result<Vec<ZoneSpec>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT spec, version FROM zones ORDER BY seq").await.db()?;
        let rows = client.query(&stmt, &[]).await.db()?;
        rows.iter().map(|r| zone(r, 0)).collect()
    }

    async fn get_zone(&self, id: Uuid) -> Result<ZoneSpec> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT spec, version FROM zones WHERE id = $1").await.db()?;
        match client.query_opt(&stmt, &[&id]).await.db()? {
            Some(row) => zone(&row, 0),
            None => Err(StoreError::not_found("zone", &id)),
        }
    }

    async fn get_zones(&self, ids: &[Uuid]) -> Result<Vec<ZoneSpec>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT id, spec, version FROM zones WHERE id = ANY($1)").await.db()?;
        let rows = client.query(&stmt, &[&ids]).await.db()?;
        let mut found = std::collections::HashMap::with_capacity(rows.len());
        for row in &rows {
            let id: Uuid = row.try_get(0).db()?;
            found.insert(id, zone(row, 1)?);
        }
        ids.iter().map(|id| found.get(id).cloned().ok_or_else(|| StoreError::not_found("zone", id))).collect()
    }

    async fn find_zones(&self, ids: &[Uuid]) -> Result<Vec<ZoneSpec>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT spec, version FROM zones WHERE id = ANY($1)").await.db()?;
        client.query(&stmt, &[&ids]).await.db()?.iter().map(|r| zone(r, 0)).collect()
    }
}

#[async_trait::async_trait]
impl ZoneWriter for PgStore {
    async fn insert_zones(&self, zones: &[ZoneSpec]) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        let stmt =
            tx.prepare_cached("INSERT INTO zones (id, name, spec, version) VALUES ($1, $2, $3, $4)").await.db()?;
        for z in zones {
            tx.execute(&stmt, &[&z.id, &z.name, &Json(z), &codec::counter(z.version)]).await.map_err(|e| {
                if is_code(&e, &SqlState::UNIQUE_VIOLATION) {
                    StoreError::duplicate("zone", &z.id)
                } else {
                    crate::postgres::unavailable_or_backend(e)
                }
            })?;
        }
        tx.commit().await.db()
    }

    async fn update_zones(&self, zones: &[ZoneSpec]) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        let stmt = tx
            .prepare_cached(
                "UPDATE zones SET name = $2, spec = $3, version = version + 1 WHERE id = $1 AND version = $4",
            )
            .await
            .db()?;
        for z in zones {
            if tx.execute(&stmt, &[&z.id, &z.name, &Json(z), &codec::counter(z.version)]).await.db()? == 0 {
                // Dropping the transaction rolls it back.
                return Err(missed_zone(&tx, &z.id).await);
            }
        }
        tx.commit().await.db()
    }

    async fn delete_zones(&self, ids: &[Uuid]) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        let stmt = tx.prepare_cached("DELETE FROM zones WHERE id = $1").await.db()?;
        for id in ids {
            if tx.execute(&stmt, &[id]).await.db()? == 0 {
                return Err(StoreError::not_found("zone", id));
            }
        }
        tx.commit().await.db()
    }

    async fn delete_zone_at(&self, id: Uuid, version: u64) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        let stmt = tx.prepare_cached("DELETE FROM zones WHERE id = $1 AND version = $2").await.db()?;
        if tx.execute(&stmt, &[&id, &codec::counter(version)]).await.db()? == 0 {
            return Err(missed_zone(&tx, &id).await);
        }
        tx.commit().await.db()
    }

    async fn clear_collisions(&self, zone: Uuid) -> Result<Vec<Collision>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "DELETE FROM collisions WHERE zone_id = $1 RETURNING zone_id, mac, collision_id, entry_time, dwell_reported",
            )
            .await
            .db()?;
        sorted_collisions(&client.query(&stmt, &[&zone]).await.db()?)
    }
}
