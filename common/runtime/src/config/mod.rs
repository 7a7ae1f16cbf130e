//! Configuration: one section per concern (bus, store, HTTP, auth, each service's own
//! settings), and one configuration per binary made of the sections it uses. Each binary's
//! settings are declared with clap ([`args`]), so `--help` lists them with their `ZONECAST_*`
//! variables and defaults; values come from a flag, else the variable, else the TOML file
//! named by `--config` / `ZONECAST_CONFIG`, else the default ([`load`]). Loading validates
//! everything and reports every problem at once; a binary cannot start with a setting it
//! needs missing. Loaded once in `main` and passed down; tests build configurations in code.

pub mod args;
mod load;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use zonecast_model::{Limits, Secret};

pub use crate::serve::HttpLimits;

/// What a credential may do; each level includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Authority {
    /// GETs.
    Read,
    /// Zone writes, settings, radii, positions.
    Write,
    /// MQTT connections and certificate profiles.
    Admin,
}

impl FromStr for Authority {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "read" => Ok(Self::Read),
            "write" => Ok(Self::Write),
            "admin" => Ok(Self::Admin),
            other => Err(format!("unknown authority '{other}' (expected read, write or admin)")),
        }
    }
}

impl Authority {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Admin => "admin",
        }
    }
}

/// An API key accepted in `X-API-Key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The key text.
    pub key: Secret,
    /// What it may do.
    pub authority: Authority,
}

/// A client that may obtain bearer tokens with `POST /v3/auth/token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// `auth_id`.
    pub id: String,
    /// `auth_secret`.
    pub secret: Secret,
    /// What its tokens may do.
    pub authority: Authority,
}

/// Every environment variable the binaries read, `ZONECAST_CONFIG` (the file) included: the
/// union of what each binary declares (a unit test holds them equal). Deployment files are
/// checked against it.
pub const ENV_VARS: &[&str] = &[
    "ZONECAST_CONFIG",
    "ZONECAST_HTTP_ADDR",
    "ZONECAST_INGEST_HTTP_ADDR",
    "ZONECAST_OPS_ADDR",
    "ZONECAST_DATA_DIR",
    "ZONECAST_DATABASE_URL",
    "ZONECAST_DATABASE_POOL",
    "ZONECAST_NATS_URL",
    "ZONECAST_EVENT_RETENTION_SECS",
    "ZONECAST_EVENT_RETENTION_BYTES",
    "ZONECAST_POSITION_RETENTION_SECS",
    "ZONECAST_POSITION_RETENTION_BYTES",
    "ZONECAST_POSITION_SUBJECTS",
    "ZONECAST_INGEST_MAX_LAG_MS",
    "ZONECAST_SUBJECT_PREFIX",
    "ZONECAST_PARTITIONS",
    "ZONECAST_EVALUATOR_PARTITIONS",
    "ZONECAST_HTTP_ACTION_RETRY_FOR",
    "ZONECAST_SITE_ID",
    "ZONECAST_API_KEYS",
    "ZONECAST_CLIENTS",
    "ZONECAST_SECRET_KEY",
    "ZONECAST_TOKEN_TTL_SECONDS",
    "ZONECAST_MAX_BODY_BYTES",
    "ZONECAST_MAX_CONNECTIONS",
    "ZONECAST_APPLY_WAIT_MS",
    "ZONECAST_STREAM_BUFFER",
    "ZONECAST_STREAM_HEARTBEAT_MS",
    "ZONECAST_STREAM_POSITION_HZ",
    "ZONECAST_CORS_ORIGINS",
    "ZONECAST_HTTP_MAX_CONNECTIONS",
    "ZONECAST_HTTP_HEADER_TIMEOUT_MS",
    "ZONECAST_HTTP_BODY_TIMEOUT_MS",
    "ZONECAST_LOG_FORMAT",
    "ZONECAST_INGEST_MQTT_URL",
    "ZONECAST_INGEST_MQTT_TOPICS",
    "ZONECAST_INGEST_MQTT_CA",
    "ZONECAST_FORWARDER_QUEUE",
    "ZONECAST_LIMIT_DEVICE_LIST",
    "ZONECAST_LIMIT_ZONE_ACTIONS",
    "ZONECAST_LIMIT_POLYGON_VERTICES",
    "ZONECAST_LIMIT_BATCH_ZONES",
    "ZONECAST_LIMIT_RADII_PER_WRITE",
    "ZONECAST_LIMIT_INFO_MESSAGE_CHARS",
    "ZONECAST_LIMIT_TOPICS_PER_CONNECTION",
    "ZONECAST_LIMIT_FILTERS_PER_CHAIN",
    "ZONECAST_LIMIT_FILTERS_PER_CONNECTION",
    "ZONECAST_LIMIT_REGEXES_PER_CONNECTION",
    "ZONECAST_LIMIT_REGEX_BYTES",
    "ZONECAST_LIMIT_REGEX_TOTAL_BYTES",
    "ZONECAST_LIMIT_REGEX_COMPILE_MS",
    "ZONECAST_DEMO",
];

