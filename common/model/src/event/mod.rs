//! The event contract: every bus and MQTT message is an [`Event`] — Category, Type, EventID,
//! times, source and a typed [`Content`] — and the `config.changed` announcement.

mod alarm_state;
pub(crate) mod content;
mod id;
mod kind;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Mac;

pub use alarm_state::{AlarmRecord, AlarmState};
pub use content::{
    Alarm, AlarmCleared, DevicePresence, LocationRawUpdate, ZoneDwell, ZoneEnter, ZoneExit, ZoneInfo, ZoneOccupancy,
};
pub use id::{EventId, IdSource};
pub use kind::{
    AlarmKind, ConfigOperation, DeviceEventKind, EventCategory, EventType, ExitReason, UnknownName, ZoneEventKind,
};

/// ISO 8601 UTC with milliseconds and `Z`, as every timestamp in the API and events.
pub fn format_timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Who an event is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventSource {
    /// Device MAC, upper-case with colons.
    #[serde(rename = "MAC")]
    pub mac: Option<Mac>,
    /// Gateway the position came through, when known.
    #[serde(rename = "GatewayURI", default)]
    pub gateway_uri: Option<String>,
    /// Site from configuration.
    #[serde(rename = "SiteID", default)]
    pub site_id: i64,
}

/// Who an event's device is in the device registry: the `Device` an event carries when its
/// device is registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceTag {
    /// The registry's `Name`.
    #[serde(rename = "Name")]
    pub name: String,
    /// The registry's `Group` (null when none).
    #[serde(rename = "Group")]
    pub group: Option<String>,
}

/// The body of an event; its variant is the event's `Type`.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// `LOCATION_RAW_UPDATE`.
    LocationRawUpdate(LocationRawUpdate),
    /// `ZONE_ENTER`.
    ZoneEnter(ZoneEnter),
    /// `ZONE_EXIT`.
    ZoneExit(ZoneExit),
    /// `ZONE_INFO`.
    ZoneInfo(ZoneInfo),
    /// `ZONE_DWELL_EXCEEDED`.
    ZoneDwellExceeded(ZoneDwell),
    /// `ZONE_OCCUPANCY_EXCEEDED`.
    ZoneOccupancyExceeded(ZoneOccupancy),
    /// `ZONE_OCCUPANCY_BELOW`.
    ZoneOccupancyBelow(ZoneOccupancy),
    /// `ZONE_OCCUPANCY_RESTORED`.
    ZoneOccupancyRestored(ZoneOccupancy),
    /// `SITE_ALARM`.
    SiteAlarm(Alarm),
    /// `DEVICE_ALARM`.
    DeviceAlarm(Alarm),
    /// `DEVICE_ALARM_COMMAND`, published for the device's gateway.
    DeviceAlarmCommand(Alarm),
    /// `DEVICE_OFFLINE`.
    DeviceOffline(DevicePresence),
    /// `DEVICE_ONLINE`.
    DeviceOnline(DevicePresence),
    /// `ALARM_ACKNOWLEDGED`: the alarm as it is now.
    AlarmAcknowledged(AlarmRecord),
    /// `ALARM_RESOLVED`: the alarm as it is now.
    AlarmResolved(AlarmRecord),
    /// `ALARM_CLEARED`: which alarms' condition no longer holds.
    AlarmCleared(AlarmCleared),
}

impl Content {
    /// The event `Type` this content belongs to.
    pub fn kind(&self) -> EventType {
        match self {
            Self::LocationRawUpdate(_) => EventType::LocationRawUpdate,
            Self::ZoneEnter(_) => EventType::ZoneEnter,
            Self::ZoneExit(_) => EventType::ZoneExit,
            Self::ZoneInfo(_) => EventType::ZoneInfo,
            Self::ZoneDwellExceeded(_) => EventType::ZoneDwellExceeded,
            Self::ZoneOccupancyExceeded(_) => EventType::ZoneOccupancyExceeded,
            Self::ZoneOccupancyBelow(_) => EventType::ZoneOccupancyBelow,
            Self::ZoneOccupancyRestored(_) => EventType::ZoneOccupancyRestored,
            Self::SiteAlarm(_) => EventType::SiteAlarm,
            Self::DeviceAlarm(_) => EventType::DeviceAlarm,
            Self::DeviceAlarmCommand(_) => EventType::DeviceAlarmCommand,
            Self::DeviceOffline(_) => EventType::DeviceOffline,
            Self::DeviceOnline(_) => EventType::DeviceOnline,
            Self::AlarmAcknowledged(_) => EventType::AlarmAcknowledged,
            Self::AlarmResolved(_) => EventType::AlarmResolved,
            Self::AlarmCleared(_) => EventType::AlarmCleared,
        }
    }
}

