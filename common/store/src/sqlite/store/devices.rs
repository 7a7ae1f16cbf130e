//! Named devices in SQLite.

use rusqlite::{OptionalExtension, params};
use zonecast_model::{Device, Mac};

use super::write;
use crate::codec::{self, to_json};
use crate::sqlite::{Db, SqliteStore};
use crate::{DeviceQuery, DeviceReader, DeviceWriter, Result, fold};

/// The columns a device is read back from, in [`row`]'s order.
const COLUMNS: &str = "mac, name, group_name, kind, properties, offline_seconds";

type Row = (String, String, Option<String>, Option<String>, String, Option<i64>);

fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
}

fn row((mac, name, group, kind, properties, offline_seconds): Row) -> Result<Device> {
    codec::device(&mac, name, group, kind, &properties, offline_seconds)
}

#[async_trait::async_trait]
impl DeviceReader for SqliteStore {
    async fn get_device(&self, mac: &Mac) -> Result<Device> {
        let mac = mac.clone();
        self.run(move |conn| {
            let found = conn
                .prepare_cached(&format!("SELECT {COLUMNS} FROM devices WHERE mac = ?1"))
                .db()?
                .query_row([mac.as_str()], read)
                .optional()
                .db()?;
            found.map(row).transpose()?.ok_or_else(|| codec::missing_device(&mac))
        })
        .await
    }

    async fn list_devices(&self, query: &DeviceQuery) -> Result<Vec<Device>> {
        let query = query.clone();
        self.run(move |conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM devices
                     WHERE (?1 = 0 OR group_name IS ?2)
                       AND (?3 IS NULL OR instr(name_folded, ?3) > 0 OR instr(mac, ?4) > 0)
                       AND (?5 IS NULL OR mac > ?5)
                     ORDER BY mac LIMIT ?6"
                ))
                .db()?;
            let group = query.group.clone().flatten();
            let (name, mac) = query.search.map(|s| (s.name, s.mac)).unzip();
            let after = query.after.as_ref().map(Mac::as_str);
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(params![query.group.is_some(), group, name, mac, after, limit], read)
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter().map(row).collect()
        })
        .await
    }
}

#[async_trait::async_trait]
impl DeviceWriter for SqliteStore {
    async fn put_devices(&self, devices: &[Device]) -> Result<()> {
        let devices = codec::coalesce_devices(devices);
        let properties = devices.iter().map(|d| to_json(&d.properties)).collect::<Result<Vec<_>>>()?;
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut upsert = tx
                    .prepare_cached(
                        "INSERT INTO devices (mac, name, name_folded, group_name, kind, properties, offline_seconds)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                         ON CONFLICT (mac) DO UPDATE SET name = excluded.name, name_folded = excluded.name_folded,
                             group_name = excluded.group_name, kind = excluded.kind, properties = excluded.properties,
                             offline_seconds = excluded.offline_seconds",
                    )
                    .db()?;
                for (d, properties) in devices.iter().zip(&properties) {
                    let offline = d.offline_seconds.map(codec::counter);
                    upsert
                        .execute(params![d.mac.as_str(), d.name, fold(&d.name), d.group, d.kind, properties, offline])
                        .db()?;
                }
            }
            tx.commit().db()
        })
        .await
    }

    async fn delete_device(&self, mac: &Mac) -> Result<()> {
        let mac = mac.clone();
        self.run(move |conn| {
            let deleted =
                conn.prepare_cached("DELETE FROM devices WHERE mac = ?1").db()?.execute([mac.as_str()]).db()?;
            if deleted == 0 { Err(codec::missing_device(&mac)) } else { Ok(()) }
        })
        .await
    }
}
