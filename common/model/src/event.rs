//! The event envelope every bus and MQTT message carries, and the `config.changed` announcement.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// ISO 8601 UTC with milliseconds and `Z`, as every timestamp in the API and events.
pub fn format_timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Who an event is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventSource {
    /// Device MAC, upper-case with colons.
    #[serde(rename = "MAC")]
    pub mac: Option<String>,
    /// Gateway the position came through, when known.
    #[serde(rename = "GatewayURI", default)]
    pub gateway_uri: Option<String>,
    /// Site from configuration.
    #[serde(rename = "SiteID", default)]
    pub site_id: i64,
}

/// Every message on the bus and every message forwarded to MQTT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Envelope {
    /// `LOCATION`, `ZONE` or `ALARM`.
    pub category: String,
    /// Event type, e.g. `ZONE_ENTER`.
    #[serde(rename = "Type")]
    pub kind: String,
    /// When the position was measured.
    pub timestamp: String,
    /// When this service produced the event.
    pub local_timestamp: String,
    /// The device.
    pub source: EventSource,
    /// Type-specific body.
    pub content: Value,
}

/// What kind of configuration changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigKind {
    /// Zones (create, update, delete, activate, device lists, lock, reset).
    Zones,
    /// Zone settings.
    Settings,
    /// Device radii.
    Radii,
    /// MQTT connections.
    Connections,
    /// Certificate profiles.
    Certificates,
}

/// Payload of `<prefix>.config.changed`: every evaluator and forwarder replica reloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigChanged {
    /// What changed.
    #[serde(rename = "Kind")]
    pub kind: ConfigKind,
    /// IDs of the changed items (zone IDs, setting names, MACs, connection or profile IDs).
    #[serde(rename = "IDs")]
    pub ids: Vec<String>,
    /// For zone resets: the operation that caused the change (`reset`), so evaluators can give
    /// the exit its Reason. Absent for plain writes.
    #[serde(rename = "Operation", default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
}
