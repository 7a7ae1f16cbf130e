//! The sections several binaries take: the TOML file, the bus, the store, the listeners, the
//! secret key, credentials, the site and the log format.

use std::marker::PhantomData;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use zonecast_model::Secret;

use super::{Check, secret, split_list};
use crate::config::{ApiKey, AuthConfig, BusConfig, Client, StoreConfig};

/// `--config`: the TOML file.
#[derive(Args)]
pub struct FileArgs {
    /// TOML file with the same settings as the variables, in snake case without the prefix
    /// (`http_addr = "0.0.0.0:8080"`); flags and variables win over it.
    #[arg(long, env = "ZONECAST_CONFIG", value_name = "FILE")]
    // Read from the matches, before the other settings are parsed (the file feeds them).
    #[allow(dead_code)]
    pub(super) config: Option<PathBuf>,
}

/// The bus section.
#[derive(Args)]
#[command(next_help_heading = "Bus")]
pub struct BusArgs {
    /// NATS URL; may carry credentials. The all-in-one uses an in-process bus without it.
    #[arg(long, env = "ZONECAST_NATS_URL", value_name = "URL", hide_env_values = true)]
    pub(super) nats_url: Option<String>,
    /// First token of every subject: letters, digits, - and _.
    #[arg(long, env = "ZONECAST_SUBJECT_PREFIX", value_name = "TOKEN", default_value = "zonecast")]
    pub(super) subject_prefix: String,
    /// On how many NATS servers JetStream keeps each stream zonecast makes (1-5): 3 with a
    /// three-server NATS cluster survives the loss of one server. More than 1 needs a cluster.
    #[arg(long, env = "ZONECAST_NATS_REPLICAS", value_name = "N", default_value = "1")]
    pub(super) nats_replicas: String,
    /// Number of position partitions (1-4096); the same for every service of a site. Default:
    /// 64 for the distributed services (room for 16 evaluators and more), 16 for the
    /// all-in-one.
    #[arg(long, env = "ZONECAST_PARTITIONS", value_name = "N")]
    pub(super) partitions: Option<String>,
    /// How long the event journal keeps an event, in seconds (60-31536000): the event history
    /// reaches this far back, and a consumer away longer loses the older ones, counted.
    #[arg(long, env = "ZONECAST_EVENT_RETENTION_SECS", value_name = "SECONDS", default_value = "604800")]
    pub(super) event_retention_secs: String,
    /// How many bytes of events the journal keeps at most (1048576-1099511627776); the oldest
    /// leave first, counted for consumers that lacked them.
    #[arg(long, env = "ZONECAST_EVENT_RETENTION_BYTES", value_name = "BYTES", default_value = "1073741824")]
    pub(super) event_retention_bytes: String,
    /// How long positions are stored for the evaluators over NATS, in seconds (10-3600): an
    /// evaluator that restarts within it resumes where it left off; beyond, what it missed is
    /// skipped, counted and logged.
    #[arg(long, env = "ZONECAST_POSITION_RETENTION_SECS", value_name = "SECONDS", default_value = "60")]
    pub(super) position_retention_secs: String,
    /// How many bytes of positions are stored at most over NATS, over all partitions
    /// (1048576-1099511627776); the oldest leave first.
    #[arg(long, env = "ZONECAST_POSITION_RETENTION_BYTES", value_name = "BYTES", default_value = "1073741824")]
    pub(super) position_retention_bytes: String,
    /// Whether ingest also publishes every position on its own subject,
    /// `<prefix>.positions.<partition>.<MAC>` (true or false).
    #[arg(long, env = "ZONECAST_POSITION_SUBJECTS", value_name = "BOOL", default_value = "false")]
    pub(super) position_subjects: String,
    /// How far behind, in milliseconds, an evaluator or forwarder may be before ingest pushes
    /// back: the HTTP input holds requests (see ZONECAST_INGEST_HOLD_MS), the NATS and MQTT
    /// inputs wait (0-60000; 0: never). The queueing delay the pipeline keeps at full speed.
    #[arg(long, env = "ZONECAST_INGEST_MAX_LAG_MS", value_name = "MS", default_value = "15")]
    pub(super) ingest_max_lag_ms: String,
    /// How long, in milliseconds, the HTTP position input holds a request while the pipeline is
    /// behind, taking it the moment it has caught up; past it the answer is 503 with
    /// Retry-After (0-60000; 0: 503 at once).
    #[arg(long, env = "ZONECAST_INGEST_HOLD_MS", value_name = "MS", default_value = "1000")]
    pub(super) ingest_hold_ms: String,
    /// Bytes of payloads the ingestor's NATS input holds while it is behind its publishers
    /// (65536-68719476736); past them it drops payloads, counted in zonecast_ingest_dropped_total.
    #[arg(long, env = "ZONECAST_INGEST_NATS_BUFFER_BYTES", value_name = "BYTES", default_value = "67108864")]
    pub(super) ingest_nats_buffer_bytes: String,
}

