//! The [`crate::Store`] operations, role by role, in SQLite's dialect: one file per role, the
//! queries and row decoding they share and the health check here.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};
use uuid::Uuid;
use zonecast_model::{Connection as MqttConnection, ZoneSpec};

use super::{Db, SqliteStore};
use crate::codec::{self, from_json};
use crate::{Collision, Health, Result, StoreError, StoredConnection};

mod alarms;
mod certificates;
mod changes;
mod collisions;
mod connections;
mod devices;
mod occupancy;
mod parameters;
mod zones;

/// UUIDs are stored as lower-case hyphenated text.
fn id(u: &Uuid) -> String {
    u.hyphenated().to_string()
}

/// A write transaction that takes the file's write lock at once, so that it never fails half
/// way with SQLITE_BUSY when another process writes too.
fn write(conn: &mut Connection) -> Result<Transaction<'_>> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate).db()
}

fn zone_by_id(conn: &Connection, zone: &Uuid) -> Result<Option<ZoneSpec>> {
    let row: Option<(String, i64)> = conn
        .prepare_cached("SELECT spec, version FROM zones WHERE id = ?1")
        .db()?
        .query_row([id(zone)], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .db()?;
    row.map(|(text, version)| codec::zone(&text, version)).transpose()
}

/// Why a conditional zone write touched no row: the zone is gone, or at another version.
fn missed_zone(tx: &Transaction<'_>, zone: &Uuid) -> StoreError {
    match zone_by_id(tx, zone) {
        Ok(Some(_)) => StoreError::conflict("zone", zone),
        Ok(None) => StoreError::not_found("zone", zone),
        Err(e) => e,
    }
}

fn collisions_of(conn: &Connection, zone: Option<&Uuid>) -> Result<Vec<Collision>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT zone_id, mac, collision_id, entry_time_us, dwell_reported FROM collisions
             WHERE ?1 IS NULL OR zone_id = ?1 ORDER BY zone_id, mac",
        )
        .db()?;
    let rows = stmt
        .query_map([zone.map(id)], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, bool>(4)?,
            ))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    rows.into_iter()
        .map(|(z, m, c, t, dwell_reported)| {
            Ok(Collision {
                zone_id: codec::uuid(&z)?,
                mac: codec::mac(&m)?,
                collision_id: codec::uuid(&c)?,
                entry_time: codec::time(t)?,
                dwell_reported,
            })
        })
        .collect()
}

fn connection_row(spec: &str, sealed: Option<Vec<u8>>) -> Result<StoredConnection> {
    let mut connection = from_json::<MqttConnection>(spec, "connection")?;
    connection.has_password = sealed.is_some();
    Ok(StoredConnection { connection, password_sealed: sealed })
}

/// The first connection using certificate profile `profile`, for the `InUse` message.
fn user_of_profile(conn: &Connection, profile: &Uuid) -> Result<Option<Uuid>> {
    let user: Option<String> = conn
        .prepare_cached("SELECT id FROM mqtt_connections WHERE certificate_profile_id = ?1 ORDER BY seq LIMIT 1")
        .db()?
        .query_row([id(profile)], |r| r.get(0))
        .optional()
        .db()?;
    user.map(|u| codec::uuid(&u)).transpose()
}

#[async_trait::async_trait]
impl Health for SqliteStore {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    async fn ping(&self) -> Result<()> {
        self.run(|conn| conn.query_row("SELECT 1", [], |_| Ok(())).db()).await
    }
}
