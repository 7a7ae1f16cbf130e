//! The [`crate::Store`] operations, role by role, in PostgreSQL's dialect.

use chrono::{DateTime, Utc};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Json;
use uuid::Uuid;
use zonecast_model::{CollidingDevice, ConfigChanged, Connection as MqttConnection, Mac, Setting, ZoneSpec};

use super::{Db, PgStore, detail, is_code};
use crate::codec;
use crate::{
    CHANGES_KEPT, CertificateReader, CertificateWriter, ChangeLog, ChangeReader, Collision, CollisionReader,
    CollisionWriter, ConnectionReader, ConnectionStatus, ConnectionWriter, Health, RadiusReader, RadiusWriter, Result,
    SettingReader, SettingWriter, StatusReader, StatusWriter, StoreError, StoredCertificate, StoredConnection,
    ZoneReader, ZoneWriter,
};

/// How often a collision batch is retried when it loses a race (a zone deleted under it, a
/// deadlock with a zone delete) before the error is returned.
const COLLISION_TRIES: usize = 3;

fn collision(row: &tokio_postgres::Row) -> Result<Collision> {
    Ok(Collision {
        zone_id: row.try_get(0).db()?,
        mac: codec::mac(row.try_get(1).db()?)?,
        collision_id: row.try_get(2).db()?,
        entry_time: row.try_get(3).db()?,
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
        if race { Self::Race(detail(&e)) } else { Self::Failed(super::unavailable_or_backend(e)) }
    }
}

impl PgStore {
    /// One attempt at [`CollisionWriter::write_collisions`].
    async fn try_write_collisions(
        &self,
        entered: &[Collision],
        exited: &[(Uuid, Mac)],
    ) -> std::result::Result<(), Attempt> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        if !entered.is_empty() {
            let zones: Vec<Uuid> = entered.iter().map(|c| c.zone_id).collect();
            let macs: Vec<&str> = entered.iter().map(|c| c.mac.as_str()).collect();
            let ids: Vec<Uuid> = entered.iter().map(|c| c.collision_id).collect();
            let times: Vec<DateTime<Utc>> = entered.iter().map(|c| c.entry_time).collect();
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO collisions (zone_id, mac, collision_id, entry_time)
                     SELECT u.zone_id, u.mac, u.collision_id, u.entry_time
                     FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[])
                          AS u(zone_id, mac, collision_id, entry_time)
                     WHERE EXISTS (SELECT 1 FROM zones z WHERE z.id = u.zone_id)
                     ON CONFLICT (zone_id, mac) DO UPDATE
                     SET collision_id = EXCLUDED.collision_id, entry_time = EXCLUDED.entry_time",
                )
                .await?;
            tx.execute(&stmt, &[&zones, &macs, &ids, &times]).await?;
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
        Ok(tx.commit().await?)
    }
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
                    super::unavailable_or_backend(e)
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
                "DELETE FROM collisions WHERE zone_id = $1 RETURNING zone_id, mac, collision_id, entry_time",
            )
            .await
            .db()?;
        sorted_collisions(&client.query(&stmt, &[&zone]).await.db()?)
    }
}

#[async_trait::async_trait]
impl CollisionReader for PgStore {
    async fn colliding_devices(&self, zone: Uuid) -> Result<Vec<CollidingDevice>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT zone_id, mac, collision_id, entry_time FROM collisions WHERE zone_id = $1")
            .await
            .db()?;
        let inside = sorted_collisions(&client.query(&stmt, &[&zone]).await.db()?)?;
        Ok(inside.into_iter().map(CollidingDevice::from).collect())
    }

    async fn all_collisions(&self) -> Result<Vec<Collision>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT zone_id, mac, collision_id, entry_time FROM collisions").await.db()?;
        sorted_collisions(&client.query(&stmt, &[]).await.db()?)
    }
}

