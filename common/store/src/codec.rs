//! Conversions between model values and column values shared by both dialects, and the
//! normalisation of write batches (duplicates, lock order).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;
use zonecast_model::{Device, Mac, Setting, SettingName, ZoneSpec};

use crate::{Collision, Result, StoreError};

/// JSON text of a model value.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("encoding a row: {e}")))
}

/// A model value from its stored JSON text.
pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Backend(format!("decoding a stored {what}: {e}")))
}

/// A zone read back from its JSON and its version column.
pub(crate) fn zone(text: &str, version: i64) -> Result<ZoneSpec> {
    let mut zone: ZoneSpec = from_json(text, "zone")?;
    zone.version = uncounter(version);
    Ok(zone)
}

/// A MAC read back from a column.
pub(crate) fn mac(text: &str) -> Result<Mac> {
    text.parse().map_err(|e: String| StoreError::Backend(format!("stored MAC: {e}")))
}

/// A device read back from its columns (MAC, name, group, kind, properties as JSON text).
pub(crate) fn device(
    mac: &str,
    name: String,
    group: Option<String>,
    kind: Option<String>,
    properties: &str,
    offline_seconds: Option<i64>,
) -> Result<Device> {
    Ok(Device {
        mac: self::mac(mac)?,
        name,
        group,
        kind,
        properties: from_json(properties, "device's properties")?,
        offline_seconds: offline_seconds.and_then(|s| u64::try_from(s).ok()),
    })
}

/// `devices` with one per MAC, the last one winning, sorted so that concurrent writers lock
/// rows in the same order.
pub(crate) fn coalesce_devices(devices: &[Device]) -> Vec<Device> {
    let mut by_mac = BTreeMap::new();
    for d in devices {
        by_mac.insert(d.mac.clone(), d.clone());
    }
    by_mac.into_values().collect()
}

/// `NotFound` for the device `mac`.
pub(crate) fn missing_device(mac: &Mac) -> StoreError {
    StoreError::NotFound { what: "device", id: mac.to_string() }
}

/// A UUID read back from a text column (SQLite).
pub(crate) fn uuid(text: &str) -> Result<Uuid> {
    Uuid::parse_str(text).map_err(|e| StoreError::Backend(format!("stored UUID '{text}': {e}")))
}

/// A time read back from microseconds since the epoch (SQLite).
pub(crate) fn time(micros: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros)
        .ok_or_else(|| StoreError::Backend(format!("stored time {micros} is out of range")))
}

/// A counter as a signed 64-bit column; saturates rather than wrapping.
pub(crate) fn counter(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A counter read back; a negative value (never written) reads as 0.
pub(crate) fn uncounter(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A stored setting row. `None` for a name this version does not know: a newer replica may
/// have written it during a rolling upgrade, and it must not break listing here.
pub(crate) fn setting(name: &str, value: f64, active: bool) -> Option<Setting> {
    match name.parse::<SettingName>() {
        Ok(name) => Some(Setting { name, value, active }),
        Err(()) => {
            tracing::warn!(setting = name, "ignoring a stored setting this version does not know");
            None
        }
    }
}

/// Settings in the order the API lists them.
pub(crate) fn sort_settings(settings: &mut [Setting]) {
    settings.sort_by_key(|s| SettingName::ALL.iter().position(|n| *n == s.name));
}

/// `entered` with one row per (zone, MAC), the last one winning, sorted so that concurrent
/// writers lock rows in the same order.
pub(crate) fn coalesce_entered(entered: &[Collision]) -> Vec<Collision> {
    let mut by_key = BTreeMap::new();
    for c in entered {
        by_key.insert((c.zone_id, c.mac.clone()), c.clone());
    }
    by_key.into_values().collect()
}

/// Presence rows with one per MAC, the last one winning.
pub(crate) fn coalesce_presence(rows: &[crate::Presence]) -> Vec<crate::Presence> {
    let mut by_mac = BTreeMap::new();
    for row in rows {
        by_mac.insert(row.mac.clone(), row.clone());
    }
    by_mac.into_values().collect()
}

/// Radius changes with one per MAC, the last one winning, split into sets and removals.
pub(crate) fn coalesce_radii(changes: &[(Mac, Option<f64>)]) -> (Vec<(Mac, f64)>, Vec<Mac>) {
    let mut by_mac = BTreeMap::new();
    for (mac, radius) in changes {
        by_mac.insert(mac.clone(), *radius);
    }
    let mut set = Vec::new();
    let mut remove = Vec::new();
    for (mac, radius) in by_mac {
        match radius {
            Some(r) => set.push((mac, r)),
            None => remove.push(mac),
        }
    }
    (set, remove)
}

/// The answer to a lookup of `macs`' radii: each MAC once, sorted, with the radius `found` for
/// it or `None`.
pub(crate) fn radii_of(macs: &[Mac], found: &HashMap<Mac, f64>) -> Vec<(Mac, Option<f64>)> {
    let asked: BTreeSet<&Mac> = macs.iter().collect();
    asked.into_iter().map(|mac| (mac.clone(), found.get(mac).copied())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac_of(s: &str) -> Mac {
        s.parse().unwrap()
    }

    #[test]
    fn the_last_radius_change_for_a_mac_wins() {
        let a = mac_of("00:00:00:00:00:0A");
        let b = mac_of("00:00:00:00:00:0B");
        let (set, remove) = coalesce_radii(&[(a.clone(), Some(1.0)), (b.clone(), Some(2.0)), (a.clone(), None)]);
        assert_eq!(set, vec![(b, 2.0)]);
        assert_eq!(remove, vec![a]);
    }

    #[test]
    fn the_last_entry_for_a_pair_wins() {
        let zone = Uuid::new_v4();
        let mac = mac_of("00:00:00:00:00:0A");
        let first = Collision {
            zone_id: zone,
            mac: mac.clone(),
            collision_id: Uuid::new_v4(),
            entry_time: Utc::now(),
            dwell_reported: false,
        };
        let second = Collision { collision_id: Uuid::new_v4(), ..first.clone() };
        assert_eq!(coalesce_entered(&[first, second.clone()]), vec![second]);
    }

    #[test]
    fn counters_saturate() {
        assert_eq!(counter(u64::MAX), i64::MAX);
        assert_eq!(uncounter(-1), 0);
        assert_eq!(uncounter(counter(42)), 42);
    }
}
