//! Alarms a person can acknowledge: listed a page at a time (newest first; by state, device
//! and zone), read one at a time, acknowledged and resolved. A change is a conditional update
//! in the store, so of two concurrent changes one wins and the other is 409, and each change is
//! published as an event of its own (`ALARM_ACKNOWLEDGED`, `ALARM_RESOLVED`) on the events
//! journal, so the live streams, the event history, NATS subscribers and MQTT forwarding see it.
//! The alarms themselves are recorded from the journal by [`crate::alarm_recorder`].

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;
use warp::http::HeaderMap;
use warp::reply::Response;
use zonecast_bus::journal::Record;
use zonecast_model::{
    AlarmChange, AlarmNote, AlarmRecord, AlarmUpdate, Content, Event, EventId, EventSource, Mac, StoredAlarm,
};
use zonecast_runtime::backoff::Backoff;
use zonecast_store::{AlarmChanged, AlarmQuery};

use super::history::number_parameter;
use crate::context::Context;
use crate::error::ApiError;
use crate::{body, reply};

/// Alarms a page holds when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;

/// Most alarms a page may hold.
pub const MAX_LIMIT: usize = 1000;

/// How long a change's event is tried on the journal before the failure is logged: the change
/// itself is stored already and stands.
const PUBLISH_FOR: Duration = Duration::from_secs(5);

/// What `GET /v3/alarms` answers.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AlarmPage {
    /// The alarms, newest `RaisedAt` first (ties: greatest AlarmID first).
    #[serde(rename = "Alarms")]
    pub alarms: Vec<StoredAlarm>,
    /// Pass it as `cursor` (with the same other parameters) for the next page; null when there
    /// is no more.
    #[serde(rename = "NextCursor")]
    pub next_cursor: Option<String>,
}

/// Mixed into cursors: they are opaque, not times and IDs to count on.
const CURSOR_MASK: u64 = 0x5A1A_4A11_0C0F_FEE5;

/// A cursor: 48 lower-case hex digits standing for the `RaisedAt` (16) and AlarmID (32) of the
/// alarm a page ended with.
fn encode_cursor(alarm: &AlarmRecord) -> String {
    let micros = alarm.raised_at.timestamp_micros().cast_unsigned() ^ CURSOR_MASK;
    format!("{micros:016x}{}", alarm.alarm_id.simple())
}

/// The place a cursor stands for; anything but 48 hex digits is 400.
fn decode_cursor(text: &str) -> Result<(DateTime<Utc>, Uuid), ApiError> {
    let bad = || ApiError::Malformed("cursor: not a NextCursor of GET /v3/alarms".into());
    if text.len() != 48 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let micros = (u64::from_str_radix(&text[..16], 16).map_err(|_| bad())? ^ CURSOR_MASK).cast_signed();
    // Any 48 hex digits are a cursor: one beyond the times there can be stands for the first or
    // the last of them.
    let (first, last) = (DateTime::<Utc>::MIN_UTC.timestamp_micros(), DateTime::<Utc>::MAX_UTC.timestamp_micros());
    let at = DateTime::from_timestamp_micros(micros.clamp(first, last)).ok_or_else(bad)?;
    let id = Uuid::try_parse(&text[16..]).map_err(|_| bad())?;
    Ok((at, id))
}

/// The query of `GET /v3/alarms`: `state` (comma-separated), `mac`, `zone`, `limit` and
/// `cursor`.
fn list_query(query: &str) -> Result<AlarmQuery, ApiError> {
    let mut out = AlarmQuery { limit: DEFAULT_LIMIT, ..AlarmQuery::default() };
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "state" => {
                for item in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
                    let state =
                        item.to_ascii_lowercase().parse().map_err(|e| ApiError::Invalid(format!("state: {e}")))?;
                    out.states.push(state);
                }
            }
            "mac" => {
                let mac = value.trim().parse::<Mac>().map_err(|e| ApiError::Invalid(format!("mac: {e}")))?;
                out.mac = Some(mac);
            }
            "zone" => {
                let zone = value.trim().parse::<Uuid>();
                out.zone = Some(zone.map_err(|_| ApiError::Invalid(format!("zone: '{value}' is not a UUID")))?);
            }
            "limit" => out.limit = number_parameter("limit", &value, 1, MAX_LIMIT as u64)? as usize,
            "cursor" => out.after = Some(decode_cursor(&value)?),
            other => {
                return Err(ApiError::Invalid(format!(
                    "{other}: unknown query parameter (expected state, mac, zone, limit or cursor)"
                )));
            }
        }
    }
    Ok(out)
}

