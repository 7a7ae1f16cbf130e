//! Each binary's settings as clap declares them (flag, `ZONECAST_*` variable, default, help),
//! one group per section, and their validation into the typed sections of [`super`]. Values
//! are taken as text and checked here rather than by clap, so that every problem is found in
//! one pass and named by where it was given.

use std::fmt::Display;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::{Args, Parser};
use zonecast_model::{Limits, Secret};

use super::load::Origins;
use super::{
    ApiConfig, ApiKey, ApiSettings, AuthConfig, BusConfig, Client, Config, EvaluatorConfig, EvaluatorSettings,
    ForwarderConfig, ForwarderSettings, HttpConfig, HttpLimits, IngestorConfig, MqttInputConfig, Problem, StoreConfig,
};

/// Collects the problems of one load.
pub(super) struct Check<'a> {
    origins: &'a Origins,
    problems: Vec<Problem>,
}

impl<'a> Check<'a> {
    pub(super) fn new(origins: &'a Origins) -> Self {
        Self { origins, problems: Vec::new() }
    }

    fn bad(&mut self, id: &str, reason: impl Into<String>) {
        self.problems.push(Problem { name: self.origins.name(id), reason: reason.into() });
    }

    /// `raw` parsed as `T`, or `fallback` with a problem noted.
    fn parse<T: FromStr>(&mut self, id: &str, raw: &str, fallback: T) -> T
    where
        T::Err: Display,
    {
        raw.trim().parse::<T>().unwrap_or_else(|e| {
            self.bad(id, format!("'{raw}': {e}"));
            fallback
        })
    }

    /// `raw` as a switch: `true` or `false`, nothing else (false with a problem noted).
    fn flag(&mut self, id: &str, raw: &str) -> bool {
        match raw {
            "true" => true,
            "false" => false,
            other => {
                self.bad(id, format!("'{other}': must be true or false"));
                false
            }
        }
    }

    /// `raw` parsed as a number within `lo..=hi`.
    fn within<T>(&mut self, id: &str, raw: &str, lo: T, hi: T) -> T
    where
        T: FromStr + PartialOrd + Display + Copy,
        T::Err: Display,
    {
        let value = self.parse(id, raw, lo);
        if !(lo..=hi).contains(&value) {
            self.bad(id, format!("must be between {lo} and {hi}"));
        }
        value
    }

    /// A problem when `value` is missing: `binary` needs it, for `why`.
    fn require<T>(&mut self, id: &str, value: Option<&T>, binary: &str, why: &str) {
        if value.is_none() {
            self.bad(id, format!("is required by {binary}{why}"));
        }
    }

    pub(super) fn into_problems(self) -> Vec<Problem> {
        self.problems
    }
}

/// A secret setting: an empty value is an unset one.
fn secret(raw: &Option<String>) -> Option<Secret> {
    raw.as_deref().filter(|v| !v.is_empty()).map(Secret::new)
}

fn split_list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// `--config`: the TOML file.
#[derive(Args)]
pub struct FileArgs {
    /// TOML file with the same settings as the variables, in snake case without the prefix
    /// (`http_addr = "0.0.0.0:8080"`); flags and variables win over it.
    #[arg(long, env = "ZONECAST_CONFIG", value_name = "FILE")]
    // Read from the matches, before the other settings are parsed (the file feeds them).
    #[allow(dead_code)]
    config: Option<PathBuf>,
}

