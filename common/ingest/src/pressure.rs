//! Back-pressure: ingest follows the lag every evaluator and forwarder replica reports on
//! `<prefix>.pipeline.lag` and, once one of them is further behind than the bound
//! (`ZONECAST_INGEST_MAX_LAG_MS`), refuses HTTP payloads (503 with `Retry-After`) and holds its
//! NATS and MQTT inputs until it has caught up, so that what is accepted is delivered within
//! about the bound instead of piling up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;
use uuid::Uuid;
use zonecast_bus::{Bus, BusError, Subjects};
use zonecast_model::lag::{LagReport, Stage};

/// How long a replica's report counts: one that stopped reporting (it left) no longer does.
const FRESH: Duration = Duration::from_secs(1);

/// How often a held input looks again.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// A stage further behind than the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Behind {
    /// Which.
    pub stage: Stage,
    /// By how much, in milliseconds.
    pub lag_ms: u64,
    /// The bound, in milliseconds.
    pub bound_ms: u64,
}

impl std::fmt::Display for Behind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "overloaded: the {} is {} ms behind (more than {} ms); try again later",
            self.stage.as_str(),
            self.lag_ms,
            self.bound_ms
        )
    }
}

/// The latest lag of every replica that reports one.
pub struct Pressure {
    /// 0: never behind.
    bound_ms: u64,
    reports: Mutex<HashMap<Uuid, (Stage, u64, Instant)>>,
}

impl Pressure {
    /// Pressure pushing back past `bound` (none when zero), with no report yet.
    pub fn new(bound: Duration) -> Arc<Self> {
        Arc::new(Self {
            bound_ms: u64::try_from(bound.as_millis()).unwrap_or(u64::MAX),
            reports: Mutex::new(HashMap::new()),
        })
    }

    /// Subscribes to the lag reports; they are taken by a task that ends with the last
    /// reference to this pressure, or with the bus.
    pub async fn follow(self: &Arc<Self>, bus: &dyn Bus, subjects: &Subjects) -> Result<(), BusError> {
        if self.bound_ms == 0 {
            return Ok(());
        }
        let mut reports = bus.subscribe(&subjects.pipeline_lag()).await?;
        let pressure = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(message) = reports.next().await {
                let Some(pressure) = pressure.upgrade() else { break };
                match serde_json::from_slice::<LagReport>(&message.payload) {
                    Ok(report) => pressure.take(report),
                    Err(e) => tracing::debug!(error = %e, "unreadable lag report ignored"),
                }
            }
        });
        Ok(())
    }

    /// Takes one replica's report.
    fn take(&self, report: LagReport) {
        let mut reports = self.reports.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        reports.retain(|_, (_, _, at)| now.duration_since(*at) < FRESH);
        reports.insert(report.replica, (report.stage, report.lag_ms, now));
    }

    /// The stage furthest behind, when it is further than the bound.
    pub fn behind(&self) -> Option<Behind> {
        if self.bound_ms == 0 {
            return None;
        }
        let reports = self.reports.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        reports
            .values()
            .filter(|(_, lag, at)| *lag > self.bound_ms && now.duration_since(*at) < FRESH)
            .max_by_key(|(_, lag, _)| *lag)
            .map(|(stage, lag_ms, _)| Behind { stage: *stage, lag_ms: *lag_ms, bound_ms: self.bound_ms })
    }

    /// Returns once no stage is further behind than the bound (at once when none is); each time
    /// `input` is held counts in `zonecast_ingest_holds_total`.
    pub async fn caught_up(&self, input: &'static str) {
        if self.behind().is_none() {
            return;
        }
        metrics::counter!("zonecast_ingest_holds_total", "input" => input).increment(1);
        while self.behind().is_some() {
            tokio::time::sleep(LOOK_EVERY).await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn report(replica: u128, stage: Stage, lag_ms: u64) -> LagReport {
        LagReport { replica: Uuid::from_u128(replica), stage, lag_ms }
    }

    #[tokio::test(start_paused = true)]
    async fn the_replica_furthest_behind_past_the_bound_pushes_back_while_its_reports_are_fresh() {
        let pressure = Pressure::new(Duration::from_millis(500));
        assert_eq!(pressure.behind(), None);
        pressure.take(report(1, Stage::Evaluator, 400));
        assert_eq!(pressure.behind(), None, "within the bound");
        pressure.take(report(2, Stage::Forwarder, 900));
        pressure.take(report(3, Stage::Evaluator, 700));
        let behind = pressure.behind().unwrap();
        assert_eq!((behind.stage, behind.lag_ms, behind.bound_ms), (Stage::Forwarder, 900, 500));
        assert_eq!(
            behind.to_string(),
            "overloaded: the forwarder is 900 ms behind (more than 500 ms); try again later"
        );
        pressure.take(report(2, Stage::Forwarder, 0));
        assert_eq!(pressure.behind().unwrap().stage, Stage::Evaluator, "the replica's newest report counts");
        tokio::time::advance(FRESH).await;
        assert_eq!(pressure.behind(), None, "a replica that stopped reporting no longer counts");
        let off = Pressure::new(Duration::ZERO);
        off.take(report(1, Stage::Evaluator, 1_000_000));
        assert_eq!(off.behind(), None, "a zero bound never pushes back");
    }
}
