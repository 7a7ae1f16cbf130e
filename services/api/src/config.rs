//! `zonecast-api`'s configuration: its own settings and its command line, the shared groups of
//! `zonecast_runtime::config::args` and its own.

use std::collections::HashMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, Parser};
use zonecast_model::{Limits, Secret};
use zonecast_runtime::config::args::{
    AuthArgs, BusArgs, DISTRIBUTED_PARTITIONS, DefaultAddr, FileArgs, FilterLimitArgs, HttpAddrArgs, InputLimitArgs,
    LimitsArgs, LogArgs, OpsAddrArgs, SecretArgs, SiteArgs, StoreArgs, all_limits,
};
use zonecast_runtime::config::{AuthConfig, BusConfig, Check, ConfigError, HttpConfig, Load, Loaded, StoreConfig};

/// The API's own settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiSettings {
    /// `ZONECAST_MAX_CONNECTIONS`: most MQTT connections that may exist; each holds a client
    /// and a queue in every forwarder, so their number bounds the forwarders' memory.
    pub max_connections: usize,
    /// `ZONECAST_APPLY_WAIT_MS`: how long a configuration write waits, at most, for every live
    /// evaluator and forwarder to have it in force before the API answers; zero answers at once.
    pub apply_wait: Duration,
    /// `ZONECAST_STREAM_BUFFER`: how many events a live stream's client may fall behind the
    /// newest; past it the client is told it lagged and the stream ends.
    pub stream_buffer: usize,
    /// `ZONECAST_STREAM_HEARTBEAT_MS`: how long a live stream stays silent at most before a
    /// `: keep-alive` comment, so proxies do not close it.
    pub stream_heartbeat: Duration,
    /// `ZONECAST_STREAM_POSITION_HZ`: most positions per second a position stream sends of one
    /// device; the newest of each device goes out at the next tick.
    pub stream_position_hz: u32,
    /// `ZONECAST_CORS_ORIGINS`: the other origins whose pages may open the live streams.
    /// Each as written, trimmed; empty: none.
    pub cors_origins: Vec<String>,
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            max_connections: 100,
            apply_wait: Duration::from_secs(2),
            stream_buffer: 5000,
            stream_heartbeat: Duration::from_secs(15),
            stream_position_hz: 5,
            cors_origins: Vec::new(),
        }
    }
}

/// The API's own settings as the command line declares them.
#[derive(Args)]
#[command(next_help_heading = "API")]
pub struct ApiArgs {
    /// Most MQTT connections that may exist (1-10000); each holds a client and a queue in every
    /// forwarder.
    #[arg(long, env = "ZONECAST_MAX_CONNECTIONS", value_name = "N", default_value = "100")]
    max_connections: String,
    /// How long a configuration write waits, at most, for every live evaluator and forwarder to
    /// have it in force before the API answers (0-60000 ms; 0 answers at once).
    #[arg(long, env = "ZONECAST_APPLY_WAIT_MS", value_name = "MS", default_value = "2000")]
    apply_wait_ms: String,
    /// How many events a live stream's client (`GET /v3/events/stream`) may fall behind the
    /// newest (1-1000000); past it the client gets `event: lagged` and the stream ends.
    #[arg(long, env = "ZONECAST_STREAM_BUFFER", value_name = "N", default_value = "5000")]
    stream_buffer: String,
    /// Longest silence of a live stream before a `: keep-alive` comment (100-3600000 ms).
    #[arg(long, env = "ZONECAST_STREAM_HEARTBEAT_MS", value_name = "MS", default_value = "15000")]
    stream_heartbeat_ms: String,
    /// Most positions per second a position stream (`GET /v3/positions/stream`) sends of one
    /// device (1-50); the newest of each device is sent at the next tick.
    #[arg(long, env = "ZONECAST_STREAM_POSITION_HZ", value_name = "HZ", default_value = "5")]
    stream_position_hz: String,
    /// Origins (`https://host[:port]`, comma-separated, or `*`) whose pages may open the live
    /// streams from a browser; none by default (same origin only).
    #[arg(long, env = "ZONECAST_CORS_ORIGINS", value_name = "ORIGINS", default_value = "")]
    cors_origins: String,
}