/// The bus section.
#[derive(Args)]
#[command(next_help_heading = "Bus")]
pub struct BusArgs {
    /// NATS URL; may carry credentials. The all-in-one uses an in-process bus without it.
    #[arg(long, env = "ZONECAST_NATS_URL", value_name = "URL", hide_env_values = true)]
    nats_url: Option<String>,
    /// First token of every subject: letters, digits, - and _.
    #[arg(long, env = "ZONECAST_SUBJECT_PREFIX", value_name = "TOKEN", default_value = "zonecast")]
    subject_prefix: String,
    /// Number of position partitions (1-4096).
    #[arg(long, env = "ZONECAST_PARTITIONS", value_name = "N", default_value = "16")]
    partitions: String,
    /// How long the event journal keeps an event, in seconds (60-31536000): the event history
    /// reaches this far back, and a consumer away longer loses the older ones, counted.
    #[arg(long, env = "ZONECAST_EVENT_RETENTION_SECS", value_name = "SECONDS", default_value = "604800")]
    event_retention_secs: String,
    /// How many bytes of events the journal keeps at most (1048576-1099511627776); the oldest
    /// leave first, counted for consumers that lacked them.
    #[arg(long, env = "ZONECAST_EVENT_RETENTION_BYTES", value_name = "BYTES", default_value = "1073741824")]
    event_retention_bytes: String,
    /// How long positions are stored for the evaluators over NATS, in seconds (10-3600): an
    /// evaluator that restarts within it resumes where it left off; beyond, what it missed is
    /// skipped, counted and logged.
    #[arg(long, env = "ZONECAST_POSITION_RETENTION_SECS", value_name = "SECONDS", default_value = "60")]
    position_retention_secs: String,
    /// How many bytes of positions are stored at most over NATS, over all partitions
    /// (1048576-1099511627776); the oldest leave first.
    #[arg(long, env = "ZONECAST_POSITION_RETENTION_BYTES", value_name = "BYTES", default_value = "1073741824")]
    position_retention_bytes: String,
    /// Whether ingest also publishes every position on its own subject,
    /// `<prefix>.positions.<partition>.<MAC>` (true or false).
    #[arg(long, env = "ZONECAST_POSITION_SUBJECTS", value_name = "BOOL", default_value = "false")]
    position_subjects: String,
    /// How far behind, in milliseconds, an evaluator or forwarder may be before ingest pushes
    /// back: HTTP answers 503 with Retry-After, the NATS and MQTT inputs wait (0-60000; 0: never).
    #[arg(long, env = "ZONECAST_INGEST_MAX_LAG_MS", value_name = "MS", default_value = "500")]
    ingest_max_lag_ms: String,
}

impl BusArgs {
    fn check(&self, c: &mut Check<'_>) -> BusConfig {
        let prefix = &self.subject_prefix;
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
            c.bad("subject_prefix", "must be one subject token: letters, digits, - and _");
        }
        BusConfig {
            nats_url: secret(&self.nats_url),
            subject_prefix: prefix.clone(),
            partitions: c.within("partitions", &self.partitions, 1, 4096),
            journal: zonecast_bus::JournalSettings {
                max_age: std::time::Duration::from_secs(c.within(
                    "event_retention_secs",
                    &self.event_retention_secs,
                    60,
                    365 * 24 * 3600,
                )),
                max_bytes: c.within("event_retention_bytes", &self.event_retention_bytes, 1 << 20, 1 << 40),
            },
            positions: zonecast_bus::PositionSettings {
                max_age: std::time::Duration::from_secs(c.within(
                    "position_retention_secs",
                    &self.position_retention_secs,
                    10,
                    3600,
                )),
                max_bytes: c.within("position_retention_bytes", &self.position_retention_bytes, 1 << 20, 1 << 40),
                max_lag: std::time::Duration::from_millis(c.within(
                    "ingest_max_lag_ms",
                    &self.ingest_max_lag_ms,
                    0,
                    60_000,
                )),
                per_position_subjects: c.flag("position_subjects", &self.position_subjects),
            },
        }
    }
}

/// The store section.
#[derive(Args)]
#[command(next_help_heading = "Store")]
pub struct StoreArgs {
    /// PostgreSQL URL; may carry a password. The all-in-one uses SQLite in its data directory
    /// without it.
    #[arg(long, env = "ZONECAST_DATABASE_URL", value_name = "URL", hide_env_values = true)]
    database_url: Option<String>,
    /// PostgreSQL pool size.
    #[arg(long, env = "ZONECAST_DATABASE_POOL", value_name = "N", default_value = "16")]
    database_pool: String,
}

impl StoreArgs {
    fn check(&self, c: &mut Check<'_>) -> StoreConfig {
        StoreConfig {
            database_url: secret(&self.database_url),
            pool: c.parse("database_pool", &self.database_pool, 16),
        }
    }
}

