//! Shelving: a zone or a device set aside for a while (under maintenance, a tag being tested),
//! so that the events of its conditions open no alarm and count on none until the shelf
//! expires or is taken back. The events themselves still flow, unchanged.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::fields::Fields;
use crate::{AlarmNote, Invalid, Mac};

/// Longest shelving, in seconds: a week. Shelving is always for a time, so nothing stays
/// silenced by oversight.
pub const MAX_SHELVE_SECONDS: i64 = 604_800;

/// What is shelved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ShelfTarget {
    /// A zone: no alarm of its conditions (entries, dwell, occupancy).
    Zone(Uuid),
    /// A device: no alarm of its conditions (entries, dwell, offline).
    Device(Mac),
}

impl ShelfTarget {
    /// The target as one text: `zone:<ZoneID>` (lower case) or `device:<MAC>`.
    pub fn text(&self) -> String {
        match self {
            Self::Zone(id) => format!("zone:{}", id.hyphenated()),
            Self::Device(mac) => format!("device:{mac}"),
        }
    }

    /// The target [`ShelfTarget::text`] wrote; `None` for other text.
    pub fn parse(text: &str) -> Option<Self> {
        match text.split_once(':')? {
            ("zone", id) => id.parse().ok().map(Self::Zone),
            ("device", mac) => mac.parse().ok().map(Self::Device),
            _ => None,
        }
    }
}

/// A shelf as stored and as the API answers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Shelf {
    /// The zone shelved (null for a device).
    #[serde(rename = "ZoneID", with = "crate::event::content::upper_uuid_opt")]
    #[schemars(with = "Option<String>")]
    pub zone_id: Option<Uuid>,
    /// The device shelved (null for a zone).
    #[serde(rename = "MAC")]
    #[schemars(with = "Option<String>")]
    pub mac: Option<Mac>,
    /// When it was shelved.
    #[serde(rename = "ShelvedAt", with = "crate::event::content::millis")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub shelved_at: DateTime<Utc>,
    /// When the shelf expires.
    #[serde(rename = "Until", with = "crate::event::content::millis")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub until: DateTime<Utc>,
    /// Who shelved it (as an alarm's `AcknowledgedBy`).
    #[serde(rename = "ShelvedBy")]
    pub by: String,
    /// Why.
    #[serde(rename = "Note")]
    pub note: Option<String>,
}

impl Shelf {
    /// What is shelved.
    pub fn target(&self) -> Option<ShelfTarget> {
        match (&self.zone_id, &self.mac) {
            (Some(zone), None) => Some(ShelfTarget::Zone(*zone)),
            (None, Some(mac)) => Some(ShelfTarget::Device(mac.clone())),
            _ => None,
        }
    }

    /// A shelf of `target` from `at` on, by `by`, as `input` asks.
    pub fn new(target: ShelfTarget, input: ShelveInput, by: String, at: DateTime<Utc>) -> Self {
        let (zone_id, mac) = match target {
            ShelfTarget::Zone(id) => (Some(id), None),
            ShelfTarget::Device(mac) => (None, Some(mac)),
        };
        let until = at + chrono::Duration::seconds(input.seconds);
        Self { zone_id, mac, shelved_at: at, until, by, note: input.note }
    }
}

/// The body of `POST /v3/modules/zones/{ZoneID}/shelve` and `POST /v3/devices/{MAC}/shelve`.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
#[schemars(description = "Unknown fields are ignored.")]
pub struct ShelveInput {
    /// For how long, in whole seconds: 1 to 604800 (a week).
    #[schemars(rename = "Seconds", range(min = 1, max = MAX_SHELVE_SECONDS))]
    pub seconds: i64,
    /// Why: at most 1000 characters once trimmed; null or blank for none.
    #[schemars(rename = "Note", length(max = crate::MAX_ALARM_NOTE_CHARS))]
    pub note: Option<String>,
}

impl ShelveInput {
    /// Reads a shelving body (a JSON object): `Seconds` required.
    pub fn parse(value: &Value) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let seconds = f.int("Seconds", 1, MAX_SHELVE_SECONDS)?.ok_or_else(|| Invalid::new("Seconds", "is required"))?;
        Ok(Self { seconds, note: AlarmNote::parse(value)?.note })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_shelving_is_for_a_bounded_time_with_an_optional_note() {
        let input = ShelveInput::parse(&json!({"Seconds": 3600, "Note": " ladder work "})).unwrap();
        assert_eq!((input.seconds, input.note.as_deref()), (3600, Some("ladder work")));
        let error = |v: Value| ShelveInput::parse(&v).unwrap_err().to_string();
        assert_eq!(error(json!({})), "Seconds: is required");
        assert_eq!(error(json!({"Seconds": 0})), "Seconds: must be between 1 and 604800, got 0");
        assert_eq!(error(json!({"Seconds": 604_801})), "Seconds: must be between 1 and 604800, got 604801");
        assert_eq!(error(json!({"Seconds": "1"})), "Seconds: must be an integer, got a string");
        assert_eq!(error(json!({"Seconds": 5, "Note": 1})), "Note: must be a string, got a number");

        let at: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
        let zone = ShelfTarget::Zone(Uuid::from_u128(0xab));
        let shelf = Shelf::new(zone.clone(), input, "ann".into(), at);
        assert_eq!(shelf.until, at + chrono::Duration::hours(1));
        assert_eq!(shelf.target(), Some(zone.clone()));
        assert_eq!(ShelfTarget::parse(&zone.text()), Some(zone));
        let device = ShelfTarget::Device("00:aa:bb:cc:dd:ee".parse().unwrap());
        assert_eq!(device.text(), "device:00:AA:BB:CC:DD:EE");
        assert_eq!(ShelfTarget::parse(&device.text()), Some(device));
        assert_eq!(ShelfTarget::parse("room:1"), None);
        let written = serde_json::to_value(&shelf).unwrap();
        assert_eq!(written["ZoneID"], "00000000-0000-0000-0000-0000000000AB");
        assert_eq!((&written["Until"], &written["MAC"]), (&json!("2026-12-01T11:00:00.000Z"), &Value::Null));
    }
}
