//! The [`crate::Store`] operations, role by role, in SQLite's dialect.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use uuid::Uuid;
use zonecast_model::{CollidingDevice, ConfigChanged, Connection as MqttConnection, Mac, Setting, ZoneSpec};

use super::{Db, SqliteStore, is_foreign_key, is_unique};
use crate::codec::{self, from_json, to_json};
use crate::{
    CHANGES_KEPT, CertificateReader, CertificateWriter, ChangeLog, ChangeReader, Collision, CollisionReader,
    CollisionWriter, ConnectionReader, ConnectionStatus, ConnectionWriter, Health, RadiusReader, RadiusWriter, Result,
    SettingReader, SettingWriter, StatusReader, StatusWriter, StoreError, StoredCertificate, StoredConnection,
    ZoneReader, ZoneWriter,
};

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
            "SELECT zone_id, mac, collision_id, entry_time_us FROM collisions
             WHERE ?1 IS NULL OR zone_id = ?1 ORDER BY zone_id, mac",
        )
        .db()?;
    let rows = stmt
        .query_map([zone.map(id)], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    rows.into_iter()
        .map(|(z, m, c, t)| {
            Ok(Collision {
                zone_id: codec::uuid(&z)?,
                mac: codec::mac(&m)?,
                collision_id: codec::uuid(&c)?,
                entry_time: codec::time(t)?,
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
                        if is_unique(&e) { StoreError::duplicate("zone", &z.id) } else { super::store_error(e) }
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

#[async_trait::async_trait]
impl CollisionReader for SqliteStore {
    async fn colliding_devices(&self, zone: Uuid) -> Result<Vec<CollidingDevice>> {
        self.run(move |conn| Ok(collisions_of(conn, Some(&zone))?.into_iter().map(CollidingDevice::from).collect()))
            .await
    }

    async fn all_collisions(&self) -> Result<Vec<Collision>> {
        self.run(|conn| collisions_of(conn, None)).await
    }
}

#[async_trait::async_trait]
impl CollisionWriter for SqliteStore {
    async fn write_collisions(&self, entered: &[Collision], exited: &[(Uuid, Mac)]) -> Result<()> {
        let entered = codec::coalesce_entered(entered);
        let exited = exited.to_vec();
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut upsert = tx
                    .prepare_cached(
                        "INSERT INTO collisions (zone_id, mac, collision_id, entry_time_us)
                         SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM zones WHERE id = ?1)
                         ON CONFLICT (zone_id, mac) DO UPDATE
                         SET collision_id = excluded.collision_id, entry_time_us = excluded.entry_time_us",
                    )
                    .db()?;
                for c in &entered {
                    upsert
                        .execute(params![
                            id(&c.zone_id),
                            c.mac.as_str(),
                            id(&c.collision_id),
                            c.entry_time.timestamp_micros()
                        ])
                        .db()?;
                }
                let mut delete = tx.prepare_cached("DELETE FROM collisions WHERE zone_id = ?1 AND mac = ?2").db()?;
                for (zone, mac) in &exited {
                    delete.execute(params![id(zone), mac.as_str()]).db()?;
                }
            }
            tx.commit().db()
        })
        .await
    }
}

#[async_trait::async_trait]
impl SettingReader for SqliteStore {
    async fn list_settings(&self) -> Result<Vec<Setting>> {
        self.run(|conn| {
            let mut stmt = conn.prepare_cached("SELECT name, value, active FROM settings").db()?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?, r.get::<_, bool>(2)?)))
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            let mut settings: Vec<Setting> = rows.iter().filter_map(|(n, v, a)| codec::setting(n, *v, *a)).collect();
            codec::sort_settings(&mut settings);
            Ok(settings)
        })
        .await
    }
}

#[async_trait::async_trait]
impl SettingWriter for SqliteStore {
    async fn put_setting(&self, setting: &Setting) -> Result<()> {
        let s = *setting;
        self.run(move |conn| {
            conn.prepare_cached(
                "INSERT INTO settings (name, value, active) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value, active = excluded.active",
            )
            .db()?
            .execute(params![s.name.as_str(), s.value, s.active])
            .db()
            .map(drop)
        })
        .await
    }
}

