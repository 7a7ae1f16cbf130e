//! `GET /v3/events`: the zone events and alarms the event journal keeps, in the journal's order,
//! a page at a time ([`zonecast_bus::Journal::history`]), narrowed like the live stream
//! ([`Narrowing`]) and bounded by the time the journal stored them. The answer's `NextCursor`
//! is where the next page starts: a page is read to its limit or to the newest event stored
//! when it was read, so paging gives every event once, also while new ones arrive.

use std::sync::Arc;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use warp::reply::Response;
use zonecast_bus::journal::{HistoryPage, HistoryQuery, HistoryStart};

use super::stream::Narrowing;
use crate::context::Context;
use crate::error::ApiError;
use crate::reply;

/// Events a page holds when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;

/// Most events a page may hold.
pub const MAX_LIMIT: usize = 1000;

/// Most events one page looks at: a narrow query over a long history answers a short (even
/// empty) page with a `NextCursor` rather than reading without bound.
const SCAN: usize = 100_000;

/// What `GET /v3/events` answers.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EventPage {
    /// The events (JSON envelopes, as published), oldest first.
    #[serde(rename = "Events")]
    pub events: Vec<Value>,
    /// Pass it as `cursor` (with the same other parameters) for the next page; null when there
    /// is no more.
    #[serde(rename = "NextCursor")]
    pub next_cursor: Option<String>,
}

/// A time parameter: RFC 3339 (`2026-11-21T10:00:00Z`, any offset).
pub fn time_parameter(name: &str, value: &str) -> Result<DateTime<Utc>, ApiError> {
    DateTime::parse_from_rfc3339(value.trim()).map(|t| t.with_timezone(&Utc)).map_err(|_| {
        ApiError::Invalid(format!("{name}: '{value}' is not an RFC 3339 time (e.g. 2026-11-21T10:00:00Z)"))
    })
}

/// A whole-number parameter within `min..=max`.
pub fn number_parameter(name: &str, value: &str, min: u64, max: u64) -> Result<u64, ApiError> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| ApiError::Invalid(format!("{name}: must be a whole number from {min} to {max}, got '{value}'")))
}

/// `from` before `to`, when both are given.
pub fn check_range(from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> Result<(), ApiError> {
    match (from, to) {
        (Some(from), Some(to)) if from >= to => Err(ApiError::Invalid("from: must be before to".into())),
        _ => Ok(()),
    }
}

/// Mixed into cursors: they are opaque, not sequences to count on.
const CURSOR_MASK: u64 = 0x5A0E_C457_0000_0000;

/// A cursor: sixteen lower-case hex digits.
fn encode_cursor(sequence: u64) -> String {
    format!("{:016x}", sequence ^ CURSOR_MASK)
}

/// The sequence of a cursor; anything but sixteen hex digits is 400.
fn decode_cursor(text: &str) -> Result<u64, ApiError> {
    Some(text)
        .filter(|t| t.len() == 16 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|t| u64::from_str_radix(t, 16).ok())
        .map(|n| n ^ CURSOR_MASK)
        .ok_or_else(|| ApiError::Malformed("cursor: not a NextCursor of GET /v3/events".into()))
}

/// The parameters of one request.
struct Request {
    narrowing: Narrowing,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    limit: usize,
    cursor: Option<u64>,
}

impl Request {
    fn parse(ctx: &Context, query: &str) -> Result<Self, ApiError> {
        let mut request =
            Self { narrowing: Narrowing::default(), from: None, to: None, limit: DEFAULT_LIMIT, cursor: None };
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "from" => request.from = Some(time_parameter("from", &value)?),
                "to" => request.to = Some(time_parameter("to", &value)?),
                "limit" => request.limit = number_parameter("limit", &value, 1, MAX_LIMIT as u64)? as usize,
                "cursor" => request.cursor = Some(decode_cursor(&value)?),
                other => {
                    if !request.narrowing.accept(other, &value, &ctx.limits)? {
                        return Err(ApiError::Invalid(format!(
                            "{other}: unknown query parameter (expected from, to, type, zone, mac, filter, limit or cursor)"
                        )));
                    }
                }
            }
        }
        check_range(request.from, request.to)?;
        Ok(request)
    }
}

/// `GET /v3/events`.
pub async fn list(ctx: &Context, query: &str) -> Result<Response, ApiError> {
    let request = Request::parse(ctx, query)?;
    let start = match (request.cursor, request.from) {
        (Some(sequence), _) => HistoryStart::Sequence(sequence),
        (None, Some(from)) => HistoryStart::At(SystemTime::from(from)),
        (None, None) => HistoryStart::Oldest,
    };
    let mut history = HistoryQuery::new(start, request.limit, SCAN);
    // Without `to`, up to the newest event stored when the page is read: a bound of now would
    // leave out the events stored within the current millisecond.
    history.until = request.to.map(SystemTime::from);
    history.subjects = ctx.subjects.events_narrowed(request.narrowing.types(), request.narrowing.zones());
    if !request.narrowing.is_open() {
        let narrowing = Arc::new(request.narrowing);
        history.admits = Some(Arc::new(move |payload: &[u8]| {
            serde_json::from_slice::<Value>(payload).is_ok_and(|event| narrowing.admits(&event))
        }));
    }
    let page = read(ctx, &history).await?;
    let events = page
        .records
        .iter()
        .filter_map(|record| match serde_json::from_slice::<Value>(&record.payload) {
            Ok(event) => Some(event),
            Err(e) => {
                tracing::debug!(sequence = record.sequence, error = %e, "journal event is not JSON; left out of the history");
                None
            }
        })
        .collect();
    Ok(reply::ok(&EventPage { events, next_cursor: page.next.map(encode_cursor) }))
}

/// One page from the journal; a journal that cannot answer is 503.
pub async fn read(ctx: &Context, query: &HistoryQuery) -> Result<HistoryPage, ApiError> {
    ctx.journal.history(query).await.map_err(|e| ApiError::Unavailable(format!("event history: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_the_sequence_it_was_made_of() {
        assert_eq!(decode_cursor(&encode_cursor(42)).unwrap(), 42);
        assert_eq!(decode_cursor(&encode_cursor(42).to_ascii_uppercase()).unwrap(), 42);
        for bad in ["", "42", "5a0ec4570000002g", "5a0ec457000000020", "+a0ec45700000002"] {
            assert!(matches!(decode_cursor(bad), Err(ApiError::Malformed(_))), "{bad}");
        }
    }

    #[test]
    fn bad_values_name_their_parameter() {
        assert_eq!(
            number_parameter("limit", "0", 1, 1000).unwrap_err().to_string(),
            "limit: must be a whole number from 1 to 1000, got '0'"
        );
        assert!(number_parameter("limit", "ten", 1, 1000).is_err());
        assert_eq!(number_parameter("limit", "1000", 1, 1000).unwrap(), 1000);
        assert!(time_parameter("from", "yesterday").unwrap_err().to_string().starts_with("from: 'yesterday'"));
        let t = time_parameter("from", "2026-11-21T11:00:00+01:00").unwrap();
        assert_eq!(zonecast_model::format_timestamp(&t), "2026-11-21T10:00:00.000Z");
        assert!(check_range(Some(t), Some(t)).is_err());
    }
}