/// One thing wrong with a configuration: the setting (its variable, flag or file key, as it
/// was given) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `ZONECAST_HTTP_ADDR`, `--http-addr` or `http_addr (in FILE)`.
    pub name: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.reason)
    }
}

/// Why no configuration came out of loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// `--help` or `--version` was asked for: the text to print. Not a failure.
    Help(String),
    /// Every problem found, not only the first.
    Invalid(Vec<Problem>),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Help(text) => f.write_str(text),
            Self::Invalid(problems) if problems.len() == 1 => write!(f, "{}", problems[0]),
            Self::Invalid(problems) => {
                write!(f, "{} configuration problems:", problems.len())?;
                for problem in problems {
                    write!(f, "\n  {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// The problems, empty for [`ConfigError::Help`].
    pub fn problems(&self) -> &[Problem] {
        match self {
            Self::Help(_) => &[],
            Self::Invalid(problems) => problems,
        }
    }
}

/// The bus: NATS when a URL is set (required by every distributed binary), in-process
/// otherwise; and the subject names on it.
#[derive(Debug, Clone)]
pub struct BusConfig {
    /// `ZONECAST_NATS_URL`; may carry credentials.
    pub nats_url: Option<Secret>,
    /// `ZONECAST_SUBJECT_PREFIX`: first token of every subject.
    pub subject_prefix: String,
    /// `ZONECAST_PARTITIONS`: number of position partitions.
    pub partitions: u32,
    /// `ZONECAST_EVENT_RETENTION_SECS` and `ZONECAST_EVENT_RETENTION_BYTES`: what the event
    /// journal keeps.
    pub journal: zonecast_bus::JournalSettings,
    /// `ZONECAST_POSITION_RETENTION_SECS`, `ZONECAST_POSITION_RETENTION_BYTES` and
    /// `ZONECAST_POSITION_SUBJECTS`: what the position streams keep, and whether positions are
    /// published one per subject too.
    pub positions: zonecast_bus::PositionSettings,
}

impl Default for BusConfig {
    fn default() -> Self {
        Self {
            nats_url: None,
            subject_prefix: "zonecast".into(),
            partitions: 16,
            journal: zonecast_bus::JournalSettings::default(),
            positions: zonecast_bus::PositionSettings::default(),
        }
    }
}

/// The store: PostgreSQL when a URL is set (required by the distributed API, evaluator and
/// forwarder), the all-in-one's SQLite file otherwise.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `ZONECAST_DATABASE_URL`; may carry a password.
    pub database_url: Option<Secret>,
    /// `ZONECAST_DATABASE_POOL`: PostgreSQL pool size.
    pub pool: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self { database_url: None, pool: zonecast_store::DEFAULT_POOL_SIZE }
    }
}

