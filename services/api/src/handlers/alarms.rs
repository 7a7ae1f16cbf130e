//! Alarms a person can acknowledge: listed a page at a time (newest first; by state, device,
//! zone, type and whether their condition holds), read one at a time, acknowledged and
//! resolved. A change is a conditional update in the store, so of two concurrent changes one
//! wins and the other is 409, and each change is published as an event of its own
//! ([`crate::alarm_changes`]). An alarm acknowledged after its condition cleared is resolved by
//! zonecast at once, and both changes are published. The alarms themselves are recorded from
//! the journal by [`crate::alarm_recorder`].

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;
use warp::http::HeaderMap;
use warp::reply::Response;
use zonecast_model::{AlarmChange, AlarmNote, AlarmRecord, AlarmSelection, AlarmUpdate, EventType, Mac, StoredAlarm};
use zonecast_store::{AlarmChanged, AlarmQuery, StoreError};

use super::history::number_parameter;
use crate::context::Context;
use crate::error::ApiError;
use crate::{body, reply};

/// Alarms a page holds when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;

/// Most alarms a page may hold.
pub const MAX_LIMIT: usize = 1000;

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

/// The query of `GET /v3/alarms`: `state` (comma-separated), `mac`, `zone`, `type`, `active`,
/// `limit` and `cursor`.
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
            "type" => {
                let kind = value.trim().parse::<EventType>().ok().filter(|k| k.is_alarm());
                out.kind = Some(kind.ok_or_else(|| {
                    let types: Vec<&str> = EventType::ALARMS.iter().map(|t| t.as_str()).collect();
                    ApiError::Invalid(format!("type: '{value}' is not an alarm type ({})", types.join(", ")))
                })?);
            }
            "active" => {
                out.active = Some(match value.trim() {
                    "true" => true,
                    "false" => false,
                    other => return Err(ApiError::Invalid(format!("active: '{other}' is not true or false"))),
                });
            }
            "limit" => out.limit = number_parameter("limit", &value, 1, MAX_LIMIT as u64)? as usize,
            "cursor" => out.after = Some(decode_cursor(&value)?),
            other => {
                return Err(ApiError::Invalid(format!(
                    "{other}: unknown query parameter (expected state, mac, zone, type, active, limit or cursor)"
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

/// Most alarms one bulk change takes by a filter; the answer's `More` says that more match.
pub const MAX_SELECTED: usize = 10_000;

/// What `POST /v3/alarms/acknowledge` and `…/resolve` answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct BulkChange {
    /// How many alarms the change was made on.
    #[serde(rename = "Changed")]
    pub changed: usize,
    /// Those alarms, upper case.
    #[serde(rename = "AlarmIDs")]
    pub alarm_ids: Vec<String>,
    /// How many of the AlarmIDs given, or of the alarms the filter selected, the change was not
    /// made on: unknown, or in a state the change cannot start from (changed meanwhile).
    #[serde(rename = "Unchanged")]
    pub unchanged: usize,
    /// Whether more than [`MAX_SELECTED`] alarms matched the filter: send the request again for
    /// the rest.
    #[serde(rename = "More")]
    pub more: bool,
}

/// The alarms `selection`'s filter takes that `change` can start from, newest first, at most
/// [`MAX_SELECTED`]; whether more match.
async fn selected(
    ctx: &Context,
    selection: &AlarmSelection,
    change: AlarmChange,
) -> Result<(Vec<Uuid>, bool), ApiError> {
    let from = change.from();
    let states = match selection.states.is_empty() {
        true => from.to_vec(),
        false => selection.states.iter().copied().filter(|s| from.contains(s)).collect(),
    };
    if states.is_empty() {
        return Ok((Vec::new(), false));
    }
    let mut query = AlarmQuery {
        states,
        mac: selection.mac.clone(),
        zone: selection.zone,
        kind: selection.kind,
        active: selection.active,
        raised_before: selection.raised_before,
        after: None,
        limit: MAX_LIMIT,
    };
    let mut ids = Vec::new();
    loop {
        let page = ctx.store.list_alarms(&query).await?;
        let Some(last) = page.last() else { return Ok((ids, false)) };
        query.after = Some((last.record.raised_at, last.record.alarm_id));
        let full = page.len() == MAX_LIMIT;
        for alarm in page {
            if ids.len() == MAX_SELECTED {
                return Ok((ids, true));
            }
            ids.push(alarm.record.alarm_id);
        }
        if !full {
            return Ok((ids, false));
        }
    }
}

/// `POST /v3/alarms/acknowledge` and `…/resolve`: makes `change` as the caller on the alarms
/// the body names or selects, each as a change of one alarm is made (a conditional update,
/// published as its own event), and answers how many changed. A store that fails midway ends
/// the request with its error; the changes made before it stand and are published.
pub async fn change_many(
    ctx: &Context,
    headers: &HeaderMap,
    body: &bytes::Bytes,
    change: AlarmChange,
) -> Result<Response, ApiError> {
    let selection = AlarmSelection::parse(&body::object(body, &ctx.limits)?)?;
    let by = ctx.auth.authenticate(headers)?.subject;
    let update = AlarmUpdate { change, by, at: Utc::now(), note: selection.note.clone() };
    let (ids, more) = match &selection.ids {
        Some(ids) => (ids.clone(), false),
        None => selected(ctx, &selection, change).await?,
    };
    let mut answer = BulkChange { changed: 0, alarm_ids: Vec::new(), unchanged: 0, more };
    for id in ids {
        match ctx.store.change_alarm(id, &update).await {
            Ok(AlarmChanged::Changed(alarm)) => {
                publish(ctx, change, &alarm.record, update.at).await;
                answer.changed += 1;
                answer.alarm_ids.push(zonecast_model::format_id(&id));
            }
            Ok(AlarmChanged::Refused(_)) | Err(StoreError::NotFound { .. }) => answer.unchanged += 1,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(reply::ok(&answer))
}

/// Publishes `change` of `record`, and the resolution by zonecast that an acknowledgement of an
/// alarm whose condition had cleared made in the same update.
async fn publish(ctx: &Context, change: AlarmChange, record: &AlarmRecord, at: DateTime<Utc>) {
    let events = ctx.change_events();
    events.publish(change, record, at).await;
    if change == AlarmChange::Acknowledge && record.state == zonecast_model::AlarmState::Resolved {
        events.publish(AlarmChange::Resolve, record, at).await;
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
            "Count": 1, "LastRaisedAt": "2026-11-21T10:00:00.123Z", "LastEventID": "01900000-0000-7000-8000-0000000000AB",
            "Active": true, "ClearedAt": null, "State": "open", "AcknowledgedBy": null, "AcknowledgedAt": null, "AcknowledgedNote": null,
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
        let q = list_query("type=DEVICE_OFFLINE&active=false").unwrap();
        assert_eq!((q.kind, q.active), (Some(EventType::DeviceOffline), Some(false)));
        assert!(
            list_query("type=ZONE_ENTER")
                .unwrap_err()
                .to_string()
                .starts_with("type: 'ZONE_ENTER' is not an alarm type")
        );
        assert_eq!(list_query("active=yes").unwrap_err().to_string(), "active: 'yes' is not true or false");
        assert!(list_query("limit=1001").unwrap_err().to_string().starts_with("limit: must be a whole number"));
        assert_eq!(
            list_query("page=2").unwrap_err().to_string(),
            "page: unknown query parameter (expected state, mac, zone, type, active, limit or cursor)"
        );
    }

    #[test]
    fn a_path_that_is_not_a_uuid_is_invalid() {
        assert_eq!(alarm_id("nope").unwrap_err().to_string(), "AlarmID: 'nope' is not a UUID");
        assert!(alarm_id("01900000-0000-7000-8000-0000000000ab").is_ok());
    }
}
