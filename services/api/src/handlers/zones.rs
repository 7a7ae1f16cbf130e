//! The zone routes: list, create, read, update and delete zones (one or a batch), activate and
//! deactivate, DeviceList additions and removals, reset, lock and unlock. Bulk operations read,
//! merge and validate every element first and then write all of them in one store transaction: all
//! or nothing. Every write that changes existing zones is an atomic read-modify-write
//! ([`versions::write`]); single-zone writes honour `If-Match` and answer with the zone's new
//! `ETag`.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use serde_json::Value;
use uuid::Uuid;
use warp::reply::Response;
use zonecast_model::{
    CollidingDevice, ConfigKind, Invalid, Limits, Mac, Macs, NewZone, Secret, Zone, ZoneInput, ZoneSpec, ZoneUpdate,
    format_id,
};
use zonecast_store::StoreError;

use super::{element_id, versions};
use crate::body;
use crate::context::Context;
use crate::error::ApiError;
use crate::reply;

fn ids_of(zones: &[ZoneSpec]) -> Vec<String> {
    zones.iter().map(|z| format_id(&z.id)).collect()
}

async fn announce(ctx: &Context, zones: &[ZoneSpec]) -> crate::applied::Applied {
    ctx.announce(ConfigKind::Zones, ids_of(zones), None).await
}

/// Seals the secrets of `input`'s http-request actions, right after validation: a secret goes
/// no further in clear.
fn seal(ctx: &Context, mut input: ZoneInput) -> Result<ZoneInput, ApiError> {
    input.seal_secrets(|plain| seal_secret(ctx, plain))?;
    Ok(input)
}

/// [`seal`] for a zone to create.
fn seal_new(ctx: &Context, mut zone: NewZone) -> Result<NewZone, ApiError> {
    zone.seal_secrets(|plain| seal_secret(ctx, plain))?;
    Ok(zone)
}

/// One secret sealed with the deployment's key; a failure is the server's.
fn seal_secret(ctx: &Context, plain: &Secret) -> Result<String, ApiError> {
    ctx.keys.seal_text(plain.expose()).map_err(|e| ApiError::Internal(e.to_string()))
}

/// A zone body, validated, its secrets sealed.
fn zone_input(ctx: &Context, body: &Bytes) -> Result<ZoneInput, ApiError> {
    seal(ctx, ZoneInput::parse(&body::object(body, &ctx.limits)?, &ctx.limits)?)
}

/// `GET /v3/modules/zones`: every zone.
pub async fn list(ctx: &Context) -> Result<Response, ApiError> {
    let zones = ctx.store.list_zones().await?;
    let mut inside: HashMap<Uuid, Vec<CollidingDevice>> = HashMap::new();
    for c in ctx.store.all_collisions().await? {
        inside.entry(c.zone_id).or_default().push(c.into());
    }
    let out: Vec<Zone> = zones
        .into_iter()
        .map(|z| {
            let devices = inside.remove(&z.id).unwrap_or_default();
            Zone::new(z, ctx.site_id, devices)
        })
        .collect();
    Ok(reply::ok(&out))
}

/// `GET /v3/modules/zones/{ZoneID}`: one zone.
pub async fn get(ctx: &Context, id: Uuid) -> Result<Response, ApiError> {
    let zone = ctx.store.get_zone(id).await?;
    let version = zone.version;
    let inside = ctx.store.colliding_devices(id).await?;
    Ok(versions::with_etag(reply::ok(&Zone::new(zone, ctx.site_id, inside)), version))
}

/// `POST /v3/modules/zones`: creates one zone.
pub async fn create(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let zone = NewZone::parse(&body::object(body, &ctx.limits)?, &ctx.limits)?;
    let zone = seal_new(ctx, zone)?.with_id(Uuid::new_v4());
    ctx.store.insert_zones(std::slice::from_ref(&zone)).await?;
    let applied = announce(ctx, std::slice::from_ref(&zone)).await;
    let version = zone.version;
    Ok(applied.stamp(versions::with_etag(reply::ok(&Zone::new(zone, ctx.site_id, Vec::new())), version)))
}

