//! Configuration: a TOML file, then `ZONECAST_*` environment variables on top.
//! Loaded once in `main` and passed down; tests build [`Config`] in code.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;
use zonecast_model::Secret;

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

/// Every environment variable the services read, `ZONECAST_CONFIG` (the file) included.
/// [`Config::load`] reads nothing outside this list; deployment files are checked against it.
pub const ENV_VARS: &[&str] = &[
    "ZONECAST_CONFIG",
    "ZONECAST_HTTP_ADDR",
    "ZONECAST_INGEST_HTTP_ADDR",
    "ZONECAST_OPS_ADDR",
    "ZONECAST_DATA_DIR",
    "ZONECAST_DATABASE_URL",
    "ZONECAST_DATABASE_POOL",
    "ZONECAST_NATS_URL",
    "ZONECAST_SUBJECT_PREFIX",
    "ZONECAST_PARTITIONS",
    "ZONECAST_EVALUATOR_PARTITIONS",
    "ZONECAST_SITE_ID",
    "ZONECAST_API_KEYS",
    "ZONECAST_CLIENTS",
    "ZONECAST_SECRET_KEY",
    "ZONECAST_TOKEN_TTL_SECONDS",
    "ZONECAST_MAX_BODY_BYTES",
    "ZONECAST_MAX_CONNECTIONS",
    "ZONECAST_HTTP_MAX_CONNECTIONS",
    "ZONECAST_HTTP_HEADER_TIMEOUT_MS",
    "ZONECAST_HTTP_BODY_TIMEOUT_MS",
    "ZONECAST_LOG_FORMAT",
    "ZONECAST_INGEST_MQTT_URL",
    "ZONECAST_INGEST_MQTT_TOPICS",
    "ZONECAST_INGEST_MQTT_CA",
    "ZONECAST_FORWARDER_QUEUE",
];

