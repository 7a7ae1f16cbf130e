//! Every accepted payload form, reduced to validated positions. Forms: a `LOCATION_RAW_UPDATE`
//! event, an array of payloads, a `LOCATION_BATCH_UPDATE` whose `Content` is a list of raw
//! updates (or an object with such a list under `Updates`), and the compact form
//! `{"MAC", "Position", "Timestamp"?}`. MACs become upper case with colons; a missing
//! Timestamp becomes the time of receipt; Velocity, Orientation and Sequence pass through.
//! Every element is judged alone, including one the JSON parser refuses (a number beyond the
//! range of a double): only a payload that is not JSON at all is refused whole.

use chrono::{DateTime, Utc};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use zonecast_model::{Mac, PositionUpdate, parse_vec3};

use crate::rejection::{Malformed, Problem, Rejection};

/// One element of a payload: its index (in the top-level array, or in a batch's list) and
/// the position or the reason it was rejected.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// Index of the element.
    pub index: usize,
    /// The position, or why not.
    pub result: Result<PositionUpdate, Rejection>,
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
/// bytes are not JSON, or JSON that is neither an object nor an array. An element that is JSON
/// but does not read as a value (a number out of the range of a double, `1e400`) is rejected
/// alone, naming where that number lies.
pub fn normalize_bytes(bytes: &[u8], now: DateTime<Utc>) -> Result<Vec<Element>, Malformed> {
    if let Some(out) = fast(bytes, now) {
        return Ok(out);
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Ok(normalize(&v, now)),
        Ok(_) => Err(Malformed::NotObjectOrArray),
        Err(e) => one_by_one(bytes, now).ok_or_else(|| Malformed::NotJson(e.to_string())),
    }
}

/// Reads any accepted payload form; `now` is the time of receipt.
pub fn normalize(payload: &Value, now: DateTime<Utc>) -> Vec<Element> {
    let mut out = Vec::new();
    match payload {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                element(item, Some(index), now, &mut out);
            }
        }
        other => element(other, None, now, &mut out),
    }
    out
}

/// Reads one element: `at` is its index in the top-level array, `None` for a payload that is
/// a single object (whose batch list then numbers the elements).
fn element(v: &Value, at: Option<usize>, now: DateTime<Utc>, out: &mut Vec<Element>) {
    match batch_list(v) {
        Some(Ok(list)) => {
            out.extend(list.iter().enumerate().map(|(j, raw)| listed(at, j, one(raw, now))));
        }
        Some(Err(m)) => out.push(Element { index: at.unwrap_or(0), result: Err(m) }),
        None => out.push(Element { index: at.unwrap_or(0), result: one(v, now) }),
    }
}

/// Item `j` of a batch's list: in a top-level array it shares the batch's index and its reason
/// names its place in the list; in a single batch the list's index is the element's.
fn listed(at: Option<usize>, j: usize, result: Result<PositionUpdate, Rejection>) -> Element {
    match at {
        Some(index) => {
            Element { index, result: result.map_err(|m| Rejection::InBatch { index: j, reason: Box::new(m) }) }
        }
        None => Element { index: j, result },
    }
}

/// The general path for a payload that is JSON but not all of whose values can be read (the
/// parser refuses numbers beyond the range of a double): the payload is split into its
/// elements without reading their values, and each element is read on its own, so that one
/// unreadable element spoils only itself. `None` when the bytes are not JSON at all.
fn one_by_one(bytes: &[u8], now: DateTime<Utc>) -> Option<Vec<Element>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut out = Vec::new();
    match text.trim_start().as_bytes().first()? {
        b'[' => {
            let items = serde_json::from_str::<Vec<&RawValue>>(text).ok()?;
            for (index, raw) in items.into_iter().enumerate() {
                raw_element(raw, Some(index), now, &mut out);
            }
        }
        b'{' => raw_element(serde_json::from_str::<&RawValue>(text).ok()?, None, now, &mut out),
        _ => return None,
    }
    Some(out)
}

