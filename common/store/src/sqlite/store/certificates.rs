//! Certificates in SQLite.

use rusqlite::{OptionalExtension, params};
use uuid::Uuid;

use super::{id, user_of_profile};
use crate::codec;
use crate::sqlite::{Db, SqliteStore, is_foreign_key, is_unique};
use crate::{CertificateReader, CertificateWriter, Result, StoreError, StoredCertificate};

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
                if is_unique(&e) {
                    StoreError::duplicate("certificate profile", &c.id)
                } else {
                    crate::sqlite::store_error(e)
                }
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
            Err(e) => Err(crate::sqlite::store_error(e)),
        })
        .await
    }
}
