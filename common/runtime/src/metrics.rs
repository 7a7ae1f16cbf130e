//! Prometheus metrics: one process-wide recorder, rendered by each service's `/metrics` route.
//! Every metric is described once, in [`CATALOG`]: the recorder takes its help texts and
//! histogram buckets from there, and each service registers its series at start from there
//! ([`register`]), so that a counter an alert watches exists at 0 before its first increment.

mod catalog;
mod process;

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub use catalog::{CATALOG, Kind, LATENCY_BUCKETS, Metric, Owner, Presence, find, markdown_table};

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The version every binary reports in `zonecast_build_info`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Installs the recorder on first call and returns the handle that renders the exposition text.
/// Later calls (several services in one process) share it.
pub fn handle() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let mut builder = PrometheusBuilder::new();
            for metric in CATALOG.iter().filter(|m| m.kind == Kind::Histogram) {
                builder = builder
                    .set_buckets_for_metric(Matcher::Full(metric.name.to_owned()), metric.buckets())
                    .unwrap_or_else(|_| unreachable!("every histogram has buckets"));
            }
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first; the handle still renders ours.
            let installed = metrics::set_global_recorder(recorder).is_ok();
            if installed {
                describe();
            }
            handle
        })
        .clone()
}

/// Gives the recorder the help text and unit of every metric served through it.
fn describe() {
    for metric in CATALOG.iter().filter(|m| !m.name.starts_with("process_")) {
        let (name, help) = (metric.name, metric.help);
        match (metric.kind, metric.unit) {
            (Kind::Counter, Some(unit)) => metrics::describe_counter!(name, unit, help),
            (Kind::Counter, None) => metrics::describe_counter!(name, help),
            (Kind::Gauge, Some(unit)) => metrics::describe_gauge!(name, unit, help),
            (Kind::Gauge, None) => metrics::describe_gauge!(name, help),
            (Kind::Histogram, Some(unit)) => metrics::describe_histogram!(name, unit, help),
            (Kind::Histogram, None) => metrics::describe_histogram!(name, help),
        }
    }
}

/// The exposition text of this process: every metric recorded, then the process's own
/// (`process_*`), read at each scrape.
pub fn render() -> String {
    let mut text = handle().render();
    process::render(&mut text);
    text
}

/// Says which binary runs and its version: `zonecast_build_info{binary, version} 1`.
pub fn build_info(binary: &'static str) {
    handle();
    metrics::gauge!("zonecast_build_info", "binary" => binary, "version" => VERSION).set(1.0);
}

/// Registers at 0 the series of `owner`'s metrics that have no labels and exist from start.
/// Registering again leaves every value as it is.
pub fn register(owner: Owner) {
    handle();
    let of_owner =
        CATALOG.iter().filter(|m| m.owners.contains(&owner) && m.presence == Presence::Start && m.labels.is_empty());
    for metric in of_owner {
        register_series(metric.name, &[]);
    }
}

/// Registers at 0 the series of metric `name` with `labels` (counters keep their value, gauges
/// are set only if new; histograms get their empty buckets).
///
/// # Panics
/// When `name` is not in [`CATALOG`]: every metric is described there.
pub fn register_series(name: &'static str, labels: &[(&'static str, String)]) {
    let Some(metric) = find(name) else { panic!("{name} is not in the metrics catalog") };
    let labels: Vec<metrics::Label> = labels.iter().map(|(k, v)| metrics::Label::new(*k, v.clone())).collect();
    match metric.kind {
        Kind::Counter => metrics::counter!(name, labels).increment(0),
        // Adding 0 creates the series at 0 without overwriting a value already set.
        Kind::Gauge => metrics::gauge!(name, labels).increment(0.0),
        Kind::Histogram => drop(metrics::histogram!(name, labels)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_are_unique_and_follow_the_conventions() {
        let mut seen = HashSet::new();
        for metric in CATALOG {
            assert!(seen.insert(metric.name), "{} twice", metric.name);
            let counter_name = metric.name.ends_with("_total");
            assert_eq!(counter_name, metric.kind == Kind::Counter, "{}: only counters end in _total", metric.name);
            assert!(!metric.help.is_empty() && !metric.help.contains('\n'), "{}: one line of help", metric.name);
            if metric.kind == Kind::Histogram {
                assert!(metric.buckets().windows(2).all(|w| w[0] < w[1]), "{}: buckets ascend", metric.name);
            }
        }
    }

    /// The metrics table of `docs/operations.md` is the catalog's: on a mismatch this prints
    /// the table to paste there.
    #[test]
    fn the_operations_guide_lists_the_catalog() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/operations.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let table = markdown_table();
        let (begin, end) = ("<!-- metrics table begin -->\n", "<!-- metrics table end -->");
        let start = doc.find(begin).expect("the metrics table's begin marker") + begin.len();
        let stop = doc[start..].find(end).expect("the metrics table's end marker") + start;
        assert!(doc[start..stop] == table, "docs/operations.md's metrics table differs from the catalog:\n{table}");
    }
}
