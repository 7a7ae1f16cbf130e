//! The [`crate::Store`] operations, role by role, in PostgreSQL's dialect: one file per role, the
//! row decoding they share and the health check here.

use tokio_postgres::types::Json;
use uuid::Uuid;
use zonecast_model::{Connection as MqttConnection, ZoneSpec};

use super::{Db, PgStore};
use crate::{Collision, Health, Result, StoreError, StoredConnection, codec};

mod alarms;
mod certificates;
mod changes;
mod collisions;
mod connections;
mod devices;
mod occupancy;
mod parameters;
mod zones;

fn collision(row: &tokio_postgres::Row) -> Result<Collision> {
    Ok(Collision {
        zone_id: row.try_get(0).db()?,
        mac: codec::mac(row.try_get(1).db()?)?,
        collision_id: row.try_get(2).db()?,
        entry_time: row.try_get(3).db()?,
        dwell_reported: row.try_get(4).db()?,
    })
}

/// A zone from the JSON in column `at` and the version beside it.
fn zone(row: &tokio_postgres::Row, at: usize) -> Result<ZoneSpec> {
    let Json(mut zone): Json<ZoneSpec> = row.try_get(at).db()?;
    zone.version = codec::uncounter(row.try_get(at + 1).db()?);
    Ok(zone)
}

/// Why a conditional zone write touched no row: the zone is gone, or at another version.
async fn missed_zone(tx: &tokio_postgres::Transaction<'_>, id: &Uuid) -> StoreError {
    match tx.query_opt("SELECT 1 FROM zones WHERE id = $1", &[id]).await {
        Ok(Some(_)) => StoreError::conflict("zone", id),
        Ok(None) => StoreError::not_found("zone", id),
        Err(e) => super::unavailable_or_backend(e),
    }
}

fn connection(row: &tokio_postgres::Row) -> Result<StoredConnection> {
    let Json(mut connection): Json<MqttConnection> = row.try_get(0).db()?;
    let password_sealed: Option<Vec<u8>> = row.try_get(1).db()?;
    connection.has_password = password_sealed.is_some();
    Ok(StoredConnection { connection, password_sealed })
}

fn sorted_collisions(rows: &[tokio_postgres::Row]) -> Result<Vec<Collision>> {
    let mut all = rows.iter().map(collision).collect::<Result<Vec<_>>>()?;
    // Sorted here rather than in SQL: the server's collation may not order text bytewise.
    all.sort_by(|a, b| (a.zone_id, &a.mac).cmp(&(b.zone_id, &b.mac)));
    Ok(all)
}

#[async_trait::async_trait]
impl Health for PgStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    async fn ping(&self) -> Result<()> {
        self.client().await?.simple_query("SELECT 1").await.db().map(drop)
    }
}
