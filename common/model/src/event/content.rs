//! The `Content` of each event type, typed. Field names and order are the wire's.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::kind::{AlarmKind, ExitReason};

/// `LOCATION_RAW_UPDATE`: a normalised position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocationRawUpdate {
    /// `[x, y, z]` in site metres, finite.
    #[serde(rename = "Position")]
    pub position: [f64; 3],
    /// `Velocity`, `Orientation`, `Sequence` as the input had them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `ZONE_ENTER`: a device entered a zone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneEnter {
    /// The zone.
    #[serde(rename = "ZoneID", with = "upper_uuid")]
    pub zone_id: Uuid,
    /// The zone's name.
    #[serde(rename = "ZoneName")]
    pub zone_name: String,
    /// The zone's AlertLevel.
    #[serde(rename = "AlertLevel")]
    pub alert_level: u64,
    /// The alarm kind of the entry.
    #[serde(rename = "Alarm")]
    pub alarm: AlarmKind,
    /// Identity of this stay, shared by the entry, its alarms and info events, and its exit.
    #[serde(rename = "CollisionID", with = "upper_uuid")]
    pub collision_id: Uuid,
    /// When the device entered.
    #[serde(rename = "EntryTime", with = "millis")]
    pub entry_time: DateTime<Utc>,
    /// The device's position at entry (its last known one; null when none is known).
    #[serde(rename = "Position")]
    pub position: Option<[f64; 3]>,
}

/// `ZONE_EXIT`: a device left a zone; every field of its enter (the position is the device's last
/// known one), and when and why it left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneExit {
    /// The fields of the stay's `ZONE_ENTER`, written first and at the same level.
    #[serde(flatten)]
    pub enter: ZoneEnter,
    /// When the device left.
    #[serde(rename = "ExitTime", with = "millis")]
    pub exit_time: DateTime<Utc>,
    /// Why it left.
    #[serde(rename = "Reason")]
    pub reason: ExitReason,
}

/// `ZONE_DWELL_EXCEEDED`: a device has stayed in a zone longer than the zone's
/// `MaxDwellSeconds`; every field of the stay's `ZONE_ENTER` (the position is the device's
/// last known one), how long it had stayed when this was raised, and the limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneDwell {
    /// The fields of the stay's `ZONE_ENTER`, written first and at the same level.
    #[serde(flatten)]
    pub enter: ZoneEnter,
    /// Seconds from the entry to when this was raised (milliseconds as decimals).
    #[serde(rename = "DwellSeconds")]
    pub dwell_seconds: f64,
    /// The zone's MaxDwellSeconds when this was raised.
    #[serde(rename = "MaxDwellSeconds")]
    pub max_dwell_seconds: f64,
}

/// `ZONE_OCCUPANCY_EXCEEDED`, `ZONE_OCCUPANCY_BELOW` and `ZONE_OCCUPANCY_RESTORED`: a zone's
/// site-wide count of devices inside crossed one of its limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneOccupancy {
    /// The zone.
    #[serde(rename = "ZoneID", with = "upper_uuid")]
    pub zone_id: Uuid,
    /// The zone's name.
    #[serde(rename = "ZoneName")]
    pub zone_name: String,
    /// The zone's AlertLevel.
    #[serde(rename = "AlertLevel")]
    pub alert_level: u64,
    /// How many devices are inside, over every evaluator.
    #[serde(rename = "Count")]
    pub count: u64,
    /// The zone's MaxOccupancy (null: none).
    #[serde(rename = "MaxOccupancy")]
    pub max_occupancy: Option<u64>,
    /// The zone's MinOccupancy (null: none).
    #[serde(rename = "MinOccupancy")]
    pub min_occupancy: Option<u64>,
}

/// `ZONE_INFO`: an `info-event` zone action fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneInfo {
    /// The zone.
    #[serde(rename = "ZoneID", with = "upper_uuid")]
    pub zone_id: Uuid,
    /// The zone's name.
    #[serde(rename = "ZoneName")]
    pub zone_name: String,
    /// The action's message, else `"<ZONE_ENTER|ZONE_EXIT> <ZoneName>"`.
    #[serde(rename = "Message")]
    pub message: String,
    /// The stay it belongs to.
    #[serde(rename = "CollisionID", with = "upper_uuid")]
    pub collision_id: Uuid,
}

/// `DEVICE_OFFLINE` and `DEVICE_ONLINE`: a device's silence began or ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevicePresence {
    /// The Timestamp of the device's last position before the silence.
    #[serde(rename = "LastSeen", with = "millis")]
    pub last_seen: DateTime<Utc>,
    /// How long the silence had lasted, in seconds (to the millisecond): DeviceOfflineSeconds
    /// when the device went offline, the whole silence when it came back.
    #[serde(rename = "SilentSeconds")]
    pub silent_seconds: f64,
    /// The device's last position before the silence (offline; null when none is known), or
    /// the position it came back with (online).
    #[serde(rename = "Position")]
    pub position: Option<[f64; 3]>,
}

/// `SITE_ALARM`, `DEVICE_ALARM` and `DEVICE_ALARM_COMMAND`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alarm {
    /// The zone.
    #[serde(rename = "ZoneID", with = "upper_uuid")]
    pub zone_id: Uuid,
    /// The zone's name.
    #[serde(rename = "ZoneName")]
    pub zone_name: String,
    /// The zone's AlertLevel.
    #[serde(rename = "AlertLevel")]
    pub alert_level: u64,
    /// The stay it belongs to.
    #[serde(rename = "CollisionID", with = "upper_uuid")]
    pub collision_id: Uuid,
}

/// `ALARM_CLEARED`: the condition of the alarms of `Type` about the event's device (its
/// `Source.MAC`) and `ZoneID` no longer holds. `ZoneID`, `ZoneName` and `CollisionID` are null
/// for `DEVICE_OFFLINE`, which is about the device alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlarmCleared {
    /// The `Type` of the alarms whose condition cleared: `SITE_ALARM`, `DEVICE_ALARM`,
    /// `ZONE_DWELL_EXCEEDED` or `DEVICE_OFFLINE`.
    #[serde(rename = "Type")]
    pub kind: super::EventType,
    /// The zone the device left.
    #[serde(rename = "ZoneID", with = "upper_uuid_opt")]
    pub zone_id: Option<Uuid>,
    /// The zone's name.
    #[serde(rename = "ZoneName")]
    pub zone_name: Option<String>,
    /// The stay that ended.
    #[serde(rename = "CollisionID", with = "upper_uuid_opt")]
    pub collision_id: Option<Uuid>,
}

/// Upper-case UUIDs out, any case in.
pub(crate) mod upper_uuid {
    use serde::{Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    pub fn serialize<S: Serializer>(id: &Uuid, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(id.hyphenated().encode_upper(&mut Uuid::encode_buffer()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        Uuid::deserialize(d)
    }
}

/// ISO 8601 UTC with milliseconds out; any RFC 3339 time in.
pub(crate) mod millis {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::format_timestamp(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        DateTime::<Utc>::deserialize(d)
    }
}

/// [`upper_uuid`], or null.
pub(crate) mod upper_uuid_opt {
    use serde::{Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    pub fn serialize<S: Serializer>(id: &Option<Uuid>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => super::upper_uuid::serialize(id, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Uuid>, D::Error> {
        Option::<Uuid>::deserialize(d)
    }
}

/// [`millis`], or null.
pub(crate) mod millis_opt {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => super::millis::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<DateTime<Utc>>::deserialize(d)
    }
}