/// Everything a service is configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `ZONECAST_HTTP_ADDR`: the config API's listener (all-in-one: also positions).
    pub http_addr: SocketAddr,
    /// `ZONECAST_OPS_ADDR`: optional operations listener of the API and the all-in-one:
    /// `/livez`, `/readyz`, `/healthz` and `/metrics` without credentials, for probes and
    /// Prometheus on an internal address.
    pub ops_addr: Option<SocketAddr>,
    /// `ZONECAST_INGEST_HTTP_ADDR`: the ingestor's listener in distributed mode.
    pub ingest_http_addr: SocketAddr,
    /// `ZONECAST_DATA_DIR`: all-in-one SQLite file and generated keys.
    pub data_dir: PathBuf,
    /// `ZONECAST_DATABASE_URL`: PostgreSQL; may carry a password, hence secret.
    pub database_url: Option<Secret>,
    /// `ZONECAST_DATABASE_POOL`: PostgreSQL pool size.
    pub database_pool: usize,
    /// `ZONECAST_NATS_URL`: NATS; may carry credentials.
    pub nats_url: Option<Secret>,
    /// `ZONECAST_SUBJECT_PREFIX`: first token of every subject.
    pub subject_prefix: String,
    /// `ZONECAST_PARTITIONS`: number of position partitions.
    pub partitions: u32,
    /// `ZONECAST_EVALUATOR_PARTITIONS`: inclusive range an evaluator owns; `None` = all.
    pub evaluator_partitions: Option<(u32, u32)>,
    /// `ZONECAST_SITE_ID`: SiteID in zones and events.
    pub site_id: i64,
    /// `ZONECAST_API_KEYS`: `key:authority` pairs.
    pub api_keys: Vec<ApiKey>,
    /// `ZONECAST_CLIENTS`: `auth_id:auth_secret:authority` triples.
    pub clients: Vec<Client>,
    /// `ZONECAST_SECRET_KEY`: base64 of 32 random bytes shared by all replicas; seals stored
    /// secrets and signs bearer tokens. The all-in-one generates one in its data directory.
    pub secret_key: Option<Secret>,
    /// `ZONECAST_TOKEN_TTL_SECONDS`: bearer token lifetime.
    pub token_ttl_seconds: u64,
    /// `ZONECAST_MAX_BODY_BYTES`: largest accepted request body.
    pub max_body_bytes: u64,
    /// `ZONECAST_HTTP_MAX_CONNECTIONS`: most connections each HTTP listener holds open at once.
    pub http_max_connections: usize,
    /// `ZONECAST_HTTP_HEADER_TIMEOUT_MS`: time a client has to send a request's head; idle and
    /// half-sent connections are closed after it.
    pub http_header_timeout: std::time::Duration,
    /// `ZONECAST_HTTP_BODY_TIMEOUT_MS`: time a client has to send a request's body (408 after).
    pub http_body_timeout: std::time::Duration,
    /// `ZONECAST_MAX_CONNECTIONS`: most MQTT connections that may exist; each holds a client
    /// and a queue in every forwarder, so their number bounds the forwarders' memory.
    pub max_connections: usize,
    /// `ZONECAST_LOG_FORMAT`: `text` (default) or `json`.
    pub log_json: bool,
    /// `ZONECAST_INGEST_MQTT_URL`: RTLS broker the ingestor subscribes to, e.g.
    /// `mqtt://user:pass@host:1883` or `mqtts://host:8883`; may carry credentials.
    pub ingest_mqtt_url: Option<Secret>,
    /// `ZONECAST_INGEST_MQTT_TOPICS`: comma-separated topic filters (wildcards allowed).
    pub ingest_mqtt_topics: Vec<String>,
    /// `ZONECAST_FORWARDER_QUEUE`: messages one MQTT connection holds (waiting or unacknowledged)
    /// while its broker is away; beyond it the oldest is dropped and counted.
    pub forwarder_queue: usize,
    /// `ZONECAST_INGEST_MQTT_CA`: PEM file of the CA that signed the broker's certificate
    /// (`mqtts://` only; without it the broker is refused, there is no system trust store).
    pub ingest_mqtt_ca: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            http_addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            ops_addr: None,
            ingest_http_addr: SocketAddr::from(([127, 0, 0, 1], 8081)),
            data_dir: PathBuf::from("./zonecast-data"),
            database_url: None,
            database_pool: 16,
            nats_url: None,
            subject_prefix: "zonecast".into(),
            partitions: 16,
            evaluator_partitions: None,
            site_id: 1,
            api_keys: Vec::new(),
            clients: Vec::new(),
            secret_key: None,
            token_ttl_seconds: 3600,
            max_body_bytes: 8 * 1024 * 1024,
            max_connections: 100,
            http_max_connections: 4096,
            http_header_timeout: std::time::Duration::from_secs(10),
            http_body_timeout: std::time::Duration::from_secs(30),
            log_json: false,
            ingest_mqtt_url: None,
            ingest_mqtt_topics: Vec::new(),
            ingest_mqtt_ca: None,
            forwarder_queue: 10_000,
        }
    }
}

/// A configuration that cannot be used; names the variable or key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The TOML file could not be read or parsed.
    #[error("config file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A value does not parse or is out of range.
    #[error("{name}: {reason}")]
    Value {
        /// Variable or key.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// The TOML file: the same settings as the variables, in snake case without the prefix.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    http_addr: Option<String>,
    ops_addr: Option<String>,
    ingest_http_addr: Option<String>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    database_pool: Option<usize>,
    nats_url: Option<String>,
    subject_prefix: Option<String>,
    partitions: Option<u32>,
    evaluator_partitions: Option<String>,
    site_id: Option<i64>,
    api_keys: Option<Vec<String>>,
    clients: Option<Vec<String>>,
    secret_key: Option<String>,
    token_ttl_seconds: Option<u64>,
    max_body_bytes: Option<u64>,
    max_connections: Option<usize>,
    http_max_connections: Option<usize>,
    http_header_timeout_ms: Option<u64>,
    http_body_timeout_ms: Option<u64>,
    log_format: Option<String>,
    ingest_mqtt_url: Option<String>,
    ingest_mqtt_topics: Option<Vec<String>>,
    ingest_mqtt_ca: Option<PathBuf>,
    forwarder_queue: Option<usize>,
}

fn bad(name: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Value { name: name.into(), reason: reason.into() }
}

fn parse<T: FromStr>(name: &str, v: &str) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    v.trim().parse::<T>().map_err(|e| bad(name, format!("'{v}': {e}")))
}