/// The HTTP limits every listener keeps.
#[derive(Args)]
#[command(next_help_heading = "HTTP limits")]
pub struct LimitsArgs {
    /// Largest accepted request body, in bytes (413 past it).
    #[arg(long, env = "ZONECAST_MAX_BODY_BYTES", value_name = "BYTES", default_value = "8388608")]
    max_body_bytes: String,
    /// Most connections each HTTP listener holds open at once (1-1000000).
    #[arg(long, env = "ZONECAST_HTTP_MAX_CONNECTIONS", value_name = "N", default_value = "4096")]
    http_max_connections: String,
    /// Time a client has to send a request's head; idle and half-sent connections are closed
    /// after it (1-3600000 ms).
    #[arg(long, env = "ZONECAST_HTTP_HEADER_TIMEOUT_MS", value_name = "MS", default_value = "10000")]
    http_header_timeout_ms: String,
    /// Time a client has to send a request's body; 408 after it (1-3600000 ms).
    #[arg(long, env = "ZONECAST_HTTP_BODY_TIMEOUT_MS", value_name = "MS", default_value = "30000")]
    http_body_timeout_ms: String,
}

impl LimitsArgs {
    fn check(&self, c: &mut Check<'_>) -> HttpLimits {
        HttpLimits {
            max_body_bytes: c.parse("max_body_bytes", &self.max_body_bytes, 0),
            max_connections: c.within("http_max_connections", &self.http_max_connections, 1, 1_000_000),
            header_timeout: Duration::from_millis(c.within(
                "http_header_timeout_ms",
                &self.http_header_timeout_ms,
                1,
                3_600_000,
            )),
            body_timeout: Duration::from_millis(c.within(
                "http_body_timeout_ms",
                &self.http_body_timeout_ms,
                1,
                3_600_000,
            )),
        }
    }
}

/// The limits on what clients send to the API (zones, radii, connections).
#[derive(Args)]
#[command(next_help_heading = "Input limits")]
pub struct InputLimitArgs {
    /// Most entries in a zone's DeviceList, on every route that writes it (1-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_DEVICE_LIST", value_name = "N", default_value = "10000")]
    limit_device_list: String,
    /// Most entries in a zone's ZoneActions (0-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_ZONE_ACTIONS", value_name = "N", default_value = "10000")]
    limit_zone_actions: String,
    /// Most vertices of a polygon zone, not counting a closing vertex (3-1000000); GeometryData
    /// holds at most this many rows plus three.
    #[arg(long, env = "ZONECAST_LIMIT_POLYGON_VERTICES", value_name = "N", default_value = "1000")]
    limit_polygon_vertices: String,
    /// Most zones one batch create or update takes (1-100000).
    #[arg(long, env = "ZONECAST_LIMIT_BATCH_ZONES", value_name = "N", default_value = "1000")]
    limit_batch_zones: String,
    /// Most devices one radius write names (1-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_RADII_PER_WRITE", value_name = "N", default_value = "10000")]
    limit_radii_per_write: String,
    /// Longest info-event message, in characters (0-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_INFO_MESSAGE_CHARS", value_name = "N", default_value = "1024")]
    limit_info_message_chars: String,
    /// Most topics of one MQTT connection (0-100000).
    #[arg(long, env = "ZONECAST_LIMIT_TOPICS_PER_CONNECTION", value_name = "N", default_value = "100")]
    limit_topics_per_connection: String,
}

impl InputLimitArgs {
    fn check(&self, c: &mut Check<'_>, limits: &mut Limits) {
        limits.device_list = c.within("limit_device_list", &self.limit_device_list, 1, 1_000_000);
        limits.zone_actions = c.within("limit_zone_actions", &self.limit_zone_actions, 0, 1_000_000);
        limits.polygon_vertices = c.within("limit_polygon_vertices", &self.limit_polygon_vertices, 3, 1_000_000);
        limits.batch_zones = c.within("limit_batch_zones", &self.limit_batch_zones, 1, 100_000);
        limits.radii_per_write = c.within("limit_radii_per_write", &self.limit_radii_per_write, 1, 1_000_000);
        limits.info_message_chars = c.within("limit_info_message_chars", &self.limit_info_message_chars, 0, 1_000_000);
        limits.topics_per_connection =
            c.within("limit_topics_per_connection", &self.limit_topics_per_connection, 0, 100_000);
    }
}

