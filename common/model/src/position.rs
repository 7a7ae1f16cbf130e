//! Normalised positions: the `LOCATION_RAW_UPDATE` event on `<prefix>.positions.<P>.<MAC>`.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::{Content, Event, EventCategory, EventId, EventSource, EventType, LocationRawUpdate, Mac};

/// `Type` of a position update, as written.
const POSITION_TYPE: &str = EventType::LocationRawUpdate.as_str();

/// One device position, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct PositionUpdate {
    /// The device.
    pub mac: Mac,
    /// `[x, y, z]` in site metres, finite.
    pub position: [f64; 3],
    /// When it was measured.
    pub timestamp: DateTime<Utc>,
    /// Gateway the position came through, when known.
    pub gateway_uri: Option<String>,
    /// Optional `Velocity`, `Orientation`, `Sequence`, passed through untouched.
    pub extra: serde_json::Map<String, Value>,
}

/// The part of a `LOCATION_RAW_UPDATE` the evaluator needs, read straight from the bytes. Its
/// own JSON (`MAC`, `Position`, `Timestamp`, `Sequence`) is what evaluators tell each other of
/// a mobile-zone source's last position.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PositionFix {
    /// The device.
    #[serde(rename = "MAC")]
    pub mac: Mac,
    /// `[x, y, z]`, finite.
    #[serde(rename = "Position")]
    pub position: [f64; 3],
    /// When it was measured.
    #[serde(rename = "Timestamp")]
    pub timestamp: DateTime<Utc>,
    /// The source's `Content.Sequence`, when it sends one.
    #[serde(rename = "Sequence", default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    /// The position event's `EventID`, drawn when it was accepted: the same on every delivery
    /// of the position, so what it causes can be identified by it.
    #[serde(rename = "EventID", default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<EventId>,
}

impl PositionFix {
    /// Reads a normalised event without building a JSON tree (other fields are skipped);
    /// the error is the general parser's precise reason.
    pub fn from_event_bytes(bytes: &[u8]) -> Result<Self, String> {
        #[derive(serde::Deserialize)]
        struct Source<'a> {
            #[serde(rename = "MAC", borrow)]
            mac: std::borrow::Cow<'a, str>,
        }
        #[derive(serde::Deserialize)]
        struct Content {
            #[serde(rename = "Position")]
            position: [f64; 3],
            #[serde(rename = "Sequence", default)]
            sequence: Option<u64>,
        }
        #[derive(serde::Deserialize)]
        struct Event<'a> {
            #[serde(rename = "EventID", default)]
            event_id: Option<EventId>,
            #[serde(rename = "Type", borrow)]
            kind: std::borrow::Cow<'a, str>,
            #[serde(rename = "Timestamp", borrow)]
            timestamp: std::borrow::Cow<'a, str>,
            #[serde(rename = "Source", borrow)]
            source: Source<'a>,
            #[serde(rename = "Content")]
            content: Content,
        }
        let fast = serde_json::from_slice::<Event<'_>>(bytes).ok().and_then(|e| {
            let timestamp = DateTime::parse_from_rfc3339(&e.timestamp).ok()?.with_timezone(&Utc);
            let mac = e.source.mac.parse::<Mac>().ok()?;
            let (position, sequence) = (e.content.position, e.content.sequence);
            (e.kind == POSITION_TYPE).then_some(Self { mac, position, timestamp, sequence, event_id: e.event_id })
        });
        match fast {
            Some(fix) => Ok(fix),
            None => {
                let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
                let event_id = value.get("EventID").cloned().and_then(|id| serde_json::from_value(id).ok());
                Ok(PositionFix { event_id, ..PositionUpdate::from_event(&value)?.fix() })
            }
        }
    }
}

/// Content fields passed through from input to the normalised event.
pub const PASSTHROUGH_FIELDS: [&str; 3] = ["Velocity", "Orientation", "Sequence"];

/// Reads three finite numbers.
pub fn parse_vec3(v: &Value) -> Option<[f64; 3]> {
    let a = v.as_array().filter(|a| a.len() == 3)?;
    let mut out = [0.0; 3];
    for (slot, x) in out.iter_mut().zip(a) {
        *slot = x.as_f64().filter(|f| f.is_finite())?;
    }
    Some(out)
}

