//! `GET /v3/modules/zones/{ZoneID}/visits` and `.../occupancy`: the stays of devices in one zone
//! and its occupancy step by step, computed ([`report`]) from the zone's `ZONE_ENTER` and
//! `ZONE_EXIT` events in the event history, read from the oldest kept so that a visit begun
//! before `from` is found. JSON, or CSV with `Accept: text/csv`.

mod report;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;
use uuid::Uuid;
use warp::http::{HeaderMap, HeaderValue, StatusCode, header};
use warp::reply::Response;
use zonecast_bus::journal::{HistoryQuery, HistoryStart};
use zonecast_model::{Event, format_id, format_timestamp};

use super::history::{check_range, number_parameter, read, time_parameter};
use crate::context::Context;
use crate::error::ApiError;
use crate::reply;
use report::{Step, Visit, Visits};

/// Shortest and longest occupancy step, in seconds.
pub const STEP_SECONDS: (u64, u64) = (1, 86_400);

/// Most occupancy steps one answer holds.
pub const MAX_STEPS: i64 = 10_000;

/// Events of the zone read per page of history.
const PAGE: usize = 10_000;

/// One visit as answered.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct VisitView {
    /// The device.
    #[serde(rename = "MAC")]
    pub mac: String,
    /// The stay's identity, shared by its ZONE_ENTER and ZONE_EXIT.
    #[serde(rename = "CollisionID")]
    pub collision_id: String,
    /// When the device entered.
    #[serde(rename = "EntryTime")]
    pub entry_time: String,
    /// When it left; null while it is inside.
    #[serde(rename = "ExitTime")]
    pub exit_time: Option<String>,
    /// Seconds inside: to ExitTime, or, while inside, to the earlier of `to` and now.
    #[serde(rename = "DwellSeconds")]
    pub dwell_seconds: f64,
    /// Why it left (the ZONE_EXIT's Reason: position, deactivated, deleted, reset, window,
    /// geometry, excluded or timeout); null while it is inside.
    #[serde(rename = "Reason")]
    pub reason: Option<String>,
}

/// One occupancy step as answered.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OccupancyView {
    /// The step's start; it lasts `step` seconds.
    #[serde(rename = "Start")]
    pub start: String,
    /// Devices inside at the start.
    #[serde(rename = "Inside")]
    pub inside: usize,
    /// The most devices inside at once during the step.
    #[serde(rename = "Peak")]
    pub peak: usize,
    /// Devices that entered during the step.
    #[serde(rename = "Entries")]
    pub entries: usize,
}

/// The parameters of a report.
struct Request {
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    step: Option<u64>,
}

impl Request {
    fn parse(query: &str, takes_step: bool) -> Result<Self, ApiError> {
        let mut request = Self { from: None, to: None, step: None };
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "from" => request.from = Some(time_parameter("from", &value)?),
                "to" => request.to = Some(time_parameter("to", &value)?),
                "step" if takes_step => {
                    request.step = Some(number_parameter("step", &value, STEP_SECONDS.0, STEP_SECONDS.1)?);
                }
                other => {
                    let expected = if takes_step { "from, to or step" } else { "from or to" };
                    return Err(ApiError::Invalid(format!("{other}: unknown query parameter (expected {expected})")));
                }
            }
        }
        check_range(request.from, request.to)?;
        Ok(request)
    }
}

/// The visits of zone `id` overlapping `[from, to)`, after checking that the zone exists.
async fn visits(ctx: &Context, id: Uuid, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<Visit>, ApiError> {
    ctx.store.get_zone(id).await?;
    let mut visits = Visits::new();
    let mut query = HistoryQuery::new(HistoryStart::Oldest, PAGE, PAGE);
    query.subjects = vec![ctx.subjects.zone_events(&format_id(&id))];
    loop {
        let page = read(ctx, &query).await?;
        let mut seen = None;
        for record in &page.records {
            match serde_json::from_slice::<Event>(&record.payload) {
                Ok(event) => {
                    seen = Some(event.timestamp);
                    visits.add(&event);
                }
                Err(e) => {
                    tracing::debug!(sequence = record.sequence, error = %e, "journal event not read for a report")
                }
            }
        }
        match page.next {
            Some(next) if !seen.is_some_and(|seen| visits.settled(seen, to)) => {
                query.start = HistoryStart::Sequence(next);
            }
            _ => break,
        }
    }
    Ok(visits.within(from, to))
}

/// Whether the client asks for CSV.
fn wants_csv(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|accept| {
        accept
            .split(',')
            .any(|item| item.split(';').next().is_some_and(|kind| kind.trim().eq_ignore_ascii_case("text/csv")))
    })
}