#[async_trait::async_trait]
impl RadiusReader for SqliteStore {
    async fn list_radii(&self) -> Result<Vec<(Mac, f64)>> {
        self.run(|conn| {
            let mut stmt = conn.prepare_cached("SELECT mac, radius FROM device_radii").db()?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            let mut radii = rows.iter().map(|(m, r)| Ok((codec::mac(m)?, *r))).collect::<Result<Vec<_>>>()?;
            radii.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(radii)
        })
        .await
    }

    async fn find_radii(&self, macs: &[Mac]) -> Result<Vec<(Mac, Option<f64>)>> {
        let macs = macs.to_vec();
        self.run(move |conn| {
            let tx = conn.transaction().db()?;
            let mut found = std::collections::HashMap::new();
            {
                let mut stmt = tx.prepare_cached("SELECT radius FROM device_radii WHERE mac = ?1").db()?;
                for mac in &macs {
                    if let Some(radius) = stmt.query_row([mac.as_str()], |r| r.get::<_, f64>(0)).optional().db()? {
                        found.insert(mac.clone(), radius);
                    }
                }
            }
            tx.commit().db()?;
            Ok(codec::radii_of(&macs, &found))
        })
        .await
    }
}

#[async_trait::async_trait]
impl RadiusWriter for SqliteStore {
    async fn merge_radii(&self, changes: &[(Mac, Option<f64>)]) -> Result<()> {
        let (set, remove) = codec::coalesce_radii(changes);
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut upsert = tx
                    .prepare_cached(
                        "INSERT INTO device_radii (mac, radius) VALUES (?1, ?2)
                         ON CONFLICT (mac) DO UPDATE SET radius = excluded.radius",
                    )
                    .db()?;
                for (mac, r) in &set {
                    upsert.execute(params![mac.as_str(), r]).db()?;
                }
                let mut delete = tx.prepare_cached("DELETE FROM device_radii WHERE mac = ?1").db()?;
                for mac in &remove {
                    delete.execute([mac.as_str()]).db()?;
                }
            }
            tx.commit().db()
        })
        .await
    }
}

#[async_trait::async_trait]
impl ConnectionReader for SqliteStore {
    async fn list_connections(&self) -> Result<Vec<StoredConnection>> {
        self.run(|conn| {
            let mut stmt =
                conn.prepare_cached("SELECT spec, password_sealed FROM mqtt_connections ORDER BY seq").db()?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<Vec<u8>>>(1)?)))
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter().map(|(spec, sealed)| connection_row(&spec, sealed)).collect()
        })
        .await
    }

    async fn get_connection(&self, c: Uuid) -> Result<StoredConnection> {
        self.run(move |conn| {
            let row = conn
                .prepare_cached("SELECT spec, password_sealed FROM mqtt_connections WHERE id = ?1")
                .db()?
                .query_row([id(&c)], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<Vec<u8>>>(1)?)))
                .optional()
                .db()?;
            let (spec, sealed) = row.ok_or_else(|| StoreError::not_found("connection", &c))?;
            connection_row(&spec, sealed)
        })
        .await
    }
}

#[async_trait::async_trait]
impl ConnectionWriter for SqliteStore {
    async fn insert_connection(&self, c: &StoredConnection, max: usize) -> Result<()> {
        let c = c.clone();
        self.run(move |conn| {
            let m = &c.connection;
            let tx = write(conn)?;
            let count: i64 = tx.query_row("SELECT count(*) FROM mqtt_connections", [], |r| r.get(0)).db()?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= max {
                return Err(StoreError::Full { what: "MQTT connection", max });
            }
            tx.prepare_cached(
                "INSERT INTO mqtt_connections (id, certificate_profile_id, spec, password_sealed) VALUES (?1, ?2, ?3, ?4)",
            )
            .db()?
            .execute(params![id(&m.id), m.certificate_profile_id.as_ref().map(id), to_json(m)?, c.password_sealed])
            .map_err(|e| {
                if is_foreign_key(&e) {
                    StoreError::missing_profile(m.certificate_profile_id)
                } else if is_unique(&e) {
                    StoreError::duplicate("connection", &m.id)
                } else {
                    super::store_error(e)
                }
            })?;
            tx.commit().db()
        })
        .await
    }