/// An HTTP listener: where, and within which limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpConfig {
    /// Listen address.
    pub addr: SocketAddr,
    /// `ZONECAST_MAX_BODY_BYTES`, `ZONECAST_HTTP_MAX_CONNECTIONS`,
    /// `ZONECAST_HTTP_HEADER_TIMEOUT_MS`, `ZONECAST_HTTP_BODY_TIMEOUT_MS`.
    pub limits: HttpLimits,
}

impl HttpConfig {
    /// `addr` with the default limits.
    pub fn at(addr: SocketAddr) -> Self {
        Self { addr, limits: HttpLimits::default() }
    }
}

/// Default of `ZONECAST_HTTP_ADDR`.
pub const DEFAULT_HTTP_ADDR: SocketAddr =
    SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 8080));
/// Default of `ZONECAST_INGEST_HTTP_ADDR`.
pub const DEFAULT_INGEST_HTTP_ADDR: SocketAddr =
    SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 8081));

/// Who may call: API keys, token clients and the tokens' lifetime.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// `ZONECAST_API_KEYS`: `key:authority` pairs.
    pub api_keys: Vec<ApiKey>,
    /// `ZONECAST_CLIENTS`: `auth_id:auth_secret:authority` triples.
    pub clients: Vec<Client>,
    /// `ZONECAST_TOKEN_TTL_SECONDS`: bearer token lifetime.
    pub token_ttl_seconds: u64,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self { api_keys: Vec::new(), clients: Vec::new(), token_ttl_seconds: 3600 }
    }
}

/// The API's own settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiSettings {
    /// `ZONECAST_MAX_CONNECTIONS`: most MQTT connections that may exist; each holds a client
    /// and a queue in every forwarder, so their number bounds the forwarders' memory.
    pub max_connections: usize,
    /// `ZONECAST_APPLY_WAIT_MS`: how long a configuration write waits, at most, for every live
    /// evaluator and forwarder to have it in force before the API answers; zero answers at once.
    pub apply_wait: std::time::Duration,
    /// `ZONECAST_STREAM_BUFFER`: how many events a live stream's client may fall behind the
    /// newest; past it the client is told it lagged and the stream ends.
    pub stream_buffer: usize,
    /// `ZONECAST_STREAM_HEARTBEAT_MS`: how long a live stream stays silent at most before a
    /// `: keep-alive` comment, so proxies do not close it.
    pub stream_heartbeat: std::time::Duration,
    /// `ZONECAST_STREAM_POSITION_HZ`: most positions per second a position stream sends of one
    /// device; the newest of each device goes out at the next tick.
    pub stream_position_hz: u32,
    /// `ZONECAST_CORS_ORIGINS`: the other origins whose pages may open the live streams.
    pub cors: crate::cors::Cors,
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            max_connections: 100,
            apply_wait: std::time::Duration::from_secs(2),
            stream_buffer: 5000,
            stream_heartbeat: std::time::Duration::from_secs(15),
            stream_position_hz: 5,
            cors: crate::cors::Cors::default(),
        }
    }
}

/// The ingestor's MQTT input: an RTLS broker and the topics to take positions from.
#[derive(Debug, Clone)]
pub struct MqttInputConfig {
    /// `ZONECAST_INGEST_MQTT_URL`, e.g. `mqtt://user:pass@host:1883` or `mqtts://host:8883`;
    /// may carry credentials.
    pub url: Secret,
    /// `ZONECAST_INGEST_MQTT_TOPICS`: topic filters (wildcards allowed); at least one.
    pub topics: Vec<String>,
    /// `ZONECAST_INGEST_MQTT_CA`: PEM file of the CA that signed the broker's certificate
    /// (`mqtts://` only; without it the broker is refused, there is no system trust store).
    pub ca: Option<PathBuf>,
}

