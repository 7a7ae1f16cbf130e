//! Which alarms a bulk acknowledgement or resolution takes (`POST /v3/alarms/acknowledge` and
//! `…/resolve`): a list of AlarmIDs, or a filter, with the note of the change.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde_json::Value;
use uuid::Uuid;

use crate::event::{AlarmState, EventType};
use crate::fields::{Fields, type_name};
use crate::{AlarmNote, Invalid, Mac};

/// Most AlarmIDs one request may name.
pub const MAX_ALARM_IDS: usize = 1000;

/// The filter fields, as the errors name them.
const FILTER: &str = "ZoneID, MAC, Type, State, RaisedBefore, Active";

/// The body of a bulk change: `AlarmIDs`, or at least one filter field; `Note` optional.
#[derive(Debug, Clone, PartialEq, Eq, Default, JsonSchema)]
#[schemars(description = "Either AlarmIDs, or one or more of the filter fields (an alarm must match all of \
    them). Unknown fields are ignored.")]
pub struct AlarmSelection {
    /// The alarms, 1 to 1000 of them.
    #[schemars(rename = "AlarmIDs", with = "Option<Vec<String>>")]
    pub ids: Option<Vec<Uuid>>,
    /// Only the alarms of this zone.
    #[schemars(rename = "ZoneID", with = "Option<String>")]
    pub zone: Option<Uuid>,
    /// Only the alarms of this device.
    #[schemars(rename = "MAC", with = "Option<String>")]
    pub mac: Option<Mac>,
    /// Only the alarms of this type (`SITE_ALARM`, `DEVICE_ALARM`, `ZONE_DWELL_EXCEEDED`,
    /// `ZONE_OCCUPANCY_EXCEEDED`, `ZONE_OCCUPANCY_BELOW`, `DEVICE_OFFLINE`).
    #[schemars(rename = "Type", with = "Option<String>")]
    pub kind: Option<EventType>,
    /// Only the alarms in these states (`open`, `acknowledged`, `resolved`).
    #[schemars(rename = "State", with = "Option<Vec<AlarmState>>")]
    pub states: Vec<AlarmState>,
    /// Only the alarms raised (first) before this time (RFC 3339).
    #[schemars(rename = "RaisedBefore", with = "Option<String>")]
    pub raised_before: Option<DateTime<Utc>>,
    /// Only the alarms whose condition holds (true) or has cleared (false).
    #[schemars(rename = "Active")]
    pub active: Option<bool>,
    /// Why, or what was done: as the note of a single change.
    #[schemars(rename = "Note", length(max = crate::MAX_ALARM_NOTE_CHARS))]
    pub note: Option<String>,
}

