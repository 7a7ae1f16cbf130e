//! MQTT connections and their reported status in PostgreSQL.

use tokio_postgres::error::SqlState;
use tokio_postgres::types::Json;
use uuid::Uuid;

use super::connection;
use crate::postgres::{Db, PgStore, is_code};
use crate::{
    ConnectionReader, ConnectionStatus, ConnectionWriter, Result, StatusReader, StatusWriter, StoreError,
    StoredConnection, codec,
};

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
                crate::postgres::unavailable_or_backend(e)
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
                    crate::postgres::unavailable_or_backend(e)
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
