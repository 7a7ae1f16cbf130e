//! Alarms a person can acknowledge: the alarm kept for each alarm event (its record and the
//! event itself), the changes a person makes to its state (acknowledge, resolve) with who
//! makes them, when and why, and how a client's note becomes one.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::Invalid;
use crate::Mac;
use crate::event::{AlarmRecord, AlarmState, Content, Event, EventType};
use crate::fields::{Fields, type_name};

/// Longest `Note` of an acknowledgement or a resolution, in characters.
pub const MAX_ALARM_NOTE_CHARS: usize = 1000;

/// A change of an alarm's state that a person makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlarmChange {
    /// Open → acknowledged.
    Acknowledge,
    /// Open or acknowledged → resolved.
    Resolve,
}

impl AlarmChange {
    /// The state the alarm is in after the change.
    pub const fn to(self) -> AlarmState {
        match self {
            Self::Acknowledge => AlarmState::Acknowledged,
            Self::Resolve => AlarmState::Resolved,
        }
    }

    /// The states the change may start from.
    pub const fn from(self) -> &'static [AlarmState] {
        match self {
            Self::Acknowledge => &[AlarmState::Open],
            Self::Resolve => &[AlarmState::Open, AlarmState::Acknowledged],
        }
    }

    /// The type of the event that tells the change.
    pub const fn event_type(self) -> EventType {
        match self {
            Self::Acknowledge => EventType::AlarmAcknowledged,
            Self::Resolve => EventType::AlarmResolved,
        }
    }

    /// The last token but one of the subject of the change's event
    /// (`<prefix>.events.alarm.<acknowledged|resolved>.<MAC>`).
    pub const fn as_str(self) -> &'static str {
        self.to().as_str()
    }

    /// Why an alarm in `state` cannot take this change (409): `None` when it can.
    pub fn refusal(self, id: &Uuid, state: AlarmState) -> Option<String> {
        if self.from().contains(&state) {
            return None;
        }
        let verb = match self {
            Self::Acknowledge => "acknowledged",
            Self::Resolve => "resolved",
        };
        let from: Vec<&str> = self.from().iter().map(|s| s.as_str()).collect();
        Some(format!(
            "alarm {} is {state} already; only an alarm that is {} can be {verb}",
            crate::format_id(id),
            from.join(" or ")
        ))
    }
}

/// An alarm as stored and as the API answers it: its record and the whole event that raised
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoredAlarm {
    /// Every field but the event.
    #[serde(flatten)]
    pub record: AlarmRecord,
    /// The event that raised the alarm, as it was published.
    #[serde(rename = "Event")]
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub event: Value,
}

impl StoredAlarm {
    /// The open alarm `event` raises, with `json` (the event as published) kept beside it;
    /// `None` for an event that is no alarm ([`EventType::ALARMS`]).
    pub fn raised(event: &Event, json: Value) -> Option<Self> {
        let mac = event.source.mac.clone();
        let (zone_id, zone_name, collision_id) = match &event.content {
            Content::SiteAlarm(a) | Content::DeviceAlarm(a) => {
                (Some(a.zone_id), Some(a.zone_name.clone()), Some(a.collision_id))
            }
            Content::ZoneDwellExceeded(d) => {
                (Some(d.enter.zone_id), Some(d.enter.zone_name.clone()), Some(d.enter.collision_id))
            }
            Content::ZoneOccupancyExceeded(o) | Content::ZoneOccupancyBelow(o) => {
                (Some(o.zone_id), Some(o.zone_name.clone()), None)
            }
            Content::DeviceOffline(_) => (None, None, None),
            _ => return None,
        };
        Some(Self {
            record: AlarmRecord {
                alarm_id: event.event_id.0,
                kind: event.kind(),
                mac,
                zone_id,
                zone_name,
                collision_id,
                raised_at: event.timestamp,
                count: 1,
                last_raised_at: event.timestamp,
                last_event_id: event.event_id.0,
                active: true,
                cleared_at: None,
                state: AlarmState::Open,
                acknowledged_by: None,
                acknowledged_at: None,
                acknowledged_note: None,
                resolved_by: None,
                resolved_at: None,
                resolved_note: None,
            },
            event: json,
        })
    }
}

