//! Zone settings (list, write one) and device radii.

use bytes::Bytes;
use warp::reply::Response;
use zonecast_model::{ConfigKind, RadiusMap, Setting};

use crate::body;
use crate::context::Context;
use crate::error::ApiError;
use crate::reply;

/// `GET /v3/modules/zones/settings`: every setting with the values written, else the defaults.
pub async fn list(ctx: &Context) -> Result<Response, ApiError> {
    let written = ctx.store.list_settings().await?;
    let out: Vec<_> = Setting::listing(&written).iter().map(Setting::to_json).collect();
    Ok(reply::ok(&out))
}

/// `PUT /v3/modules/zones/settings`: an unknown SettingName is 404, a bad value 422.
pub async fn put(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let value = body::object(body, &ctx.limits)?;
    let setting = Setting::parse(&value).map_err(|e| match e {
        Some(invalid) => ApiError::from(invalid),
        None => ApiError::NotFound(format!(
            "setting {} not found",
            value.get("SettingName").and_then(|v| v.as_str()).unwrap_or_default()
        )),
    })?;
    ctx.store.put_setting(&setting).await?;
    let applied = ctx.announce(ConfigKind::Settings, vec![setting.name.as_str().to_owned()], None).await;
    Ok(applied.stamp(reply::ack()))
}

/// `PUT /v3/modules/zones/devices/radius`: merged; a null value removes the device's own radius.
pub async fn set_radii(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let changes = RadiusMap::parse(&body::object(body, &ctx.limits)?, &ctx.limits)?.changes();
    ctx.store.merge_radii(&changes).await?;
    let applied = ctx.announce(ConfigKind::Radii, changes.iter().map(|(mac, _)| mac.to_string()).collect(), None).await;
    Ok(applied.stamp(reply::ack()))
}
