//! zonecast evaluator: turns positions of its partitions into `ZONE_ENTER` / `ZONE_EXIT` events,
//! alarms and zone actions, keeps per-device collision state, and records current collisions in
//! the store. The engine is pure ([`engine`]); its I/O shell and loop are in `shell.rs`.

pub mod catalog;
mod catch_up;
mod claims;
mod collisions;
mod config;
mod config_changes;
pub mod engine;
mod feed;
mod grid;
pub mod occupancy;
mod shell;

use std::sync::Arc;

use zonecast_bus::{Bus, Channels, Journal, PositionLog, Subjects};
use zonecast_runtime::service::{self, Needs};
use zonecast_runtime::{Running, Shutdown, StartError};
use zonecast_store::EvaluatorStore;

pub use crate::claims::Timing;
pub use crate::config::{EvaluatorAddr, EvaluatorArgs, EvaluatorCli, EvaluatorConfig, EvaluatorSettings};
pub use crate::engine::{Engine, Output, Ownership, SourceHint};
pub use crate::shell::start;

/// What the evaluator runs on.
#[derive(Clone)]
pub struct Deps {
    /// Configuration and collisions.
    pub store: Arc<dyn EvaluatorStore>,
    /// Positions in, events out.
    pub bus: Arc<dyn Bus>,
    /// Subject names.
    pub subjects: Subjects,
    /// SiteID of events.
    pub site_id: i64,
    /// Partitions this replica owns when it is given them (`claims` false, or a bus without a
    /// lease bucket); their count in any case.
    pub ownership: Ownership,
    /// Whether it claims its partitions with the other evaluators instead (over NATS).
    pub claims: bool,
    /// The range it claims alone, if it is pinned to one; the others share the rest.
    pub pinned: Option<(u32, u32)>,
    /// Its heartbeat and lease.
    pub timing: Timing,
    /// The positions of the owned partitions, and of mobile-zone sources of others.
    pub positions: Arc<dyn PositionLog>,
    /// On how many NATS servers the lease bucket is kept.
    pub replicas: usize,
    /// Where events are stored before anyone acts on them.
    pub journal: Arc<dyn Journal>,
}

/// Starts the distributed `zonecast-evaluator` on the service skeleton: PostgreSQL and NATS; the
/// evaluators claim the partitions among themselves (one pinned by
/// `ZONECAST_EVALUATOR_PARTITIONS` claims that range, the others share the rest); `/livez`, `/readyz` and `/metrics` are served on `ZONECAST_HTTP_ADDR`.
pub async fn launch(config: EvaluatorConfig, shutdown: Shutdown) -> Result<Running, StartError> {
    let needs = Needs { name: "zonecast-evaluator", bus: &config.bus, store: Some(&config.store), secret_key: None };
    let config = &config;
    let ops = Some(config.ops);
    zonecast_http::launch(needs, ops, shutdown, |opened, shutdown| async move {
        service::prepare_journal(&opened.channels, &config.bus, "zonecast-evaluator").await?;
        start(Deps::from_config(config, opened.store()?, &opened.channels), shutdown).await
    })
    .await
}

/// Runs `zonecast-evaluator` until `shutdown`, then drains.
pub async fn run(config: EvaluatorConfig, shutdown: Shutdown) -> Result<(), StartError> {
    launch(config, shutdown).await?.stopped().await
}

impl Deps {
    /// Dependencies from configuration and an opened store and bus.
    pub fn from_config(config: &EvaluatorConfig, store: Arc<dyn EvaluatorStore>, channels: &Channels) -> Self {
        let count = config.bus.partitions;
        let pinned = config.evaluator.partitions;
        let (lo, hi) = pinned.unwrap_or((0, count.saturating_sub(1)));
        Self {
            store,
            subjects: Subjects::new(config.bus.subject_prefix.clone()),
            site_id: config.site_id,
            ownership: Ownership::range(count, lo, hi),
            claims: true,
            pinned,
            timing: config.evaluator.timing,
            journal: channels.journal.clone(),
            positions: channels.positions.clone(),
            replicas: config.bus.positions.replicas,
            bus: channels.bus.clone(),
        }
    }
}

/// Registers at 0 every series an evaluator serves, and returns the label of its per-evaluator
/// series (`partitions="0-7"` for one given partitions `0..=7`, `partitions="claimed"` for one
/// that claims them) with its device and owned-partition gauges: the evaluators of one process
/// each have theirs, and the site's device count is their sum.
fn register_metrics(label: &str) -> (String, metrics::Gauge, metrics::Gauge) {
    use zonecast_runtime::metrics::{Owner, register, register_series};
    register(Owner::Evaluator);
    for kind in zonecast_model::EventType::ALL {
        register_series("zonecast_evaluator_events_total", &[("type", kind.as_str().to_owned())]);
    }
    let partitions = label.to_owned();
    for gauge in ["zonecast_evaluator_devices", "zonecast_evaluator_partitions_owned"] {
        register_series(gauge, &[("partitions", partitions.clone())]);
    }
    for series in [
        "zonecast_evaluator_rebalances_total",
        "zonecast_evaluator_fenced_writes_total",
        "zonecast_evaluator_handover_seconds",
    ] {
        register_series(series, &[]);
    }
    let devices = metrics::gauge!("zonecast_evaluator_devices", "partitions" => partitions.clone());
    let owned = metrics::gauge!("zonecast_evaluator_partitions_owned", "partitions" => partitions.clone());
    (partitions, devices, owned)
}
