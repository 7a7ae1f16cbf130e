//! The device registry: named devices by MAC, written whole (`PUT`), read, deleted, listed a
//! page at a time in MAC order (by group, and by text in the name or MAC), and imported in bulk
//! ([`import`]). Tracking needs no registration: no other service reads the registry, so its
//! writes are not announced.

mod csv;
pub(crate) mod import;

use serde::Serialize;
use warp::reply::Response;
use zonecast_model::{ConfigKind, Device, DeviceInput, Mac};
use zonecast_store::DeviceQuery;

use super::history::number_parameter;
use crate::context::Context;
use crate::error::ApiError;
use crate::{body, reply};

/// Devices a page holds when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;

/// Most devices a page may hold.
pub const MAX_LIMIT: usize = 1000;

/// What `GET /v3/devices` answers.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DevicePage {
    /// The devices, in MAC order.
    #[serde(rename = "Devices")]
    pub devices: Vec<Device>,
    /// Pass it as `cursor` (with the same other parameters) for the next page; null when there
    /// is no more.
    #[serde(rename = "NextCursor")]
    pub next_cursor: Option<String>,
}

/// Mixed into cursors: they are opaque, not MACs to count on.
const CURSOR_MASK: u64 = 0x3D5C_A11E_0000_0000;

/// A cursor: sixteen lower-case hex digits standing for the MAC a page ended with (its 48 bits;
/// any higher one stands for the end of the listing).
fn encode_cursor(mac: &Mac) -> String {
    let bits = mac.as_str().bytes().filter(u8::is_ascii_hexdigit).fold(0u64, |n, b| {
        // A hex digit of a parsed MAC.
        n << 4 | u64::from(char::from(b).to_digit(16).unwrap_or(0))
    });
    format!("{:016x}", bits ^ CURSOR_MASK)
}

/// The MAC a cursor stands for, `None` for the end of the listing; anything but sixteen hex
/// digits is 400.
fn decode_cursor(text: &str) -> Result<Option<Mac>, ApiError> {
    let bad = || ApiError::Malformed("cursor: not a NextCursor of GET /v3/devices".into());
    let bits = Some(text)
        .filter(|t| t.len() == 16 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|t| u64::from_str_radix(t, 16).ok())
        .map(|n| n ^ CURSOR_MASK)
        .ok_or_else(bad)?;
    if bits >= 1 << 48 {
        return Ok(None);
    }
    let octets: Vec<String> = (0..6).rev().map(|i| format!("{:02X}", (bits >> (8 * i)) & 0xFF)).collect();
    octets.join(":").parse().map(Some).map_err(|_| bad())
}

/// The parameters of `GET /v3/devices`.
#[derive(Debug)]
struct ListRequest {
    query: DeviceQuery,
    /// A cursor past the last MAC there can be: the page is empty.
    at_end: bool,
}

/// The query of `GET /v3/devices`: `group` (empty: devices without one), `q` (text in the name
/// or MAC, any case), `limit` and `cursor`.
fn list_query(query: &str) -> Result<ListRequest, ApiError> {
    let mut out = DeviceQuery { limit: DEFAULT_LIMIT, ..DeviceQuery::default() };
    let mut at_end = false;
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "group" => {
                let group = value.trim();
                out.group = Some((!group.is_empty()).then(|| group.to_owned()));
            }
            "q" => out.search = Some(value.trim()).filter(|q| !q.is_empty()).map(DeviceQuery::search),
            "limit" => out.limit = number_parameter("limit", &value, 1, MAX_LIMIT as u64)? as usize,
            "cursor" => match decode_cursor(&value)? {
                Some(mac) => (out.after, at_end) = (Some(mac), false),
                None => at_end = true,
            },
            other => {
                return Err(ApiError::Invalid(format!(
                    "{other}: unknown query parameter (expected group, q, limit or cursor)"
                )));
            }
        }
    }
    Ok(ListRequest { query: out, at_end })
}

/// `GET /v3/devices`: a page of devices in MAC order.
pub async fn list(ctx: &Context, query: &str) -> Result<Response, ApiError> {
    let ListRequest { mut query, at_end } = list_query(query)?;
    if at_end {
        return Ok(reply::ok(&DevicePage { devices: Vec::new(), next_cursor: None }));
    }
    let limit = query.limit;
    // One more than the page holds: whether there is a next page.
    query.limit = limit + 1;
    let mut devices = ctx.store.list_devices(&query).await?;
    let next_cursor = if devices.len() > limit {
        devices.truncate(limit);
        devices.last().map(|d| encode_cursor(&d.mac))
    } else {
        None
    };
    Ok(reply::ok(&DevicePage { devices, next_cursor }))
}