impl PositionUpdate {
    /// Reads a normalised `LOCATION_RAW_UPDATE` event; the error says what is wrong.
    pub fn from_event(v: &Value) -> Result<Self, String> {
        if v.get("Type").and_then(Value::as_str) != Some(POSITION_TYPE) {
            return Err("Type: must be LOCATION_RAW_UPDATE".into());
        }
        let mac = v
            .pointer("/Source/MAC")
            .and_then(Value::as_str)
            .ok_or("Source.MAC: is required")?
            .parse::<Mac>()
            .map_err(|e| format!("Source.MAC: {e}"))?;
        let content = v.get("Content").ok_or("Content: is required")?;
        let position = content
            .get("Position")
            .and_then(parse_vec3)
            .ok_or("Content.Position: must be an array of three finite numbers")?;
        let timestamp = v.get("Timestamp").and_then(Value::as_str).ok_or("Timestamp: is required")?;
        let timestamp = DateTime::parse_from_rfc3339(timestamp)
            .map_err(|_| format!("Timestamp: '{timestamp}' is not an ISO 8601 time"))?
            .with_timezone(&Utc);
        let gateway_uri = v.pointer("/Source/GatewayURI").and_then(Value::as_str).map(str::to_owned);
        let extra = PASSTHROUGH_FIELDS
            .iter()
            .filter_map(|k| content.get(*k).filter(|v| !v.is_null()).map(|v| ((*k).to_owned(), v.clone())))
            .collect();
        Ok(Self { mac, position, timestamp, gateway_uri, extra })
    }

    /// The [`PositionFix`] that [`PositionFix::from_event_bytes`] reads from this update's
    /// event bytes (the Timestamp to the millisecond, as the event carries it), without them and
    /// without the EventID they are written with.
    pub fn fix(&self) -> PositionFix {
        use chrono::SubsecRound;
        PositionFix {
            mac: self.mac.clone(),
            position: self.position,
            timestamp: self.timestamp.trunc_subsecs(3),
            sequence: self.extra.get("Sequence").and_then(Value::as_u64),
            event_id: None,
        }
    }