/// The limits on compiling a connection's filter chains: the API checks them when a
/// connection is written, the forwarder when it builds its routes.
#[derive(Args)]
#[command(next_help_heading = "Filter chain limits")]
pub struct FilterLimitArgs {
    /// Most filters in one FilterChain, counting children at every depth (1-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_FILTERS_PER_CHAIN", value_name = "N", default_value = "256")]
    limit_filters_per_chain: String,
    /// Most filters in all the chains of one connection together, a bound on topics × filters
    /// (1-100000000).
    #[arg(long, env = "ZONECAST_LIMIT_FILTERS_PER_CONNECTION", value_name = "N", default_value = "25600")]
    limit_filters_per_connection: String,
    /// Most distinct regexes one connection uses; each is compiled once and shared (0-100000).
    #[arg(long, env = "ZONECAST_LIMIT_REGEXES_PER_CONNECTION", value_name = "N", default_value = "128")]
    limit_regexes_per_connection: String,
    /// Largest compiled form of one regex, in bytes (1024-1073741824).
    #[arg(long, env = "ZONECAST_LIMIT_REGEX_BYTES", value_name = "BYTES", default_value = "262144")]
    limit_regex_bytes: String,
    /// Most bytes all of one connection's compiled regexes take together (1024-68719476736).
    #[arg(long, env = "ZONECAST_LIMIT_REGEX_TOTAL_BYTES", value_name = "BYTES", default_value = "8388608")]
    limit_regex_total_bytes: String,
    /// Most time compiling all of one connection's regexes may take together (1-600000 ms).
    #[arg(long, env = "ZONECAST_LIMIT_REGEX_COMPILE_MS", value_name = "MS", default_value = "2000")]
    limit_regex_compile_ms: String,
}

impl FilterLimitArgs {
    fn check(&self, c: &mut Check<'_>, limits: &mut Limits) {
        limits.filters_per_chain = c.within("limit_filters_per_chain", &self.limit_filters_per_chain, 1, 1_000_000);
        limits.filters_per_connection =
            c.within("limit_filters_per_connection", &self.limit_filters_per_connection, 1, 100_000_000);
        limits.regexes_per_connection =
            c.within("limit_regexes_per_connection", &self.limit_regexes_per_connection, 0, 100_000);
        limits.regex_bytes = c.within("limit_regex_bytes", &self.limit_regex_bytes, 1024, 1 << 30);
        limits.regex_total_bytes = c.within("limit_regex_total_bytes", &self.limit_regex_total_bytes, 1024, 1 << 36);
        limits.regex_compile_ms = c.within("limit_regex_compile_ms", &self.limit_regex_compile_ms, 1, 600_000);
    }
}

/// `ZONECAST_HTTP_ADDR`.
#[derive(Args)]
pub struct HttpAddrArgs {
    /// HTTP listen address: the config API's (in the all-in-one also `POST /v3/positions`);
    /// the evaluator and forwarder serve `/livez`, `/readyz`, `/healthz` and `/metrics` there.
    #[arg(long, env = "ZONECAST_HTTP_ADDR", value_name = "ADDR", default_value = "127.0.0.1:8080")]
    http_addr: String,
}

impl HttpAddrArgs {
    fn check(&self, c: &mut Check<'_>) -> SocketAddr {
        c.parse("http_addr", &self.http_addr, super::DEFAULT_HTTP_ADDR)
    }
}

/// `ZONECAST_OPS_ADDR`.
#[derive(Args)]
pub struct OpsAddrArgs {
    /// Operations listener: `/livez`, `/readyz`, `/healthz` and `/metrics` without
    /// credentials, for probes and Prometheus on an internal address. Off when unset.
    #[arg(long, env = "ZONECAST_OPS_ADDR", value_name = "ADDR")]
    ops_addr: Option<String>,
}

impl OpsAddrArgs {
    fn check(&self, c: &mut Check<'_>) -> Option<SocketAddr> {
        let raw = self.ops_addr.as_deref()?;
        Some(c.parse("ops_addr", raw, super::DEFAULT_HTTP_ADDR))
    }
}

/// `ZONECAST_SECRET_KEY`.
#[derive(Args)]
pub struct SecretArgs {
    /// Base64 of 32 random bytes, the same for every replica: seals stored secrets and signs
    /// bearer tokens. The all-in-one generates one in its data directory without it.
    #[arg(long, env = "ZONECAST_SECRET_KEY", value_name = "BASE64", hide_env_values = true)]
    secret_key: Option<String>,
}

