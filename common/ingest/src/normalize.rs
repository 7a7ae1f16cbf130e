//! Every accepted payload form, reduced to validated positions. Forms: a `LOCATION_RAW_UPDATE`
//! event, an array of payloads, a `LOCATION_BATCH_UPDATE` whose `Content` is a list of raw
//! updates (or an object with such a list under `Updates`), and the compact form
//! `{"MAC", "Position", "Timestamp"?}`. MACs become upper case with colons; a missing
//! Timestamp becomes the time of receipt; Velocity, Orientation and Sequence pass through.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use zonecast_model::{Mac, PositionUpdate, parse_vec3};

/// One element of a payload: its index (in the top-level array, or in a batch's list) and
/// the position or the reason it was rejected.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// Index of the element.
    pub index: usize,
    /// The position, or why not.
    pub result: Result<PositionUpdate, String>,
}

/// The compact form exactly, borrowed from the input: the common case, read without building
/// a JSON tree. Anything else (extra fields, other forms, bad values) takes the general path,
/// which also gives the precise per-element reasons.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Compact<'a> {
    #[serde(rename = "MAC", borrow)]
    mac: std::borrow::Cow<'a, str>,
    #[serde(rename = "Position")]
    position: [f64; 3],
    #[serde(rename = "Timestamp", borrow, default)]
    timestamp: Option<std::borrow::Cow<'a, str>>,
}

fn fast(bytes: &[u8], now: DateTime<Utc>) -> Option<Vec<Element>> {
    // An array or a single object, told apart by the first byte (an untagged enum would first
    // copy the whole payload into serde's buffered form, which costs more than the parse).
    let items = match bytes.iter().find(|b| !b.is_ascii_whitespace())? {
        b'[' => serde_json::from_slice::<Vec<Compact<'_>>>(bytes).ok()?,
        b'{' => vec![serde_json::from_slice::<Compact<'_>>(bytes).ok()?],
        _ => return None,
    };
    let mut last: Option<(String, DateTime<Utc>)> = None;
    let mut out = Vec::with_capacity(items.len());
    for (index, c) in items.into_iter().enumerate() {
        let mac = c.mac.parse::<Mac>().ok()?;
        let timestamp = match c.timestamp.as_deref() {
            None => now,
            Some(text) => match &last {
                Some((t, parsed)) if t == text => *parsed,
                _ => {
                    let parsed = DateTime::parse_from_rfc3339(text).ok()?.with_timezone(&Utc);
                    last = Some((text.to_owned(), parsed));
                    parsed
                }
            },
        };
        let update = PositionUpdate { mac, position: c.position, timestamp, gateway_uri: None, extra: Map::new() };
        out.push(Element { index, result: Ok(update) });
    }
    Some(out)
}

/// Reads a payload from its bytes: the compact fast path, else the general path. `Err` when the
/// bytes are not JSON, or JSON that is neither an object nor an array.
pub fn normalize_bytes(bytes: &[u8], now: DateTime<Utc>) -> Result<Vec<Element>, String> {
    if let Some(out) = fast(bytes, now) {
        return Ok(out);
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Ok(normalize(&v, now)),
        Ok(_) => Err("body must be a JSON object or array".into()),
        Err(e) => Err(format!("not valid JSON: {e}")),
    }
}

/// Reads any accepted payload form; `now` is the time of receipt.
pub fn normalize(payload: &Value, now: DateTime<Utc>) -> Vec<Element> {
    let mut out = Vec::new();
    match payload {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                match batch_list(item) {
                    Some(Ok(list)) => {
                        for (j, raw) in list.iter().enumerate() {
                            let result = one(raw, now).map_err(|m| format!("Content[{j}]: {m}"));
                            out.push(Element { index, result });
                        }
                    }
                    Some(Err(m)) => out.push(Element { index, result: Err(m) }),
                    None => out.push(Element { index, result: one(item, now) }),
                }
            }
        }
        other => match batch_list(other) {
            Some(Ok(list)) => {
                out.extend(list.iter().enumerate().map(|(index, raw)| Element { index, result: one(raw, now) }));
            }
            Some(Err(m)) => out.push(Element { index: 0, result: Err(m) }),
            None => out.push(Element { index: 0, result: one(other, now) }),
        },
    }
    out
}

/// The raw updates of a `LOCATION_BATCH_UPDATE`, `None` when `v` is not one.
fn batch_list(v: &Value) -> Option<Result<&Vec<Value>, String>> {
    if v.get("Type").and_then(Value::as_str) != Some("LOCATION_BATCH_UPDATE") {
        return None;
    }
    Some(match v.get("Content") {
        Some(Value::Array(list)) => Ok(list),
        Some(Value::Object(o)) => match o.get("Updates") {
            Some(Value::Array(list)) => Ok(list),
            _ => Err("Content: a LOCATION_BATCH_UPDATE holds a list of raw updates".to_owned()),
        },
        _ => Err("Content: a LOCATION_BATCH_UPDATE holds a list of raw updates".to_owned()),
    })
}

