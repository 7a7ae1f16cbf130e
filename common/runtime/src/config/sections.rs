//! The sections several binaries' configurations are made of: the bus, the store, an HTTP
//! listener and credentials. Each service's own settings are declared in its crate.

use std::net::SocketAddr;
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
