//! Zone versions over HTTP (`ETag`, `If-Match`) and the atomic read-modify-write that every
//! zone write goes through.
//!
//! A handler reads the zones it changes, computes their new state and writes it conditionally
//! on the versions it read (`Store::update_zones`). When a concurrent write came first the store
//! answers `Conflict` and the whole change is done again from a fresh read, so a write answered
//! 200 is never overwritten by one that read before it: 50 concurrent device additions keep all
//! 50 devices, and a lock answered 200 cannot be undone by a geometry or name update that read
//! the zone unlocked.

use std::future::Future;
use std::time::{Duration, Instant};

use warp::http::HeaderValue;
use warp::reply::Response;
use zonecast_model::ZoneSpec;
use zonecast_store::StoreError;

use crate::context::Context;
use crate::error::ApiError;

/// How long a zone write keeps redoing its change while concurrent writes change the zone
/// first; past it the request is answered 503.
const CONTENDED_FOR: Duration = Duration::from_secs(5);

/// The ETag of a zone at `version`: the number, quoted.
pub fn etag(version: u64) -> String {
    format!("\"{version}\"")
}

/// `response` with the ETag of a zone at `version`.
pub fn with_etag(mut response: Response, version: u64) -> Response {
    if let Ok(value) = HeaderValue::from_str(&etag(version)) {
        response.headers_mut().insert(warp::http::header::ETAG, value);
    }
    response
}

/// Whether an `If-Match` header admits a zone at `version`: `*`, or a comma-separated list of
/// entity tags one of which is `"<version>"` (a weak tag `W/"<version>"` counts too). Anything
/// else, a malformed header included, admits nothing.
pub fn admits(if_match: &str, version: u64) -> bool {
    let want = etag(version);
    if_match.split(',').map(str::trim).any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == want)
}

/// 412 unless `if_match` is absent or admits `zone`'s version.
pub fn check(if_match: Option<&str>, zone: &ZoneSpec) -> Result<(), ApiError> {
    match if_match {
        Some(header) if !admits(header, zone.version) => Err(ApiError::PreconditionFailed(format!(
            "zone {} is at version {}; If-Match asked for {header}",
            zonecast_model::format_id(&zone.id),
            etag(zone.version)
        ))),
        _ => Ok(()),
    }
}

/// Writes the zones `attempt` makes from a fresh read of the store, redoing `attempt` whenever
/// a concurrent write changed one of them between its read and the write. Returns the zones as
/// written, with their new versions. An `attempt` that checks `If-Match` (see [`check`]) fails
/// with 412 on the redo, since the zone it read has moved on.
pub async fn write<F, Fut>(ctx: &Context, mut attempt: F) -> Result<Vec<ZoneSpec>, ApiError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Vec<ZoneSpec>, ApiError>>,
{
    let deadline = Instant::now() + CONTENDED_FOR;
    let mut tries: u32 = 0;
    loop {
        let mut zones = attempt().await?;
        match ctx.store.update_zones(&zones).await {
            Ok(()) => {
                for z in &mut zones {
                    z.version += 1;
                }
                return Ok(zones);
            }
            Err(StoreError::Conflict { .. }) if Instant::now() < deadline => {
                tries += 1;
                metrics::counter!("zonecast_api_write_conflicts_total").increment(1);
                // A little random backoff, growing with the tries, so that writers contending
                // for one zone do not keep colliding in lockstep.
                let spread = 1 + u64::from(tries.min(6)) * 2;
                let pause = u64::try_from(uuid::Uuid::new_v4().as_u128() % u128::from(spread)).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_admits_its_own_version_a_star_and_weak_tags_only() {
        assert!(admits("\"3\"", 3));
        assert!(admits("W/\"3\"", 3));
        assert!(admits("\"1\", \"3\"", 3));
        assert!(admits("*", 3));
        assert!(!admits("\"2\"", 3));
        assert!(!admits("3", 3), "an unquoted tag is malformed");
        assert!(!admits("", 3));
    }
}
