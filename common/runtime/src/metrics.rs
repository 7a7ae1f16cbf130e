//! Prometheus metrics: one process-wide recorder, rendered by each service's `/metrics` route.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the recorder on first call and returns the handle that renders the exposition text.
/// Later calls (several services in one process) share it.
pub fn handle() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first; the handle still renders ours.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}
