//! The validated zone as stored, and the zone as the API returns it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use zonecast_geometry::{GeometryType, Vec3};

use crate::{Mac, ZoneAction};

/// Who may trigger a zone by default; `DeviceList` holds the exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ZoneSpec {
    /// Identity, assigned on create.
    #[serde(rename = "ZoneID")]
    pub id: Uuid,
    /// Free text, may repeat across zones.
    pub name: String,
    /// Kind of shape.
    pub geometry_type: GeometryType,
    /// Rows as given (normalisation happens when the shape is built).
    pub geometry_data: Vec<Vec3>,
    /// 0..=10; selects the alarm kind on entry.
    pub alert_level: i64,
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
    /// Start of the time window (inclusive).
    pub start_time: Option<DateTime<Utc>>,
    /// End of the time window (exclusive).
    pub stop_time: Option<DateTime<Utc>>,
    /// Device whose position carries a mobile zone.
    pub mobile_origin_source: Option<Mac>,
    /// While true, GeometryType and GeometryData cannot change.
    pub is_geometry_locked: bool,
}

/// IDs (zones, connections, profiles, collisions) are returned as upper-case UUIDs.
pub fn format_id(id: &Uuid) -> String {
    id.hyphenated().to_string().to_ascii_uppercase()
}

/// A zone as the API returns it: the spec plus site and current collisions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Zone {
    /// Site from configuration.
    #[serde(rename = "SiteID")]
    pub site_id: i64,
    /// Upper-case UUID.
    #[serde(rename = "ZoneID")]
    pub zone_id: String,
    /// See [`ZoneSpec::name`].
    pub name: String,
    /// See [`ZoneSpec::geometry_type`].
    pub geometry_type: GeometryType,
    /// See [`ZoneSpec::geometry_data`].
    pub geometry_data: Vec<Vec3>,
    /// See [`ZoneSpec::alert_level`].
    pub alert_level: i64,
    /// See [`ZoneSpec::active`].
    pub active: bool,
    /// See [`ZoneSpec::inclusion_policy`].
    pub inclusion_policy: InclusionPolicy,
    /// See [`ZoneSpec::device_list`].
    pub device_list: Vec<Mac>,
    /// See [`ZoneSpec::zone_actions`].
    pub zone_actions: Vec<ZoneAction>,
    /// See [`ZoneSpec::is_timed`].
    pub is_timed: bool,
    /// ISO 8601 UTC with milliseconds, or null.
    pub start_time: Option<String>,
    /// ISO 8601 UTC with milliseconds, or null.
    pub stop_time: Option<String>,
    /// See [`ZoneSpec::mobile_origin_source`].
    pub mobile_origin_source: Option<Mac>,
    /// Devices inside the zone now.
    pub colliding_devices: Vec<Mac>,
    /// See [`ZoneSpec::is_geometry_locked`].
    pub is_geometry_locked: bool,
}

impl Zone {
    /// The API view of `spec` on `site_id` with the devices inside it now.
    pub fn new(spec: ZoneSpec, site_id: i64, colliding_devices: Vec<Mac>) -> Self {
        Self {
            site_id,
            zone_id: format_id(&spec.id),
            name: spec.name,
            geometry_type: spec.geometry_type,
            geometry_data: spec.geometry_data,
            alert_level: spec.alert_level,
            active: spec.active,
            inclusion_policy: spec.inclusion_policy,
            device_list: spec.device_list,
            zone_actions: spec.zone_actions,
            is_timed: spec.is_timed,
            start_time: spec.start_time.map(|t| crate::format_timestamp(&t)),
            stop_time: spec.stop_time.map(|t| crate::format_timestamp(&t)),
            mobile_origin_source: spec.mobile_origin_source,
            colliding_devices,
            is_geometry_locked: spec.is_geometry_locked,
        }
    }
}
