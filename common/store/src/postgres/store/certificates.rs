//! Certificates in PostgreSQL.

use tokio_postgres::error::SqlState;
use uuid::Uuid;

use crate::postgres::{Db, PgStore, detail, is_code};
use crate::{CertificateReader, CertificateWriter, Result, StoreError, StoredCertificate};

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
                    crate::postgres::unavailable_or_backend(e)
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
            Err(e) => Err(crate::postgres::unavailable_or_backend(e)),
        }
    }
}
