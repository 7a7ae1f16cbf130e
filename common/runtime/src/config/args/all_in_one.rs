//! `zonecast`'s command line: every section, for the whole pipeline in one process.

use std::path::PathBuf;

use clap::{Args, Parser};
use zonecast_model::Limits;

use super::limits::all_limits;
use super::shared::ApiAddr;
use super::{
    ApiArgs, AuthArgs, BusArgs, Check, EvaluatorArgs, FileArgs, FilterLimitArgs, ForwarderArgs, HttpAddrArgs,
    InputLimitArgs, LimitsArgs, LogArgs, MqttArgs, OpsAddrArgs, SecretArgs, SiteArgs, StoreArgs, secret,
};
use crate::config::{Config, HttpConfig};

/// `zonecast`: the whole pipeline in one process. With nothing configured it runs on an
/// in-process bus and SQLite in its data directory, and generates its secret key and an admin
/// API key there.
#[derive(Parser)]
#[command(name = "zonecast", version)]
pub struct AllInOneCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    pub(super) file: FileArgs,
    #[command(flatten)]
    pub(super) http_addr: HttpAddrArgs<ApiAddr>,
    #[command(flatten)]
    pub(super) ops_addr: OpsAddrArgs,
    /// SQLite file and generated keys.
    #[arg(long, env = "ZONECAST_DATA_DIR", value_name = "DIR", default_value = "./zonecast-data")]
    pub(super) data_dir: PathBuf,
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
    #[command(flatten)]
    pub(super) mqtt: MqttArgs,
    #[command(flatten)]
    pub(super) evaluator: EvaluatorArgs,
    #[command(flatten)]
    pub(super) forwarder: ForwarderArgs,
    #[command(flatten)]
    pub(super) demo: DemoArgs,
}

/// `ZONECAST_DEMO`.
#[derive(Args)]
#[command(next_help_heading = "Demo")]
pub struct DemoArgs {
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
    pub(super) demo: String,
}

impl DemoArgs {
    pub(super) fn check(&self, c: &mut Check<'_>) -> bool {
        c.flag("demo", &self.demo)
    }
}

impl AllInOneCli {
    pub(super) fn limits(&self, c: &mut Check<'_>) -> Limits {
        all_limits(&self.input_limits, &self.filter_limits, c)
    }

    pub(in crate::config) fn check(&self, c: &mut Check<'_>) -> (Config, bool) {
        let bus = self.bus.check(c, super::ALL_IN_ONE_PARTITIONS);
        let evaluator = self.evaluator.check(c, bus.partitions);
        let config = Config {
            http: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            ops_addr: self.ops_addr.check(c),
            data_dir: self.data_dir.clone(),
            bus,
            store: self.store.check(c),
            secret_key: secret(&self.secret.secret_key),
            auth: self.auth.check(c),
            site_id: self.site.check(c),
            api: self.api.check(c),
            limits: self.limits(c),
            mqtt: self.mqtt.check(c),
            evaluator,
            forwarder: self.forwarder.check(c),
            demo: self.demo.check(c),
        };
        (config, self.log.check(c))
    }
}
