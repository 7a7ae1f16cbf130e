//! zonecast forwarder: takes every zone and alarm event from the bus, and every position while
//! some topic's chain can take positions (queue group `forwarders`, so replicas share them),
//! matches it against every MQTT connection's topic filter chains and publishes it, QoS 1, to
//! each topic it matches.
//!
//! The routing table ([`router`]) and the per-connection outbox ([`outbox`]) are pure; this
//! crate's I/O shell runs one MQTT client per connection that reconnects with capped
//! exponential backoff, keeps a bounded queue while its broker is away, and writes its status
//! to the store every second. The bus consumer only ever does non-blocking pushes into the
//! outboxes, so no broker can stall it or the other connections.

mod backoff;
mod endpoint;
mod fleet;
mod link;
pub mod outbox;
pub mod router;
mod status;

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::Notify;
use zonecast_bus::{Bus, FORWARDERS, Message, Subjects, Subscription};
use zonecast_model::{ConfigChanged, ConfigKind};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Keys, Shutdown, StartError};
use zonecast_store::ForwarderStore;

pub use crate::backoff::Backoff;
pub use crate::endpoint::{MAX_PAYLOAD, client_id};
pub use crate::fleet::{Plan, plan};
pub use crate::router::Router;

use crate::fleet::Fleet;
use crate::status::Reporter;

/// Messages a connection holds (waiting plus unacknowledged) by default (the configuration's
/// `ZONECAST_FORWARDER_QUEUE`).
pub const DEFAULT_QUEUE: usize = 10_000;

/// How the forwarder treats its connections. The queue bound comes from the configuration;
/// tests and the bench set the rest in code.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Messages one connection holds, waiting or unacknowledged; beyond it the oldest is
    /// dropped and counted. `ZONECAST_FORWARDER_QUEUE`, default [`DEFAULT_QUEUE`].
    pub queue: usize,
    /// QoS 1 messages in flight per connection (unacknowledged by the broker).
    pub window: u16,
    /// First reconnect delay; it doubles after every failed attempt.
    pub backoff_min: Duration,
    /// Longest reconnect delay.
    pub backoff_max: Duration,
    /// How often status rows are written (also on every connect and disconnect).
    pub status_every: Duration,
    /// How often the configuration is re-read even without a `config.changed` announcement,
    /// in case one was missed.
    pub resync_every: Duration,
    /// On shutdown, how long connected clients may go on delivering what they hold.
    pub drain: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            queue: DEFAULT_QUEUE,
            window: 1000,
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            status_every: Duration::from_secs(1),
            resync_every: Duration::from_secs(60),
            drain: Duration::from_secs(2),
        }
    }
}

/// This process's replica id: 8 random hex digits, the same for every forwarder it starts.
pub fn replica_id() -> String {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()).clone()
}

/// What the forwarder runs on.
#[derive(Clone)]
pub struct Deps {
    /// Connections, certificate profiles; status rows go here.
    pub store: Arc<dyn ForwarderStore>,
    /// Events in, configuration announcements in.
    pub bus: Arc<dyn Bus>,
    /// Subject names.
    pub subjects: Subjects,
    /// Unseal stored passwords and certificate profiles.
    pub keys: Arc<Keys>,
    /// Queue bound, window, backoff, cadences.
    pub settings: Settings,
    /// This replica's id, in client ids and status rows.
    pub replica: String,
}

impl Deps {
    /// Dependencies from configuration and an opened store, bus and keys, with the configured
    /// queue bound, default [`Settings`] otherwise, and this process's [`replica_id`].
    pub fn from_config(
        config: &zonecast_runtime::Config,
        store: Arc<dyn ForwarderStore>,
        bus: Arc<dyn Bus>,
        keys: Arc<Keys>,
    ) -> Self {
        Self {
            store,
            bus,
            subjects: Subjects::new(config.subject_prefix.clone()),
            keys,
            settings: Settings { queue: config.forwarder_queue, ..Settings::default() },
            replica: replica_id(),
        }
    }
}