#[async_trait::async_trait]
impl CollisionWriter for PgStore {
    async fn write_collisions(&self, entered: &[Collision], exited: &[(Uuid, Mac)]) -> Result<()> {
        if entered.is_empty() && exited.is_empty() {
            return Ok(());
        }
        let entered = codec::coalesce_entered(entered);
        let mut exited = exited.to_vec();
        exited.sort();
        let mut tries = 0;
        loop {
            tries += 1;
            match self.try_write_collisions(&entered, &exited).await {
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

#[async_trait::async_trait]
impl SettingReader for PgStore {
    async fn list_settings(&self) -> Result<Vec<Setting>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT name, value, active FROM settings").await.db()?;
        let rows = client.query(&stmt, &[]).await.db()?;
        let mut settings = Vec::with_capacity(rows.len());
        for row in &rows {
            let name: &str = row.try_get(0).db()?;
            if let Some(s) = codec::setting(name, row.try_get(1).db()?, row.try_get(2).db()?) {
                settings.push(s);
            }
        }
        codec::sort_settings(&mut settings);
        Ok(settings)
    }
}

#[async_trait::async_trait]
impl SettingWriter for PgStore {
    async fn put_setting(&self, s: &Setting) -> Result<()> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO settings (name, value, active) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, active = EXCLUDED.active",
            )
            .await
            .db()?;
        client.execute(&stmt, &[&s.name.as_str(), &s.value, &s.active]).await.db().map(drop)
    }
}

#[async_trait::async_trait]
impl RadiusReader for PgStore {
    async fn list_radii(&self) -> Result<Vec<(Mac, f64)>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT mac, radius FROM device_radii").await.db()?;
        let rows = client.query(&stmt, &[]).await.db()?;
        let mut radii = rows
            .iter()
            .map(|r| Ok((codec::mac(r.try_get(0).db()?)?, r.try_get(1).db()?)))
            .collect::<Result<Vec<_>>>()?;
        radii.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(radii)
    }

    async fn find_radii(&self, macs: &[Mac]) -> Result<Vec<(Mac, Option<f64>)>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT mac, radius FROM device_radii WHERE mac = ANY($1)").await.db()?;
        let keys: Vec<&str> = macs.iter().map(Mac::as_str).collect();
        let rows = client.query(&stmt, &[&keys]).await.db()?;
        let found = rows
            .iter()
            .map(|r| Ok((codec::mac(r.try_get(0).db()?)?, r.try_get(1).db()?)))
            .collect::<Result<std::collections::HashMap<Mac, f64>>>()?;
        Ok(codec::radii_of(macs, &found))
    }
}

#[async_trait::async_trait]
impl RadiusWriter for PgStore {
    async fn merge_radii(&self, changes: &[(Mac, Option<f64>)]) -> Result<()> {
        let (set, remove) = codec::coalesce_radii(changes);
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        if !set.is_empty() {
            let macs: Vec<&str> = set.iter().map(|(m, _)| m.as_str()).collect();
            let radii: Vec<f64> = set.iter().map(|(_, r)| *r).collect();
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO device_radii (mac, radius) SELECT * FROM unnest($1::text[], $2::float8[])
                     ON CONFLICT (mac) DO UPDATE SET radius = EXCLUDED.radius",
                )
                .await
                .db()?;
            tx.execute(&stmt, &[&macs, &radii]).await.db()?;
        }
        if !remove.is_empty() {
            let macs: Vec<&str> = remove.iter().map(Mac::as_str).collect();
            let stmt = tx.prepare_cached("DELETE FROM device_radii WHERE mac = ANY($1)").await.db()?;
            tx.execute(&stmt, &[&macs]).await.db()?;
        }
        tx.commit().await.db()
    }
}

#[async_trait::async_trait]
impl ConnectionReader for PgStore {
    async fn list_connections(&self) -> Result<Vec<StoredConnection>> {
        let client = self.client().await?;
        let stmt =
            client.prepare_cached("SELECT spec, password_sealed FROM mqtt_connections ORDER BY seq").await.db()?;
        client.query(&stmt, &[]).await.db()?.iter().map(connection).collect()
    }

    async fn get_connection(&self, id: Uuid) -> Result<StoredConnection> {
        let client = self.client().await?;
        let stmt =
            client.prepare_cached("SELECT spec, password_sealed FROM mqtt_connections WHERE id = $1").await.db()?;
        match client.query_opt(&stmt, &[&id]).await.db()? {
            Some(row) => connection(&row),
            None => Err(StoreError::not_found("connection", &id)),
        }
    }
}

#[async_trait::async_trait]
impl ConnectionWriter for PgStore {
    async fn insert_connection(&self, c: &StoredConnection, max: usize) -> Result<()> {
        let m = &c.connection;
        let mut client = self.client().await?;
        let tx = client.transaction().await.db()?;
        // Serialises inserts (reads and updates go on) so that the count and the insert agree.
        tx.batch_execute("LOCK TABLE mqtt_connections IN SHARE ROW EXCLUSIVE MODE").await.db()?;
        let count: i64 = tx.query_one("SELECT count(*) FROM mqtt_connections", &[]).await.db()?.try_get(0).db()?;
        if usize::try_from(count).unwrap_or(usize::MAX) >= max {
            return Err(StoreError::Full { what: "MQTT connection", max });
        }
        let stmt = tx
            .prepare_cached(
                "INSERT INTO mqtt_connections (id, certificate_profile_id, spec, password_sealed) VALUES ($1, $2, $3, $4)",
            )
            .await
            .db()?;
        tx.execute(&stmt, &[&m.id, &m.certificate_profile_id, &Json(m), &c.password_sealed]).await.map_err(|e| {
            if is_code(&e, &SqlState::FOREIGN_KEY_VIOLATION) {
                StoreError::missing_profile(m.certificate_profile_id)
            } else if is_code(&e, &SqlState::UNIQUE_VIOLATION) {
                StoreError::duplicate("connection", &m.id)
            } else {
                super::unavailable_or_backend(e)
            }
        })?;
        tx.commit().await.db()
    }

