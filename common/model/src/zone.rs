//! The validated zone as stored, and the zone as the API returns it.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use zonecast_geometry::{GeometryType, Vec3};

use crate::schema::{UpperUuid, unbounded};
use crate::{Mac, ZoneAction};

/// The `GeometryType` names. The API reads them in any case and writes them in lower case.
pub(crate) struct GeometryTypeName;

impl JsonSchema for GeometryTypeName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GeometryType".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = GeometryType::ALL.iter().map(|kind| kind.as_str()).collect();
        schemars::json_schema!({
            "type": "string",
            "enum": names,
            "description": "Shape of the zone; decides how GeometryData is read (read in any case).",
        })
    }
}

/// Who may trigger a zone by default; `DeviceList` holds the exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InclusionPolicy {
    /// Every device except those listed.
    #[default]
    All,
    /// Only the listed devices.
    None,
}

impl InclusionPolicy {
    /// Whether `mac` may trigger a zone with this policy and `list` of exceptions.
    pub fn admits(self, list: &[Mac], mac: &Mac) -> bool {
        let listed = list.contains(mac);
        match self {
            Self::All => !listed,
            Self::None => listed,
        }
    }
}

/// A zone's configuration after validation: every field holds a legal value and the geometry
/// passed `zonecast_geometry::validate`. This is what the store keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct ZoneSpec {
    /// Identity, assigned on create; written as an upper-case UUID.
    #[serde(rename = "ZoneID", with = "upper_uuid")]
    #[schemars(with = "UpperUuid")]
    pub id: Uuid,
    /// Free text, may repeat across zones.
    pub name: String,
    /// Kind of shape.
    #[schemars(with = "GeometryTypeName")]
    pub geometry_type: GeometryType,
    /// Rows as given (normalisation happens when the shape is built).
    pub geometry_data: Vec<Vec3>,
    /// 0 is the lowest priority, with no upper bound; selects the alarm kind on entry.
    #[schemars(transform = unbounded)]
    pub alert_level: u64,
    /// Inactive zones hold nobody.
    pub active: bool,
    /// Default inclusion of devices.
    pub inclusion_policy: InclusionPolicy,
    /// Exceptions to the inclusion policy.
    pub device_list: Vec<Mac>,
    /// Actions run on entry and/or exit.
    pub zone_actions: Vec<ZoneAction>,
    /// Whether the zone is live only between StartTime and StopTime.
    pub is_timed: bool,
    /// Start of the time window (inclusive); written with milliseconds.
    #[serde(with = "millis")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub start_time: Option<DateTime<Utc>>,
    /// End of the time window (exclusive); written with milliseconds.
    #[serde(with = "millis")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub stop_time: Option<DateTime<Utc>>,
    /// Device whose position carries a mobile zone.
    pub mobile_origin_source: Option<Mac>,
    /// While true, GeometryType and GeometryData cannot change.
    pub is_geometry_locked: bool,
    /// How long a device may stay inside before one `ZONE_DWELL_EXCEEDED` is raised for its
    /// stay; null (the default) raises none.
    #[serde(default)]
    pub max_dwell_seconds: Option<f64>,
    /// How many devices may be inside at once, site-wide: one more raises
    /// `ZONE_OCCUPANCY_EXCEEDED`; null (the default) sets no limit.
    #[serde(default)]
    pub max_occupancy: Option<u64>,
    /// How many devices must be inside (a muster point's head count): falling below it once
    /// reached raises `ZONE_OCCUPANCY_BELOW`; null (the default) sets no minimum.
    #[serde(default)]
    pub min_occupancy: Option<u64>,
    /// Whether an alarm of this zone waits for a person once its condition clears (true, the
    /// default: it stays open, returned to normal, until someone acknowledges or resolves it);
    /// false resolves it by zonecast as its condition clears, acknowledged or not.
    #[serde(default = "needs_acknowledgement")]
    pub alarms_need_acknowledgement: bool,
    /// How many times the stored zone has been written since it was created (0 for a new
    /// zone). Kept by the store beside the JSON, not in it; the API shows it as the ETag.
    #[serde(skip)]
    pub version: u64,
}

/// A zone's alarms wait for a person unless it says otherwise.
fn needs_acknowledgement() -> bool {
    true
}

/// IDs (zones, connections, profiles, collisions) are returned as upper-case UUIDs.
pub fn format_id(id: &Uuid) -> String {
    id.hyphenated().to_string().to_ascii_uppercase()
}

/// One device inside a zone now, with the identity and entry time of its stay: the same
/// `CollisionID` and `EntryTime` its `ZONE_ENTER` event carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CollidingDevice {
    /// Identity of this stay.
    #[serde(rename = "CollisionID", with = "upper_uuid")]
    #[schemars(with = "UpperUuid")]
    pub collision_id: Uuid,
    /// The device.
    #[serde(rename = "MAC")]
    pub mac: Mac,
    /// When the device entered; written with milliseconds.
    #[serde(rename = "EntryTime", with = "millis_required")]
    #[schemars(with = "DateTime<Utc>")]
    pub entry_time: DateTime<Utc>,
}

/// A zone as the API returns it: the spec plus site and current collisions.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Zone {
    /// Site from configuration.
    #[serde(rename = "SiteID")]
    pub site_id: i64,
    /// The configuration.
    #[serde(flatten)]
    pub spec: ZoneSpec,
    /// Devices inside the zone now, ordered by MAC.
    #[serde(rename = "CollidingDevices")]
    pub colliding_devices: Vec<CollidingDevice>,
}

impl Zone {
    /// The API view of `spec` on `site_id` with the devices inside it now, in any order; the
    /// sealed secrets of its actions are left out.
    pub fn new(mut spec: ZoneSpec, site_id: i64, mut colliding_devices: Vec<CollidingDevice>) -> Self {
        colliding_devices.sort_by(|a, b| a.mac.cmp(&b.mac));
        spec.zone_actions.iter_mut().for_each(ZoneAction::hide_secret);
        Self { site_id, spec, colliding_devices }
    }
}

/// Upper-case UUIDs out, any case in.
mod upper_uuid {
    use serde::{Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    pub fn serialize<S: Serializer>(id: &Uuid, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_id(id))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A time as ISO 8601 UTC with milliseconds.
mod millis_required {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::format_timestamp(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        DateTime::<Utc>::deserialize(d)
    }
}

/// Optional times as ISO 8601 UTC with milliseconds.
mod millis {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&crate::format_timestamp(t)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<DateTime<Utc>>::deserialize(d)
    }
}
