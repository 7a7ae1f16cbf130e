//! Settings and device radii in SQLite.

use rusqlite::{OptionalExtension, params};
use zonecast_model::{Mac, Setting};

use super::write;
use crate::codec;
use crate::sqlite::{Db, SqliteStore};
use crate::{RadiusReader, RadiusWriter, Result, SettingReader, SettingWriter};

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
