//! Settings and device radii in PostgreSQL.

use zonecast_model::{Mac, Setting};

use crate::postgres::{Db, PgStore};
use crate::{RadiusReader, RadiusWriter, Result, SettingReader, SettingWriter, codec};

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
