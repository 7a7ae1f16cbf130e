//! The sections a binary's configuration is made of: the bus, the store, an HTTP listener,
//! credentials, and each service's own settings.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use zonecast_model::Secret;

use super::{ApiKey, Client};

/// What every HTTP listener bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest request body, in bytes (413 past it).
    pub max_body_bytes: u64,
    /// Most connections open at once; past it the listener stops accepting until one closes
    /// (new clients wait in the kernel's backlog).
    pub max_connections: usize,
    /// Time a client has to send a request's head, from the moment the connection is open or
    /// the previous response was sent: an idle or half-sent connection is closed after it.
    pub header_timeout: Duration,
    /// Time a client has to send a request's body once its head is in (408 past it).
    pub body_timeout: Duration,
}

impl Default for HttpLimits {
    /// The defaults of `ZONECAST_MAX_BODY_BYTES`, `ZONECAST_HTTP_MAX_CONNECTIONS`,
    /// `ZONECAST_HTTP_HEADER_TIMEOUT_MS` and `ZONECAST_HTTP_BODY_TIMEOUT_MS`.
    fn default() -> Self {
        Self {
            max_body_bytes: 8 * 1024 * 1024,
            max_connections: 4096,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
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
    /// journal keeps; `ZONECAST_NATS_REPLICAS`: on how many servers.
    pub journal: zonecast_bus::JournalSettings,
    /// `ZONECAST_POSITION_RETENTION_SECS`, `ZONECAST_POSITION_RETENTION_BYTES` and
    /// `ZONECAST_POSITION_SUBJECTS`: what the position streams keep, and whether positions are
    /// published one per subject too; `ZONECAST_NATS_REPLICAS`: on how many servers.
    pub positions: zonecast_bus::PositionSettings,
    /// `ZONECAST_INGEST_NATS_BUFFER_BYTES`: bytes of payloads the ingestor's NATS input holds
    /// while it is behind its publishers; past them it drops payloads, counted.
    pub ingest_buffer_bytes: usize,
}

impl Default for BusConfig {
    fn default() -> Self {
        Self {
            nats_url: None,
            subject_prefix: "zonecast".into(),
            partitions: 16,
            journal: zonecast_bus::JournalSettings::default(),
            positions: zonecast_bus::PositionSettings::default(),
            ingest_buffer_bytes: DEFAULT_INGEST_BUFFER_BYTES,
        }
    }
}

/// The default of `ZONECAST_INGEST_NATS_BUFFER_BYTES`: 64 MiB.
pub const DEFAULT_INGEST_BUFFER_BYTES: usize = 64 << 20;

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
    /// Each as written, trimmed; empty: none.
    pub cors_origins: Vec<String>,
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            max_connections: 100,
            apply_wait: std::time::Duration::from_secs(2),
            stream_buffer: 5000,
            stream_heartbeat: std::time::Duration::from_secs(15),
            stream_position_hz: 5,
            cors_origins: Vec::new(),
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