/// `GET /v3/alarms`: a page of alarms, newest first.
pub async fn list(ctx: &Context, query: &str) -> Result<Response, ApiError> {
    let mut query = list_query(query)?;
    let limit = query.limit;
    // One more than the page holds: whether there is a next page.
    query.limit = limit + 1;
    let mut alarms = ctx.store.list_alarms(&query).await?;
    let next_cursor = if alarms.len() > limit {
        alarms.truncate(limit);
        alarms.last().map(|a| encode_cursor(&a.record))
    } else {
        None
    };
    Ok(reply::ok(&AlarmPage { alarms, next_cursor }))
}

/// The AlarmID a path names; text that is not a UUID is 422.
fn alarm_id(raw: &str) -> Result<Uuid, ApiError> {
    raw.parse().map_err(|_| ApiError::Invalid(format!("AlarmID: '{raw}' is not a UUID")))
}

/// `GET /v3/alarms/{AlarmID}`.
pub async fn get(ctx: &Context, raw: &str) -> Result<Response, ApiError> {
    Ok(reply::ok(&ctx.store.get_alarm(alarm_id(raw)?).await?))
}

/// `POST /v3/alarms/{AlarmID}/acknowledge` and `…/resolve`: makes `change` as the caller, with
/// the note of the body (optional), and answers the alarm as stored; 409 when the alarm is in a
/// state the change cannot start from.
pub async fn change(
    ctx: &Context,
    raw: &str,
    headers: &HeaderMap,
    body: &bytes::Bytes,
    change: AlarmChange,
) -> Result<Response, ApiError> {
    let id = alarm_id(raw)?;
    let note = if body.iter().all(u8::is_ascii_whitespace) {
        AlarmNote::default()
    } else {
        AlarmNote::parse(&body::object(body, &ctx.limits)?)?
    };
    // The edge has checked the credentials already; this names who made the change.
    let by = ctx.auth.authenticate(headers)?.subject;
    let update = AlarmUpdate { change, by, at: Utc::now(), note: note.note };
    match ctx.store.change_alarm(id, &update).await? {
        AlarmChanged::Changed(alarm) => {
            publish(ctx, change, &alarm.record, update.at).await;
            Ok(reply::ok(&alarm))
        }
        AlarmChanged::Refused(alarm) => Err(ApiError::Conflict(
            change
                .refusal(&id, alarm.record.state)
                .unwrap_or_else(|| format!("alarm {} was changed by another request", zonecast_model::format_id(&id))),
        )),
    }
}

/// The event telling `change` of `record`, made `at`.
fn change_event(ctx: &Context, change: AlarmChange, record: &AlarmRecord, at: DateTime<Utc>) -> Event {
    let content = match change {
        AlarmChange::Acknowledge => Content::AlarmAcknowledged(record.clone()),
        AlarmChange::Resolve => Content::AlarmResolved(record.clone()),
    };
    Event {
        event_id: EventId::generate(at),
        timestamp: at,
        local_timestamp: Utc::now(),
        source: EventSource { mac: record.mac.clone(), gateway_uri: None, site_id: ctx.site_id },
        content,
        device: None,
    }
}