/// The credentials section.
#[derive(Args)]
#[command(next_help_heading = "Credentials")]
pub struct AuthArgs {
    /// API keys accepted in X-API-Key: `key:authority` pairs, comma-separated; authority is
    /// read, write or admin.
    #[arg(long, env = "ZONECAST_API_KEYS", value_name = "PAIRS", hide_env_values = true)]
    api_keys: Option<String>,
    /// Clients of `POST /v3/auth/token`: `auth_id:auth_secret:authority` triples,
    /// comma-separated.
    #[arg(long, env = "ZONECAST_CLIENTS", value_name = "TRIPLES", hide_env_values = true)]
    clients: Option<String>,
    /// Bearer token lifetime, in seconds.
    #[arg(long, env = "ZONECAST_TOKEN_TTL_SECONDS", value_name = "SECONDS", default_value = "3600")]
    token_ttl_seconds: String,
}

impl AuthArgs {
    fn check(&self, c: &mut Check<'_>) -> AuthConfig {
        let mut auth = AuthConfig {
            token_ttl_seconds: c.parse("token_ttl_seconds", &self.token_ttl_seconds, 3600),
            ..AuthConfig::default()
        };
        for item in split_list(self.api_keys.as_deref().unwrap_or_default()) {
            match parse_api_key(item) {
                Ok(key) => auth.api_keys.push(key),
                Err(reason) => c.bad("api_keys", reason),
            }
        }
        for item in split_list(self.clients.as_deref().unwrap_or_default()) {
            match parse_client(item) {
                Ok(client) => auth.clients.push(client),
                Err(reason) => c.bad("clients", reason),
            }
        }
        auth
    }
}

fn parse_api_key(item: &str) -> Result<ApiKey, String> {
    let (key, authority) = item.rsplit_once(':').ok_or("expected key:authority pairs")?;
    if key.is_empty() {
        return Err("empty key".into());
    }
    Ok(ApiKey { key: Secret::new(key), authority: authority.parse()? })
}

fn parse_client(item: &str) -> Result<Client, String> {
    const SHAPE: &str = "expected auth_id:auth_secret:authority triples";
    let (id, rest) = item.split_once(':').ok_or(SHAPE)?;
    let (secret, authority) = rest.rsplit_once(':').ok_or(SHAPE)?;
    if id.is_empty() || secret.is_empty() {
        return Err("empty auth_id or auth_secret".into());
    }
    Ok(Client { id: id.to_owned(), secret: Secret::new(secret), authority: authority.parse()? })
}

/// `ZONECAST_SITE_ID`.
#[derive(Args)]
pub struct SiteArgs {
    /// SiteID returned in zones and events.
    #[arg(long, env = "ZONECAST_SITE_ID", value_name = "ID", default_value = "1")]
    site_id: String,
}

impl SiteArgs {
    fn check(&self, c: &mut Check<'_>) -> i64 {
        c.parse("site_id", &self.site_id, 1)
    }
}

/// `ZONECAST_LOG_FORMAT`.
#[derive(Args)]
pub struct LogArgs {
    /// Log format: text or json (one object per line). `RUST_LOG` sets the filter.
    #[arg(long, env = "ZONECAST_LOG_FORMAT", value_name = "FORMAT", default_value = "text")]
    log_format: String,
}

impl LogArgs {
    fn check(&self, c: &mut Check<'_>) -> bool {
        match self.log_format.as_str() {
            "json" => true,
            "text" => false,
            _ => {
                c.bad("log_format", "must be text or json");
                false
            }
        }
    }
}

/// The API's own settings.
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
    fn check(&self, c: &mut Check<'_>) -> ApiSettings {
        ApiSettings {
            max_connections: c.within("max_connections", &self.max_connections, 1, 10_000),
            apply_wait: std::time::Duration::from_millis(c.within("apply_wait_ms", &self.apply_wait_ms, 0, 60_000)),
            stream_buffer: c.within("stream_buffer", &self.stream_buffer, 1, 1_000_000),
            stream_heartbeat: std::time::Duration::from_millis(c.within(
                "stream_heartbeat_ms",
                &self.stream_heartbeat_ms,
                100,
                3_600_000,
            )),
            stream_position_hz: c.within("stream_position_hz", &self.stream_position_hz, 1, 50),
            cors: crate::cors::Cors::new(self.cors_origins.split(',').map(str::to_owned)),
        }
    }
}

