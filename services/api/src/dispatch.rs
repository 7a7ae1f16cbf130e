//! From an operation of the route table to its handler.

use bytes::Bytes;
use uuid::Uuid;
use warp::http::HeaderMap;
use warp::reply::Response;
use zonecast_model::{AlarmChange, ShelfTarget};

use crate::context::Context;
use crate::error::ApiError;
use crate::handlers::{
    alarms, certificates, cluster, connections, devices, history, settings, shelves, stream, system, visits, zones,
};
use crate::routes::{self, Op};
use crate::{openapi, reply};

/// Runs `op` with its path parameters and body.
pub async fn dispatch(
    ctx: &Context,
    op: Op,
    params: &[String],
    query: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = |what: &'static str| param_id(params, what);
    match op {
        Op::ListZones => zones::list(ctx).await,
        Op::CreateZone => zones::create(ctx, &body).await,
        Op::GetZone => zones::get(ctx, id("zone")?).await,
        Op::DeleteZone => zones::delete(ctx, id("zone")?, if_match(headers)).await,
        Op::UpdateZone => zones::update(ctx, id("zone")?, &body, if_match(headers)).await,
        Op::CreateZones => zones::create_batch(ctx, &body).await,
        Op::UpdateZones => zones::update_batch(ctx, &body).await,
        Op::DeleteZones => zones::delete_batch(ctx, &body).await,
        Op::ActivateZones => zones::set_active(ctx, &body, true).await,
        Op::DeactivateZones => zones::set_active(ctx, &body, false).await,
        Op::AddDevices => zones::change_devices(ctx, id("zone")?, &body, true, if_match(headers)).await,
        Op::RemoveDevices => zones::change_devices(ctx, id("zone")?, &body, false, if_match(headers)).await,
        Op::ResetZone => zones::reset(ctx, id("zone")?).await,
        Op::LockZone => zones::set_locked(ctx, id("zone")?, true, if_match(headers)).await,
        Op::UnlockZone => zones::set_locked(ctx, id("zone")?, false, if_match(headers)).await,
        Op::ListSettings => settings::list(ctx).await,
        Op::PutSetting => settings::put(ctx, &body).await,
        Op::SetRadii => settings::set_radii(ctx, &body).await,
        Op::ListDevices => devices::list(ctx, query).await,
        Op::GetDevice => devices::get(ctx, param(params)).await,
        Op::PutDevice => devices::put(ctx, param(params), &body).await,
        Op::DeleteDevice => devices::delete(ctx, param(params)).await,
        Op::ImportDevices => devices::import::import(ctx, headers, &body).await,
        Op::ListAlarms => alarms::list(ctx, query).await,
        Op::GetAlarm => alarms::get(ctx, param(params)).await,
        Op::AcknowledgeAlarm => alarms::change(ctx, param(params), headers, &body, AlarmChange::Acknowledge).await,
        Op::ResolveAlarm => alarms::change(ctx, param(params), headers, &body, AlarmChange::Resolve).await,
        Op::AcknowledgeAlarms => alarms::change_many(ctx, headers, &body, AlarmChange::Acknowledge).await,
        Op::ListShelves => shelves::list(ctx).await,
        Op::ShelveZone => shelves::shelve_zone(ctx, id("zone")?, headers, &body).await,
        Op::UnshelveZone => shelves::unshelve(ctx, ShelfTarget::Zone(id("zone")?)).await,
        Op::ShelveDevice => shelves::shelve_device(ctx, param(params), headers, &body).await,
        Op::UnshelveDevice => shelves::unshelve(ctx, ShelfTarget::Device(shelves::device(param(params))?)).await,
        Op::ResolveAlarms => alarms::change_many(ctx, headers, &body, AlarmChange::Resolve).await,
        Op::ListConnections => connections::list(ctx).await,
        Op::CreateConnection => connections::create(ctx, &body).await,
        Op::GetConnection => connections::get(ctx, id("connection")?).await,
        Op::UpdateConnection => connections::update(ctx, id("connection")?, &body).await,
        Op::DeleteConnection => connections::delete(ctx, id("connection")?).await,
        Op::ConnectionStatus => connections::status(ctx, id("connection")?).await,
        Op::ListCertificates => certificates::list(ctx).await,
        Op::CreateCertificate => certificates::create(ctx, &body).await,
        Op::UpdateCertificate => certificates::update(ctx, id("certificate profile")?, &body).await,
        Op::DeleteCertificate => certificates::delete(ctx, id("certificate profile")?).await,
        Op::Positions => system::positions(ctx, &body).await,
        Op::EventStream => stream::open(ctx, query, headers).await,
        Op::PositionStream => stream::positions::open(ctx, query, headers).await,
        Op::EventHistory => history::list(ctx, query).await,
        Op::ZoneVisits => visits::list(ctx, id("zone")?, query, headers).await,
        Op::ZoneOccupancy => visits::occupancy(ctx, id("zone")?, query, headers).await,
        Op::ClusterStatus => cluster::status(ctx).await,
        Op::Token => system::token(ctx, headers, &body),
        Op::OpenApi => Ok(reply::ok(&openapi::document(routes::served(ctx.positions.is_some()), &ctx.limits))),
        Op::Live => Ok(zonecast_http::ops::Health::live()),
        Op::Health => Ok(system::health(ctx).await),
        Op::Metrics => Ok(zonecast_http::ops::Health::metrics()),
    }
}

/// The `If-Match` header, if sent.
fn if_match(headers: &HeaderMap) -> Option<&str> {
    headers.get(warp::http::header::IF_MATCH).map(|v| v.to_str().unwrap_or_default())
}

/// The first path parameter as sent.
fn param(params: &[String]) -> &str {
    params.first().map(String::as_str).unwrap_or_default()
}

/// The first path parameter as a UUID (any case). Text that is not a UUID names no existing
/// item, so it is a 404 like any unknown ID.
fn param_id(params: &[String], what: &'static str) -> Result<Uuid, ApiError> {
    let raw = param(params);
    raw.parse::<Uuid>().map_err(|_| ApiError::NotFound(format!("{what} {raw} not found")))
}
