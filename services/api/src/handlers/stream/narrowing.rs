//! What a live stream lets through: event types, zones, devices and a filter chain, read from
//! the query string once when the stream opens. Pure: no I/O, nothing but the query and events.

use serde_json::Value;
use uuid::Uuid;
use zonecast_filter::{Budget, Chain};
use zonecast_model::{EventType, Limits, Mac};

use crate::error::ApiError;

/// The event types the events journal holds (positions and device commands are not in it).
const STREAMED: &[EventType] = EventType::JOURNALED;

/// The narrowing of one stream; an event passes when it passes every part that is set.
#[derive(Debug, Default)]
pub struct Narrowing {
    types: Vec<EventType>,
    zones: Vec<String>,
    macs: Vec<String>,
    chain: Option<Chain>,
}

/// The MACs of a `mac` parameter (comma-separated, `:` or `-`, any case); one that is not a MAC
/// is 422.
pub(super) fn macs(value: &str) -> Result<Vec<Mac>, ApiError> {
    items(value).map(|item| item.parse::<Mac>().map_err(|e| ApiError::Invalid(format!("mac: {e}")))).collect()
}

/// The values of a comma-separated parameter, blanks dropped.
fn items(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|v| !v.is_empty())
}

impl Narrowing {
    /// Reads `type`, `zone`, `mac` and `filter` from `query` (each may repeat, and the first
    /// three take comma-separated lists); `access_token` belongs to authentication. Anything
    /// else, or a value that names nothing, is 422 naming the parameter; a `filter` that is not
    /// JSON is 400.
    pub fn parse(query: &str, limits: &Limits) -> Result<Self, ApiError> {
        let mut narrowing = Self::default();
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "access_token" => {}
                other => {
                    if !narrowing.accept(other, &value, limits)? {
                        return Err(ApiError::Invalid(format!(
                            "{other}: unknown query parameter (expected type, zone, mac, filter or access_token)"
                        )));
                    }
                }
            }
        }
        Ok(narrowing)
    }

    /// Takes one query parameter if it is `type`, `zone`, `mac` or `filter` (the event history
    /// narrows with the same ones); returns whether it was one of them.
    pub fn accept(&mut self, key: &str, value: &str, limits: &Limits) -> Result<bool, ApiError> {
        match key {
            "type" => {
                for item in items(value) {
                    let kind = item
                        .to_ascii_uppercase()
                        .parse::<EventType>()
                        .ok()
                        .filter(|kind| STREAMED.contains(kind))
                        .ok_or_else(|| {
                            let known: Vec<&str> = STREAMED.iter().map(|t| t.as_str()).collect();
                            ApiError::Invalid(format!(
                                "type: '{item}' is not an event type of this stream (expected {})",
                                known.join(", ")
                            ))
                        })?;
                    self.types.push(kind);
                }
            }
            "zone" => {
                for item in items(value) {
                    let id =
                        item.parse::<Uuid>().map_err(|_| ApiError::Invalid(format!("zone: '{item}' is not a UUID")))?;
                    self.zones.push(id.hyphenated().to_string().to_ascii_uppercase());
                }
            }
            "mac" => self.macs.extend(macs(value)?.iter().map(|mac| mac.as_str().to_owned())),
            "filter" => {
                if self.chain.is_some() {
                    return Err(ApiError::Invalid("filter: give one filter chain".into()));
                }
                let chain: Value =
                    serde_json::from_str(value).map_err(|e| ApiError::Malformed(format!("filter: not JSON: {e}")))?;
                let mut budget = Budget::new(limits.filter_bounds());
                let chain = zonecast_filter::compile_in(&chain, &mut budget)
                    .map_err(|e| ApiError::Invalid(format!("filter{}: {}", e.path, e.message)))?;
                self.chain = Some(chain);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The event types asked for (empty: every type).
    pub fn types(&self) -> &[EventType] {
        &self.types
    }

    /// The zones asked for, as upper-case IDs (empty: every zone).
    pub fn zones(&self) -> &[String] {
        &self.zones
    }

    /// Whether every event passes: its payload need not be read.
    pub fn is_open(&self) -> bool {
        self.types.is_empty() && self.zones.is_empty() && self.macs.is_empty() && self.chain.is_none()
    }

    /// Whether `event` (the envelope as JSON) passes.
    pub fn admits(&self, event: &Value) -> bool {
        let text = |v: &Value| v.as_str().map(str::to_owned);
        (self.types.is_empty() || text(&event["Type"]).is_some_and(|t| self.types.iter().any(|k| k.as_str() == t)))
            && (self.zones.is_empty() || text(&event["Content"]["ZoneID"]).is_some_and(|z| self.zones.contains(&z)))
            && (self.macs.is_empty() || text(&event["Source"]["MAC"]).is_some_and(|m| self.macs.contains(&m)))
            && self.chain.as_ref().is_none_or(|chain| chain.matches(event))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(query: &str) -> Result<Narrowing, ApiError> {
        Narrowing::parse(query, &Limits::default())
    }

    fn enter(zone: &str, mac: &str) -> Value {
        json!({"Category": "ZONE", "Type": "ZONE_ENTER", "Source": {"MAC": mac},
               "Content": {"ZoneID": zone, "AlertLevel": 3}})
    }

    const ZONE: &str = "6F1C4C0E-2B1E-4C55-9E59-0A3E1A2B3C4D";

    #[test]
    fn no_parameters_admit_everything() {
        let narrowing = parse("").unwrap();
        assert!(narrowing.is_open());
        assert!(narrowing.admits(&enter(ZONE, "00:AA:BB:CC:DD:EE")));
    }

    #[test]
    fn types_zones_and_macs_are_read_in_any_common_form() {
        let narrowing =
            parse("type=zone_enter,ZONE_EXIT&zone=6f1c4c0e2b1e4c559e590a3e1a2b3c4d&mac=00-aa-bb-cc-dd-ee").unwrap();
        assert!(narrowing.admits(&enter(ZONE, "00:AA:BB:CC:DD:EE")));
        assert!(!narrowing.admits(&enter(ZONE, "00:AA:BB:CC:DD:EF")));
        assert!(!narrowing.admits(&enter("00000000-0000-0000-0000-000000000000", "00:AA:BB:CC:DD:EE")));
        let mut alarm = enter(ZONE, "00:AA:BB:CC:DD:EE");
        alarm["Type"] = json!("SITE_ALARM");
        assert!(!narrowing.admits(&alarm));
    }

    #[test]
    fn a_filter_chain_narrows_like_an_mqtt_topic() {
        let chain = r#"[{"Selector": "Content.AlertLevel", "Type": "gte", "Match": 4}]"#;
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("filter", chain).finish();
        let narrowing = parse(&query).unwrap();
        assert!(!narrowing.admits(&enter(ZONE, "00:AA:BB:CC:DD:EE")));
        let mut high = enter(ZONE, "00:AA:BB:CC:DD:EE");
        high["Content"]["AlertLevel"] = json!(5);
        assert!(narrowing.admits(&high));
    }

    #[test]
    fn bad_parameters_are_refused_with_their_name() {
        let message = |query: &str| parse(query).unwrap_err().to_string();
        assert!(message("type=LOCATION_RAW_UPDATE").starts_with("type: 'LOCATION_RAW_UPDATE' is not an event type"));
        assert_eq!(message("zone=nope"), "zone: 'nope' is not a UUID");
        assert!(message("mac=00:AA").starts_with("mac: '00:AA' is not a MAC address"));
        assert!(message("filter=%5B").starts_with("filter: not JSON"));
        assert!(
            message("filter=%5B%7B%22Type%22%3A%22nope%22%7D%5D")
                .starts_with("filter[0].Type: unknown filter type 'nope'")
        );
        assert!(message("since=1").starts_with("since: unknown query parameter"));
        assert!(matches!(parse("filter=%5B").unwrap_err(), ApiError::Malformed(_)));
    }
}
