//! The forwarder's loop: events (and, while some chain takes them, positions) from the bus
//! routed into the connections' outboxes; configuration announcements and a periodic resync
//! reload the fleet.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::Notify;
use zonecast_bus::{FORWARDERS, Message, Subscription};
use zonecast_model::{ConfigChanged, ConfigKind};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Running, Shutdown, StartError};

use crate::Deps;
use crate::fleet::Fleet;
use crate::status::Reporter;

/// Starts the forwarder: loads the connections, starts their clients, subscribes, and forwards
/// until `shutdown`. The task ends once the clients have delivered what they could within
/// `settings.drain` and the last status rows are written. The MQTT clients build rustls
/// configurations: ring must be the process's crypto provider (the binary's start-up installs
/// it; tests install it themselves).
pub async fn start(deps: Deps, shutdown: Shutdown) -> Result<Running, StartError> {
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
    Ok(Running::new(task))
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