/// The ingestor's MQTT input.
#[derive(Args)]
#[command(next_help_heading = "MQTT position input")]
pub struct MqttArgs {
    /// RTLS broker to take positions from, e.g. `mqtt://user:pass@host:1883` or
    /// `mqtts://host:8883`; may carry credentials. Off when unset.
    #[arg(long, env = "ZONECAST_INGEST_MQTT_URL", value_name = "URL", hide_env_values = true)]
    ingest_mqtt_url: Option<String>,
    /// Topic filters to subscribe, comma-separated (wildcards allowed); required with the URL.
    #[arg(long, env = "ZONECAST_INGEST_MQTT_TOPICS", value_name = "FILTERS")]
    ingest_mqtt_topics: Option<String>,
    /// PEM file of the CA that signed the broker's certificate (`mqtts://` only).
    #[arg(long, env = "ZONECAST_INGEST_MQTT_CA", value_name = "FILE")]
    ingest_mqtt_ca: Option<PathBuf>,
}

impl MqttArgs {
    fn check(&self, c: &mut Check<'_>) -> Option<MqttInputConfig> {
        let topics: Vec<String> =
            split_list(self.ingest_mqtt_topics.as_deref().unwrap_or_default()).map(str::to_owned).collect();
        let url = secret(&self.ingest_mqtt_url)?;
        if topics.is_empty() {
            c.bad("ingest_mqtt_topics", "is required when ZONECAST_INGEST_MQTT_URL is set");
        }
        Some(MqttInputConfig { url, topics, ca: self.ingest_mqtt_ca.clone() })
    }
}

/// The evaluator's own settings.
#[derive(Args)]
#[command(next_help_heading = "Evaluator")]
pub struct EvaluatorArgs {
    /// Inclusive partition range this evaluator owns, e.g. `0-7` (all when unset).
    #[arg(long, env = "ZONECAST_EVALUATOR_PARTITIONS", value_name = "RANGE")]
    evaluator_partitions: Option<String>,
    /// How long an http-request zone action is retried after its first try failed, in seconds
    /// (0-86400; 0 sends once): connection errors, timeouts, 408, 429 and 5xx are retried with
    /// exponential backoff, other answers are final.
    #[arg(long, env = "ZONECAST_HTTP_ACTION_RETRY_FOR", value_name = "SECONDS", default_value = "3600")]
    http_action_retry_for: String,
}

impl EvaluatorArgs {
    fn check(&self, c: &mut Check<'_>, partitions: u32) -> EvaluatorSettings {
        let retry_for = c.within("http_action_retry_for", &self.http_action_retry_for, 0, 86_400);
        let settings =
            EvaluatorSettings { http_action_retry_for: Duration::from_secs(retry_for), ..EvaluatorSettings::default() };
        let Some(raw) = self.evaluator_partitions.as_deref() else { return settings };
        let (a, b) = raw.trim().split_once('-').unwrap_or((raw.trim(), raw.trim()));
        let (Ok(lo), Ok(hi)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
            c.bad("evaluator_partitions", format!("'{raw}': expected a partition or a range such as 0-7"));
            return settings;
        };
        if lo > hi {
            c.bad("evaluator_partitions", format!("'{raw}': start after end"));
        } else if hi >= partitions {
            c.bad("evaluator_partitions", format!("range ends at {hi} but there are {partitions} partitions"));
        }
        EvaluatorSettings { partitions: Some((lo, hi)), ..settings }
    }
}

/// The forwarder's own settings.
#[derive(Args)]
#[command(next_help_heading = "Forwarder")]
pub struct ForwarderArgs {
    /// Messages one MQTT connection holds while its broker is away (1-10000000); beyond it the
    /// oldest is dropped and counted.
    #[arg(long, env = "ZONECAST_FORWARDER_QUEUE", value_name = "N", default_value = "10000")]
    forwarder_queue: String,
}