/// `POST /v3/modules/zones/batch`: creates zones, all or nothing.
pub async fn create_batch(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let NewZones(zones) = NewZones::parse(&batch(ctx, body)?, &ctx.limits)?;
    let (zones, applied) = create_zones(ctx, zones.into_iter().map(|z| (Uuid::new_v4(), z)).collect()).await?;
    let out: Vec<Zone> = zones.into_iter().map(|z| Zone::new(z, ctx.site_id, Vec::new())).collect();
    Ok(applied.stamp(reply::ok(&out)))
}

/// The batch create after its body is read: each zone's secrets sealed, then all of them created
/// with the ZoneIDs given, in one store transaction, and announced.
pub(crate) async fn create_zones(
    ctx: &Context,
    zones: Vec<(Uuid, NewZone)>,
) -> Result<(Vec<ZoneSpec>, crate::applied::Applied), ApiError> {
    let zones = zones
        .into_iter()
        .map(|(id, zone)| Ok(seal_new(ctx, zone)?.with_id(id)))
        .collect::<Result<Vec<_>, ApiError>>()?;
    ctx.store.insert_zones(&zones).await?;
    let applied = announce(ctx, &zones).await;
    Ok((zones, applied))
}

/// The body of a batch create: the zones to create.
#[derive(schemars::JsonSchema)]
#[schemars(extend("x-limit" = {"maxItems": "batch_zones"}))]
pub struct NewZones(pub(crate) Vec<NewZone>);

impl NewZones {
    /// Reads the zones of a batch create one after the other, each as [`NewZone::parse`] reads
    /// one; a refusal names the zone's place, `[i]`.
    pub(crate) fn parse(items: &[Value], limits: &Limits) -> Result<Self, Invalid> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| NewZone::parse(v, limits).map_err(|e| e.within(&format!("[{i}]"))))
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

/// The body of a batch update: the changes, each selecting its zone.
#[derive(schemars::JsonSchema)]
#[schemars(extend("x-limit" = {"maxItems": "batch_zones"}))]
pub struct ZoneUpdates(Vec<ZoneUpdate>);

impl ZoneUpdates {
    /// Reads a batch update body (see [`batch`]), each change as [`ZoneUpdate::parse`] reads it;
    /// a refusal names the change's place, `[i]`.
    fn parse(ctx: &Context, body: &Bytes) -> Result<Self, ApiError> {
        let items = batch(ctx, body)?;
        let updates = items
            .iter()
            .enumerate()
            .map(|(i, v)| ZoneUpdate::parse(v, &ctx.limits).map_err(|e| e.within(&format!("[{i}]"))))
            .collect::<Result<_, _>>()?;
        Ok(Self(updates))
    }
}

/// The body of the zone-list delete, activate and deactivate: zone IDs (any case; text that names
/// no zone is 404, and nothing changes).
#[derive(schemars::JsonSchema)]
pub struct ZoneIds(Vec<uuid::Uuid>);

impl ZoneIds {
    /// Reads `[ZoneID]`, each once, in the order sent (see [`element_id`]).
    fn parse(ctx: &Context, body: &Bytes) -> Result<Self, ApiError> {
        let mut seen = HashSet::new();
        let mut ids = Vec::new();
        for (i, v) in body::array(body, &ctx.limits)?.iter().enumerate() {
            let id = element_id(v, i, "zone")?;
            if seen.insert(id) {
                ids.push(id);
            }
        }
        Ok(Self(ids))
    }
}

/// The body of a batch create or update: an array of at most [`Limits::batch_zones`] zones (each
/// evaluator applies a batch as one change), counted before any zone is read.
///
/// [`Limits::batch_zones`]: zonecast_model::Limits::batch_zones
fn batch(ctx: &Context, body: &Bytes) -> Result<Vec<Value>, ApiError> {
    let items = body::array(body, &ctx.limits)?;
    let most = ctx.limits.batch_zones;
    if items.len() > most {
        return Err(ApiError::Invalid(format!("must have at most {most} zones, got {}", items.len())));
    }
    Ok(items)
}