/// [`element`] for an element not yet read. An unreadable batch is read item by item when
/// everything outside its list can be read; any other unreadable element is rejected whole.
fn raw_element(raw: &RawValue, at: Option<usize>, now: DateTime<Utc>, out: &mut Vec<Element>) {
    if let Ok(v) = serde_json::from_str::<Value>(raw.get()) {
        return element(&v, at, now, out);
    }
    match unreadable_batch_list(raw) {
        Some(list) => out.extend(list.into_iter().enumerate().map(|(j, item)| {
            let result = match serde_json::from_str::<Value>(item.get()) {
                Ok(v) => one(&v, now),
                Err(_) => Err(unreadable(item)),
            };
            listed(at, j, result)
        })),
        None => out.push(Element { index: at.unwrap_or(0), result: Err(unreadable(raw)) }),
    }
}

/// The fields of a batch that tell its list apart, read without reading their values.
#[derive(serde::Deserialize)]
struct BatchFields<'a> {
    #[serde(rename = "Type", borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(rename = "Content", borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(rename = "Updates", borrow, default)]
    updates: Option<&'a RawValue>,
}

/// Where a batch keeps its list: `Content`, or `Updates` in an object `Content`.
const BATCH_LISTS: &[&[&str]] = &[&["Content"], &["Content", "Updates"]];

/// The items of a `LOCATION_BATCH_UPDATE` that does not read as a whole, when everything but
/// the items of its list reads (so that only the unreadable items are rejected).
fn unreadable_batch_list(raw: &RawValue) -> Option<Vec<&RawValue>> {
    let fields = batch_fields(raw)?;
    if serde_json::from_str::<String>(fields.kind?.get()).ok()? != "LOCATION_BATCH_UPDATE" {
        return None;
    }
    if locate(raw.get(), BATCH_LISTS).is_err() {
        return None;
    }
    let content = fields.content?;
    let list = match batch_fields(content) {
        Some(inner) => inner.updates?,
        None => content,
    };
    serde_json::from_str::<Vec<&RawValue>>(list.get()).ok()
}

/// The [`BatchFields`] of an object (a struct would also be read from an array, by position).
fn batch_fields(raw: &RawValue) -> Option<BatchFields<'_>> {
    if !raw.get().starts_with('{') {
        return None;
    }
    serde_json::from_str(raw.get()).ok()
}

/// Why `raw` does not read: the path of the value the parser refused (`Content.Position[1]`)
/// and the parser's reason (`number out of range`).
fn unreadable(raw: &RawValue) -> Rejection {
    let (path, reason) = locate(raw.get(), &[]).err().unwrap_or_default();
    Rejection::Unreadable { path, reason }
}

/// Walks `text` value by value, skipping the arrays at `skip`, to the first value that does not
/// read: `Err((path, reason))`.
fn locate(text: &str, skip: &[&[&str]]) -> Result<(), (String, String)> {
    let mut path = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let read =
        serde::de::DeserializeSeed::deserialize(Locate { path: &mut path, skip }, &mut de).and_then(|()| de.end());
    read.map_err(|e| {
        let text = e.to_string();
        // The position is within the element, which would mislead about the body.
        let reason = text.rsplit_once(" at line ").map_or(text.as_str(), |(reason, _)| reason).to_owned();
        let mut at = String::new();
        for step in &path {
            match step {
                Step::Key(k) if at.is_empty() => at.push_str(k),
                Step::Key(k) => {
                    at.push('.');
                    at.push_str(k);
                }
                Step::Index(i) => at.push_str(&format!("[{i}]")),
            }
        }
        (at, reason)
    })
}

/// One step of a path into a JSON value.
enum Step {
    Key(String),
    Index(usize),
}

/// Reads a value without keeping it, recording the path down to the value being read: when
/// reading fails, the path is where it failed.
struct Locate<'p> {
    path: &'p mut Vec<Step>,
    skip: &'p [&'p [&'p str]],
}

impl Locate<'_> {
    fn below(&mut self) -> Locate<'_> {
        Locate { path: self.path, skip: self.skip }
    }

    fn skipped(&self) -> bool {
        self.skip.iter().any(|s| {
            s.len() == self.path.len()
                && s.iter().zip(self.path.iter()).all(|(a, b)| matches!(b, Step::Key(k) if k == a))
        })
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Locate<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Locate<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        if self.skipped() {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok(());
        }
        for index in 0.. {
            self.path.push(Step::Index(index));
            if seq.next_element_seed(self.below())?.is_none() {
                break;
            }
            self.path.pop();
        }
        self.path.pop();
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            self.path.push(Step::Key(key));
            map.next_value_seed(self.below())?;
            self.path.pop();
        }
        Ok(())
    }
}

