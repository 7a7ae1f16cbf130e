//! Named devices in PostgreSQL.

use zonecast_model::{Device, Mac};

use crate::codec::{self, to_json};
use crate::postgres::{Db, PgStore};
use crate::{DeviceQuery, DeviceReader, DeviceWriter, Result, fold};

/// The columns a device is read back from, in [`row`]'s order.
const COLUMNS: &str = "mac, name, group_name, kind, properties, offline_seconds";

fn row(r: &tokio_postgres::Row) -> Result<Device> {
    codec::device(
        r.try_get(0).db()?,
        r.try_get(1).db()?,
        r.try_get(2).db()?,
        r.try_get(3).db()?,
        r.try_get(4).db()?,
        r.try_get(5).db()?,
    )
}

#[async_trait::async_trait]
impl DeviceReader for PgStore {
    async fn get_device(&self, mac: &Mac) -> Result<Device> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(&format!("SELECT {COLUMNS} FROM devices WHERE mac = $1")).await.db()?;
        match client.query_opt(&stmt, &[&mac.as_str()]).await.db()? {
            Some(r) => row(&r),
            None => Err(codec::missing_device(mac)),
        }
    }

    async fn list_devices(&self, query: &DeviceQuery) -> Result<Vec<Device>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM devices
                 WHERE ($1 = false OR group_name IS NOT DISTINCT FROM $2::text)
                   AND ($3::text IS NULL OR strpos(name_folded, $3) > 0 OR strpos(mac, $4::text) > 0)
                   AND ($5::text IS NULL OR mac > $5 COLLATE \"C\")
                 ORDER BY mac LIMIT $6"
            ))
            .await
            .db()?;
        let group = query.group.clone().flatten();
        let (name, mac) = query.search.clone().map(|s| (s.name, s.mac)).unzip();
        let after = query.after.as_ref().map(Mac::as_str);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = client.query(&stmt, &[&query.group.is_some(), &group, &name, &mac, &after, &limit]).await.db()?;
        rows.iter().map(row).collect()
    }
}

#[async_trait::async_trait]
impl DeviceWriter for PgStore {
    async fn put_devices(&self, devices: &[Device]) -> Result<()> {
        let devices = codec::coalesce_devices(devices);
        if devices.is_empty() {
            return Ok(());
        }
        let properties = devices.iter().map(|d| to_json(&d.properties)).collect::<Result<Vec<_>>>()?;
        let macs: Vec<&str> = devices.iter().map(|d| d.mac.as_str()).collect();
        let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
        let folded: Vec<String> = devices.iter().map(|d| fold(&d.name)).collect();
        let groups: Vec<Option<&str>> = devices.iter().map(|d| d.group.as_deref()).collect();
        let kinds: Vec<Option<&str>> = devices.iter().map(|d| d.kind.as_deref()).collect();
        let offline: Vec<Option<i64>> = devices.iter().map(|d| d.offline_seconds.map(codec::counter)).collect();
        let client = self.client().await?;
        // One statement: all the devices or none.
        let stmt = client
            .prepare_cached(
                "INSERT INTO devices (mac, name, name_folded, group_name, kind, properties, offline_seconds)
                 SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                                      $7::bigint[])
                 ON CONFLICT (mac) DO UPDATE SET name = EXCLUDED.name, name_folded = EXCLUDED.name_folded,
                     group_name = EXCLUDED.group_name, kind = EXCLUDED.kind, properties = EXCLUDED.properties,
                     offline_seconds = EXCLUDED.offline_seconds",
            )
            .await
            .db()?;
        client.execute(&stmt, &[&macs, &names, &folded, &groups, &kinds, &properties, &offline]).await.db().map(drop)
    }

    async fn delete_device(&self, mac: &Mac) -> Result<()> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("DELETE FROM devices WHERE mac = $1").await.db()?;
        match client.execute(&stmt, &[&mac.as_str()]).await.db()? {
            0 => Err(codec::missing_device(mac)),
            _ => Ok(()),
        }
    }
}