impl ForwarderArgs {
    fn check(&self, c: &mut Check<'_>) -> ForwarderSettings {
        ForwarderSettings { queue: c.within("forwarder_queue", &self.forwarder_queue, 1, 10_000_000) }
    }
}

/// `zonecast`: the whole pipeline in one process. With nothing configured it runs on an
/// in-process bus and SQLite in its data directory, and generates its secret key and an admin
/// API key there.
#[derive(Parser)]
#[command(name = "zonecast", version)]
pub struct AllInOneCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    file: FileArgs,
    #[command(flatten)]
    http_addr: HttpAddrArgs,
    #[command(flatten)]
    ops_addr: OpsAddrArgs,
    /// SQLite file and generated keys.
    #[arg(long, env = "ZONECAST_DATA_DIR", value_name = "DIR", default_value = "./zonecast-data")]
    data_dir: PathBuf,
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
    #[command(flatten)]
    mqtt: MqttArgs,
    #[command(flatten)]
    evaluator: EvaluatorArgs,
    #[command(flatten)]
    forwarder: ForwarderArgs,
    #[command(flatten)]
    demo: DemoArgs,
}

/// `ZONECAST_DEMO`.
#[derive(Args)]
#[command(next_help_heading = "Demo")]
pub struct DemoArgs {
    /// Runs a simulated warehouse: creates its zones when they are missing and moves its devices
    /// and a forklift at 1 Hz through the position input (true or false; `--demo` alone is true).
    #[arg(
        long,
        env = "ZONECAST_DEMO",
        value_name = "BOOL",
        default_value = "false",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    demo: String,
}

impl DemoArgs {
    fn check(&self, c: &mut Check<'_>) -> bool {
        c.flag("demo", &self.demo)
    }
}

/// Every limit, from both groups.
fn all_limits(input: &InputLimitArgs, filter: &FilterLimitArgs, c: &mut Check<'_>) -> Limits {
    let mut limits = Limits::default();
    input.check(c, &mut limits);
    filter.check(c, &mut limits);
    limits
}

impl AllInOneCli {
    fn limits(&self, c: &mut Check<'_>) -> Limits {
        all_limits(&self.input_limits, &self.filter_limits, c)
    }

    pub(super) fn check(&self, c: &mut Check<'_>) -> (Config, bool) {
        let bus = self.bus.check(c);
        let evaluator = self.evaluator.check(c, bus.partitions);
        let config = Config {
            http: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            ops_addr: self.ops_addr.check(c),
            data_dir: self.data_dir.clone(),
            bus,
            store: self.store.check(c),
            secret_key: secret(&self.secret.secret_key),
            auth: self.auth.check(c),
            site_id: self.site.check(c),
            api: self.api.check(c),
            limits: self.limits(c),
            mqtt: self.mqtt.check(c),
            evaluator,
            forwarder: self.forwarder.check(c),
            demo: self.demo.check(c),
        };
        (config, self.log.check(c))
    }
}

/// `zonecast-api`: the config API on PostgreSQL and NATS.
#[derive(Parser)]
#[command(name = "zonecast-api", version, after_help = REQUIRED_API)]
pub struct ApiCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    file: FileArgs,
    #[command(flatten)]
    http_addr: HttpAddrArgs,
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

const REQUIRED_API: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl ApiCli {
    pub(super) fn check(&self, c: &mut Check<'_>) -> (ApiConfig, bool) {
        let config = ApiConfig {
            http: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            ops_addr: self.ops_addr.check(c),
            bus: self.bus.check(c),
            store: self.store.check(c),
            secret_key: secret(&self.secret.secret_key),
            auth: self.auth.check(c),
            site_id: self.site.check(c),
            api: self.api.check(c),
            limits: all_limits(&self.input_limits, &self.filter_limits, c),
        };
        const NAME: &str = "zonecast-api";
        c.require("database_url", config.store.database_url.as_ref(), NAME, "");
        c.require("nats_url", config.bus.nats_url.as_ref(), NAME, "");
        c.require(
            "secret_key",
            config.secret_key.as_ref(),
            NAME,
            " (base64 of 32 random bytes, the same for every replica)",
        );
        (config, self.log.check(c))
    }
}