    async fn update_connection(&self, c: &StoredConnection, keep_password: bool) -> Result<StoredConnection> {
        let m = &c.connection;
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "UPDATE mqtt_connections SET certificate_profile_id = $2, spec = $3,
                 password_sealed = CASE WHEN $5 THEN password_sealed ELSE $4 END
                 WHERE id = $1 RETURNING spec, password_sealed",
            )
            .await
            .db()?;
        let row = client
            .query_opt(&stmt, &[&m.id, &m.certificate_profile_id, &Json(m), &c.password_sealed, &keep_password])
            .await
            .map_err(|e| {
                if is_code(&e, &SqlState::FOREIGN_KEY_VIOLATION) {
                    StoreError::missing_profile(m.certificate_profile_id)
                } else {
                    super::unavailable_or_backend(e)
                }
            })?;
        match row {
            Some(row) => connection(&row),
            None => Err(StoreError::not_found("connection", &m.id)),
        }
    }

    async fn delete_connection(&self, id: Uuid) -> Result<()> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("DELETE FROM mqtt_connections WHERE id = $1").await.db()?;
        if client.execute(&stmt, &[&id]).await.db()? == 0 {
            return Err(StoreError::not_found("connection", &id));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl CertificateReader for PgStore {
    async fn list_certificates(&self) -> Result<Vec<(Uuid, String)>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT id, name FROM certificate_profiles ORDER BY seq").await.db()?;
        let rows = client.query(&stmt, &[]).await.db()?;
        rows.iter().map(|r| Ok((r.try_get(0).db()?, r.try_get(1).db()?))).collect()
    }

    async fn get_certificate(&self, id: Uuid) -> Result<StoredCertificate> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT name, sealed FROM certificate_profiles WHERE id = $1").await.db()?;
        match client.query_opt(&stmt, &[&id]).await.db()? {
            Some(row) => Ok(StoredCertificate { id, name: row.try_get(0).db()?, sealed: row.try_get(1).db()? }),
            None => Err(StoreError::not_found("certificate profile", &id)),
        }
    }
}

#[async_trait::async_trait]
impl CertificateWriter for PgStore {
    async fn insert_certificate(&self, c: &StoredCertificate) -> Result<()> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("INSERT INTO certificate_profiles (id, name, sealed) VALUES ($1, $2, $3)")
            .await
            .db()?;
        client
            .execute(&stmt, &[&c.id, &c.name, &c.sealed])
            .await
            .map_err(|e| {
                if is_code(&e, &SqlState::UNIQUE_VIOLATION) {
                    StoreError::duplicate("certificate profile", &c.id)
                } else {
                    super::unavailable_or_backend(e)
                }
            })
            .map(drop)
    }

    async fn update_certificate(&self, c: &StoredCertificate) -> Result<()> {
        let client = self.client().await?;
        let stmt =
            client.prepare_cached("UPDATE certificate_profiles SET name = $2, sealed = $3 WHERE id = $1").await.db()?;
        if client.execute(&stmt, &[&c.id, &c.name, &c.sealed]).await.db()? == 0 {
            return Err(StoreError::not_found("certificate profile", &c.id));
        }
        Ok(())
    }

    async fn delete_certificate(&self, id: Uuid) -> Result<()> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("DELETE FROM certificate_profiles WHERE id = $1").await.db()?;
        match client.execute(&stmt, &[&id]).await {
            Ok(0) => Err(StoreError::not_found("certificate profile", &id)),
            Ok(_) => Ok(()),
            // The database enforces the reference; the user is looked up only to name it.
            Err(e) if is_code(&e, &SqlState::FOREIGN_KEY_VIOLATION) => {
                let user = client
                    .query_opt(
                        "SELECT id FROM mqtt_connections WHERE certificate_profile_id = $1 ORDER BY seq LIMIT 1",
                        &[&id],
                    )
                    .await
                    .db()?;
                match user {
                    Some(row) => Err(StoreError::profile_in_use(&id, &row.try_get(0).db()?)),
                    None => Err(StoreError::Backend(format!("deleting certificate profile: {}", detail(&e)))),
                }
            }
            Err(e) => Err(super::unavailable_or_backend(e)),
        }
    }
}