impl BusArgs {
    /// The bus section; `partitions` unless `ZONECAST_PARTITIONS` says otherwise.
    pub fn check(&self, c: &mut Check<'_>, partitions: u32) -> BusConfig {
        let prefix = &self.subject_prefix;
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
            c.bad("subject_prefix", "must be one subject token: letters, digits, - and _");
        }
        let replicas = c.within("nats_replicas", &self.nats_replicas, 1, 5);
        BusConfig {
            nats_url: secret(&self.nats_url),
            subject_prefix: prefix.clone(),
            partitions: match &self.partitions {
                Some(raw) => c.within("partitions", raw, 1, 4096),
                None => partitions,
            },
            journal: zonecast_bus::JournalSettings {
                max_age: std::time::Duration::from_secs(c.within(
                    "event_retention_secs",
                    &self.event_retention_secs,
                    60,
                    365 * 24 * 3600,
                )),
                max_bytes: c.within("event_retention_bytes", &self.event_retention_bytes, 1 << 20, 1 << 40),
                replicas,
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
                hold: std::time::Duration::from_millis(c.within("ingest_hold_ms", &self.ingest_hold_ms, 0, 60_000)),
                per_position_subjects: c.flag("position_subjects", &self.position_subjects),
                replicas,
            },
            ingest_buffer_bytes: c.within("ingest_nats_buffer_bytes", &self.ingest_nats_buffer_bytes, 1 << 16, 1 << 36),
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
    pub(super) database_url: Option<String>,
    /// PostgreSQL pool size.
    #[arg(long, env = "ZONECAST_DATABASE_POOL", value_name = "N", default_value = "16")]
    pub(super) database_pool: String,
}

impl StoreArgs {
    /// The store section.
    pub fn check(&self, c: &mut Check<'_>) -> StoreConfig {
        StoreConfig {
            database_url: secret(&self.database_url),
            pool: c.parse("database_pool", &self.database_pool, 16),
        }
    }
}

/// `ZONECAST_HTTP_ADDR`, by default on 127.0.0.1 at a port of each binary's own (`L`), so
/// that one of each starts on one host without settings: 8080 for the API and the all-in-one,
/// 8082 for an evaluator, 8083 for a forwarder (the ingestor's own listener is 8081).
#[derive(Args)]
pub struct HttpAddrArgs<L: DefaultAddr> {
    /// HTTP listen address: the config API's (in the all-in-one also `POST /v3/positions`);
    /// the evaluator and forwarder serve `/livez`, `/readyz`, `/healthz` and `/metrics` there.
    #[arg(long, env = "ZONECAST_HTTP_ADDR", value_name = "ADDR", default_value = L::ADDR)]
    pub(super) http_addr: String,
    #[arg(skip)]
    listener: PhantomData<L>,
}

impl<L: DefaultAddr> HttpAddrArgs<L> {
    /// The listen address.
    pub fn check(&self, c: &mut Check<'_>) -> SocketAddr {
        let fallback = L::ADDR.parse().unwrap_or(SocketAddr::from(([127, 0, 0, 1], 0)));
        c.parse("http_addr", &self.http_addr, fallback)
    }
}

/// A binary's default `ZONECAST_HTTP_ADDR`.
pub trait DefaultAddr: Send + Sync + 'static {
    /// The address, as `--help` shows it.
    const ADDR: &'static str;
}

/// `ZONECAST_OPS_ADDR`.
#[derive(Args)]
pub struct OpsAddrArgs {
    /// Operations listener: `/livez`, `/readyz`, `/healthz` and `/metrics` without
    /// credentials, for probes and Prometheus on an internal address. Off when unset.
    #[arg(long, env = "ZONECAST_OPS_ADDR", value_name = "ADDR")]
    pub(super) ops_addr: Option<String>,
}

impl OpsAddrArgs {
    /// The operations listener's address, when one is set.
    pub fn check(&self, c: &mut Check<'_>) -> Option<SocketAddr> {
        let raw = self.ops_addr.as_deref()?;
        Some(c.parse("ops_addr", raw, SocketAddr::from(([127, 0, 0, 1], 0))))
    }
}

/// `ZONECAST_SECRET_KEY`.
#[derive(Args)]
pub struct SecretArgs {
    /// Base64 of 32 random bytes, the same for every replica: seals stored secrets and signs
    /// bearer tokens. The all-in-one generates one in its data directory without it.
    #[arg(long, env = "ZONECAST_SECRET_KEY", value_name = "BASE64", hide_env_values = true)]
    pub(super) secret_key: Option<String>,
}

impl SecretArgs {
    /// The key, when one is set (an empty value is none).
    pub fn check(&self) -> Option<Secret> {
        secret(&self.secret_key)
    }
}

/// The credentials section.
#[derive(Args)]
#[command(next_help_heading = "Credentials")]
pub struct AuthArgs {
    /// API keys accepted in X-API-Key: `key:authority` pairs, comma-separated; authority is
    /// read, write or admin.
    #[arg(long, env = "ZONECAST_API_KEYS", value_name = "PAIRS", hide_env_values = true)]
    pub(super) api_keys: Option<String>,
    /// Clients of `POST /v3/auth/token`: `auth_id:auth_secret:authority` triples,
    /// comma-separated.
    #[arg(long, env = "ZONECAST_CLIENTS", value_name = "TRIPLES", hide_env_values = true)]
    pub(super) clients: Option<String>,
    /// Bearer token lifetime, in seconds.
    #[arg(long, env = "ZONECAST_TOKEN_TTL_SECONDS", value_name = "SECONDS", default_value = "3600")]
    pub(super) token_ttl_seconds: String,
}

impl AuthArgs {
    /// The credentials.
    pub fn check(&self, c: &mut Check<'_>) -> AuthConfig {
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
    pub(super) site_id: String,
}

impl SiteArgs {
    /// The site's id.
    pub fn check(&self, c: &mut Check<'_>) -> i64 {
        c.parse("site_id", &self.site_id, 1)
    }
}

/// `ZONECAST_LOG_FORMAT`.
#[derive(Args)]
pub struct LogArgs {
    /// Log format: text or json (one object per line). `RUST_LOG` sets the filter.
    #[arg(long, env = "ZONECAST_LOG_FORMAT", value_name = "FORMAT", default_value = "text")]
    pub(super) log_format: String,
}

impl LogArgs {
    /// Whether logs are JSON.
    pub fn check(&self, c: &mut Check<'_>) -> bool {
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