/// Who resolves an alarm when its condition clears after someone acknowledged it
/// (`ResolvedBy`), and who resolves an alarm acknowledged after its condition cleared.
pub const RESOLVED_BY_ZONECAST: &str = "zonecast";

/// The note of a resolution by zonecast (`ResolvedNote`).
pub const CLEARED_NOTE: &str = "condition cleared";

/// What an alarm is about: its type, device and zone. While an alarm is not resolved, every
/// later event with the same key counts on it instead of opening another.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AlarmKey {
    /// The `Type` of the events that raise it.
    pub kind: EventType,
    /// The device (none for an occupancy alarm).
    pub mac: Option<Mac>,
    /// The zone (none for `DEVICE_OFFLINE`).
    pub zone_id: Option<Uuid>,
}

impl AlarmKey {
    /// The key as one text: `<Type>|<MAC>|<ZoneID>`, an absent part empty, the ZoneID lower
    /// case.
    pub fn text(&self) -> String {
        let mac = self.mac.as_ref().map_or("", Mac::as_str);
        let zone = self.zone_id.map(|z| z.hyphenated().to_string()).unwrap_or_default();
        format!("{}|{mac}|{zone}", self.kind)
    }

    /// The conditions `event` clears, as of its `Timestamp`: those `ALARM_CLEARED` names, and
    /// for an occupancy event the zone's occupancy alarms of the other types (the zone is back
    /// within its limits, or past the other one). Nothing for any other event.
    pub fn cleared_by(event: &Event) -> Vec<Self> {
        match &event.content {
            Content::AlarmCleared(c) => {
                vec![Self { kind: c.kind, mac: event.source.mac.clone(), zone_id: c.zone_id }]
            }
            Content::ZoneOccupancyExceeded(o) | Content::ZoneOccupancyBelow(o) | Content::ZoneOccupancyRestored(o) => {
                [EventType::ZoneOccupancyExceeded, EventType::ZoneOccupancyBelow]
                    .into_iter()
                    .filter(|kind| *kind != event.kind())
                    .map(|kind| Self { kind, mac: None, zone_id: Some(o.zone_id) })
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

impl AlarmRecord {
    /// What the alarm is about.
    pub fn key(&self) -> AlarmKey {
        AlarmKey { kind: self.kind, mac: self.mac.clone(), zone_id: self.zone_id }
    }
}

/// Who changes an alarm's state, when, and the note they give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmUpdate {
    /// The change.
    pub change: AlarmChange,
    /// Who makes it (the authenticated caller).
    pub by: String,
    /// When.
    pub at: DateTime<Utc>,
    /// Their note, if any.
    pub note: Option<String>,
}

/// The body of `POST /v3/alarms/{AlarmID}/acknowledge` and `…/resolve`: optional, and when
/// sent a JSON object with an optional `Note`.
#[derive(Debug, Clone, PartialEq, Eq, Default, JsonSchema)]
#[schemars(description = "Optional. Unknown fields are ignored.")]
pub struct AlarmNote {
    /// Why, or what was done: at most 1000 characters once trimmed; null or blank for none.
    #[schemars(rename = "Note", length(max = MAX_ALARM_NOTE_CHARS))]
    pub note: Option<String>,
}

impl AlarmNote {
    /// Reads a note body (a JSON object): `Note` optional, text, trimmed, at most
    /// [`MAX_ALARM_NOTE_CHARS`] characters, blank counting as none.
    pub fn parse(value: &Value) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let note = match f.raw("Note") {
            None => None,
            Some(Value::String(s)) => Some(s.trim()),
            Some(other) => return Err(Invalid::new("Note", format!("must be a string, got {}", type_name(other)))),
        };
        let note = note.filter(|n| !n.is_empty());
        if let Some(n) = note {
            let chars = n.chars().count();
            if chars > MAX_ALARM_NOTE_CHARS {
                return Err(Invalid::new(
                    "Note",
                    format!("must be at most {MAX_ALARM_NOTE_CHARS} characters, got {chars}"),
                ));
            }
        }
        Ok(Self { note: note.map(str::to_owned) })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::event::{Alarm, EventId, EventSource};

    fn site_alarm() -> Event {
        let t: DateTime<Utc> = "2026-11-21T10:00:00.100Z".parse().unwrap();
        Event {
            event_id: EventId(Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001)),
            timestamp: t,
            local_timestamp: t,
            source: EventSource { mac: Some("00:aa:bb:cc:dd:ee".parse().unwrap()), gateway_uri: None, site_id: 1 },
            content: Content::SiteAlarm(Alarm {
                zone_id: Uuid::from_u128(0xab),
                zone_name: "keep out".into(),
                alert_level: 9,
                collision_id: Uuid::from_u128(0xcd),
            }),
            device: None,
        }
    }

    #[test]
    fn an_alarm_event_raises_an_open_alarm_written_with_the_wire_names() {
        let event = site_alarm();
        let json = serde_json::to_value(&event).unwrap();
        let alarm = StoredAlarm::raised(&event, json.clone()).unwrap();
        let written = serde_json::to_value(&alarm).unwrap();
        assert_eq!(written["AlarmID"], "01900000-0000-7000-8000-000000000001");
        assert_eq!(written["Type"], "SITE_ALARM");
        assert_eq!(written["ZoneID"], "00000000-0000-0000-0000-0000000000AB");
        assert_eq!(written["CollisionID"], "00000000-0000-0000-0000-0000000000CD");
        assert_eq!(written["RaisedAt"], "2026-11-21T10:00:00.100Z");
        assert_eq!((&written["State"], &written["AcknowledgedAt"]), (&json!("open"), &Value::Null));
        assert_eq!(written["Event"], json);
        let back: StoredAlarm = serde_json::from_value(written).unwrap();
        assert_eq!(back, alarm);
    }

    #[test]
    fn only_alarm_types_raise_alarms() {
        let mut event = site_alarm();
        let Content::SiteAlarm(a) = event.content.clone() else { unreachable!() };
        event.content = Content::DeviceAlarmCommand(a);
        assert!(StoredAlarm::raised(&event, Value::Null).is_none());
        assert!(EventType::ALARMS.iter().all(|t| t.is_alarm()));
        assert!(!EventType::ZoneEnter.is_alarm() && !EventType::AlarmAcknowledged.is_alarm());
    }

    #[test]
    fn changes_go_forward_only() {
        let id = Uuid::from_u128(1);
        assert_eq!(AlarmChange::Acknowledge.refusal(&id, AlarmState::Open), None);
        assert_eq!(AlarmChange::Resolve.refusal(&id, AlarmState::Open), None);
        assert_eq!(AlarmChange::Resolve.refusal(&id, AlarmState::Acknowledged), None);
        assert_eq!(
            AlarmChange::Acknowledge.refusal(&id, AlarmState::Resolved).unwrap(),
            "alarm 00000000-0000-0000-0000-000000000001 is resolved already; only an alarm that is open can be \
             acknowledged"
        );
        assert!(AlarmChange::Resolve.refusal(&id, AlarmState::Resolved).is_some());
        assert!(AlarmChange::Acknowledge.refusal(&id, AlarmState::Acknowledged).is_some());
        assert_eq!("acknowledged".parse::<AlarmState>().unwrap(), AlarmState::Acknowledged);
        assert!("closed".parse::<AlarmState>().is_err());
    }

    #[test]
    fn a_note_is_optional_text_of_bounded_length() {
        assert_eq!(AlarmNote::parse(&json!({})).unwrap().note, None);
        assert_eq!(AlarmNote::parse(&json!({"Note": "  "})).unwrap().note, None);
        assert_eq!(AlarmNote::parse(&json!({"Note": " on it "})).unwrap().note.as_deref(), Some("on it"));
        assert_eq!(
            AlarmNote::parse(&json!({"Note": 5})).unwrap_err().to_string(),
            "Note: must be a string, got a number"
        );
        let long = "é".repeat(MAX_ALARM_NOTE_CHARS + 1);
        assert_eq!(
            AlarmNote::parse(&json!({"Note": long})).unwrap_err().to_string(),
            "Note: must be at most 1000 characters, got 1001"
        );
        assert!(AlarmNote::parse(&json!({"Note": "é".repeat(MAX_ALARM_NOTE_CHARS)})).is_ok());
        assert!(AlarmNote::parse(&json!([])).is_err());
    }
}