/// `zonecast-ingestor`: positions from NATS (`<prefix>.ingest`), an RTLS broker over MQTT and
/// `POST /v3/positions`, published on NATS.
#[derive(Parser)]
#[command(name = "zonecast-ingestor", version, after_help = REQUIRED_INGESTOR)]
pub struct IngestorCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    file: FileArgs,
    /// The ingestor's HTTP listener: `POST /v3/positions`, `/livez`, `/readyz`, `/healthz`
    /// and `/metrics`.
    #[arg(long, env = "ZONECAST_INGEST_HTTP_ADDR", value_name = "ADDR", default_value = "127.0.0.1:8081")]
    ingest_http_addr: String,
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
    auth: AuthArgs,
    #[command(flatten)]
    mqtt: MqttArgs,
}

const REQUIRED_INGESTOR: &str = "Required: ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl IngestorCli {
    pub(super) fn check(&self, c: &mut Check<'_>) -> (IngestorConfig, bool) {
        let addr = c.parse("ingest_http_addr", &self.ingest_http_addr, super::DEFAULT_INGEST_HTTP_ADDR);
        let config = IngestorConfig {
            http: Some(HttpConfig { addr, limits: self.limits.check(c) }),
            bus: self.bus.check(c),
            secret_key: secret(&self.secret.secret_key),
            auth: self.auth.check(c),
            site_id: self.site.check(c),
            mqtt: self.mqtt.check(c),
        };
        const NAME: &str = "zonecast-ingestor";
        c.require("nats_url", config.bus.nats_url.as_ref(), NAME, "");
        c.require("secret_key", config.secret_key.as_ref(), NAME, " (the same as the API's, to accept its tokens)");
        (config, self.log.check(c))
    }
}

/// `zonecast-evaluator`: turns the positions of its partitions into zone events, on
/// PostgreSQL and NATS.
#[derive(Parser)]
#[command(name = "zonecast-evaluator", version, after_help = REQUIRED_EVALUATOR)]
pub struct EvaluatorCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    file: FileArgs,
    #[command(flatten)]
    http_addr: HttpAddrArgs,
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
    evaluator: EvaluatorArgs,
}

const REQUIRED_EVALUATOR: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl EvaluatorCli {
    pub(super) fn check(&self, c: &mut Check<'_>) -> (EvaluatorConfig, bool) {
        let bus = self.bus.check(c);
        let config = EvaluatorConfig {
            ops: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            evaluator: self.evaluator.check(c, bus.partitions),
            bus,
            store: self.store.check(c),
            secret_key: secret(&self.secret.secret_key),
            site_id: self.site.check(c),
        };
        const NAME: &str = "zonecast-evaluator";
        c.require("database_url", config.store.database_url.as_ref(), NAME, "");
        c.require("nats_url", config.bus.nats_url.as_ref(), NAME, "");
        c.require(
            "secret_key",
            config.secret_key.as_ref(),
            NAME,
            " (the API's, to unseal the secrets that sign http-request actions)",
        );
        (config, self.log.check(c))
    }
}

/// `zonecast-forwarder`: forwards events to MQTT brokers through each connection's filter
/// chains, on PostgreSQL and NATS.
#[derive(Parser)]
#[command(name = "zonecast-forwarder", version, after_help = REQUIRED_FORWARDER)]
pub struct ForwarderCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    file: FileArgs,
    #[command(flatten)]
    http_addr: HttpAddrArgs,
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

const REQUIRED_FORWARDER: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl ForwarderCli {
    pub(super) fn check(&self, c: &mut Check<'_>) -> (ForwarderConfig, bool) {
        let config = ForwarderConfig {
            ops: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            bus: self.bus.check(c),
            store: self.store.check(c),
            secret_key: secret(&self.secret.secret_key),
            forwarder: self.forwarder.check(c),
            limits: {
                let mut limits = Limits::default();
                self.filter_limits.check(c, &mut limits);
                limits
            },
        };
        const NAME: &str = "zonecast-forwarder";
        c.require("database_url", config.store.database_url.as_ref(), NAME, "");
        c.require("nats_url", config.bus.nats_url.as_ref(), NAME, "");
        c.require("secret_key", config.secret_key.as_ref(), NAME, " (the API's, to unseal passwords and profiles)");
        (config, self.log.check(c))
    }
}