    async fn update_connection(&self, c: &StoredConnection, keep_password: bool) -> Result<StoredConnection> {
        let c = c.clone();
        self.run(move |conn| {
            let m = &c.connection;
            let stored = conn
                .prepare_cached(
                    "UPDATE mqtt_connections SET certificate_profile_id = ?2, spec = ?3,
                     password_sealed = CASE WHEN ?5 THEN password_sealed ELSE ?4 END
                     WHERE id = ?1 RETURNING spec, password_sealed",
                )
                .db()?
                .query_row(
                    params![
                        id(&m.id),
                        m.certificate_profile_id.as_ref().map(id),
                        to_json(m)?,
                        c.password_sealed,
                        keep_password
                    ],
                    |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<Vec<u8>>>(1)?)),
                )
                .optional()
                .map_err(|e| {
                    if is_foreign_key(&e) {
                        StoreError::missing_profile(m.certificate_profile_id)
                    } else {
                        super::store_error(e)
                    }
                })?;
            match stored {
                Some((spec, sealed)) => connection_row(&spec, sealed),
                None => Err(StoreError::not_found("connection", &m.id)),
            }
        })
        .await
    }

    async fn delete_connection(&self, c: Uuid) -> Result<()> {
        self.run(move |conn| {
            if conn.execute("DELETE FROM mqtt_connections WHERE id = ?1", [id(&c)]).db()? == 0 {
                return Err(StoreError::not_found("connection", &c));
            }
            Ok(())
        })
        .await
    }
}

#[async_trait::async_trait]
impl CertificateReader for SqliteStore {
    async fn list_certificates(&self) -> Result<Vec<(Uuid, String)>> {
        self.run(|conn| {
            let mut stmt = conn.prepare_cached("SELECT id, name FROM certificate_profiles ORDER BY seq").db()?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter().map(|(i, name)| Ok((codec::uuid(&i)?, name))).collect()
        })
        .await
    }

    async fn get_certificate(&self, c: Uuid) -> Result<StoredCertificate> {
        self.run(move |conn| {
            let row = conn
                .prepare_cached("SELECT name, sealed FROM certificate_profiles WHERE id = ?1")
                .db()?
                .query_row([id(&c)], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?)))
                .optional()
                .db()?;
            let (name, sealed) = row.ok_or_else(|| StoreError::not_found("certificate profile", &c))?;
            Ok(StoredCertificate { id: c, name, sealed })
        })
        .await
    }
}

#[async_trait::async_trait]
impl CertificateWriter for SqliteStore {
    async fn insert_certificate(&self, c: &StoredCertificate) -> Result<()> {
        let c = c.clone();
        self.run(move |conn| {
            conn.execute(
                "INSERT INTO certificate_profiles (id, name, sealed) VALUES (?1, ?2, ?3)",
                params![id(&c.id), c.name, c.sealed],
            )
            .map_err(|e| {
                if is_unique(&e) { StoreError::duplicate("certificate profile", &c.id) } else { super::store_error(e) }
            })
            .map(drop)
        })
        .await
    }

    async fn update_certificate(&self, c: &StoredCertificate) -> Result<()> {
        let c = c.clone();
        self.run(move |conn| {
            let changed = conn
                .execute(
                    "UPDATE certificate_profiles SET name = ?2, sealed = ?3 WHERE id = ?1",
                    params![id(&c.id), c.name, c.sealed],
                )
                .db()?;
            if changed == 0 {
                return Err(StoreError::not_found("certificate profile", &c.id));
            }
            Ok(())
        })
        .await
    }

    async fn delete_certificate(&self, c: Uuid) -> Result<()> {
        self.run(move |conn| match conn.execute("DELETE FROM certificate_profiles WHERE id = ?1", [id(&c)]) {
            Ok(0) => Err(StoreError::not_found("certificate profile", &c)),
            Ok(_) => Ok(()),
            Err(e) if is_foreign_key(&e) => match user_of_profile(conn, &c)? {
                Some(user) => Err(StoreError::profile_in_use(&c, &user)),
                None => Err(StoreError::Backend(format!("deleting certificate profile: {e}"))),
            },
            Err(e) => Err(super::store_error(e)),
        })
        .await
    }
}