/// Starts the forwarder: loads the connections, starts their clients, subscribes, and forwards
/// until `shutdown`. The task ends once the clients have delivered what they could within
/// `settings.drain` and the last status rows are written.
pub async fn start(deps: Deps, shutdown: Shutdown) -> Result<tokio::task::JoinHandle<()>, StartError> {
    // The MQTT clients build rustls configurations: ring must be the process's provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let bus_err = |e: zonecast_bus::BusError| StartError::new("bus", e);
    let mut config_sub = deps.bus.subscribe(&deps.subjects.config_changed()).await.map_err(bus_err)?;
    let mut events = deps.bus.queue_subscribe(&deps.subjects.events_all(), FORWARDERS).await.map_err(bus_err)?;
    let poke = Arc::new(Notify::new());
    let (mut fleet, table) = Fleet::new(
        deps.store.clone(),
        deps.keys.clone(),
        deps.settings.clone(),
        deps.replica.clone(),
        shutdown.clone(),
        poke.clone(),
    );
    fleet.reload().await.map_err(|e| StartError::new("store", e.detail()))?;
    // Positions are most of the bus traffic and rarely forwarded: subscribed to only while some
    // chain can take them.
    let mut positions = Positions::default();
    positions.follow(&deps, fleet.wants_positions()).await.map_err(bus_err)?;
    let reporter = Reporter::new(deps.store.clone(), deps.replica.clone()).spawn(
        table,
        poke,
        deps.settings.status_every,
        shutdown.clone(),
    );
    tracing::info!(replica = %deps.replica, "forwarder started");
    let resync_every = deps.settings.resync_every;
    let task = tokio::spawn(async move {
        let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + resync_every, resync_every);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut bad_log = RateLimited::new(Duration::from_secs(10));
        let mut reload_log = RateLimited::new(Duration::from_secs(10));
        let counters = Counters::new();
        loop {
            let reload = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                Some(msg) = config_sub.next() => {
                    let change: Option<ConfigChanged> = serde_json::from_slice(&msg.payload).ok();
                    // An announcement that does not parse might be a newer kind: reload to be safe.
                    change.is_none_or(|c| matches!(c.kind, ConfigKind::Connections | ConfigKind::Certificates))
                }
                _ = resync.tick() => true,
                Some(msg) = events.next() => {
                    route(&fleet, &msg, &counters, &mut bad_log);
                    zonecast_bus::take_ready(&mut events, DRAIN, |msg| route(&fleet, &msg, &counters, &mut bad_log));
                    false
                }
                Some(msg) = positions.next() => {
                    route(&fleet, &msg, &counters, &mut bad_log);
                    zonecast_bus::take_ready(&mut positions, DRAIN, |msg| route(&fleet, &msg, &counters, &mut bad_log));
                    false
                }
                else => break,
            };
            if reload {
                metrics::counter!("zonecast_forwarder_reloads_total").increment(1);
                match fleet.reload().await {
                    Ok(()) => {
                        if let Err(e) = positions.follow(&deps, fleet.wants_positions()).await {
                            tracing::warn!(error = %e, "cannot subscribe to positions");
                        }
                    }
                    Err(e) => {
                        if let Some(held_back) = reload_log.allow() {
                            tracing::warn!(error = %e, held_back, "configuration reload failed; keeping the previous one");
                        }
                    }
                }
            }
        }
        drop((config_sub, events, positions));
        let reporter = reporter.await;
        let table = fleet.finish().await;
        match reporter {
            Ok(mut reporter) => reporter.report(&table).await,
            Err(e) => tracing::error!(error = %e, "forwarder status task failed"),
        }
        tracing::info!("forwarder stopped");
    });
    Ok(task)
}

/// Messages handled in one turn of the forwarder's loop once the first is in: what is already
/// queued is taken without going round the `select!` again.
const DRAIN: usize = 256;

/// The forwarder's per-message counters, registered once.
struct Counters {
    events: metrics::Counter,
    routed: metrics::Counter,
    bad: metrics::Counter,
}

