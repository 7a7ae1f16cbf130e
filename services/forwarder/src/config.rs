//! `zonecast-forwarder`'s configuration: its own settings and its command line, the shared
//! groups of `zonecast_runtime::config::args` and its own.

use std::collections::HashMap;
use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Parser};
use zonecast_model::{Limits, Secret};
use zonecast_runtime::config::args::{
    BusArgs, DISTRIBUTED_PARTITIONS, DefaultAddr, FileArgs, FilterLimitArgs, HttpAddrArgs, LimitsArgs, LogArgs,
    SecretArgs, StoreArgs,
};
use zonecast_runtime::config::{BusConfig, Check, ConfigError, HttpConfig, Load, Loaded, StoreConfig};

use crate::DEFAULT_QUEUE;

/// The forwarder's own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwarderSettings {
    /// `ZONECAST_FORWARDER_QUEUE`: messages one MQTT connection holds (waiting or
    /// unacknowledged) while its broker is away; beyond it the oldest is dropped and counted.
    pub queue: usize,
    /// `ZONECAST_HTTP_ACTION_RETRY_FOR`: how long an http-request action is retried after its
    /// first try failed; zero sends it once.
    pub http_action_retry_for: Duration,
}

/// Default of `ZONECAST_HTTP_ACTION_RETRY_FOR`: one hour.
pub const DEFAULT_HTTP_ACTION_RETRY_FOR: Duration = Duration::from_secs(3600);

impl Default for ForwarderSettings {
    fn default() -> Self {
        Self { queue: DEFAULT_QUEUE, http_action_retry_for: DEFAULT_HTTP_ACTION_RETRY_FOR }
    }
}

/// The forwarder's own settings as the command line declares them.
#[derive(Args)]
#[command(next_help_heading = "Forwarder")]
pub struct ForwarderArgs {
    /// Messages one MQTT connection holds while its broker is away (1-10000000); beyond it the
    /// oldest is dropped and counted.
    #[arg(long, env = "ZONECAST_FORWARDER_QUEUE", value_name = "N", default_value = "10000")]
    forwarder_queue: String,
    /// How long an http-request zone action is retried after its first try failed, in seconds
    /// (0-86400; 0 sends once): connection errors, timeouts, 408, 429 and 5xx are retried with
    /// exponential backoff, other answers are final.
    #[arg(long, env = "ZONECAST_HTTP_ACTION_RETRY_FOR", value_name = "SECONDS", default_value = "3600")]
    http_action_retry_for: String,
}

impl ForwarderArgs {
    /// The forwarder's settings.
    pub fn check(&self, c: &mut Check<'_>) -> ForwarderSettings {
        let retry_for = c.within("http_action_retry_for", &self.http_action_retry_for, 0, 86_400);
        ForwarderSettings {
            queue: c.within("forwarder_queue", &self.forwarder_queue, 1, 10_000_000),
            http_action_retry_for: Duration::from_secs(retry_for),
        }
    }
}

/// A forwarder's operations listener: 127.0.0.1:8083.
pub struct ForwarderAddr;
impl DefaultAddr for ForwarderAddr {
    const ADDR: &'static str = "127.0.0.1:8083";
}

/// `zonecast-forwarder`: the forwarder on PostgreSQL and NATS.
#[derive(Debug, Clone)]
pub struct ForwarderConfig {
    /// `ZONECAST_HTTP_ADDR`: the operations listener, and the HTTP limits.
    pub ops: HttpConfig,
    /// NATS (URL required).
    pub bus: BusConfig,
    /// PostgreSQL (URL required).
    pub store: StoreConfig,
    /// `ZONECAST_SECRET_KEY` (required): the API's, to unseal passwords, certificate profiles
    /// and the secrets that sign http-request actions.
    pub secret_key: Option<Secret>,
    /// The forwarder's own settings.
    pub forwarder: ForwarderSettings,
    /// `ZONECAST_LIMIT_*` of filter chains (the others keep their defaults): what compiling one
    /// connection's chains may spend.
    pub limits: Limits,
}

/// `zonecast-forwarder`: forwards events to MQTT brokers through each connection's filter
/// chains, and sends the requests of http-request actions, on PostgreSQL and NATS.
#[derive(Parser)]
#[command(name = "zonecast-forwarder", version, after_help = REQUIRED)]
pub struct ForwarderCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    file: FileArgs,
    #[command(flatten)]
    http_addr: HttpAddrArgs<ForwarderAddr>,
    #[command(flatten)]
    secret: SecretArgs,
    #[command(flatten)]
    log: LogArgs,
    #[command(flatten)]
    limits: LimitsArgs,
    #[command(flatten)]
    bus: BusArgs,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    forwarder: ForwarderArgs,
    #[command(flatten)]
    filter_limits: FilterLimitArgs,
}

const REQUIRED: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl ForwarderCli {
    fn check(&self, c: &mut Check<'_>) -> (ForwarderConfig, bool) {
        let config = ForwarderConfig {
            ops: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            bus: self.bus.check(c, DISTRIBUTED_PARTITIONS),
            store: self.store.check(c),
            secret_key: self.secret.check(),
            forwarder: self.forwarder.check(c),
            limits: {
                let mut limits = Limits::default();
                self.filter_limits.check(c, &mut limits);
                limits
            },
        };
        const NAME: &str = ForwarderConfig::BINARY;
        c.require("database_url", config.store.database_url.as_ref(), NAME, "");
        c.require("nats_url", config.bus.nats_url.as_ref(), NAME, "");
        c.require(
            "secret_key",
            config.secret_key.as_ref(),
            NAME,
            " (the API's, to unseal passwords, profiles and action secrets)",
        );
        (config, self.log.check(c))
    }
}

impl Load for ForwarderConfig {
    const BINARY: &'static str = "zonecast-forwarder";

    fn load(args: Vec<OsString>, env: &HashMap<String, String>) -> Result<Loaded<Self>, ConfigError> {
        zonecast_runtime::config::load(args, env, ForwarderCli::check)
    }
}
