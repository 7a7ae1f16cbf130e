//! The command lines of the distributed services: `zonecast-api`, `zonecast-ingestor`,
//! `zonecast-evaluator` and `zonecast-forwarder`, each with the sections it uses and the
//! settings it cannot start without.

use clap::Parser;
use zonecast_model::Limits;

use super::limits::all_limits;
use super::shared::{ApiAddr, EvaluatorAddr, ForwarderAddr};
use super::{
    ApiArgs, AuthArgs, BusArgs, Check, EvaluatorArgs, FileArgs, FilterLimitArgs, ForwarderArgs, HttpAddrArgs,
    InputLimitArgs, LimitsArgs, LogArgs, MqttArgs, OpsAddrArgs, SecretArgs, SiteArgs, StoreArgs, secret,
};
use crate::config::{ApiConfig, EvaluatorConfig, ForwarderConfig, HttpConfig, IngestorConfig};

/// `zonecast-api`: the config API on PostgreSQL and NATS.
#[derive(Parser)]
#[command(name = "zonecast-api", version, after_help = REQUIRED_API)]
pub struct ApiCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    pub(super) file: FileArgs,
    #[command(flatten)]
    pub(super) http_addr: HttpAddrArgs<ApiAddr>,
    #[command(flatten)]
    pub(super) ops_addr: OpsAddrArgs,
    #[command(flatten)]
    pub(super) secret: SecretArgs,
    #[command(flatten)]
    pub(super) site: SiteArgs,
    #[command(flatten)]
    pub(super) log: LogArgs,
    #[command(flatten)]
    pub(super) limits: LimitsArgs,
    #[command(flatten)]
    pub(super) bus: BusArgs,
    #[command(flatten)]
    pub(super) store: StoreArgs,
    #[command(flatten)]
    pub(super) auth: AuthArgs,
    #[command(flatten)]
    pub(super) api: ApiArgs,
    #[command(flatten)]
    pub(super) input_limits: InputLimitArgs,
    #[command(flatten)]
    pub(super) filter_limits: FilterLimitArgs,
}

const REQUIRED_API: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl ApiCli {
    pub(in crate::config) fn check(&self, c: &mut Check<'_>) -> (ApiConfig, bool) {
        let config = ApiConfig {
            http: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            ops_addr: self.ops_addr.check(c),
            bus: self.bus.check(c, super::DISTRIBUTED_PARTITIONS),
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
    pub(super) file: FileArgs,
    /// The ingestor's HTTP listener: `POST /v3/positions`, `/livez`, `/readyz`, `/healthz`
    /// and `/metrics`.
    #[arg(long, env = "ZONECAST_INGEST_HTTP_ADDR", value_name = "ADDR", default_value = "127.0.0.1:8081")]
    pub(super) ingest_http_addr: String,
    #[command(flatten)]
    pub(super) secret: SecretArgs,
    #[command(flatten)]
    pub(super) site: SiteArgs,
    #[command(flatten)]
    pub(super) log: LogArgs,
    #[command(flatten)]
    pub(super) limits: LimitsArgs,
    #[command(flatten)]
    pub(super) bus: BusArgs,
    #[command(flatten)]
    pub(super) auth: AuthArgs,
    #[command(flatten)]
    pub(super) mqtt: MqttArgs,
}

const REQUIRED_INGESTOR: &str = "Required: ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl IngestorCli {
    pub(in crate::config) fn check(&self, c: &mut Check<'_>) -> (IngestorConfig, bool) {
        let addr = c.parse("ingest_http_addr", &self.ingest_http_addr, crate::config::DEFAULT_INGEST_HTTP_ADDR);
        let config = IngestorConfig {
            http: Some(HttpConfig { addr, limits: self.limits.check(c) }),
            bus: self.bus.check(c, super::DISTRIBUTED_PARTITIONS),
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
    pub(super) file: FileArgs,
    #[command(flatten)]
    pub(super) http_addr: HttpAddrArgs<EvaluatorAddr>,
    #[command(flatten)]
    pub(super) secret: SecretArgs,
    #[command(flatten)]
    pub(super) site: SiteArgs,
    #[command(flatten)]
    pub(super) log: LogArgs,
    #[command(flatten)]
    pub(super) limits: LimitsArgs,
    #[command(flatten)]
    pub(super) bus: BusArgs,
    #[command(flatten)]
    pub(super) store: StoreArgs,
    #[command(flatten)]
    pub(super) evaluator: EvaluatorArgs,
}

const REQUIRED_EVALUATOR: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl EvaluatorCli {
    pub(in crate::config) fn check(&self, c: &mut Check<'_>) -> (EvaluatorConfig, bool) {
        let bus = self.bus.check(c, super::DISTRIBUTED_PARTITIONS);
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
    pub(super) file: FileArgs,
    #[command(flatten)]
    pub(super) http_addr: HttpAddrArgs<ForwarderAddr>,
    #[command(flatten)]
    pub(super) secret: SecretArgs,
    #[command(flatten)]
    pub(super) log: LogArgs,
    #[command(flatten)]
    pub(super) limits: LimitsArgs,
    #[command(flatten)]
    pub(super) bus: BusArgs,
    #[command(flatten)]
    pub(super) store: StoreArgs,
    #[command(flatten)]
    pub(super) forwarder: ForwarderArgs,
    #[command(flatten)]
    pub(super) filter_limits: FilterLimitArgs,
}

const REQUIRED_FORWARDER: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL, ZONECAST_SECRET_KEY.";

impl ForwarderCli {
    pub(in crate::config) fn check(&self, c: &mut Check<'_>) -> (ForwarderConfig, bool) {
        let config = ForwarderConfig {
            ops: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            bus: self.bus.check(c, super::DISTRIBUTED_PARTITIONS),
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