fn parse_api_key(name: &str, item: &str) -> Result<ApiKey, ConfigError> {
    let (key, authority) = item.trim().rsplit_once(':').ok_or_else(|| bad(name, "expected key:authority pairs"))?;
    if key.is_empty() {
        return Err(bad(name, "empty key"));
    }
    Ok(ApiKey { key: Secret::new(key), authority: authority.parse().map_err(|e: String| bad(name, e))? })
}

fn parse_client(name: &str, item: &str) -> Result<Client, ConfigError> {
    let mut parts = item.trim().splitn(2, ':');
    let id = parts.next().unwrap_or_default();
    let rest = parts.next().ok_or_else(|| bad(name, "expected auth_id:auth_secret:authority triples"))?;
    let (secret, authority) =
        rest.rsplit_once(':').ok_or_else(|| bad(name, "expected auth_id:auth_secret:authority triples"))?;
    if id.is_empty() || secret.is_empty() {
        return Err(bad(name, "empty auth_id or auth_secret"));
    }
    Ok(Client {
        id: id.to_owned(),
        secret: Secret::new(secret),
        authority: authority.parse().map_err(|e: String| bad(name, e))?,
    })
}

fn parse_range(name: &str, v: &str) -> Result<(u32, u32), ConfigError> {
    let (a, b) = v.trim().split_once('-').unwrap_or((v.trim(), v.trim()));
    let (a, b): (u32, u32) = (parse(name, a)?, parse(name, b)?);
    if a > b {
        return Err(bad(name, format!("'{v}': start after end")));
    }
    Ok((a, b))
}

fn split_list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

