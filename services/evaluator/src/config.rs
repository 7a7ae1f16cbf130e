//! `zonecast-evaluator`'s configuration: its own settings and its command line, the shared
//! groups of `zonecast_runtime::config::args` and its own.

use std::collections::HashMap;
use std::ffi::OsString;

use clap::{Args, Parser};
use zonecast_bus::Leases;
use zonecast_runtime::config::args::{
    BusArgs, DISTRIBUTED_PARTITIONS, DefaultAddr, FileArgs, HttpAddrArgs, LimitsArgs, LogArgs, SiteArgs, StoreArgs,
};
use zonecast_runtime::config::{BusConfig, Check, ConfigError, HttpConfig, Load, Loaded, StoreConfig};

use crate::claims::Timing;

/// The evaluator's own settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EvaluatorSettings {
    /// `ZONECAST_EVALUATOR_PARTITIONS`: inclusive range an evaluator claims alone; `None`: it
    /// shares the partitions no pinned evaluator claims with the other evaluators.
    pub partitions: Option<(u32, u32)>,
    /// `ZONECAST_EVALUATOR_HEARTBEAT_MS` and `ZONECAST_EVALUATOR_LEASE_MS`.
    pub timing: Timing,
}

/// The evaluator's own settings as the command line declares them.
#[derive(Args)]
#[command(next_help_heading = "Evaluator")]
pub struct EvaluatorArgs {
    /// Inclusive partition range this evaluator claims alone, e.g. `0-7` (unset: it shares the
    /// partitions no pinned evaluator claims with the others).
    #[arg(long, env = "ZONECAST_EVALUATOR_PARTITIONS", value_name = "RANGE")]
    evaluator_partitions: Option<String>,
    /// How often the evaluator writes its heartbeat to the lease bucket, in milliseconds.
    #[arg(long, env = "ZONECAST_EVALUATOR_HEARTBEAT_MS", value_name = "MS", default_value_t = default_ms(Leases::HEARTBEAT))]
    evaluator_heartbeat_ms: u64,
    /// How long the other evaluators wait for its next heartbeat before they take its partitions
    /// over, in milliseconds (at least three heartbeats).
    #[arg(long, env = "ZONECAST_EVALUATOR_LEASE_MS", value_name = "MS", default_value_t = default_ms(Leases::LEASE))]
    evaluator_lease_ms: u64,
}

fn default_ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl EvaluatorArgs {
    /// The evaluator's settings, with `partitions` position partitions in all.
    pub fn check(&self, c: &mut Check<'_>, partitions: u32) -> EvaluatorSettings {
        let heartbeat = self.evaluator_heartbeat_ms;
        let lease = self.evaluator_lease_ms;
        if !(50..=10_000).contains(&heartbeat) {
            c.bad("evaluator_heartbeat_ms", "must be between 50 and 10000");
        }
        if !(150..=60_000).contains(&lease) {
            c.bad("evaluator_lease_ms", "must be between 150 and 60000");
        } else if lease < 3 * heartbeat {
            c.bad("evaluator_lease_ms", format!("{lease} is less than three heartbeats ({heartbeat} ms each)"));
        }
        let timing = Timing {
            heartbeat: std::time::Duration::from_millis(heartbeat),
            lease: std::time::Duration::from_millis(lease),
        };
        let settings = EvaluatorSettings { partitions: None, timing };
        let Some(raw) = self.evaluator_partitions.as_deref() else { return settings };
        let (a, b) = raw.trim().split_once('-').unwrap_or((raw.trim(), raw.trim()));
        let (Ok(lo), Ok(hi)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
            c.bad("evaluator_partitions", format!("'{raw}': expected a partition or a range such as 0-7"));
            return settings;
        };
        if lo > hi {
            c.bad("evaluator_partitions", format!("'{raw}': start after end"));
        } else if hi >= partitions {
            c.bad("evaluator_partitions", format!("range ends at {hi} but there are {partitions} partitions"));
        }
        EvaluatorSettings { partitions: Some((lo, hi)), timing }
    }
}

/// An evaluator's operations listener: 127.0.0.1:8082.
pub struct EvaluatorAddr;
impl DefaultAddr for EvaluatorAddr {
    const ADDR: &'static str = "127.0.0.1:8082";
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
    /// `ZONECAST_SITE_ID`: SiteID in events.
    pub site_id: i64,
    /// The evaluator's own settings.
    pub evaluator: EvaluatorSettings,
}

/// `zonecast-evaluator`: turns the positions of its partitions into zone events, on
/// PostgreSQL and NATS.
#[derive(Parser)]
#[command(name = "zonecast-evaluator", version, after_help = REQUIRED)]
pub struct EvaluatorCli {
    #[command(flatten)]
    #[allow(dead_code)] // declares --config; read from the matches, see FileArgs
    file: FileArgs,
    #[command(flatten)]
    http_addr: HttpAddrArgs<EvaluatorAddr>,
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
    evaluator: EvaluatorArgs,
}

const REQUIRED: &str = "Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL.";

impl EvaluatorCli {
    fn check(&self, c: &mut Check<'_>) -> (EvaluatorConfig, bool) {
        let bus = self.bus.check(c, DISTRIBUTED_PARTITIONS);
        let config = EvaluatorConfig {
            ops: HttpConfig { addr: self.http_addr.check(c), limits: self.limits.check(c) },
            evaluator: self.evaluator.check(c, bus.partitions),
            bus,
            store: self.store.check(c),
            site_id: self.site.check(c),
        };
        const NAME: &str = EvaluatorConfig::BINARY;
        c.require("database_url", config.store.database_url.as_ref(), NAME, "");
        c.require("nats_url", config.bus.nats_url.as_ref(), NAME, "");
        (config, self.log.check(c))
    }
}

impl Load for EvaluatorConfig {
    const BINARY: &'static str = "zonecast-evaluator";

    fn load(args: Vec<OsString>, env: &HashMap<String, String>) -> Result<Loaded<Self>, ConfigError> {
        zonecast_runtime::config::load(args, env, EvaluatorCli::check)
    }
}