fn timestamp(v: Option<&Value>, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    match v {
        None | Some(Value::Null) => Ok(now),
        Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| format!("Timestamp: '{s}' is not an ISO 8601 time")),
        Some(_) => Err("Timestamp: must be an ISO 8601 string".to_owned()),
    }
}

fn extras(fields: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut extra = Map::new();
    if let Some(v) = fields.get("Velocity").filter(|v| !v.is_null()) {
        parse_vec3(v).ok_or("Velocity: must be an array of three finite numbers")?;
        extra.insert("Velocity".into(), v.clone());
    }
    if let Some(v) = fields.get("Orientation").filter(|v| !v.is_null()) {
        let ok = v.as_array().is_some_and(|a| a.len() == 4 && a.iter().all(|x| x.as_f64().is_some_and(f64::is_finite)));
        if !ok {
            return Err("Orientation: must be an array of four finite numbers (w, x, y, z)".into());
        }
        extra.insert("Orientation".into(), v.clone());
    }
    if let Some(v) = fields.get("Sequence").filter(|v| !v.is_null()) {
        if v.as_u64().is_none() {
            return Err("Sequence: must be a non-negative integer".into());
        }
        extra.insert("Sequence".into(), v.clone());
    }
    Ok(extra)
}

fn mac(v: Option<&Value>, field: &str) -> Result<Mac, String> {
    match v {
        Some(Value::String(s)) => s.parse::<Mac>().map_err(|e| format!("{field}: {e}")),
        Some(_) => Err(format!("{field}: must be a string")),
        None => Err(format!("{field}: is required")),
    }
}

fn position(v: Option<&Value>, field: &str) -> Result<[f64; 3], String> {
    v.and_then(parse_vec3).ok_or_else(|| format!("{field}: must be an array of three finite numbers"))
}