impl AlarmSelection {
    /// Reads a bulk change's body (a JSON object).
    pub fn parse(value: &Value) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let mut out = Self { note: AlarmNote::parse(value)?.note, ..Self::default() };
        if let Some(zone) = f.string("ZoneID")? {
            out.zone = Some(zone.parse().map_err(|_| Invalid::new("ZoneID", format!("'{zone}' is not a UUID")))?);
        }
        if let Some(mac) = f.string("MAC")? {
            out.mac = Some(mac.parse().map_err(|e| Invalid::new("MAC", e))?);
        }
        if let Some(kind) = f.string("Type")? {
            let kind = kind.parse::<EventType>().ok().filter(|k| k.is_alarm());
            out.kind = Some(kind.ok_or_else(|| {
                let types: Vec<&str> = EventType::ALARMS.iter().map(|t| t.as_str()).collect();
                Invalid::new("Type", format!("must be an alarm type: {}", types.join(", ")))
            })?);
        }
        if let Some(states) = f.array("State")? {
            for (i, state) in states.iter().enumerate() {
                let field = format!("State[{i}]");
                let Value::String(text) = state else {
                    return Err(Invalid::new(&field, format!("must be a string, got {}", type_name(state))));
                };
                out.states.push(text.parse().map_err(|e| Invalid::new(&field, e))?);
            }
        }
        if let Some(before) = f.string("RaisedBefore")? {
            let at = DateTime::parse_from_rfc3339(before).map_err(|_| {
                Invalid::new("RaisedBefore", format!("'{before}' is not an RFC 3339 time with its offset"))
            })?;
            out.raised_before = Some(at.with_timezone(&Utc));
        }
        out.active = f.bool("Active")?;
        let filtered = out.zone.is_some()
            || out.mac.is_some()
            || out.kind.is_some()
            || f.has("State")
            || out.raised_before.is_some()
            || out.active.is_some();
        match f.array("AlarmIDs")? {
            Some(_) if filtered => {
                Err(Invalid::new("AlarmIDs", format!("give either AlarmIDs or a filter ({FILTER}), not both")))
            }
            Some(ids) => {
                if ids.is_empty() || ids.len() > MAX_ALARM_IDS {
                    return Err(Invalid::new(
                        "AlarmIDs",
                        format!("must hold 1 to {MAX_ALARM_IDS} AlarmIDs, got {}", ids.len()),
                    ));
                }
                let mut read = Vec::with_capacity(ids.len());
                for (i, id) in ids.iter().enumerate() {
                    let id = id.as_str().and_then(|s| s.parse::<Uuid>().ok());
                    read.push(id.ok_or_else(|| Invalid::new(format!("AlarmIDs[{i}]"), "must be a UUID"))?);
                }
                out.ids = Some(read);
                Ok(out)
            }
            None if !filtered => Err(Invalid::new("", format!("give AlarmIDs or at least one of {FILTER}"))),
            None => Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_selection_is_a_list_of_alarms_or_a_filter_with_an_optional_note() {
        let ids =
            AlarmSelection::parse(&json!({"AlarmIDs": ["01900000-0000-7000-8000-0000000000AB"], "Note": " done "}))
                .unwrap();
        assert_eq!(ids.ids.unwrap(), [Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_00ab)]);
        assert_eq!(ids.note.as_deref(), Some("done"));
        let filter = AlarmSelection::parse(&json!({"ZoneID": "00000000-0000-0000-0000-0000000000ab",
            "MAC": "00-aa-bb-cc-dd-ee", "Type": "SITE_ALARM", "State": ["open", "acknowledged"],
            "RaisedBefore": "2026-12-01T10:00:00+01:00", "Active": false}))
        .unwrap();
        assert_eq!(filter.zone, Some(Uuid::from_u128(0xab)));
        assert_eq!(filter.mac.unwrap().as_str(), "00:AA:BB:CC:DD:EE");
        assert_eq!((filter.kind, filter.active), (Some(EventType::SiteAlarm), Some(false)));
        assert_eq!(filter.states, [AlarmState::Open, AlarmState::Acknowledged]);
        assert_eq!(filter.raised_before.unwrap(), "2026-12-01T09:00:00Z".parse::<DateTime<Utc>>().unwrap());
        assert!(filter.ids.is_none());
    }

    #[test]
    fn a_bad_selection_names_what_is_wrong() {
        let error = |v: Value| AlarmSelection::parse(&v).unwrap_err().to_string();
        assert_eq!(error(json!({})), "give AlarmIDs or at least one of ZoneID, MAC, Type, State, RaisedBefore, Active");
        assert_eq!(error(json!({"Note": "all"})), error(json!({})));
        assert_eq!(
            error(json!({"AlarmIDs": ["01900000-0000-7000-8000-0000000000ab"], "MAC": "00:00:00:00:00:01"})),
            "AlarmIDs: give either AlarmIDs or a filter (ZoneID, MAC, Type, State, RaisedBefore, Active), not both"
        );
        assert_eq!(error(json!({"AlarmIDs": []})), "AlarmIDs: must hold 1 to 1000 AlarmIDs, got 0");
        assert_eq!(error(json!({"AlarmIDs": ["x"]})), "AlarmIDs[0]: must be a UUID");
        assert_eq!(error(json!({"AlarmIDs": "x"})), "AlarmIDs: must be an array, got a string");
        assert!(error(json!({"Type": "ZONE_ENTER"})).starts_with("Type: must be an alarm type: SITE_ALARM, "));
        assert!(error(json!({"State": ["closed"]})).starts_with("State[0]: 'closed' is not an alarm state"));
        assert_eq!(error(json!({"State": [1]})), "State[0]: must be a string, got a number");
        assert_eq!(error(json!({"ZoneID": "z"})), "ZoneID: 'z' is not a UUID");
        assert_eq!(
            error(json!({"RaisedBefore": "2026-12-01T10:00:00"})),
            "RaisedBefore: '2026-12-01T10:00:00' is not an RFC 3339 time with its offset"
        );
        assert_eq!(error(json!({"Active": "yes"})), "Active: must be a boolean, got a string");
        assert_eq!(error(json!([1])), "must be an object, got an array");
    }
}