/// Every message on the bus and every message forwarded to MQTT:
/// `{"Category", "Type", "EventID", "Timestamp", "LocalTimestamp", "Source", "Content"}`.
/// Category and Type follow from the content.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The same on every copy of this event.
    pub event_id: EventId,
    /// When the position was measured.
    pub timestamp: DateTime<Utc>,
    /// When this service produced the event.
    pub local_timestamp: DateTime<Utc>,
    /// The device.
    pub source: EventSource,
    /// Type-specific body.
    pub content: Content,
    /// The device's name and group in the device registry, when it is registered: written
    /// last, as `Device`, and left out otherwise.
    pub device: Option<DeviceTag>,
}

impl Event {
    /// The event's `Type`.
    pub fn kind(&self) -> EventType {
        self.content.kind()
    }

    /// The event's `Category`.
    pub fn category(&self) -> EventCategory {
        self.kind().category()
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let kind = self.kind();
        let mut e = s.serialize_struct("Event", 7 + usize::from(self.device.is_some()))?;
        e.serialize_field("Category", &kind.category())?;
        e.serialize_field("Type", &kind)?;
        e.serialize_field("EventID", &self.event_id)?;
        e.serialize_field("Timestamp", &format_timestamp(&self.timestamp))?;
        e.serialize_field("LocalTimestamp", &format_timestamp(&self.local_timestamp))?;
        e.serialize_field("Source", &self.source)?;
        match &self.content {
            Content::LocationRawUpdate(c) => e.serialize_field("Content", c)?,
            Content::ZoneEnter(c) => e.serialize_field("Content", c)?,
            Content::ZoneExit(c) => e.serialize_field("Content", c)?,
            Content::ZoneInfo(c) => e.serialize_field("Content", c)?,
            Content::ZoneDwellExceeded(c) => e.serialize_field("Content", c)?,
            Content::ZoneOccupancyExceeded(c) | Content::ZoneOccupancyBelow(c) | Content::ZoneOccupancyRestored(c) => {
                e.serialize_field("Content", c)?
            }
            Content::SiteAlarm(c) | Content::DeviceAlarm(c) | Content::DeviceAlarmCommand(c) => {
                e.serialize_field("Content", c)?
            }
            Content::DeviceOffline(c) | Content::DeviceOnline(c) => e.serialize_field("Content", c)?,
            Content::AlarmAcknowledged(c) | Content::AlarmResolved(c) => e.serialize_field("Content", c)?,
            Content::AlarmCleared(c) => e.serialize_field("Content", c)?,
        }
        if let Some(device) = &self.device {
            e.serialize_field("Device", device)?;
        }
        e.end()
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;

        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Wire {
            category: EventCategory,
            #[serde(rename = "Type")]
            kind: EventType,
            #[serde(rename = "EventID")]
            event_id: EventId,
            timestamp: DateTime<Utc>,
            local_timestamp: DateTime<Utc>,
            source: EventSource,
            content: serde_json::Value,
            #[serde(default)]
            device: Option<DeviceTag>,
        }
        let w = Wire::deserialize(d)?;
        if w.kind.category() != w.category {
            return Err(D::Error::custom(format!("Category: {} is not the category of {}", w.category, w.kind)));
        }
        let read = |c| -> Result<Content, serde_json::Error> {
            Ok(match w.kind {
                EventType::LocationRawUpdate => Content::LocationRawUpdate(serde_json::from_value(c)?),
                EventType::ZoneEnter => Content::ZoneEnter(serde_json::from_value(c)?),
                EventType::ZoneExit => Content::ZoneExit(serde_json::from_value(c)?),
                EventType::ZoneInfo => Content::ZoneInfo(serde_json::from_value(c)?),
                EventType::ZoneDwellExceeded => Content::ZoneDwellExceeded(serde_json::from_value(c)?),
                EventType::ZoneOccupancyExceeded => Content::ZoneOccupancyExceeded(serde_json::from_value(c)?),
                EventType::ZoneOccupancyBelow => Content::ZoneOccupancyBelow(serde_json::from_value(c)?),
                EventType::ZoneOccupancyRestored => Content::ZoneOccupancyRestored(serde_json::from_value(c)?),
                EventType::SiteAlarm => Content::SiteAlarm(serde_json::from_value(c)?),
                EventType::DeviceAlarm => Content::DeviceAlarm(serde_json::from_value(c)?),
                EventType::DeviceAlarmCommand => Content::DeviceAlarmCommand(serde_json::from_value(c)?),
                EventType::DeviceOffline => Content::DeviceOffline(serde_json::from_value(c)?),
                EventType::DeviceOnline => Content::DeviceOnline(serde_json::from_value(c)?),
                EventType::AlarmAcknowledged => Content::AlarmAcknowledged(serde_json::from_value(c)?),
                EventType::AlarmResolved => Content::AlarmResolved(serde_json::from_value(c)?),
                EventType::AlarmCleared => Content::AlarmCleared(serde_json::from_value(c)?),
            })
        };
        let content = read(w.content).map_err(|e| D::Error::custom(format!("Content: {e}")))?;
        Ok(Self {
            event_id: w.event_id,
            timestamp: w.timestamp,
            local_timestamp: w.local_timestamp,
            source: w.source,
            content,
            device: w.device,
        })
    }
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
    /// The device registry (IDs: the MACs written or deleted).
    Devices,
}