/// `PUT /v3/modules/zones/{ZoneID}`: only the supplied fields change.
pub async fn update(ctx: &Context, id: Uuid, body: &Bytes, if_match: Option<&str>) -> Result<Response, ApiError> {
    let input = zone_input(ctx, body)?;
    let written = versions::write(ctx, || async {
        let zone = ctx.store.get_zone(id).await?;
        // A body the zone cannot take is 422 whatever the version asked for.
        let updated = input.clone().update(&zone)?;
        versions::check(if_match, &zone)?;
        Ok(vec![updated])
    })
    .await?;
    let applied = announce(ctx, &written).await;
    Ok(applied.stamp(single_ack(&written)))
}

/// Ack of a single-zone write, with the zone's new ETag.
fn single_ack(written: &[ZoneSpec]) -> Response {
    match written.first() {
        Some(zone) => versions::with_etag(reply::ack(), zone.version),
        None => reply::ack(),
    }
}

/// `PUT /v3/modules/zones/batch`: each element is matched by ZoneID, else by a Name exactly one
/// zone has.
pub async fn update_batch(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let ZoneUpdates(updates) = ZoneUpdates::parse(ctx, body)?;
    let inputs = updates.into_iter().map(|ZoneUpdate(input)| seal(ctx, input)).collect::<Result<Vec<_>, _>>()?;
    let changed = versions::write(ctx, || async { merge_batch(&ctx.store.list_zones().await?, &inputs) }).await?;
    let applied = announce(ctx, &changed).await;
    Ok(applied.stamp(reply::ack()))
}

/// The zones a batch update makes of `all` with `inputs`, each element matched by ZoneID, else
/// by a Name exactly one zone has. Several elements for one zone apply in order.
fn merge_batch(all: &[ZoneSpec], inputs: &[ZoneInput]) -> Result<Vec<ZoneSpec>, ApiError> {
    let mut changed: Vec<ZoneSpec> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let target = match (&input.zone_id, &input.name) {
            (Some(text), _) => match text.parse::<Uuid>() {
                Ok(id) => id,
                Err(_) => return Err(ApiError::NotFound(format!("[{i}]: zone {text} not found"))),
            },
            (None, Some(name)) => {
                let mut named = all.iter().filter(|z| &z.name == name);
                match (named.next(), named.next()) {
                    (Some(z), None) => z.id,
                    (None, _) => return Err(ApiError::NotFound(format!("[{i}]: no zone is named '{name}'"))),
                    (Some(_), Some(_)) => {
                        return Err(ApiError::Invalid(format!(
                            "[{i}].Name: several zones are named '{name}'; select the zone by ZoneID"
                        )));
                    }
                }
            }
            (None, None) => {
                return Err(ApiError::Invalid(format!("[{i}]: ZoneID or Name is required to select the zone")));
            }
        };
        let base = match changed.iter().position(|z| z.id == target) {
            Some(p) => changed.swap_remove(p),
            None => all
                .iter()
                .find(|z| z.id == target)
                .cloned()
                .ok_or_else(|| ApiError::NotFound(format!("[{i}]: zone {} not found", format_id(&target))))?,
        };
        changed.push(input.clone().update(&base).map_err(|e| e.within(&format!("[{i}]")))?);
    }
    Ok(changed)
}

/// `DELETE /v3/modules/zones/{ZoneID}`; with `If-Match`, only a zone still at that version is
/// deleted.
pub async fn delete(ctx: &Context, id: Uuid, if_match: Option<&str>) -> Result<Response, ApiError> {
    match if_match {
        None => ctx.store.delete_zones(&[id]).await?,
        Some(_) => {
            let zone = ctx.store.get_zone(id).await?;
            versions::check(if_match, &zone)?;
            ctx.store.delete_zone_at(id, zone.version).await.map_err(|e| match e {
                StoreError::Conflict { .. } => ApiError::PreconditionFailed(e.to_string()),
                other => other.into(),
            })?;
        }
    }
    let applied = ctx.announce(ConfigKind::Zones, vec![format_id(&id)], None).await;
    Ok(applied.stamp(reply::ack()))
}

