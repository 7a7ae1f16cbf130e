//! Lag reports: each evaluator and forwarder replica measures, every [`LAG_EVERY`], how far
//! behind it is and says so on `<prefix>.pipeline.lag` when it changed, and at least every
//! [`REPEAT_EVERY`]; ingest pushes back once a replica is too far behind
//! (`zonecast_ingest::Pressure`). Changes come often enough for a bound of a few tens of
//! milliseconds: a queue is noticed before it has grown much past it.

use std::sync::Arc;
use std::time::Duration;

use zonecast_bus::{Bus, Subjects};
use zonecast_model::lag::{LagReport, Stage};

use crate::Shutdown;

/// How often a replica measures its lag, and reports it if it changed: a third of the default
/// bound (`ZONECAST_INGEST_MAX_LAG_MS`, 15 ms), so that held requests are let in soon after the
/// pipeline has caught up instead of in bursts that fill it past the bound.
pub const LAG_EVERY: Duration = Duration::from_millis(5);

/// How often an unchanged lag is said again: well within the second after which ingest no
/// longer counts a silent replica. A replica that keeps up says "0" ten times a second instead
/// of two hundred, and the process following the reports is woken as rarely.
pub const REPEAT_EVERY: Duration = Duration::from_millis(100);

/// Measures `measure()` (milliseconds) as the lag of a replica of `stage` every [`LAG_EVERY`]
/// until `shutdown`, sets it in `zonecast_pipeline_lag_seconds{stage}`, and publishes it when it
/// differs from the last one published or that one is [`REPEAT_EVERY`] old. An evaluator names
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
        let mut published: Option<(u64, tokio::time::Instant)> = None;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            let lag_ms = measure();
            gauge.set(lag_ms as f64 / 1e3);
            crate::presence::lag_reported(lag_ms);
            if published.is_some_and(|(last, at)| last == lag_ms && at.elapsed() < REPEAT_EVERY) {
                continue;
            }
            let Ok(payload) = serde_json::to_vec(&LagReport { replica, stage, lag_ms }) else { continue };
            match bus.publish(subject.clone(), payload.into()).await {
                Ok(()) => published = Some((lag_ms, tokio::time::Instant::now())),
                Err(e) => tracing::debug!(error = %e, "lag not reported"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicU64, Ordering};

    use futures::StreamExt;
    use zonecast_bus::InProcessBus;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_lag_is_published_at_once_when_it_changes_and_ten_times_a_second_while_it_does_not() {
        let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
        let subjects = Subjects::new("lag");
        let mut reports = bus.subscribe(&subjects.pipeline_lag()).await.unwrap();
        let lag = Arc::new(AtomicU64::new(0));
        let shutdown = Shutdown::new();
        let task = {
            let lag = lag.clone();
            spawn_reports(
                bus.clone(),
                &subjects,
                Stage::Forwarder,
                None,
                move || lag.load(Ordering::Relaxed),
                shutdown.clone(),
            )
        };
        let mut next = async || serde_json::from_slice::<LagReport>(&reports.next().await.unwrap().payload).unwrap();
        let first = next().await;
        assert_eq!((first.stage, first.lag_ms), (Stage::Forwarder, 0));
        let start = tokio::time::Instant::now();
        let mut repeats = 0;
        while start.elapsed() < Duration::from_secs(1) {
            assert_eq!(next().await.lag_ms, 0);
            repeats += 1;
        }
        assert!((9..=11).contains(&repeats), "an unchanged lag said {repeats} times in a second");
        lag.store(40, Ordering::Relaxed);
        let changed_at = tokio::time::Instant::now();
        assert_eq!(next().await.lag_ms, 40, "a change is said without waiting for the repeat");
        assert!(changed_at.elapsed() <= LAG_EVERY);
        shutdown.cancel();
        task.await.unwrap();
    }
}