impl ApiArgs {
    /// The API's settings.
    pub fn check(&self, c: &mut Check<'_>) -> ApiSettings {
        let heartbeat_ms = c.within("stream_heartbeat_ms", &self.stream_heartbeat_ms, 100, 3_600_000);
        ApiSettings {
            max_connections: c.within("max_connections", &self.max_connections, 1, 10_000),
            apply_wait: Duration::from_millis(c.within("apply_wait_ms", &self.apply_wait_ms, 0, 60_000)),
            stream_buffer: c.within("stream_buffer", &self.stream_buffer, 1, 1_000_000),
            stream_heartbeat: Duration::from_millis(heartbeat_ms),
            stream_position_hz: c.within("stream_position_hz", &self.stream_position_hz, 1, 50),
            cors_origins: self
                .cors_origins
                .split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// The config API's listener (and the all-in-one's): 127.0.0.1:8080.
pub struct ApiAddr;
impl DefaultAddr for ApiAddr {
    const ADDR: &'static str = "127.0.0.1:8080";
}

/// `zonecast-api`: the config API on PostgreSQL and NATS.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// `ZONECAST_HTTP_ADDR` and the HTTP limits.
    pub http: HttpConfig,
    /// `ZONECAST_OPS_ADDR`: optional operations listener (`/livez`, `/readyz`, `/healthz`,
    /// `/metrics` without credentials).
    pub ops_addr: Option<SocketAddr>,
    /// NATS (URL required).
    pub bus: BusConfig,
    /// PostgreSQL (URL required).
    pub store: StoreConfig,
    /// `ZONECAST_SECRET_KEY` (required): base64 of 32 random bytes shared by all replicas;
    /// seals stored secrets and signs bearer tokens.
    pub secret_key: Option<Secret>,
    /// Credentials.
    pub auth: AuthConfig,
    /// `ZONECAST_SITE_ID`: SiteID in zones.
    pub site_id: i64,
    /// The API's own settings.
    pub api: ApiSettings,
    /// `ZONECAST_LIMIT_*`: what one request may ask.
    pub limits: Limits,
}

/// `zonecast-api`: the config API on PostgreSQL and NATS.
#[derive(Parser)]
#[command(name = "zonecast-api", version, after_help = REQUIRED)]
pub struct ApiCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    file: FileArgs,
    #[command(flatten)]
    http_addr: HttpAddrArgs<ApiAddr>,
    #[command(flatten)]
    ops_addr: OpsAddrArgs,
    #[command(flatten)]
    secret: SecretArgs,
    #[command(flatten)]
    site: SiteArgs,
    #[command(flatten)]
    log: LogArgs,
    #[command(flatten)]
    limits: LimitsArgs,
    #[command(flatten)]
    bus: BusArgs,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    auth: AuthArgs,
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    input_limits: InputLimitArgs,
    #[command(flatten)]
    filter_limits: FilterLimitArgs,
}

const REQUIRED: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl ApiCli {
    fn check(&self, c: &mut Check<'_>) -> (ApiConfig, bool) {
        let config = ApiConfig {
            http: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            ops_addr: self.ops_addr.check(c),
            bus: self.bus.check(c, DISTRIBUTED_PARTITIONS),
            store: self.store.check(c),
            secret_key: self.secret.check(),
            auth: self.auth.check(c),
            site_id: self.site.check(c),
            api: self.api.check(c),
            limits: all_limits(&self.input_limits, &self.filter_limits, c),
        };
        c.require("database_url", config.store.database_url.as_ref(), ApiConfig::BINARY, "");
        c.require("nats_url", config.bus.nats_url.as_ref(), ApiConfig::BINARY, "");
        c.require(
            "secret_key",
            config.secret_key.as_ref(),
            ApiConfig::BINARY,
            " (base64 of 32 random bytes, the same for every replica)",
        );
        (config, self.log.check(c))
    }
}

impl Load for ApiConfig {
    const BINARY: &'static str = "zonecast-api";

    fn load(args: Vec<OsString>, env: &HashMap<String, String>) -> Result<Loaded<Self>, ConfigError> {
        zonecast_runtime::config::load(args, env, ApiCli::check)
    }
}
