//! The record of an alarm a person can acknowledge, as `ALARM_ACKNOWLEDGED` and
//! `ALARM_RESOLVED` carry it: its type, device, zone, when it was raised, and its state
//! (`open`, `acknowledged`, `resolved`) with who changed it, when and why.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::kind::EventType;
use crate::Mac;

/// Where an alarm stands. An alarm is raised `open`; it may be acknowledged (someone is on
/// it) and then resolved, or resolved at once; a resolved alarm stays resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AlarmState {
    /// Raised, nobody has taken it yet.
    Open,
    /// Someone has taken it.
    Acknowledged,
    /// Dealt with.
    Resolved,
}

impl AlarmState {
    /// Every state, in the order of their life.
    pub const ALL: [AlarmState; 3] = [Self::Open, Self::Acknowledged, Self::Resolved];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Acknowledged => "acknowledged",
            Self::Resolved => "resolved",
        }
    }
}

impl std::fmt::Display for AlarmState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AlarmState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| format!("'{s}' is not an alarm state (expected open, acknowledged or resolved)"))
    }
}

/// An alarm without the event that raised it: the `Content` of `ALARM_ACKNOWLEDGED` and
/// `ALARM_RESOLVED`, and every field of an alarm but `Event`. The names follow the event's
/// (`Type`, `MAC`, `ZoneID`); `Acknowledged…` and `Resolved…` are the states' own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AlarmRecord {
    /// The alarm: the `EventID` of the event that raised it, upper case.
    #[serde(rename = "AlarmID", with = "super::content::upper_uuid")]
    #[schemars(with = "String", extend("format" = "uuid"))]
    pub alarm_id: Uuid,
    /// The `Type` of the event that raised it: `SITE_ALARM`, `DEVICE_ALARM`,
    /// `ZONE_DWELL_EXCEEDED` or `DEVICE_OFFLINE`.
    #[serde(rename = "Type")]
    #[schemars(with = "String")]
    pub kind: EventType,
    /// The device, upper case with `:` (null for an occupancy alarm, which is about a zone).
    #[serde(rename = "MAC")]
    pub mac: Option<Mac>,
    /// The zone (null for `DEVICE_OFFLINE`).
    #[serde(rename = "ZoneID", with = "super::content::upper_uuid_opt")]
    #[schemars(with = "Option<String>")]
    pub zone_id: Option<Uuid>,
    /// The zone's name when the alarm was raised (null for `DEVICE_OFFLINE`).
    #[serde(rename = "ZoneName")]
    pub zone_name: Option<String>,
    /// The stay the alarm belongs to (null when none: `DEVICE_OFFLINE`).
    #[serde(rename = "CollisionID", with = "super::content::upper_uuid_opt")]
    #[schemars(with = "Option<String>")]
    pub collision_id: Option<Uuid>,
    /// The `Timestamp` of the event that raised it.
    #[serde(rename = "RaisedAt", with = "super::content::millis")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub raised_at: DateTime<Utc>,
    /// How many events raised it: the first, and each later one of the same `Type`, device
    /// and zone while it was not resolved.
    #[serde(rename = "Count")]
    pub count: u64,
    /// The `Timestamp` of the latest event that raised it.
    #[serde(rename = "LastRaisedAt", with = "super::content::millis")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub last_raised_at: DateTime<Utc>,
    /// The `EventID` of the latest event that raised it, upper case.
    #[serde(rename = "LastEventID", with = "super::content::upper_uuid")]
    #[schemars(with = "String", extend("format" = "uuid"))]
    pub last_event_id: Uuid,
    /// Whether its condition holds: the device is inside the zone (`SITE_ALARM`,
    /// `DEVICE_ALARM`, `ZONE_DWELL_EXCEEDED`), offline (`DEVICE_OFFLINE`), or the zone is outside
    /// its occupancy limit (`ZONE_OCCUPANCY_EXCEEDED`, `ZONE_OCCUPANCY_BELOW`).
    #[serde(rename = "Active")]
    pub active: bool,
    /// When its condition last cleared (null while it is active).
    #[serde(rename = "ClearedAt", with = "super::content::millis_opt")]
    #[schemars(with = "Option<String>")]
    pub cleared_at: Option<DateTime<Utc>>,
    /// `open`, `acknowledged` or `resolved`.
    #[serde(rename = "State")]
    pub state: AlarmState,
    /// Who acknowledged it: the client id of a token, or `api-key:<8 hex digits>` for an API
    /// key (a digest of the key, never the key).
    #[serde(rename = "AcknowledgedBy")]
    pub acknowledged_by: Option<String>,
    /// When it was acknowledged.
    #[serde(rename = "AcknowledgedAt", with = "super::content::millis_opt")]
    #[schemars(with = "Option<String>")]
    pub acknowledged_at: Option<DateTime<Utc>>,
    /// The note given with the acknowledgement.
    #[serde(rename = "AcknowledgedNote")]
    pub acknowledged_note: Option<String>,
    /// Who resolved it (as `AcknowledgedBy`).
    #[serde(rename = "ResolvedBy")]
    pub resolved_by: Option<String>,
    /// When it was resolved.
    #[serde(rename = "ResolvedAt", with = "super::content::millis_opt")]
    #[schemars(with = "Option<String>")]
    pub resolved_at: Option<DateTime<Utc>>,
    /// The note given with the resolution.
    #[serde(rename = "ResolvedNote")]
    pub resolved_note: Option<String>,
}