#[async_trait::async_trait]
impl StatusReader for PgStore {
    async fn connection_status(&self, id: Uuid) -> Result<Vec<ConnectionStatus>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT replica, connected, last_error, forwarded, dropped, queued, updated_at
                 FROM connection_status WHERE connection_id = $1",
            )
            .await
            .db()?;
        let rows = client.query(&stmt, &[&id]).await.db()?;
        let mut statuses = rows
            .iter()
            .map(|r| {
                Ok(ConnectionStatus {
                    connection_id: id,
                    replica: r.try_get(0).db()?,
                    connected: r.try_get(1).db()?,
                    last_error: r.try_get(2).db()?,
                    forwarded: codec::uncounter(r.try_get(3).db()?),
                    dropped: codec::uncounter(r.try_get(4).db()?),
                    queued: codec::uncounter(r.try_get(5).db()?),
                    updated_at: r.try_get(6).db()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        statuses.sort_by(|a, b| a.replica.cmp(&b.replica));
        Ok(statuses)
    }
}

#[async_trait::async_trait]
impl StatusWriter for PgStore {
    async fn put_connection_status(&self, s: &ConnectionStatus) -> Result<()> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO connection_status
                     (connection_id, replica, connected, last_error, forwarded, dropped, queued, updated_at)
                 SELECT $1::uuid, $2::text, $3::bool, $4::text, $5::int8, $6::int8, $7::int8, $8::timestamptz
                 WHERE EXISTS (SELECT 1 FROM mqtt_connections WHERE id = $1)
                 ON CONFLICT (connection_id, replica) DO UPDATE SET
                     connected = EXCLUDED.connected, last_error = EXCLUDED.last_error,
                     forwarded = EXCLUDED.forwarded, dropped = EXCLUDED.dropped,
                     queued = EXCLUDED.queued, updated_at = EXCLUDED.updated_at",
            )
            .await
            .db()?;
        let outcome = client
            .execute(
                &stmt,
                &[
                    &s.connection_id,
                    &s.replica,
                    &s.connected,
                    &s.last_error,
                    &codec::counter(s.forwarded),
                    &codec::counter(s.dropped),
                    &codec::counter(s.queued),
                    &s.updated_at,
                ],
            )
            .await;
        match outcome {
            // The connection was deleted between the check and the insert: ignored, as documented.
            Err(e) if is_code(&e, &SqlState::FOREIGN_KEY_VIOLATION) => Ok(()),
            other => other.db().map(drop),
        }
    }
}

#[async_trait::async_trait]
impl ChangeLog for PgStore {
    async fn log_change(&self, change: &ConfigChanged) -> Result<u64> {
        let client = self.client().await?;
        // One statement: the counter row stays locked until it commits, so a later revision
        // can never be visible before an earlier one.
        let stmt = client
            .prepare_cached(
                "WITH r AS (UPDATE config_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision),
                      pruned AS (DELETE FROM config_changes WHERE revision <= (SELECT revision FROM r) - $2)
                 INSERT INTO config_changes (revision, change) SELECT revision, $1 FROM r RETURNING revision",
            )
            .await
            .db()?;
        let row = client.query_one(&stmt, &[&Json(change), &codec::counter(CHANGES_KEPT)]).await.db()?;
        Ok(codec::uncounter(row.try_get(0).db()?))
    }
}

#[async_trait::async_trait]
impl ChangeReader for PgStore {
    async fn revision(&self) -> Result<u64> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT revision FROM config_revision WHERE id = 1").await.db()?;
        Ok(codec::uncounter(client.query_one(&stmt, &[]).await.db()?.try_get(0).db()?))
    }

    async fn changes_since(&self, revision: u64) -> Result<Option<Vec<ConfigChanged>>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT revision, change FROM config_changes WHERE revision > $1 ORDER BY revision")
            .await
            .db()?;
        let rows = client.query(&stmt, &[&codec::counter(revision)]).await.db()?;
        let changes = rows
            .iter()
            .map(|row| {
                let Json(mut change): Json<ConfigChanged> = row.try_get(1).db()?;
                change.revision = codec::uncounter(row.try_get(0).db()?);
                Ok(change)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(crate::roles::contiguous(revision, changes))
    }
}
