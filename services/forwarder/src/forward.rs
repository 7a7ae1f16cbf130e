//! The forwarder's loop: positions (while some chain takes them) from the position log routed
//! into the connections' outboxes (events come to each connection from its journal consumer);
//! changes of connections and certificate profiles in the change log (announced, or found when
//! it looks every second) reload the fleet. Beside the MQTT connections, the requests of
//! http-request actions go out from their own journal consumer (`http_actions_consumer.rs`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use zonecast_bus::journal::{ACTIONS_CONSUMER, ACTIONS_IN_HAND, Kind};
use zonecast_bus::{FORWARDERS, Message, Subscription};
use zonecast_model::{ConfigChanged, ConfigKind};
use zonecast_runtime::applier::{Follower, Pending, REPORT_EVERY, Reporter};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Running, Shutdown, StartError};

use crate::consumer::Counters;
use crate::fleet::Fleet;
use crate::http_actions::{Delivery, RetryPolicy};
use crate::status::Reporter as StatusReporter;
use crate::{Deps, http_actions_consumer};

/// Starts the forwarder: loads the connections, starts their clients, subscribes, and forwards
/// until `shutdown`. The task ends once the clients have delivered what they could within
/// `settings.drain` and the last status rows are written. The MQTT clients' TLS configurations
/// name their crypto provider (`zonecast_tls::client_config`): no process-wide default is needed.
pub async fn start(deps: Deps, shutdown: Shutdown) -> Result<Running, StartError> {
    let bus_err = |e: zonecast_bus::BusError| StartError::new("bus", e);
    let store_err = |e: zonecast_store::StoreError| StartError::new("store", e.detail());
    zonecast_runtime::metrics::register(zonecast_runtime::metrics::Owner::Forwarder);
    for outcome in ["success", "failed", "expired", "lost"] {
        let labels = [("outcome", outcome.to_owned())];
        zonecast_runtime::metrics::register_series("zonecast_forwarder_http_actions_total", &labels);
    }
    let mut config_sub = deps.bus.subscribe(&deps.subjects.config_changed()).await.map_err(bus_err)?;
    let mut roll_calls = deps.bus.subscribe(&deps.subjects.config_roll()).await.map_err(bus_err)?;
    let poke = Arc::new(crate::link::Wake::default());
    let (mut fleet, table) = Fleet::new(
        deps.store.clone(),
        deps.journal.clone(),
        deps.keys.clone(),
        deps.settings.clone(),
        deps.replica.clone(),
        shutdown.clone(),
        poke.clone(),
    );
    // The log's revision first: the connections read after it hold every change up to it.
    let mut follower = Follower::at_current(deps.store.clone()).await.map_err(store_err)?;
    fleet.reload().await.map_err(store_err)?;
    let reporter = Reporter::new(deps.bus.clone(), &deps.subjects, "forwarder");
    reporter.report(follower.applied()).await;
    // Positions are most of the bus traffic and rarely forwarded: subscribed to only while some
    // chain can take them.
    let mut positions = Positions::default();
    positions.follow(&deps, fleet.wants_positions()).await.map_err(bus_err)?;
    // How far behind the connected connections are, for ingest to push back on.
    let lag_reports = {
        let table = table.clone();
        zonecast_runtime::lag::spawn_reports(
            deps.bus.clone(),
            &deps.subjects,
            zonecast_model::lag::Stage::Forwarder,
            None,
            move || {
                let now = zonecast_model::lag::now_ms();
                table.borrow().iter().map(|(_, shared)| shared.lag_ms(now)).max().unwrap_or(0)
            },
            shutdown.clone(),
        )
    };
    let status = StatusReporter::new(deps.store.clone(), deps.journal.clone(), deps.replica.clone()).spawn(
        table,
        poke,
        deps.settings.status_every,
        shutdown.clone(),
    );
    // The second sink: the requests of http-request actions, from their own journal consumer.
    deps.journal.create_consumer(Kind::Actions, ACTIONS_CONSUMER, ACTIONS_IN_HAND).await.map_err(bus_err)?;
    let delivery = Delivery::new(deps.keys.clone(), RetryPolicy::within(deps.settings.http_action_retry_for));
    let http_actions = http_actions_consumer::spawn(deps.journal.clone(), delivery, shutdown.clone());
    tracing::info!(replica = %deps.replica, "forwarder started");
    let task = tokio::spawn(async move {
        let mut look = tokio::time::interval_at(tokio::time::Instant::now() + REPORT_EVERY, REPORT_EVERY);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut bad_log = RateLimited::new(Duration::from_secs(10));
        let mut reload_log = RateLimited::new(Duration::from_secs(10));
        let counters = Counters::new("zonecast_forwarder_positions_total");
        loop {
            // `Some(announced)` when the change log is to be looked at (`None`: at its head).
            let wake = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                Some(msg) = config_sub.next() => {
                    let mut announced = announced(&msg);
                    zonecast_bus::take_ready(&mut config_sub, DRAIN, |msg| {
                        announced = announced.zip(self::announced(&msg)).map(|(a, b)| a.max(b));
                    });
                    Some(announced)
                }
                _ = look.tick() => Some(None),
                Some(_) = roll_calls.next() => {
                    reporter.report(follower.applied()).await;
                    None
                }
                Some(msg) = positions.next() => {
                    route(&fleet, &msg, &counters, &mut bad_log);
                    zonecast_bus::take_ready(&mut positions, DRAIN, |msg| route(&fleet, &msg, &counters, &mut bad_log));
                    None
                }
                else => break,
            };
            let Some(announced) = wake else { continue };
            let caught_up = match follower.pending(announced).await {
                Ok(Pending::Nothing) => Ok(None),
                Ok(Pending::Changes(changes)) => {
                    let revision = changes.last().map_or(follower.applied(), |c| c.revision);
                    let ours =
                        changes.iter().any(|c| matches!(c.kind, ConfigKind::Connections | ConfigKind::Certificates));
                    if ours {
                        reload(&mut fleet, &mut positions, &deps).await.map(|()| Some(revision))
                    } else {
                        Ok(Some(revision))
                    }
                }
                Ok(Pending::Everything { revision }) => {
                    reload(&mut fleet, &mut positions, &deps).await.map(|()| Some(revision))
                }
                Err(e) => Err(e),
            };
            match caught_up {
                Ok(Some(revision)) => follower.advance(revision),
                Ok(None) => {}
                // Tried again at the next look: the follower stays where it was.
                Err(e) => {
                    if let Some(held_back) = reload_log.allow() {
                        tracing::warn!(error = %e, held_back, "configuration reload failed; keeping the previous one");
                    }
                }
            }
            reporter.report(follower.applied()).await;
        }
        reporter.leave(follower.applied()).await;
        drop((config_sub, roll_calls, positions));
        let status = status.await;
        let _ = lag_reports.await;
        let table = fleet.finish().await;
        let _ = http_actions.await;
        match status {
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

/// The revision an announcement names; `None` (look at the log) for one that cannot be read.
fn announced(message: &Message) -> Option<u64> {
    serde_json::from_slice::<ConfigChanged>(&message.payload).ok().map(|c| c.revision)
}

/// Reads the connections and certificate profiles again and follows positions while some
/// chain takes them.
async fn reload(fleet: &mut Fleet, positions: &mut Positions, deps: &Deps) -> Result<(), zonecast_store::StoreError> {
    metrics::counter!("zonecast_forwarder_reloads_total").increment(1);
    fleet.reload().await?;
    if let Err(e) = positions.follow(deps, fleet.wants_positions()).await {
        tracing::warn!(error = %e, "cannot subscribe to positions");
    }
    Ok(())
}

/// Routes the positions of a batch, one event per line, counting them.
fn route(fleet: &Fleet, msg: &Message, counters: &Counters, bad_log: &mut RateLimited) {
    for line in zonecast_bus::positions::lines(&msg.payload) {
        route_one(fleet, &line, msg, counters, bad_log);
    }
}

/// Routes one position, counting it.
fn route_one(fleet: &Fleet, payload: &bytes::Bytes, msg: &Message, counters: &Counters, bad_log: &mut RateLimited) {
    match fleet.route(payload) {
        Ok(routed) => {
            counters.taken.increment(1);
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

/// The forwarder's subscription to every partition's batches of positions, held only while
/// it is wanted.
#[derive(Default)]
struct Positions {
    subscription: Option<Subscription>,
}

impl Positions {
    /// Subscribes when `wanted` and not subscribed; unsubscribes when not `wanted`.
    async fn follow(&mut self, deps: &Deps, wanted: bool) -> Result<(), zonecast_bus::BusError> {
        match (&self.subscription, wanted) {
            (None, true) => {
                self.subscription = Some(deps.positions.tap(None, Some(FORWARDERS)).await?);
                tracing::info!("a topic takes position updates: subscribed to positions");
            }
            (Some(_), false) => {
                self.subscription = None;
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
        match &mut self.subscription {
            Some(sub) => sub.as_mut().poll_next(cx),
            None => Poll::Pending,
        }
    }
}
