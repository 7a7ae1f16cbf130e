//! Lag reports: each evaluator and forwarder replica says, every [`LAG_EVERY`], how far behind
//! it is on `<prefix>.pipeline.lag`, and ingest pushes back once a replica is too far behind
//! (`zonecast_ingest::Pressure`). Reports come often enough for a bound of a few tens of
//! milliseconds: a queue is noticed before it has grown much past it.

use std::sync::Arc;
use std::time::Duration;

use zonecast_bus::{Bus, Subjects};
use zonecast_model::lag::{LagReport, Stage};

use crate::Shutdown;

/// How often a replica reports its lag: a third of the default bound
/// (`ZONECAST_INGEST_MAX_LAG_MS`, 15 ms), so that held requests are let in soon after the
/// pipeline has caught up instead of in bursts that fill it past the bound; 200 small messages
/// a second per replica.
pub const LAG_EVERY: Duration = Duration::from_millis(5);

/// Publishes `measure()` (milliseconds) as the lag of a replica of `stage` every [`LAG_EVERY`]
/// until `shutdown`, and sets it in `zonecast_pipeline_lag_seconds{stage}`. An evaluator names
/// its `partitions` (`lo-hi`), a label of its gauge, so that the evaluators of one process
/// each have theirs. A report that cannot be published is skipped: the next one follows.
pub fn spawn_reports(
    bus: Arc<dyn Bus>,
    subjects: &Subjects,
    stage: Stage,
    partitions: Option<String>,
    mut measure: impl FnMut() -> u64 + Send + 'static,
    shutdown: Shutdown,
) -> tokio::task::JoinHandle<()> {
    let subject = subjects.pipeline_lag();
    let replica = uuid::Uuid::new_v4();
    let mut labels = vec![("stage", stage.as_str().to_owned())];
    labels.extend(partitions.map(|p| ("partitions", p)));
    crate::metrics::register_series("zonecast_pipeline_lag_seconds", &labels);
    let gauge = metrics::gauge!("zonecast_pipeline_lag_seconds", &labels);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(LAG_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            let lag_ms = measure();
            gauge.set(lag_ms as f64 / 1e3);
            crate::presence::lag_reported(lag_ms);
            let Ok(payload) = serde_json::to_vec(&LagReport { replica, stage, lag_ms }) else { continue };
            if let Err(e) = bus.publish(subject.clone(), payload.into()).await {
                tracing::debug!(error = %e, "lag not reported");
            }
        }
    })
}