    /// The normalised event as JSON bytes, without building an intermediate value: `timestamp`
    /// is this update's formatted Timestamp, `local` the formatted LocalTimestamp (callers cache
    /// both across a batch). The bytes are those of [`PositionUpdate::to_event`].
    pub fn event_bytes(&self, site_id: i64, event_id: EventId, timestamp: &str, local: &str) -> Vec<u8> {
        #[derive(serde::Serialize)]
        struct Source<'a> {
            #[serde(rename = "MAC")]
            mac: &'a str,
            #[serde(rename = "GatewayURI")]
            gateway_uri: Option<&'a str>,
            #[serde(rename = "SiteID")]
            site_id: i64,
        }
        #[derive(serde::Serialize)]
        struct Content<'a> {
            #[serde(rename = "Position")]
            position: &'a [f64; 3],
            #[serde(flatten)]
            extra: &'a serde_json::Map<String, Value>,
        }
        #[derive(serde::Serialize)]
        #[serde(rename_all = "PascalCase")]
        struct Wire<'a> {
            category: EventCategory,
            #[serde(rename = "Type")]
            kind: EventType,
            #[serde(rename = "EventID")]
            event_id: EventId,
            timestamp: &'a str,
            local_timestamp: &'a str,
            source: Source<'a>,
            content: Content<'a>,
        }
        let event = Wire {
            category: EventCategory::Location,
            kind: EventType::LocationRawUpdate,
            event_id,
            timestamp,
            local_timestamp: local,
            source: Source { mac: self.mac.as_str(), gateway_uri: self.gateway_uri.as_deref(), site_id },
            content: Content { position: &self.position, extra: &self.extra },
        };
        // Strings, finite numbers and a JSON map always serialise.
        serde_json::to_vec(&event).unwrap_or_default()
    }

    /// The normalised event `event_id`, produced at `now` on site `site_id`.
    pub fn to_event(&self, site_id: i64, event_id: EventId, now: DateTime<Utc>) -> Event {
        Event {
            event_id,
            timestamp: self.timestamp,
            local_timestamp: now,
            source: EventSource { mac: Some(self.mac.clone()), gateway_uri: self.gateway_uri.clone(), site_id },
            content: Content::LocationRawUpdate(LocationRawUpdate {
                position: self.position,
                extra: self.extra.clone(),
            }),
            device: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format_timestamp;

    fn id() -> EventId {
        EventId::generate(Utc::now())
    }

    #[test]
    fn events_round_trip() {
        let p = PositionUpdate {
            mac: "00:aa:bb:cc:dd:ee".parse().unwrap(),
            position: [1.0, 2.5, -3.0],
            timestamp: "2026-11-21T10:00:00.123Z".parse().unwrap(),
            gateway_uri: None,
            extra: [("Sequence".to_owned(), json!(7))].into_iter().collect(),
        };
        let event_id = id();
        let v = serde_json::to_value(p.to_event(501, event_id, Utc::now())).unwrap();
        assert_eq!(v["Content"]["Sequence"], 7);
        assert_eq!(v["Source"]["SiteID"], 501);
        assert_eq!(PositionUpdate::from_event(&v).unwrap(), p);
        let now = Utc::now();
        let direct: Value = serde_json::from_slice(&p.event_bytes(
            501,
            event_id,
            &format_timestamp(&p.timestamp),
            &format_timestamp(&now),
        ))
        .unwrap();
        assert_eq!(direct, serde_json::to_value(p.to_event(501, event_id, now)).unwrap(), "both encodings agree");
        assert_eq!(direct["EventID"], event_id.to_string());
    }

    #[test]
    fn the_lean_reader_agrees_with_the_general_one() {
        let p = PositionUpdate {
            mac: "00:aa:bb:cc:dd:ee".parse().unwrap(),
            position: [1.0, -2.5, 3.25],
            timestamp: "2026-11-21T10:00:00.123Z".parse().unwrap(),
            gateway_uri: Some("gw".into()),
            extra: [("Sequence".to_owned(), json!(7))].into_iter().collect(),
        };
        let bytes = serde_json::to_vec(&p.to_event(1, id(), Utc::now())).unwrap();
        let fix = PositionFix::from_event_bytes(&bytes).unwrap();
        assert_eq!((fix.mac, fix.position, fix.timestamp), (p.mac, p.position, p.timestamp));
        let bad = br#"{"Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T10:00:00Z", "Source": {"MAC": "00:AA:BB:CC:DD:EE"}, "Content": {"Position": [1, 2]}}"#;
        assert_eq!(
            PositionFix::from_event_bytes(bad).unwrap_err(),
            "Content.Position: must be an array of three finite numbers"
        );
        assert!(PositionFix::from_event_bytes(b"nope").unwrap_err().starts_with("not JSON"));
    }

    #[test]
    fn the_fix_handed_over_in_process_is_the_one_read_from_the_bytes() {
        let p = PositionUpdate {
            mac: "00:aa:bb:cc:dd:ee".parse().unwrap(),
            position: [0.1, -2.5, 1e-7],
            timestamp: "2026-11-21T10:00:00.123456789Z".parse().unwrap(),
            gateway_uri: None,
            extra: serde_json::Map::new(),
        };
        let event_id = id();
        let bytes = p.event_bytes(1, event_id, &format_timestamp(&p.timestamp), &format_timestamp(&Utc::now()));
        assert_eq!(PositionFix { event_id: Some(event_id), ..p.fix() }, PositionFix::from_event_bytes(&bytes).unwrap());
        assert_ne!(p.fix().timestamp, p.timestamp, "sub-millisecond digits are not carried");
    }

    #[test]
    fn bad_events_say_what_is_wrong() {
        let base = json!({"Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T10:00:00Z",
            "Source": {"MAC": "00:AA:BB:CC:DD:EE"}, "Content": {"Position": [1, 2, 3]}});
        assert!(PositionUpdate::from_event(&base).is_ok());
        let mut v = base.clone();
        v["Content"]["Position"] = json!([1, 2]);
        assert_eq!(
            PositionUpdate::from_event(&v).unwrap_err(),
            "Content.Position: must be an array of three finite numbers"
        );
        let mut v = base.clone();
        v["Source"]["MAC"] = json!("nope");
        assert!(PositionUpdate::from_event(&v).unwrap_err().starts_with("Source.MAC"));
        let mut v = base;
        v["Timestamp"] = json!("later");
        assert!(PositionUpdate::from_event(&v).unwrap_err().starts_with("Timestamp"));
    }
}