impl Config {
    /// Loads the file at `path` (if any), then applies `ZONECAST_*` variables from `env`.
    pub fn load(path: Option<&Path>, env: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let file = match path {
            None => FileConfig::default(),
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| ConfigError::File { path: p.to_owned(), reason: e.to_string() })?;
                toml::from_str(&text).map_err(|e| ConfigError::File { path: p.to_owned(), reason: e.to_string() })?
            }
        };
        let mut c = Self::default();
        // Each setting: the variable wins over the file key.
        let pick = |var: &str, file: Option<String>| -> Option<(String, String)> {
            let name = format!("ZONECAST_{var}");
            // A variable read here but missing from ENV_VARS would escape the deployment checks.
            debug_assert!(ENV_VARS.contains(&name.as_str()), "{name} is not listed in ENV_VARS");
            env.get(&name).cloned().map(|v| (name, v)).or_else(|| file.map(|v| (var.to_ascii_lowercase(), v)))
        };
        if let Some((n, v)) = pick("HTTP_ADDR", file.http_addr) {
            c.http_addr = parse(&n, &v)?;
        }
        if let Some((n, v)) = pick("OPS_ADDR", file.ops_addr) {
            c.ops_addr = Some(parse(&n, &v)?);
        }
        if let Some((n, v)) = pick("INGEST_HTTP_ADDR", file.ingest_http_addr) {
            c.ingest_http_addr = parse(&n, &v)?;
        }
        if let Some((_, v)) = pick("DATA_DIR", file.data_dir.map(|p| p.display().to_string())) {
            c.data_dir = PathBuf::from(v);
        }
        c.database_url =
            pick("DATABASE_URL", file.database_url).map(|(_, v)| Secret::new(v)).filter(|s| !s.expose().is_empty());
        if let Some((n, v)) = pick("DATABASE_POOL", file.database_pool.map(|n| n.to_string())) {
            c.database_pool = parse(&n, &v)?;
        }
        c.nats_url = pick("NATS_URL", file.nats_url).map(|(_, v)| Secret::new(v)).filter(|s| !s.expose().is_empty());
        if let Some((n, v)) = pick("SUBJECT_PREFIX", file.subject_prefix) {
            let valid = !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
            if !valid {
                return Err(bad(&n, "must be one subject token: letters, digits, - and _"));
            }
            c.subject_prefix = v;
        }
        if let Some((n, v)) = pick("PARTITIONS", file.partitions.map(|n| n.to_string())) {
            c.partitions = parse(&n, &v)?;
            if c.partitions == 0 || c.partitions > 4096 {
                return Err(bad(&n, "must be between 1 and 4096"));
            }
        }
        if let Some((n, v)) = pick("EVALUATOR_PARTITIONS", file.evaluator_partitions) {
            let (a, b) = parse_range(&n, &v)?;
            if b >= c.partitions {
                return Err(bad(&n, format!("range ends at {b} but there are {} partitions", c.partitions)));
            }
            c.evaluator_partitions = Some((a, b));
        }
        if let Some((n, v)) = pick("SITE_ID", file.site_id.map(|n| n.to_string())) {
            c.site_id = parse(&n, &v)?;
        }
        if let Some((n, v)) = pick("API_KEYS", file.api_keys.map(|l| l.join(","))) {
            c.api_keys = split_list(&v).map(|item| parse_api_key(&n, item)).collect::<Result<_, _>>()?;
        }
        if let Some((n, v)) = pick("CLIENTS", file.clients.map(|l| l.join(","))) {
            c.clients = split_list(&v).map(|item| parse_client(&n, item)).collect::<Result<_, _>>()?;
        }
        c.secret_key =
            pick("SECRET_KEY", file.secret_key).map(|(_, v)| Secret::new(v)).filter(|s| !s.expose().is_empty());
        if let Some((n, v)) = pick("TOKEN_TTL_SECONDS", file.token_ttl_seconds.map(|n| n.to_string())) {
            c.token_ttl_seconds = parse(&n, &v)?;
        }
        if let Some((n, v)) = pick("MAX_BODY_BYTES", file.max_body_bytes.map(|n| n.to_string())) {
            c.max_body_bytes = parse(&n, &v)?;
        }
        if let Some((n, v)) = pick("MAX_CONNECTIONS", file.max_connections.map(|n| n.to_string())) {
            c.max_connections = parse(&n, &v)?;
            if !(1..=10_000).contains(&c.max_connections) {
                return Err(bad(&n, "must be between 1 and 10000"));
            }
        }
        if let Some((n, v)) = pick("HTTP_MAX_CONNECTIONS", file.http_max_connections.map(|n| n.to_string())) {
            c.http_max_connections = parse(&n, &v)?;
            if !(1..=1_000_000).contains(&c.http_max_connections) {
                return Err(bad(&n, "must be between 1 and 1000000"));
            }
        }
        for (key, from_file, slot) in [
            ("HTTP_HEADER_TIMEOUT_MS", file.http_header_timeout_ms, &mut c.http_header_timeout),
            ("HTTP_BODY_TIMEOUT_MS", file.http_body_timeout_ms, &mut c.http_body_timeout),
        ] {
            if let Some((n, v)) = pick(key, from_file.map(|n| n.to_string())) {
                let ms: u64 = parse(&n, &v)?;
                if !(1..=3_600_000).contains(&ms) {
                    return Err(bad(&n, "must be between 1 and 3600000"));
                }
                *slot = std::time::Duration::from_millis(ms);
            }
        }
        if let Some((n, v)) = pick("LOG_FORMAT", file.log_format) {
            c.log_json = match v.as_str() {
                "json" => true,
                "text" => false,
                _ => return Err(bad(&n, "must be text or json")),
            };
        }
        c.ingest_mqtt_url = pick("INGEST_MQTT_URL", file.ingest_mqtt_url)
            .map(|(_, v)| Secret::new(v))
            .filter(|s| !s.expose().is_empty());
        if let Some((_, v)) = pick("INGEST_MQTT_TOPICS", file.ingest_mqtt_topics.map(|l| l.join(","))) {
            c.ingest_mqtt_topics = split_list(&v).map(str::to_owned).collect();
        }
        if let Some((_, v)) = pick("INGEST_MQTT_CA", file.ingest_mqtt_ca.map(|p| p.display().to_string())) {
            c.ingest_mqtt_ca = Some(PathBuf::from(v));
        }
        if let Some((n, v)) = pick("FORWARDER_QUEUE", file.forwarder_queue.map(|q| q.to_string())) {
            c.forwarder_queue = parse(&n, &v)?;
            if !(1..=10_000_000).contains(&c.forwarder_queue) {
                return Err(bad(&n, "must be between 1 and 10000000"));
            }
        }
        if c.ingest_mqtt_url.is_some() && c.ingest_mqtt_topics.is_empty() {
            return Err(bad("ZONECAST_INGEST_MQTT_TOPICS", "is required when ZONECAST_INGEST_MQTT_URL is set"));
        }
        Ok(c)
    }

    /// Loads from the file named by `ZONECAST_CONFIG` in `env` (optional) and the variables of
    /// `env`.
    pub fn from_vars(env: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let path = env.get("ZONECAST_CONFIG").map(PathBuf::from);
        Self::load(path.as_deref(), env)
    }

    /// Loads from `ZONECAST_CONFIG` (a TOML file path, optional) and the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(&std::env::vars().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn defaults_match_the_contract() {
        let c = Config::load(None, &env(&[])).unwrap();
        assert_eq!(c.http_addr.to_string(), "127.0.0.1:8080");
        assert_eq!(c.ingest_http_addr.to_string(), "127.0.0.1:8081");
        assert_eq!(c.subject_prefix, "zonecast");
        assert_eq!(c.partitions, 16);
        assert_eq!(c.site_id, 1);
        assert!(c.api_keys.is_empty() && c.clients.is_empty());
    }

    #[test]
    fn variables_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.toml");
        std::fs::write(&path, "site_id = 7\npartitions = 8\napi_keys = [\"k1:read\"]\n").unwrap();
        let c =
            Config::load(Some(&path), &env(&[("ZONECAST_SITE_ID", "501"), ("ZONECAST_EVALUATOR_PARTITIONS", "0-3")]))
                .unwrap();
        assert_eq!(c.site_id, 501);
        assert_eq!(c.partitions, 8);
        assert_eq!(c.evaluator_partitions, Some((0, 3)));
        assert_eq!(c.api_keys[0].authority, Authority::Read);
    }

    #[test]
    fn credentials_parse_and_never_show_in_debug() {
        let c = Config::load(
            None,
            &env(&[("ZONECAST_API_KEYS", "abc:admin, def:read"), ("ZONECAST_CLIENTS", "svc:s3cr:et:write")]),
        )
        .unwrap();
        assert_eq!(c.api_keys.len(), 2);
        assert_eq!(c.clients[0].secret.expose(), "s3cr:et");
        assert_eq!(c.clients[0].authority, Authority::Write);
        let debug = format!("{c:?}");
        assert!(!debug.contains("abc") && !debug.contains("s3cr"), "{debug}");
    }

    #[test]
    fn every_listed_variable_is_read() {
        // A value no setting accepts as its default: the load either fails on it or yields a
        // configuration that differs from the defaults, so the variable was looked at.
        let defaults = format!("{:?}", Config::load(None, &env(&[])).unwrap());
        for name in ENV_VARS {
            match Config::from_vars(&env(&[(name, "\u{1}not-a-default")])) {
                Err(_) => {}
                Ok(c) => assert_ne!(format!("{c:?}"), defaults, "{name} is listed but not read"),
            }
        }
    }

    #[test]
    fn the_operations_listener_is_off_unless_configured() {
        assert_eq!(Config::load(None, &env(&[])).unwrap().ops_addr, None);
        let c = Config::load(None, &env(&[("ZONECAST_OPS_ADDR", "0.0.0.0:9090")])).unwrap();
        assert_eq!(c.ops_addr, Some(SocketAddr::from(([0, 0, 0, 0], 9090))));
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = Config::load(None, &env(&[("ZONECAST_API_KEYS", "abc:root")])).unwrap_err();
        assert_eq!(e.to_string(), "ZONECAST_API_KEYS: unknown authority 'root' (expected read, write or admin)");
        let e = Config::load(None, &env(&[("ZONECAST_EVALUATOR_PARTITIONS", "0-16")])).unwrap_err();
        assert!(e.to_string().starts_with("ZONECAST_EVALUATOR_PARTITIONS"), "{e}");
        let e = Config::load(None, &env(&[("ZONECAST_FORWARDER_QUEUE", "0")])).unwrap_err();
        assert_eq!(e.to_string(), "ZONECAST_FORWARDER_QUEUE: must be between 1 and 10000000");
        let e = Config::load(None, &env(&[("ZONECAST_HTTP_ADDR", "nowhere")])).unwrap_err();
        assert!(e.to_string().starts_with("ZONECAST_HTTP_ADDR"), "{e}");
    }
}
