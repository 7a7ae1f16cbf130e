//! Configuration: the sections several binaries share (bus, store, HTTP, credentials) and how
//! a binary's configuration is loaded. Each service declares its own settings and its command
//! line in its crate, with clap, from the groups of [`args`] and its own, so `--help` lists
//! them with their `ZONECAST_*` variables and defaults; values come from a flag, else the
//! variable, else the TOML file named by `--config` / `ZONECAST_CONFIG`, else the default
//! ([`load`]). Loading validates everything and reports every problem at once; a binary
//! cannot start with a setting it needs missing. Loaded once in `main` and passed down; tests
//! build configurations in code.

pub mod args;
mod load;
mod origins;
mod sections;

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use zonecast_model::Secret;

pub use args::Check;
pub use load::load;
pub use origins::env_name;
pub use sections::{AuthConfig, BusConfig, HttpConfig, HttpLimits, StoreConfig};

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
/// union of what each binary declares (the all-in-one's tests hold them equal). A file key
/// outside it is refused, so that one file may serve every binary; deployment files are
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
    "ZONECAST_NATS_REPLICAS",
    "ZONECAST_EVENT_RETENTION_SECS",
    "ZONECAST_EVENT_RETENTION_BYTES",
    "ZONECAST_POSITION_RETENTION_SECS",
    "ZONECAST_POSITION_RETENTION_BYTES",
    "ZONECAST_POSITION_SUBJECTS",
    "ZONECAST_INGEST_MAX_LAG_MS",
    "ZONECAST_INGEST_HOLD_MS",
    "ZONECAST_INGEST_NATS_BUFFER_BYTES",
    "ZONECAST_SUBJECT_PREFIX",
    "ZONECAST_PARTITIONS",
    "ZONECAST_EVALUATOR_PARTITIONS",
    "ZONECAST_EVALUATOR_HEARTBEAT_MS",
    "ZONECAST_EVALUATOR_LEASE_MS",
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
    "ZONECAST_LIMIT_DEVICES_PER_IMPORT",
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