/// A configuration change: what the change log records under its revision, and the payload of
/// `<prefix>.config.changed`, which tells every evaluator and forwarder replica to apply it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigChanged {
    /// What changed.
    #[serde(rename = "Kind")]
    pub kind: ConfigKind,
    /// IDs of the changed items (zone IDs, setting names, MACs, connection or profile IDs).
    #[serde(rename = "IDs")]
    pub ids: Vec<String>,
    /// For zone resets: the operation that caused the change, so evaluators can give the exit
    /// its Reason. Absent for plain writes.
    #[serde(rename = "Operation", default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<ConfigOperation>,
    /// The change's place in the change log: one more than the change before it. A service
    /// that has applied revision `n` and hears of a later one reads the log after `n`, so a
    /// missed announcement costs nothing. 0 when not (yet) logged.
    #[serde(rename = "Revision", default, skip_serializing_if = "is_zero")]
    pub revision: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Payload of `<prefix>.config.applied`: an evaluator or forwarder replica has every
/// configuration change up to `revision` in force. Sent after each change it applies, every
/// second while it runs (so the API knows who is alive), and once more, `leaving`, when it stops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigApplied {
    /// `"evaluator"` or `"forwarder"`.
    #[serde(rename = "Service")]
    pub service: String,
    /// This replica, for as long as it runs.
    #[serde(rename = "Instance")]
    pub instance: uuid::Uuid,
    /// The last revision in force.
    #[serde(rename = "Revision")]
    pub revision: u64,
    /// The replica is stopping: it no longer applies changes.
    #[serde(rename = "Leaving", default, skip_serializing_if = "std::ops::Not::not")]
    pub leaving: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    fn enter() -> Event {
        let t: DateTime<Utc> = "2026-11-21T10:00:00.100Z".parse().unwrap();
        Event {
            event_id: EventId(Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001)),
            timestamp: t,
            local_timestamp: "2026-11-21T10:00:00.104Z".parse().unwrap(),
            source: EventSource { mac: Some("00:aa:bb:cc:dd:ee".parse().unwrap()), gateway_uri: None, site_id: 501 },
            content: Content::ZoneEnter(ZoneEnter {
                zone_id: Uuid::from_u128(0xab),
                zone_name: "dock".into(),
                alert_level: 5,
                alarm: AlarmKind::Device,
                collision_id: Uuid::from_u128(0xcd),
                entry_time: t,
                position: Some([0.5, 1.0, 0.0]),
            }),
            device: None,
        }
    }

    #[test]
    fn an_event_is_written_with_the_wire_names_in_the_wire_order() {
        let text = serde_json::to_string(&enter()).unwrap();
        assert_eq!(
            text,
            r#"{"Category":"ZONE","Type":"ZONE_ENTER","EventID":"01900000-0000-7000-8000-000000000001","#.to_owned()
                + r#""Timestamp":"2026-11-21T10:00:00.100Z","LocalTimestamp":"2026-11-21T10:00:00.104Z","#
                + r#""Source":{"MAC":"00:AA:BB:CC:DD:EE","GatewayURI":null,"SiteID":501},"#
                + r#""Content":{"ZoneID":"00000000-0000-0000-0000-0000000000AB","ZoneName":"dock","AlertLevel":5,"#
                + r#""Alarm":"device","CollisionID":"00000000-0000-0000-0000-0000000000CD","#
                + r#""EntryTime":"2026-11-21T10:00:00.100Z","Position":[0.5,1.0,0.0]}}"#
        );
    }

    #[test]
    fn an_event_reads_back_as_itself() {
        let e = enter();
        let back: Event = serde_json::from_slice(&serde_json::to_vec(&e).unwrap()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn an_exit_is_written_as_its_enter_then_when_and_why_it_ended_and_reads_back() {
        let mut e = enter();
        let Content::ZoneEnter(stay) = e.content.clone() else { unreachable!() };
        let left: DateTime<Utc> = "2026-11-21T10:00:07.250Z".parse().unwrap();
        e.content = Content::ZoneExit(ZoneExit { enter: stay, exit_time: left, reason: ExitReason::Position });
        let text = serde_json::to_string(&e).unwrap();
        let content = &text[text.find(r#""Content":"#).unwrap()..];
        assert_eq!(
            content,
            r#""Content":{"ZoneID":"00000000-0000-0000-0000-0000000000AB","ZoneName":"dock","AlertLevel":5,"#
                .to_owned()
                + r#""Alarm":"device","CollisionID":"00000000-0000-0000-0000-0000000000CD","#
                + r#""EntryTime":"2026-11-21T10:00:00.100Z","Position":[0.5,1.0,0.0],"#
                + r#""ExitTime":"2026-11-21T10:00:07.250Z","Reason":"position"}}"#
        );
        assert!(text.contains(r#""Type":"ZONE_EXIT""#));
        let back: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn a_registered_device_is_named_last_and_reads_back() {
        let mut e = enter();
        e.device = Some(DeviceTag { name: "Forklift 3".into(), group: Some("forklifts".into()) });
        let text = serde_json::to_string(&e).unwrap();
        assert!(text.ends_with(r#","Device":{"Name":"Forklift 3","Group":"forklifts"}}"#), "{text}");
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), e);
        assert!(!serde_json::to_string(&enter()).unwrap().contains("Device"), "left out when not registered");
    }

    #[test]
    fn a_type_of_another_category_or_content_of_another_type_is_refused() {
        let mut v = serde_json::to_value(enter()).unwrap();
        v["Category"] = json!("ALARM");
        assert!(serde_json::from_value::<Event>(v).unwrap_err().to_string().starts_with("Category"));
        let mut v = serde_json::to_value(enter()).unwrap();
        v["Type"] = json!("ZONE_EXIT");
        assert!(serde_json::from_value::<Event>(v).unwrap_err().to_string().starts_with("Content"));
    }

    #[test]
    fn a_reset_announcement_names_its_operation() {
        let c = ConfigChanged {
            kind: ConfigKind::Zones,
            ids: vec!["A".into()],
            operation: Some(ConfigOperation::Reset),
            revision: 7,
        };
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"Kind": "zones", "IDs": ["A"], "Operation": "reset", "Revision": 7})
        );
        let plain: ConfigChanged = serde_json::from_value(json!({"Kind": "zones", "IDs": []})).unwrap();
        assert_eq!((plain.operation, plain.revision), (None, 0));
    }
}