/// The evaluator's own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvaluatorSettings {
    /// `ZONECAST_EVALUATOR_PARTITIONS`: inclusive range an evaluator owns; `None` = all.
    pub partitions: Option<(u32, u32)>,
    /// `ZONECAST_HTTP_ACTION_RETRY_FOR`: how long an http-request action is retried after its
    /// first try failed; zero sends it once.
    pub http_action_retry_for: std::time::Duration,
}

/// Default of `ZONECAST_HTTP_ACTION_RETRY_FOR`: one hour.
pub const DEFAULT_HTTP_ACTION_RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(3600);

impl Default for EvaluatorSettings {
    fn default() -> Self {
        Self { partitions: None, http_action_retry_for: DEFAULT_HTTP_ACTION_RETRY_FOR }
    }
}

/// The forwarder's own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwarderSettings {
    /// `ZONECAST_FORWARDER_QUEUE`: messages one MQTT connection holds (waiting or
    /// unacknowledged) while its broker is away; beyond it the oldest is dropped and counted.
    pub queue: usize,
}

impl Default for ForwarderSettings {
    fn default() -> Self {
        Self { queue: 10_000 }
    }
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

/// `zonecast-ingestor`: positions from NATS, MQTT and HTTP, published on NATS.
#[derive(Debug, Clone)]
pub struct IngestorConfig {
    /// `ZONECAST_INGEST_HTTP_ADDR` and the HTTP limits; `None` leaves the HTTP input out (the
    /// all-in-one answers `POST /v3/positions` on the API's listener).
    pub http: Option<HttpConfig>,
    /// NATS (URL required).
    pub bus: BusConfig,
    /// `ZONECAST_SECRET_KEY` (required with an HTTP listener): the API's, to accept its tokens.
    pub secret_key: Option<Secret>,
    /// Credentials of the HTTP input.
    pub auth: AuthConfig,
    /// `ZONECAST_SITE_ID`: SiteID in position events.
    pub site_id: i64,
    /// The MQTT input, when configured.
    pub mqtt: Option<MqttInputConfig>,
}

/// `zonecast-evaluator`: the evaluator on PostgreSQL and NATS.
#[derive(Debug, Clone)]
pub struct EvaluatorConfig {
    /// `ZONECAST_HTTP_ADDR`: the operations listener, and the HTTP limits.
    pub ops: HttpConfig,
    /// NATS (URL required).
    pub bus: BusConfig,
    /// PostgreSQL (URL required).
    pub store: StoreConfig,
    /// `ZONECAST_SECRET_KEY` (required): the API's, to unseal the secrets that sign
    /// http-request actions.
    pub secret_key: Option<Secret>,
    /// `ZONECAST_SITE_ID`: SiteID in events.
    pub site_id: i64,
    /// The evaluator's own settings.
    pub evaluator: EvaluatorSettings,
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
    /// `ZONECAST_SECRET_KEY` (required): the API's, to unseal passwords and profiles.
    pub secret_key: Option<Secret>,
    /// The forwarder's own settings.
    pub forwarder: ForwarderSettings,
    /// `ZONECAST_LIMIT_*` of filter chains (the others keep their defaults): what compiling one
    /// connection's chains may spend.
    pub limits: Limits,
}

/// `zonecast`, the all-in-one: every section, nothing required. Its parts are handed to each
/// service through [`Config::api`], [`Config::ingestor`], [`Config::evaluator`] and
/// [`Config::forwarder`].
#[derive(Debug, Clone)]
pub struct Config {
    /// `ZONECAST_HTTP_ADDR` (the API and `POST /v3/positions`) and the HTTP limits.
    pub http: HttpConfig,
    /// `ZONECAST_OPS_ADDR`: optional operations listener.
    pub ops_addr: Option<SocketAddr>,
    /// `ZONECAST_DATA_DIR`: SQLite file and generated keys.
    pub data_dir: PathBuf,
    /// In-process unless a NATS URL is set.
    pub bus: BusConfig,
    /// SQLite in the data directory unless a PostgreSQL URL is set.
    pub store: StoreConfig,
    /// `ZONECAST_SECRET_KEY`; generated into the data directory when unset.
    pub secret_key: Option<Secret>,
    /// Credentials; an admin key is generated when there are none.
    pub auth: AuthConfig,
    /// `ZONECAST_SITE_ID`: SiteID in zones and events.
    pub site_id: i64,
    /// The API's own settings.
    pub api: ApiSettings,
    /// `ZONECAST_LIMIT_*`: what one request may ask.
    pub limits: Limits,
    /// The ingestor's MQTT input, when configured.
    pub mqtt: Option<MqttInputConfig>,
    /// The evaluators' settings.
    pub evaluator: EvaluatorSettings,
    /// The forwarder's settings.
    pub forwarder: ForwarderSettings,
    /// `ZONECAST_DEMO` / `--demo`: run the simulated warehouse (its zones, devices and forklift).
    pub demo: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            http: HttpConfig::at(DEFAULT_HTTP_ADDR),
            ops_addr: None,
            data_dir: PathBuf::from("./zonecast-data"),
            bus: BusConfig::default(),
            store: StoreConfig::default(),
            secret_key: None,
            auth: AuthConfig::default(),
            site_id: 1,
            api: ApiSettings::default(),
            limits: Limits::default(),
            mqtt: None,
            evaluator: EvaluatorSettings::default(),
            forwarder: ForwarderSettings::default(),
            demo: false,
        }
    }
}