/// A MAC path parameter, percent-decoded (clients may send `:` as `%3A`).
pub(crate) fn path_mac(raw: &str) -> Result<Mac, String> {
    percent_encoding::percent_decode_str(raw).decode_utf8().map_err(|e| e.to_string())?.parse()
}

/// The device a path names; text that is not a MAC names none (404).
fn named(raw: &str) -> Result<Mac, ApiError> {
    path_mac(raw).map_err(|_| ApiError::NotFound(format!("device {raw} not found")))
}

/// `GET /v3/devices/{MAC}`.
pub async fn get(ctx: &Context, raw: &str) -> Result<Response, ApiError> {
    Ok(reply::ok(&ctx.store.get_device(&named(raw)?).await?))
}

/// `PUT /v3/devices/{MAC}`: creates the device or replaces its record whole; answers it as
/// stored. A path that is not a MAC cannot name a device to create (422).
pub async fn put(ctx: &Context, raw: &str, body: &bytes::Bytes) -> Result<Response, ApiError> {
    let mac = path_mac(raw).map_err(|e| ApiError::Invalid(format!("MAC: {e}")))?;
    let device = DeviceInput::parse(&body::object(body, &ctx.limits)?)?.into_device(mac);
    ctx.store.put_devices(std::slice::from_ref(&device)).await?;
    let applied = announce(ctx, std::slice::from_ref(&device.mac)).await;
    Ok(applied.stamp(reply::ok(&device)))
}

/// `DELETE /v3/devices/{MAC}`.
pub async fn delete(ctx: &Context, raw: &str) -> Result<Response, ApiError> {
    let mac = named(raw)?;
    ctx.store.delete_device(&mac).await?;
    Ok(announce(ctx, &[mac]).await.stamp(reply::ack()))
}

/// Announces registry writes of `macs`: the evaluators put the names and groups events carry
/// in force.
pub(super) async fn announce(ctx: &Context, macs: &[Mac]) -> crate::applied::Applied {
    ctx.announce(ConfigKind::Devices, macs.iter().map(Mac::to_string).collect(), None).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_the_mac_it_was_made_of() {
        for text in ["00:00:00:00:00:00", "00:AA:BB:CC:DD:EE", "FF:FF:FF:FF:FF:FF"] {
            let mac: Mac = text.parse().unwrap();
            let cursor = encode_cursor(&mac);
            assert_eq!(cursor.len(), 16);
            assert_eq!(decode_cursor(&cursor).unwrap(), Some(mac.clone()));
            assert_eq!(decode_cursor(&cursor.to_ascii_uppercase()).unwrap(), Some(mac));
        }
        let past_every_mac = format!("{:016x}", (1u64 << 48) ^ CURSOR_MASK);
        assert_eq!(decode_cursor(&past_every_mac).unwrap(), None);
        assert_eq!(decode_cursor("0000000000000000").unwrap(), None);
        for bad in ["", "00:AA:BB:CC:DD:EE", "3d5ca11e0000000g", "3d5ca11e000000001"] {
            assert!(matches!(decode_cursor(bad), Err(ApiError::Malformed(_))), "{bad}");
        }
    }

    #[test]
    fn list_parameters_are_read_and_unknown_ones_named() {
        let q = list_query("group=+fleet+&q=Fork&limit=5").unwrap().query;
        assert_eq!((q.group, q.limit), (Some(Some("fleet".to_owned())), 5));
        assert_eq!(q.search, Some(DeviceQuery::search("Fork")));
        assert_eq!(list_query("group=").unwrap().query.group, Some(None));
        assert_eq!(list_query("q=%20").unwrap().query.search, None);
        assert!(list_query("cursor=0000000000000000").unwrap().at_end);
        assert!(list_query("limit=0").unwrap_err().to_string().starts_with("limit: must be a whole number"));
        assert_eq!(
            list_query("page=2").unwrap_err().to_string(),
            "page: unknown query parameter (expected group, q, limit or cursor)"
        );
    }

    #[test]
    fn path_macs_may_be_percent_encoded() {
        assert_eq!(path_mac("00%3Aaa%3abb:cc:dd:ee").unwrap().as_str(), "00:AA:BB:CC:DD:EE");
        assert!(path_mac("00%3G").is_err());
        assert!(path_mac("00%FF%FE").is_err(), "not UTF-8 once decoded");
    }
}
