//! `zonecast`'s configuration: every service's settings for the whole pipeline in one process,
//! each service's group flattened from its crate, and its command line. Nothing is required:
//! without NATS and PostgreSQL URLs it runs on an in-process bus and SQLite.

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser};
use zonecast_api::{ApiAddr, ApiArgs, ApiConfig, ApiSettings};
use zonecast_evaluator::{EvaluatorArgs, EvaluatorConfig, EvaluatorSettings};
use zonecast_forwarder::{ForwarderArgs, ForwarderConfig, ForwarderSettings};
use zonecast_ingestor::{IngestorConfig, MqttArgs, MqttInputConfig};
use zonecast_runtime::config::args::{
    AuthArgs, BusArgs, DefaultAddr, FileArgs, FilterLimitArgs, HttpAddrArgs, InputLimitArgs, LimitsArgs, LogArgs,
    OpsAddrArgs, SecretArgs, SiteArgs, StoreArgs, all_limits,
};
use zonecast_runtime::config::{AuthConfig, BusConfig, Check, ConfigError, HttpConfig, Load, Loaded, StoreConfig};
use zonecast_runtime::{Limits, Secret};

/// Position partitions of the all-in-one unless `ZONECAST_PARTITIONS` says otherwise: its
/// evaluators (one per core) split them.
const PARTITIONS: u32 = 16;

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
            http: HttpConfig::at(ApiAddr::ADDR.parse().expect("the API's default address parses")),
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
    http_addr: HttpAddrArgs<ApiAddr>,
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
struct DemoArgs {
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

impl AllInOneCli {
    fn check(&self, c: &mut Check<'_>) -> (Config, bool) {
        let bus = self.bus.check(c, PARTITIONS);
        let evaluator = self.evaluator.check(c, bus.partitions);
        if evaluator.partitions.is_some() {
            // One range would leave every other partition unevaluated.
            c.bad(
                "evaluator_partitions",
                "the all-in-one evaluates every partition itself, one evaluator per core; pinning a range is for zonecast-evaluator",
            );
        }
        let config = Config {
            http: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            ops_addr: self.ops_addr.check(c),
            data_dir: self.data_dir.clone(),
            bus,
            store: self.store.check(c),
            secret_key: self.secret.check(),
            auth: self.auth.check(c),
            site_id: self.site.check(c),
            api: self.api.check(c),
            limits: all_limits(&self.input_limits, &self.filter_limits, c),
            mqtt: self.mqtt.check(c),
            evaluator,
            forwarder: self.forwarder.check(c),
            demo: c.flag("demo", &self.demo.demo),
        };
        (config, self.log.check(c))
    }
}

impl Load for Config {
    const BINARY: &'static str = "zonecast";

    fn load(args: Vec<OsString>, env: &HashMap<String, String>) -> Result<Loaded<Self>, ConfigError> {
        zonecast_runtime::config::load(args, env, AllInOneCli::check)
    }
}
