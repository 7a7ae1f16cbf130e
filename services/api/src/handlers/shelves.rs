//! Shelving a zone or a device (`POST …/shelve` with `Seconds` and `Note`), taking it back
//! (`DELETE …/shelve`), and listing what is shelved (`GET /v3/alarms/shelves`). While shelved,
//! the events of the zone's or device's conditions open no alarm and count on none (the alarm
//! recorder asks the store at the event's `Timestamp`); the events themselves still flow.

use chrono::Utc;
use uuid::Uuid;
use warp::http::HeaderMap;
use warp::reply::Response;
use zonecast_model::{Mac, Shelf, ShelfTarget, ShelveInput};

use crate::context::Context;
use crate::error::ApiError;
use crate::{body, reply};

/// `POST /v3/modules/zones/{ZoneID}/shelve`: the zone must exist.
pub async fn shelve_zone(
    ctx: &Context,
    id: Uuid,
    headers: &HeaderMap,
    body: &bytes::Bytes,
) -> Result<Response, ApiError> {
    ctx.store.get_zone(id).await?;
    shelve(ctx, ShelfTarget::Zone(id), headers, body).await
}

/// `POST /v3/devices/{MAC}/shelve`: any device, named in the registry or not.
pub async fn shelve_device(
    ctx: &Context,
    raw: &str,
    headers: &HeaderMap,
    body: &bytes::Bytes,
) -> Result<Response, ApiError> {
    shelve(ctx, ShelfTarget::Device(device(raw)?), headers, body).await
}

/// Shelves `target` as the caller, from now on for the `Seconds` of the body; answers the shelf.
async fn shelve(
    ctx: &Context,
    target: ShelfTarget,
    headers: &HeaderMap,
    body: &bytes::Bytes,
) -> Result<Response, ApiError> {
    let input = ShelveInput::parse(&body::object(body, &ctx.limits)?)?;
    let by = ctx.auth.authenticate(headers)?.subject;
    let shelf = Shelf::new(target, input, by, Utc::now());
    ctx.store.shelve(&shelf).await?;
    Ok(reply::ok(&shelf))
}

/// `DELETE /v3/modules/zones/{ZoneID}/shelve` and `DELETE /v3/devices/{MAC}/shelve`: 404 when
/// the zone or device is not shelved (never was, expired, or taken back already).
pub async fn unshelve(ctx: &Context, target: ShelfTarget) -> Result<Response, ApiError> {
    if ctx.store.unshelve(&target, Utc::now()).await? {
        return Ok(reply::ack());
    }
    let what = match &target {
        ShelfTarget::Zone(id) => format!("zone {}", zonecast_model::format_id(id)),
        ShelfTarget::Device(mac) => format!("device {mac}"),
    };
    Err(ApiError::NotFound(format!("{what} is not shelved")))
}

/// `GET /v3/alarms/shelves`: the zones and devices shelved now, the soonest to expire first.
pub async fn list(ctx: &Context) -> Result<Response, ApiError> {
    Ok(reply::ok(&ctx.store.list_shelves(Utc::now()).await?))
}

/// The device a path names (`:` may be sent as `%3A`); text that is not a MAC is 422.
pub fn device(raw: &str) -> Result<Mac, ApiError> {
    super::devices::path_mac(raw).map_err(|e| ApiError::Invalid(format!("MAC: {e}")))
}