#[async_trait::async_trait]
impl StatusReader for SqliteStore {
    async fn connection_status(&self, c: Uuid) -> Result<Vec<ConnectionStatus>> {
        self.run(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT replica, connected, last_error, forwarded, dropped, queued, updated_at_us
                     FROM connection_status WHERE connection_id = ?1 ORDER BY replica",
                )
                .db()?;
            let rows = stmt
                .query_map([id(&c)], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, bool>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, i64>(5)?,
                        r.get::<_, i64>(6)?,
                    ))
                })
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter()
                .map(|(replica, connected, last_error, forwarded, dropped, queued, updated)| {
                    Ok(ConnectionStatus {
                        connection_id: c,
                        replica,
                        connected,
                        last_error,
                        forwarded: codec::uncounter(forwarded),
                        dropped: codec::uncounter(dropped),
                        queued: codec::uncounter(queued),
                        updated_at: codec::time(updated)?,
                    })
                })
                .collect()
        })
        .await
    }
}

#[async_trait::async_trait]
impl StatusWriter for SqliteStore {
    async fn put_connection_status(&self, s: &ConnectionStatus) -> Result<()> {
        let s = s.clone();
        self.run(move |conn| {
            conn.prepare_cached(
                "INSERT INTO connection_status
                     (connection_id, replica, connected, last_error, forwarded, dropped, queued, updated_at_us)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE EXISTS (SELECT 1 FROM mqtt_connections WHERE id = ?1)
                 ON CONFLICT (connection_id, replica) DO UPDATE SET
                     connected = excluded.connected, last_error = excluded.last_error,
                     forwarded = excluded.forwarded, dropped = excluded.dropped,
                     queued = excluded.queued, updated_at_us = excluded.updated_at_us",
            )
            .db()?
            .execute(params![
                id(&s.connection_id),
                s.replica,
                s.connected,
                s.last_error,
                codec::counter(s.forwarded),
                codec::counter(s.dropped),
                codec::counter(s.queued),
                s.updated_at.timestamp_micros()
            ])
            .db()
            .map(drop)
        })
        .await
    }
}

#[async_trait::async_trait]
impl ChangeLog for SqliteStore {
    async fn log_change(&self, change: &ConfigChanged) -> Result<u64> {
        let text = to_json(change)?;
        self.run(move |conn| {
            let tx = write(conn)?;
            let revision: i64 = tx
                .prepare_cached("UPDATE config_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision")
                .db()?
                .query_row([], |r| r.get(0))
                .db()?;
            tx.prepare_cached("INSERT INTO config_changes (revision, change) VALUES (?1, ?2)")
                .db()?
                .execute(params![revision, text])
                .db()?;
            tx.prepare_cached("DELETE FROM config_changes WHERE revision <= ?1")
                .db()?
                .execute([revision - codec::counter(CHANGES_KEPT)])
                .db()?;
            tx.commit().db()?;
            Ok(codec::uncounter(revision))
        })
        .await
    }
}

#[async_trait::async_trait]
impl ChangeReader for SqliteStore {
    async fn revision(&self) -> Result<u64> {
        self.run(|conn| {
            let revision: i64 = conn
                .prepare_cached("SELECT revision FROM config_revision WHERE id = 1")
                .db()?
                .query_row([], |r| r.get(0))
                .db()?;
            Ok(codec::uncounter(revision))
        })
        .await
    }

    async fn changes_since(&self, revision: u64) -> Result<Option<Vec<ConfigChanged>>> {
        self.run(move |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT revision, change FROM config_changes WHERE revision > ?1 ORDER BY revision")
                .db()?;
            let rows = stmt
                .query_map([codec::counter(revision)], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            let changes = rows
                .into_iter()
                .map(|(n, text)| {
                    let mut change: ConfigChanged = from_json(&text, "configuration change")?;
                    change.revision = codec::uncounter(n);
                    Ok(change)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(crate::roles::contiguous(revision, changes))
        })
        .await
    }
}
