//! zonecast forwarder: takes every zone and alarm event from the event journal, one durable
//! consumer per MQTT connection (shared by every replica), and every position from the bus
//! while some topic's chain can take positions (queue group `forwarders`, so replicas share
//! them), matches it against the connection's topic filter chains and publishes it, QoS 1, to
//! each topic it matches. An event is acknowledged to the journal only once the broker has
//! acknowledged every copy of it, so a broker away, a replica killed or a redeploy loses none.
//!
//! The routing table ([`router`]) and the per-connection outbox ([`outbox`]) are pure; this
//! crate's I/O shell runs one MQTT client per connection that reconnects with capped
//! exponential backoff, a journal consumer per connection that holds a bounded number of
//! events (the rest wait in the journal), and writes its status to the store every second.
//! Nothing waits on a broker but its own connection.

mod config;
mod consumer;
mod endpoint;
mod fleet;
mod forward;
mod http_actions;
mod http_actions_consumer;
mod link;
mod mqtt;
pub mod outbox;
pub mod router;
mod status;
mod task;

use std::sync::Arc;
use std::time::Duration;

use zonecast_bus::{Bus, Channels, Journal, PositionLog, Subjects};
use zonecast_runtime::service::{self, Needs};
use zonecast_runtime::{Keys, Running, Shutdown, StartError};
use zonecast_store::ForwarderStore;

pub use crate::config::{
    DEFAULT_HTTP_ACTION_RETRY_FOR, ForwarderAddr, ForwarderArgs, ForwarderCli, ForwarderConfig, ForwarderSettings,
};
pub use crate::consumer::consumer_name;
pub use crate::endpoint::{MAX_PAYLOAD, client_id};
pub use crate::fleet::{Plan, plan};
pub use crate::forward::start;
pub use crate::router::Router;
pub use zonecast_runtime::backoff::Backoff;

/// Messages a connection holds (waiting plus unacknowledged) by default (the configuration's
/// `ZONECAST_FORWARDER_QUEUE`).
pub const DEFAULT_QUEUE: usize = 10_000;

/// How the forwarder treats its connections. The queue bound comes from the configuration;
/// tests and the bench set the rest in code.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Events one connection holds at a time, waiting or unacknowledged by its broker (more
    /// wait in the journal), and the positions its queue holds (beyond it, a position is
    /// dropped and counted). `ZONECAST_FORWARDER_QUEUE`, default [`DEFAULT_QUEUE`].
    pub queue: usize,
    /// QoS 1 messages in flight per connection (unacknowledged by the broker).
    pub window: u16,
    /// First reconnect delay; it doubles after every failed attempt.
    pub backoff_min: Duration,
    /// Longest reconnect delay.
    pub backoff_max: Duration,
    /// Longest reconnect delay while messages wait for the broker: a broker that returns gets
    /// them within about this.
    pub backoff_waiting: Duration,
    /// How often status rows are written (also on every connect and disconnect).
    pub status_every: Duration,
    /// What compiling one connection's filter chains may spend (the configuration's
    /// `ZONECAST_LIMIT_*` of filter chains).
    pub filters: zonecast_filter::Bounds,
    /// On shutdown, how long connected clients may go on delivering what they hold.
    pub drain: Duration,
    /// How long an http-request action is retried after its event: the configuration's
    /// `ZONECAST_HTTP_ACTION_RETRY_FOR`, default [`DEFAULT_HTTP_ACTION_RETRY_FOR`].
    pub http_action_retry_for: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            queue: DEFAULT_QUEUE,
            window: 1000,
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            backoff_waiting: Duration::from_millis(250),
            status_every: Duration::from_secs(1),
            filters: zonecast_model::Limits::DEFAULT.filter_bounds(),
            drain: Duration::from_secs(2),
            http_action_retry_for: DEFAULT_HTTP_ACTION_RETRY_FOR,
        }
    }
}

/// This process's replica id: 8 random hex digits, the same for every forwarder it starts.
pub use zonecast_runtime::presence::replica_id;

/// What the forwarder runs on.
#[derive(Clone)]
pub struct Deps {
    /// Connections, certificate profiles; status rows go here.
    pub store: Arc<dyn ForwarderStore>,
    /// Positions and configuration announcements in.
    pub bus: Arc<dyn Bus>,
    /// Events in.
    pub journal: Arc<dyn Journal>,
    /// Positions in, for the topics that want them.
    pub positions: Arc<dyn PositionLog>,
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
    /// queue bound and filter chain limits, default [`Settings`] otherwise, and this process's
    /// [`replica_id`].
    pub fn from_config(
        config: &ForwarderConfig,
        store: Arc<dyn ForwarderStore>,
        channels: &Channels,
        keys: Arc<Keys>,
    ) -> Self {
        Self {
            store,
            journal: channels.journal.clone(),
            positions: channels.positions.clone(),
            bus: channels.bus.clone(),
            subjects: Subjects::new(config.bus.subject_prefix.clone()),
            keys,
            settings: Settings {
                queue: config.forwarder.queue,
                http_action_retry_for: config.forwarder.http_action_retry_for,
                filters: config.limits.filter_bounds(),
                ..Settings::default()
            },
            replica: replica_id(),
        }
    }
}

/// Starts the distributed `zonecast-forwarder` on the service skeleton: PostgreSQL, NATS and
/// `ZONECAST_SECRET_KEY` (the API's, to unseal passwords and certificate profiles); `/livez`,
/// `/readyz` and `/metrics` are served on `ZONECAST_HTTP_ADDR`.
pub async fn launch(config: ForwarderConfig, shutdown: Shutdown) -> Result<Running, StartError> {
    let needs = Needs {
        name: "zonecast-forwarder",
        bus: &config.bus,
        store: Some(&config.store),
        secret_key: Some(&config.secret_key),
    };
    let config = &config;
    let ops = Some(config.ops);
    zonecast_http::launch(needs, ops, shutdown, |opened, shutdown| async move {
        service::prepare_journal(&opened.channels, &config.bus, "zonecast-forwarder").await?;
        start(Deps::from_config(config, opened.store()?, &opened.channels, opened.keys()?), shutdown).await
    })
    .await
}

/// Runs `zonecast-forwarder` until `shutdown`, then drains.
pub async fn run(config: ForwarderConfig, shutdown: Shutdown) -> Result<(), StartError> {
    launch(config, shutdown).await?.stopped().await
}
