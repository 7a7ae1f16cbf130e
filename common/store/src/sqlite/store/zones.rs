//! Zones in SQLite: reading, writing, and clearing a zone's collisions.

use rusqlite::params;
use uuid::Uuid;
use zonecast_model::ZoneSpec;

use super::{collisions_of, id, missed_zone, write, zone_by_id};
use crate::codec::{self, to_json};
use crate::sqlite::{Db, SqliteStore, is_unique};
use crate::{Collision, Result, StoreError, ZoneReader, ZoneWriter};

#[async_trait::async_trait]
impl ZoneReader for SqliteStore {
    async fn list_zones(&self) -> Result<Vec<ZoneSpec>> {
        self.run(|conn| {
            let mut stmt = conn.prepare_cached("SELECT spec, version FROM zones ORDER BY seq").db()?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.iter().map(|(text, version)| codec::zone(text, *version)).collect()
        })
        .await
    }

    async fn get_zone(&self, zone: Uuid) -> Result<ZoneSpec> {
        self.run(move |conn| zone_by_id(conn, &zone)?.ok_or_else(|| StoreError::not_found("zone", &zone))).await
    }

    async fn get_zones(&self, ids: &[Uuid]) -> Result<Vec<ZoneSpec>> {
        let ids = ids.to_vec();
        self.run(move |conn| {
            // One read transaction so that the zones are a consistent snapshot.
            let tx = conn.transaction().db()?;
            let zones = ids
                .iter()
                .map(|z| zone_by_id(&tx, z)?.ok_or_else(|| StoreError::not_found("zone", z)))
                .collect::<Result<Vec<_>>>()?;
            tx.commit().db()?;
            Ok(zones)
        })
        .await
    }

    async fn find_zones(&self, ids: &[Uuid]) -> Result<Vec<ZoneSpec>> {
        let ids = ids.to_vec();
        self.run(move |conn| {
            let tx = conn.transaction().db()?;
            let mut found = Vec::with_capacity(ids.len());
            for z in &ids {
                found.extend(zone_by_id(&tx, z)?);
            }
            tx.commit().db()?;
            Ok(found)
        })
        .await
    }
}

#[async_trait::async_trait]
impl ZoneWriter for SqliteStore {
    async fn insert_zones(&self, zones: &[ZoneSpec]) -> Result<()> {
        let zones = zones.to_vec();
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut stmt =
                    tx.prepare_cached("INSERT INTO zones (id, name, spec, version) VALUES (?1, ?2, ?3, ?4)").db()?;
                for z in &zones {
                    let version = codec::counter(z.version);
                    stmt.execute(params![id(&z.id), z.name, to_json(z)?, version]).map_err(|e| {
                        if is_unique(&e) { StoreError::duplicate("zone", &z.id) } else { crate::sqlite::store_error(e) }
                    })?;
                }
            }
            tx.commit().db()
        })
        .await
    }

    async fn update_zones(&self, zones: &[ZoneSpec]) -> Result<()> {
        let zones = zones.to_vec();
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut stmt = tx
                    .prepare_cached(
                        "UPDATE zones SET name = ?2, spec = ?3, version = version + 1 WHERE id = ?1 AND version = ?4",
                    )
                    .db()?;
                for z in &zones {
                    let version = codec::counter(z.version);
                    if stmt.execute(params![id(&z.id), z.name, to_json(z)?, version]).db()? == 0 {
                        return Err(missed_zone(&tx, &z.id));
                    }
                }
            }
            tx.commit().db()
        })
        .await
    }

    async fn delete_zones(&self, ids: &[Uuid]) -> Result<()> {
        let ids = ids.to_vec();
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut stmt = tx.prepare_cached("DELETE FROM zones WHERE id = ?1").db()?;
                for z in &ids {
                    if stmt.execute([id(z)]).db()? == 0 {
                        return Err(StoreError::not_found("zone", z));
                    }
                }
            }
            tx.commit().db()
        })
        .await
    }

    async fn delete_zone_at(&self, zone: Uuid, version: u64) -> Result<()> {
        self.run(move |conn| {
            let tx = write(conn)?;
            let deleted = tx
                .prepare_cached("DELETE FROM zones WHERE id = ?1 AND version = ?2")
                .db()?
                .execute(params![id(&zone), codec::counter(version)])
                .db()?;
            if deleted == 0 {
                return Err(missed_zone(&tx, &zone));
            }
            tx.commit().db()
        })
        .await
    }

    async fn clear_collisions(&self, zone: Uuid) -> Result<Vec<Collision>> {
        self.run(move |conn| {
            let tx = write(conn)?;
            let cleared = collisions_of(&tx, Some(&zone))?;
            tx.execute("DELETE FROM collisions WHERE zone_id = ?1", [id(&zone)]).db()?;
            tx.commit().db()?;
            Ok(cleared)
        })
        .await
    }
}