impl Counters {
    fn new() -> Self {
        Self {
            events: metrics::counter!("zonecast_forwarder_events_total"),
            routed: metrics::counter!("zonecast_forwarder_routed_total"),
            bad: metrics::counter!("zonecast_forwarder_bad_messages_total"),
        }
    }
}

/// Routes one bus message, counting it.
fn route(fleet: &Fleet, msg: &Message, counters: &Counters, bad_log: &mut RateLimited) {
    match fleet.route(&msg.payload) {
        Ok(routed) => {
            counters.events.increment(1);
            counters.routed.increment(routed as u64);
        }
        Err(reason) => {
            counters.bad.increment(1);
            if let Some(held_back) = bad_log.allow() {
                tracing::warn!(%reason, subject = %msg.subject, held_back, "event not forwarded");
            }
        }
    }
}

/// The forwarder's subscription to every position, held only while it is wanted.
#[derive(Default)]
struct Positions(Option<Subscription>);

impl Positions {
    /// Subscribes when `wanted` and not subscribed; unsubscribes when not `wanted`.
    async fn follow(&mut self, deps: &Deps, wanted: bool) -> Result<(), zonecast_bus::BusError> {
        match (&self.0, wanted) {
            (None, true) => {
                self.0 = Some(deps.bus.queue_subscribe(&deps.subjects.positions_all(), FORWARDERS).await?);
                tracing::info!("a topic takes position updates: subscribed to positions");
            }
            (Some(_), false) => {
                self.0 = None;
                tracing::info!("no topic takes position updates: unsubscribed from positions");
            }
            _ => {}
        }
        Ok(())
    }
}

impl Stream for Positions {
    type Item = Message;

    /// The next position; pending for ever while unsubscribed.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        match &mut self.0 {
            Some(sub) => sub.as_mut().poll_next(cx),
            None => Poll::Pending,
        }
    }
}

/// Starts the distributed `zonecast-forwarder`: PostgreSQL, NATS and `ZONECAST_SECRET_KEY` (the
/// API's, to unseal passwords and certificate profiles) are required; `/livez`, `/readyz` and
/// `/metrics` are served on `ZONECAST_HTTP_ADDR`.
pub async fn run(config: zonecast_runtime::Config, shutdown: Shutdown) -> Result<(), StartError> {
    let required = |v: &Option<zonecast_runtime::Secret>, what: &str| {
        v.clone().ok_or_else(|| StartError::new("config", format!("{what} is required for zonecast-forwarder")))
    };
    let database_url = required(&config.database_url, "ZONECAST_DATABASE_URL")?;
    let nats_url = required(&config.nats_url, "ZONECAST_NATS_URL")?;
    let secret = required(&config.secret_key, "ZONECAST_SECRET_KEY (the API's, to unseal passwords and profiles)")?;
    let keys = Arc::new(Keys::from_secret(&secret).map_err(|e| StartError::new("keys", e))?);
    let store = zonecast_store::open(Some(database_url.expose()), &config.data_dir)
        .await
        .map_err(|e| StartError::new("store", e.detail()))?;
    let bus = zonecast_bus::connect(Some(nats_url.expose()), "zonecast-forwarder")
        .await
        .map_err(|e| StartError::new("bus", e))?;
    let deps = Deps::from_config(&config, store.clone(), bus.clone(), keys);
    let health: zonecast_runtime::ops::HealthCheck = Arc::new(move || {
        let (store, bus) = (store.clone(), bus.clone());
        Box::pin(async move {
            let store_ok = store.ping().await.is_ok();
            let bus_ok = bus.is_connected();
            (store_ok && bus_ok, serde_json::json!({"store": store_ok, "bus": bus_ok}))
        })
    });
    zonecast_runtime::ops::serve(config.http_addr, health, zonecast_runtime::HttpLimits::of(&config), shutdown.clone())
        .await
        .map_err(|e| StartError::new("listener", format!("{}: {e}", config.http_addr)))?;
    let bus = deps.bus.clone();
    let task = start(deps, shutdown).await?;
    task.await.map_err(|e| StartError::new("forwarder task", e))?;
    bus.drain().await.map_err(|e| StartError::new("bus", e))
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