/// `DELETE /v3/modules/zones`: deletes the listed zones, all or nothing.
pub async fn delete_batch(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let ZoneIds(ids) = ZoneIds::parse(ctx, body)?;
    ctx.store.delete_zones(&ids).await?;
    let applied = ctx.announce(ConfigKind::Zones, ids.iter().map(format_id).collect(), None).await;
    Ok(applied.stamp(reply::ack()))
}

/// `POST /v3/modules/zones/activate` and `/deactivate`.
pub async fn set_active(ctx: &Context, body: &Bytes, active: bool) -> Result<Response, ApiError> {
    let ZoneIds(ids) = ZoneIds::parse(ctx, body)?;
    let zones = versions::write(ctx, || async {
        let mut zones = ctx.store.get_zones(&ids).await?;
        for z in &mut zones {
            z.active = active;
        }
        Ok(zones)
    })
    .await?;
    let applied = announce(ctx, &zones).await;
    Ok(applied.stamp(reply::ack()))
}

/// `POST` and `DELETE /v3/modules/zones/{ZoneID}/devices`: DeviceList additions and removals.
pub async fn change_devices(
    ctx: &Context,
    id: Uuid,
    body: &Bytes,
    add: bool,
    if_match: Option<&str>,
) -> Result<Response, ApiError> {
    let Macs(macs) = Macs::parse(&body::array(body, &ctx.limits)?, &ctx.limits)?;
    let most = ctx.limits.device_list;
    let written = versions::write(ctx, || async {
        let mut zone = ctx.store.get_zone(id).await?;
        let listed: HashSet<&Mac> = zone.device_list.iter().collect();
        if add {
            let new: Vec<Mac> = macs.iter().filter(|m| !listed.contains(m)).cloned().collect();
            let total = zone.device_list.len() + new.len();
            if total > most {
                return Err(ApiError::Invalid(format!(
                    "DeviceList: would hold {total} devices; a zone's DeviceList holds at most {most}"
                )));
            }
            zone.device_list.extend(new);
        } else {
            let gone: HashSet<&Mac> = macs.iter().collect();
            zone.device_list.retain(|m| !gone.contains(m));
        }
        // After the list's own bound: a change the zone cannot take is 422 whatever the version.
        versions::check(if_match, &zone)?;
        Ok(vec![zone])
    })
    .await?;
    let applied = announce(ctx, &written).await;
    Ok(applied.stamp(single_ack(&written)))
}

/// `POST /v3/modules/zones/{ZoneID}/reset`: forgets the zone's collisions; evaluators emit the
/// exits (Reason `reset`).
pub async fn reset(ctx: &Context, id: Uuid) -> Result<Response, ApiError> {
    ctx.store.get_zone(id).await?;
    ctx.store.clear_collisions(id).await?;
    let applied =
        ctx.announce(ConfigKind::Zones, vec![format_id(&id)], Some(zonecast_model::ConfigOperation::Reset)).await;
    Ok(applied.stamp(reply::ack()))
}

/// Lock and unlock: sets `IsGeometryLocked`.
pub async fn set_locked(ctx: &Context, id: Uuid, locked: bool, if_match: Option<&str>) -> Result<Response, ApiError> {
    let (written, applied) = write_locked(ctx, id, locked, if_match).await?;
    Ok(applied.stamp(single_ack(&written)))
}

/// Lock and unlock after the request is read: the zone written with `IsGeometryLocked` set,
/// and announced.
pub(crate) async fn write_locked(
    ctx: &Context,
    id: Uuid,
    locked: bool,
    if_match: Option<&str>,
) -> Result<(Vec<ZoneSpec>, crate::applied::Applied), ApiError> {
    let written = versions::write(ctx, || async {
        let mut zone = ctx.store.get_zone(id).await?;
        versions::check(if_match, &zone)?;
        zone.is_geometry_locked = locked;
        Ok(vec![zone])
    })
    .await?;
    let applied = announce(ctx, &written).await;
    Ok((written, applied))
}