/// One raw update: an event or the compact form.
fn one(v: &Value, now: DateTime<Utc>) -> Result<PositionUpdate, String> {
    let Value::Object(fields) = v else {
        return Err("must be a position object (a LOCATION_RAW_UPDATE event or {\"MAC\", \"Position\"})".into());
    };
    match fields.get("Type").and_then(Value::as_str) {
        Some("LOCATION_RAW_UPDATE") => {
            let content = match fields.get("Content") {
                Some(Value::Object(c)) => c,
                _ => return Err("Content: must be an object with Position".into()),
            };
            Ok(PositionUpdate {
                mac: mac(v.pointer("/Source/MAC"), "Source.MAC")?,
                position: position(content.get("Position"), "Content.Position")?,
                timestamp: timestamp(fields.get("Timestamp"), now)?,
                gateway_uri: v.pointer("/Source/GatewayURI").and_then(Value::as_str).map(str::to_owned),
                extra: extras(content)?,
            })
        }
        Some(other) => {
            Err(format!("Type: '{other}' is not a position event (LOCATION_RAW_UPDATE or LOCATION_BATCH_UPDATE)"))
        }
        None if fields.contains_key("MAC") => Ok(PositionUpdate {
            mac: mac(fields.get("MAC"), "MAC")?,
            position: position(fields.get("Position"), "Position")?,
            timestamp: timestamp(fields.get("Timestamp"), now)?,
            gateway_uri: fields.get("GatewayURI").and_then(Value::as_str).map(str::to_owned),
            extra: extras(fields)?,
        }),
        None => Err("must be a position object (a LOCATION_RAW_UPDATE event or {\"MAC\", \"Position\"})".into()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-21T10:00:00Z".parse().unwrap()
    }

    fn ok(v: Value) -> Vec<PositionUpdate> {
        normalize(&v, now()).into_iter().map(|e| e.result.unwrap()).collect()
    }

    #[test]
    fn the_compact_form_is_normalised() {
        let p = &ok(json!({"MAC": "aa-bb-cc-dd-ee-ff", "Position": [1, 2, 3]}))[0];
        assert_eq!(p.mac.as_str(), "AA:BB:CC:DD:EE:FF");
        assert_eq!(p.position, [1.0, 2.0, 3.0]);
        assert_eq!(p.timestamp, now(), "missing Timestamp is the time of receipt");
        let p = &ok(
            json!({"MAC": "aa:bb:cc:dd:ee:ff", "Position": [1, 2, 3], "Timestamp": "2026-11-21T11:00:00+01:00", "Sequence": 4}),
        )[0];
        assert_eq!(p.timestamp, now());
        assert_eq!(p.extra["Sequence"], 4);
    }

    #[test]
    fn events_arrays_and_batches_are_accepted() {
        let event = json!({"Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T09:00:00.500Z",
            "Source": {"MAC": "00:aa:bb:cc:dd:ee", "GatewayURI": "gw1"},
            "Content": {"Position": [1.5, 0, -2], "Velocity": [0, 1, 0], "Orientation": [1, 0, 0, 0]}});
        let p = &ok(event.clone())[0];
        assert_eq!(p.gateway_uri.as_deref(), Some("gw1"));
        assert_eq!(p.extra.len(), 2);
        assert_eq!(ok(json!([event.clone(), {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]}])).len(), 2);
        let batch = json!({"Type": "LOCATION_BATCH_UPDATE", "Content": [event.clone(), event.clone(), event.clone()]});
        assert_eq!(ok(batch).len(), 3);
        let batch = json!({"Type": "LOCATION_BATCH_UPDATE", "Content": {"Updates": [event]}});
        assert_eq!(ok(batch).len(), 1);
    }

    #[test]
    fn each_bad_element_is_rejected_with_its_index_and_reason() {
        let payload = json!([
            {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]},
            {"MAC": "nope", "Position": [0, 0, 0]},
            {"MAC": "00:00:00:00:00:01", "Position": [0, 0]},
            {"MAC": "00:00:00:00:00:01", "Position": [0, "1", 0]},
            {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0], "Timestamp": "soon"},
            {"Type": "ZONE_ENTER"},
            7,
            {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0], "Orientation": [1, 0]},
            {"Type": "LOCATION_BATCH_UPDATE", "Content": [{"MAC": "00:00:00:00:00:02", "Position": [1, 1, 1]}, {"MAC": 5}]},
        ]);
        let results = normalize(&payload, now());
        let rejected: Vec<(usize, String)> =
            results.iter().filter_map(|e| e.result.clone().err().map(|m| (e.index, m))).collect();
        assert_eq!(results.iter().filter(|e| e.result.is_ok()).count(), 2);
        let indexes: Vec<usize> = rejected.iter().map(|(i, _)| *i).collect();
        assert_eq!(indexes, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(rejected[0].1.starts_with("MAC: 'nope' is not a MAC address"), "{}", rejected[0].1);
        assert_eq!(rejected[1].1, "Position: must be an array of three finite numbers");
        assert_eq!(rejected[3].1, "Timestamp: 'soon' is not an ISO 8601 time");
        assert!(rejected[4].1.starts_with("Type: 'ZONE_ENTER' is not a position event"));
        assert_eq!(rejected[7].1, "Content[1]: MAC: must be a string");
        let outcome = crate::Outcome { accepted: 2, rejected: rejected.clone() };
        assert_eq!(outcome.answer()["rejected"][0], json!({"index": 1, "message": rejected[0].1}));
    }

    #[test]
    fn the_fast_path_and_the_general_path_agree() {
        let payloads = [
            json!([{"MAC": "aa-bb-cc-dd-ee-01", "Position": [1, 2, 3]}, {"MAC": "AA:BB:CC:DD:EE:02", "Position": [1.5, 0, -2], "Timestamp": "2026-11-21T09:00:00Z"}]),
            json!({"MAC": "aa:bb:cc:dd:ee:03", "Position": [0, 0, 0]}),
            json!([{"MAC": "bad", "Position": [1, 2, 3]}, {"MAC": "aa:bb:cc:dd:ee:04", "Position": [1, 2, 3], "Velocity": [1, 0, 0]}]),
        ];
        for p in payloads {
            let bytes = serde_json::to_vec(&p).unwrap();
            assert_eq!(normalize_bytes(&bytes, now()).unwrap(), normalize(&p, now()), "{p}");
        }
        assert!(normalize_bytes(b"{\"MAC\":", now()).unwrap_err().starts_with("not valid JSON"));
        assert_eq!(normalize_bytes(b"42", now()).unwrap_err(), "body must be a JSON object or array");
    }

    use proptest::prelude::Strategy as _;

    proptest::proptest! {
        #[test]
        fn every_element_of_any_json_array_is_accounted_for(items in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(json!({"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]})),
                proptest::strategy::Just(json!({"MAC": "x"})),
                proptest::strategy::Just(json!(null)),
                proptest::strategy::Just(json!("text")),
                (-1e6f64..1e6).prop_map(|x| json!({"MAC": "00:00:00:00:00:02", "Position": [x, x, x]})),
            ], 0..40)) {
            let results = normalize(&Value::Array(items.clone()), now());
            proptest::prop_assert_eq!(results.len(), items.len());
            for (i, e) in results.iter().enumerate() {
                proptest::prop_assert_eq!(e.index, i);
            }
        }
    }
}