/// The raw updates of a `LOCATION_BATCH_UPDATE`, `None` when `v` is not one.
fn batch_list(v: &Value) -> Option<Result<&Vec<Value>, Rejection>> {
    if v.get("Type").and_then(Value::as_str) != Some("LOCATION_BATCH_UPDATE") {
        return None;
    }
    Some(match v.get("Content") {
        Some(Value::Array(list)) => Ok(list),
        Some(Value::Object(o)) => match o.get("Updates") {
            Some(Value::Array(list)) => Ok(list),
            _ => Err(Rejection::BatchWithoutList),
        },
        _ => Err(Rejection::BatchWithoutList),
    })
}

fn timestamp(v: Option<&Value>, now: DateTime<Utc>) -> Result<DateTime<Utc>, Rejection> {
    match v {
        None | Some(Value::Null) => Ok(now),
        Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| Rejection::field("Timestamp", Problem::NotIsoTime(s.clone()))),
        Some(_) => Err(Rejection::field("Timestamp", Problem::NotIsoString)),
    }
}

fn extras(fields: &Map<String, Value>) -> Result<Map<String, Value>, Rejection> {
    let mut extra = Map::new();
    if let Some(v) = fields.get("Velocity").filter(|v| !v.is_null()) {
        parse_vec3(v).ok_or(Rejection::field("Velocity", Problem::NotThreeFinite))?;
        extra.insert("Velocity".into(), v.clone());
    }
    if let Some(v) = fields.get("Orientation").filter(|v| !v.is_null()) {
        let ok = v.as_array().is_some_and(|a| a.len() == 4 && a.iter().all(|x| x.as_f64().is_some_and(f64::is_finite)));
        if !ok {
            return Err(Rejection::field("Orientation", Problem::NotFourFinite));
        }
        extra.insert("Orientation".into(), v.clone());
    }
    if let Some(v) = fields.get("Sequence").filter(|v| !v.is_null()) {
        if v.as_u64().is_none() {
            return Err(Rejection::field("Sequence", Problem::NotNonNegativeInteger));
        }
        extra.insert("Sequence".into(), v.clone());
    }
    Ok(extra)
}

fn mac(v: Option<&Value>, field: &'static str) -> Result<Mac, Rejection> {
    match v {
        Some(Value::String(s)) => s.parse::<Mac>().map_err(|e| Rejection::field(field, Problem::BadMac(e))),
        Some(_) => Err(Rejection::field(field, Problem::NotAString)),
        None => Err(Rejection::field(field, Problem::Required)),
    }
}

fn position(v: Option<&Value>, field: &'static str) -> Result<[f64; 3], Rejection> {
    v.and_then(parse_vec3).ok_or(Rejection::field(field, Problem::NotThreeFinite))
}

/// One raw update: an event or the compact form.
fn one(v: &Value, now: DateTime<Utc>) -> Result<PositionUpdate, Rejection> {
    let Value::Object(fields) = v else {
        return Err(Rejection::NotAPosition);
    };
    match fields.get("Type").and_then(Value::as_str) {
        Some("LOCATION_RAW_UPDATE") => {
            let content = match fields.get("Content") {
                Some(Value::Object(c)) => c,
                _ => return Err(Rejection::ContentNotAnObject),
            };
            Ok(PositionUpdate {
                mac: mac(v.pointer("/Source/MAC"), "Source.MAC")?,
                position: position(content.get("Position"), "Content.Position")?,
                timestamp: timestamp(fields.get("Timestamp"), now)?,
                gateway_uri: v.pointer("/Source/GatewayURI").and_then(Value::as_str).map(str::to_owned),
                extra: extras(content)?,
            })
        }
        Some(other) => Err(Rejection::NotAPositionType(other.to_owned())),
        None if fields.contains_key("MAC") => Ok(PositionUpdate {
            mac: mac(fields.get("MAC"), "MAC")?,
            position: position(fields.get("Position"), "Position")?,
            timestamp: timestamp(fields.get("Timestamp"), now)?,
            gateway_uri: fields.get("GatewayURI").and_then(Value::as_str).map(str::to_owned),
            extra: extras(fields)?,
        }),
        None => Err(Rejection::NotAPosition),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
