//! MQTT connections and their reported status in SQLite.

use rusqlite::{OptionalExtension, params};
use uuid::Uuid;

use super::{connection_row, id, write};
use crate::codec::{self, to_json};
use crate::sqlite::{Db, SqliteStore, is_foreign_key, is_unique};
use crate::{
    ConnectionReader, ConnectionStatus, ConnectionWriter, Result, StatusReader, StatusWriter, StoreError,
    StoredConnection,
};

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
                    crate::sqlite::store_error(e)
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
                        crate::sqlite::store_error(e)
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