impl Config {
    /// The API's part.
    pub fn api(&self) -> ApiConfig {
        ApiConfig {
            http: self.http,
            ops_addr: self.ops_addr,
            bus: self.bus.clone(),
            store: self.store.clone(),
            secret_key: self.secret_key.clone(),
            auth: self.auth.clone(),
            site_id: self.site_id,
            api: self.api.clone(),
            limits: self.limits,
        }
    }

    /// The ingestor's part, without an HTTP listener of its own.
    pub fn ingestor(&self) -> IngestorConfig {
        IngestorConfig {
            http: None,
            bus: self.bus.clone(),
            secret_key: self.secret_key.clone(),
            auth: self.auth.clone(),
            site_id: self.site_id,
            mqtt: self.mqtt.clone(),
        }
    }

    /// The evaluator's part; its operations listener would be the API's address.
    pub fn evaluator(&self) -> EvaluatorConfig {
        EvaluatorConfig {
            ops: self.http,
            bus: self.bus.clone(),
            store: self.store.clone(),
            secret_key: self.secret_key.clone(),
            site_id: self.site_id,
            evaluator: self.evaluator,
        }
    }

    /// The forwarder's part; its operations listener would be the API's address.
    pub fn forwarder(&self) -> ForwarderConfig {
        ForwarderConfig {
            ops: self.http,
            bus: self.bus.clone(),
            store: self.store.clone(),
            secret_key: self.secret_key.clone(),
            forwarder: self.forwarder,
            limits: self.limits,
        }
    }
}

/// A binary's configuration: what it declares on the command line and how it is validated.
pub trait Load: Sized {
    /// The binary's name, as problems and `--help` name it.
    const BINARY: &'static str;

    /// Loads from the command line `args` (the binary's name first) and the variables of
    /// `env`, then the TOML file either names; every problem is reported.
    fn load(args: Vec<std::ffi::OsString>, env: &HashMap<String, String>) -> Result<Loaded<Self>, ConfigError>;

    /// Loads from the process's command line and environment (variables that are not
    /// Unicode are none of ours, and skipped).
    fn from_process() -> Result<Loaded<Self>, ConfigError> {
        let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        Self::load(std::env::args_os().collect(), &env.collect())
    }
}

/// A loaded configuration and the settings that shape the process around it.
#[derive(Debug, Clone)]
pub struct Loaded<C> {
    /// The binary's configuration.
    pub config: C,
    /// `ZONECAST_LOG_FORMAT`: one JSON object per log line instead of text.
    pub log_json: bool,
}
