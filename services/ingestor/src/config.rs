//! `zonecast-ingestor`'s configuration: the MQTT position input and its command line, the
//! shared groups of `zonecast_runtime::config::args` and its own.

use std::collections::HashMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser};
use zonecast_runtime::Secret;
use zonecast_runtime::config::args::{
    AuthArgs, BusArgs, DISTRIBUTED_PARTITIONS, FileArgs, LimitsArgs, LogArgs, SecretArgs, SiteArgs, secret, split_list,
};
use zonecast_runtime::config::{AuthConfig, BusConfig, Check, ConfigError, HttpConfig, Load, Loaded};

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

/// The MQTT position input as the command line declares it.
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
    /// The MQTT input, when a broker is set.
    pub fn check(&self, c: &mut Check<'_>) -> Option<MqttInputConfig> {
        let topics: Vec<String> =
            split_list(self.ingest_mqtt_topics.as_deref().unwrap_or_default()).map(str::to_owned).collect();
        let url = secret(&self.ingest_mqtt_url)?;
        if topics.is_empty() {
            c.bad("ingest_mqtt_topics", "is required when ZONECAST_INGEST_MQTT_URL is set");
        }
        Some(MqttInputConfig { url, topics, ca: self.ingest_mqtt_ca.clone() })
    }
}

/// Default of `ZONECAST_INGEST_HTTP_ADDR`.
pub const DEFAULT_INGEST_HTTP_ADDR: SocketAddr =
    SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 8081));

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

/// `zonecast-ingestor`: positions from NATS (`<prefix>.ingest`), an RTLS broker over MQTT and
/// `POST /v3/positions`, published on NATS.
#[derive(Parser)]
#[command(name = "zonecast-ingestor", version, after_help = REQUIRED)]
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

const REQUIRED: &str = "Required: ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl IngestorCli {
    fn check(&self, c: &mut Check<'_>) -> (IngestorConfig, bool) {
        let addr = c.parse("ingest_http_addr", &self.ingest_http_addr, DEFAULT_INGEST_HTTP_ADDR);
        let config = IngestorConfig {
            http: Some(HttpConfig { addr, limits: self.limits.check(c) }),
            bus: self.bus.check(c, DISTRIBUTED_PARTITIONS),
            secret_key: self.secret.check(),
            auth: self.auth.check(c),
            site_id: self.site.check(c),
            mqtt: self.mqtt.check(c),
        };
        const NAME: &str = IngestorConfig::BINARY;
        c.require("nats_url", config.bus.nats_url.as_ref(), NAME, "");
        c.require("secret_key", config.secret_key.as_ref(), NAME, " (the same as the API's, to accept its tokens)");
        (config, self.log.check(c))
    }
}

impl Load for IngestorConfig {
    const BINARY: &'static str = "zonecast-ingestor";

    fn load(args: Vec<OsString>, env: &HashMap<String, String>) -> Result<Loaded<Self>, ConfigError> {
        zonecast_runtime::config::load(args, env, IngestorCli::check)
    }
}