/// One CSV field, quoted when it must be (RFC 4180).
fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

/// A CSV answer: a header row, then the rows, CRLF line ends.
fn csv(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Response {
    let mut body = header.iter().map(|h| csv_field(h)).collect::<Vec<_>>().join(",");
    body.push_str("\r\n");
    for row in rows {
        body.push_str(&row.iter().map(|v| csv_field(v)).collect::<Vec<_>>().join(","));
        body.push_str("\r\n");
    }
    let mut response = Response::new(body.into());
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8"));
    response
}

/// `GET /v3/modules/zones/{ZoneID}/visits`.
pub async fn list(ctx: &Context, id: Uuid, query: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let request = Request::parse(query, false)?;
    let now = Utc::now();
    let (from, to) = (request.from.unwrap_or(DateTime::<Utc>::MIN_UTC), request.to.unwrap_or(now));
    check_range(Some(from), Some(to))?;
    let dwell_end = to.min(now);
    let views: Vec<VisitView> = visits(ctx, id, from, to)
        .await?
        .into_iter()
        .map(|v| VisitView {
            dwell_seconds: v.dwell_seconds(dwell_end),
            mac: v.mac,
            collision_id: format_id(&v.collision_id),
            entry_time: format_timestamp(&v.entry_time),
            exit_time: v.exit_time.as_ref().map(format_timestamp),
            reason: v.reason.map(|r| r.as_str().to_owned()),
        })
        .collect();
    if !wants_csv(headers) {
        return Ok(reply::ok(&views));
    }
    let header = ["MAC", "CollisionID", "EntryTime", "ExitTime", "DwellSeconds", "Reason"];
    Ok(csv(
        &header,
        views.into_iter().map(|v| {
            vec![
                v.mac,
                v.collision_id,
                v.entry_time,
                v.exit_time.unwrap_or_default(),
                v.dwell_seconds.to_string(),
                v.reason.unwrap_or_default(),
            ]
        }),
    ))
}

/// `GET /v3/modules/zones/{ZoneID}/occupancy`.
pub async fn occupancy(ctx: &Context, id: Uuid, query: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let request = Request::parse(query, true)?;
    let from = request.from.ok_or_else(|| ApiError::Invalid("from: required".into()))?;
    let step = request.step.ok_or_else(|| ApiError::Invalid("step: required".into()))?;
    let now = Utc::now();
    let to = request.to.unwrap_or(now);
    check_range(Some(from), Some(to))?;
    let step = TimeDelta::seconds(step as i64);
    let count = report::step_count(from, to, step);
    if count > MAX_STEPS {
        return Err(ApiError::Invalid(format!(
            "step: [from, to) in steps of {} s is {count} steps; at most {MAX_STEPS} per answer",
            step.num_seconds()
        )));
    }
    let visits = visits(ctx, id, from, to).await?;
    let steps: Vec<OccupancyView> = report::occupancy(&visits, from, to, step, now)
        .into_iter()
        .map(|Step { start, inside, peak, entries }| OccupancyView {
            start: format_timestamp(&start),
            inside,
            peak,
            entries,
        })
        .collect();
    if !wants_csv(headers) {
        return Ok(reply::ok(&steps));
    }
    Ok(csv(
        &["Start", "Inside", "Peak", "Entries"],
        steps.into_iter().map(|s| vec![s.start, s.inside.to_string(), s.peak.to_string(), s.entries.to_string()]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_they_must_be() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn csv_is_asked_for_by_the_accept_header() {
        let mut headers = HeaderMap::new();
        assert!(!wants_csv(&headers));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/csv;q=0.5"));
        assert!(wants_csv(&headers));
        headers.insert(header::ACCEPT, HeaderValue::from_static("text/csvx"));
        assert!(!wants_csv(&headers));
    }
}
