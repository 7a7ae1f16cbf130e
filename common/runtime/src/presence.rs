//! Each distributed service process says it runs: it writes a heartbeat, with how far behind it
//! is, to the site's replica bucket (`zonecast_bus::Presence`) every
//! [`zonecast_bus::Presence::HEARTBEAT`], and removes it when it stops. `GET /v3/system/cluster`
//! lists what the bucket holds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use zonecast_bus::{Bus, Presence};

use crate::Shutdown;
use crate::backoff::Backoff;
use crate::ratelog::RateLimited;

/// This process's replica id: 8 random hex digits, the same for every part it runs.
pub fn replica_id() -> String {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()).clone()
}

/// No lag reported by this process (an API or ingestor replica).
const NO_LAG: u64 = u64::MAX;

/// The lag this process reported last, in milliseconds (see [`crate::lag::spawn_reports`]).
static LAG_MS: AtomicU64 = AtomicU64::new(NO_LAG);

/// Notes the lag this process reports.
pub(crate) fn lag_reported(ms: u64) {
    LAG_MS.store(ms.min(NO_LAG - 1), Ordering::Relaxed);
}

/// What a replica says of itself: `{"LagMs": <ms or null>}`.
fn about() -> serde_json::Value {
    let lag = LAG_MS.load(Ordering::Relaxed);
    serde_json::json!({ "LagMs": (lag != NO_LAG).then_some(lag) })
}

/// Writes this process's heartbeat as a replica of `service` under `prefix` (bucket kept on
/// `replicas` servers) until `shutdown`, then removes it. Over the in-process bus there is
/// nothing to write. A heartbeat that cannot be written is tried again at the next one.
pub fn spawn(
    bus: Arc<dyn Bus>,
    prefix: String,
    replicas: usize,
    service: &'static str,
    shutdown: Shutdown,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let id = replica_id();
        let mut errors = RateLimited::new(Duration::from_secs(10));
        let mut backoff = Backoff::new(Presence::HEARTBEAT, Duration::from_secs(5));
        let presence = loop {
            match bus.presence(&prefix, replicas).await {
                Ok(Some(presence)) => break presence,
                Ok(None) => return,
                Err(e) => {
                    if let Some(held_back) = errors.allow() {
                        tracing::warn!(service, error = %e, held_back, "replica bucket not opened; trying again");
                    }
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(backoff.next_delay()) => {}
            }
        };
        let mut tick = tokio::time::interval(Presence::HEARTBEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            if let Err(e) = presence.heartbeat(service, &id, about().to_string().into()).await
                && let Some(held_back) = errors.allow()
            {
                tracing::warn!(service, error = %e, held_back, "replica heartbeat not written");
            }
        }
        if let Err(e) = presence.remove(service, &id).await {
            tracing::debug!(service, error = %e, "replica key not removed; it leaves the bucket on its own");
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_replica_id_is_eight_hex_digits_and_stable_within_the_process() {
        let id = replica_id();
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(id, replica_id());
    }
}
