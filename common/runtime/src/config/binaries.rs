//! One configuration per binary, made of the sections it uses: the all-in-one's holds them all
//! and hands each service its part.

use std::net::SocketAddr;
use std::path::PathBuf;

use zonecast_model::{Limits, Secret};

use super::{
    ApiSettings, AuthConfig, BusConfig, DEFAULT_HTTP_ADDR, EvaluatorSettings, ForwarderSettings, HttpConfig,
    MqttInputConfig, StoreConfig,
};

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