/// Appends the event of `change` to the events journal, trying again with backoff for
/// [`PUBLISH_FOR`]. The change is stored already and stands whatever happens here: an event
/// that cannot be appended is missing from the streams and the history, and counted in
/// `zonecast_api_alarm_change_events_lost_total`.
async fn publish(ctx: &Context, change: AlarmChange, record: &AlarmRecord, at: DateTime<Utc>) {
    let event = change_event(ctx, change, record, at);
    let (Some(subject), Ok(payload)) = (ctx.subjects.of_event(&event), serde_json::to_vec(&event)) else {
        metrics::counter!("zonecast_api_alarm_change_events_lost_total").increment(1);
        tracing::error!(alarm = %zonecast_model::format_id(&record.alarm_id), "alarm change event could not be written");
        return;
    };
    let record = Record { subject, payload: payload.into(), id: event.event_id.to_string() };
    let deadline = tokio::time::Instant::now() + PUBLISH_FOR;
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        match ctx.journal.append(vec![record.clone()]).await {
            Ok(()) => return,
            Err(e) if tokio::time::Instant::now() >= deadline => {
                metrics::counter!("zonecast_api_alarm_change_events_lost_total").increment(1);
                tracing::warn!(error = %e, subject = %record.subject, "alarm change stored but its event not published");
                return;
            }
            Err(_) => tokio::time::sleep(backoff.next_delay()).await,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use zonecast_model::AlarmState;

    use super::*;

    #[test]
    fn a_cursor_reads_back_as_the_place_it_was_made_of() {
        let event = serde_json::json!({});
        let mut alarm: StoredAlarm = serde_json::from_value(serde_json::json!({
            "AlarmID": "01900000-0000-7000-8000-0000000000AB", "Type": "SITE_ALARM", "MAC": "00:00:00:00:00:01",
            "ZoneID": null, "ZoneName": null, "CollisionID": null, "RaisedAt": "2026-11-21T10:00:00.123Z",
            "State": "open", "AcknowledgedBy": null, "AcknowledgedAt": null, "AcknowledgedNote": null,
            "ResolvedBy": null, "ResolvedAt": null, "ResolvedNote": null, "Event": event,
        }))
        .unwrap();
        let cursor = encode_cursor(&alarm.record);
        assert_eq!(cursor.len(), 48);
        assert_eq!(decode_cursor(&cursor).unwrap(), (alarm.record.raised_at, alarm.record.alarm_id));
        alarm.record.raised_at = DateTime::from_timestamp_micros(-5).unwrap();
        assert_eq!(decode_cursor(&encode_cursor(&alarm.record)).unwrap().0, alarm.record.raised_at);
        assert!(decode_cursor(&"f".repeat(48)).is_ok() && decode_cursor(&"0".repeat(48)).is_ok(), "any hex");
        for bad in ["", "00", &"g".repeat(48), &"0".repeat(47)] {
            assert!(matches!(decode_cursor(bad), Err(ApiError::Malformed(_))), "{bad}");
        }
    }

    #[test]
    fn list_parameters_are_read_and_bad_ones_named() {
        let q = list_query("state=open,Acknowledged&mac=00-aa-bb-cc-dd-ee&limit=5").unwrap();
        assert_eq!(q.states, [AlarmState::Open, AlarmState::Acknowledged]);
        assert_eq!((q.mac.unwrap().as_str(), q.limit), ("00:AA:BB:CC:DD:EE", 5));
        assert_eq!(list_query("").unwrap().limit, DEFAULT_LIMIT);
        assert_eq!(
            list_query("state=closed").unwrap_err().to_string(),
            "state: 'closed' is not an alarm state (expected open, acknowledged or resolved)"
        );
        assert_eq!(list_query("zone=z").unwrap_err().to_string(), "zone: 'z' is not a UUID");
        assert!(list_query("limit=1001").unwrap_err().to_string().starts_with("limit: must be a whole number"));
        assert_eq!(
            list_query("page=2").unwrap_err().to_string(),
            "page: unknown query parameter (expected state, mac, zone, limit or cursor)"
        );
    }

    #[test]
    fn a_path_that_is_not_a_uuid_is_invalid() {
        assert_eq!(alarm_id("nope").unwrap_err().to_string(), "AlarmID: 'nope' is not a UUID");
        assert!(alarm_id("01900000-0000-7000-8000-0000000000ab").is_ok());
    }
}
