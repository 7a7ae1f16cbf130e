//! Back-pressure on queueing delay: ingest follows the lag every evaluator and forwarder
//! replica reports on `<prefix>.pipeline.lag` (measured every 5 ms, said when it changed and
//! at least every 100 ms) and, while one of them is further
//! behind than the bound (`ZONECAST_INGEST_MAX_LAG_MS`, 15 ms by default), takes
//! nothing more: the NATS and MQTT inputs wait, and the HTTP input holds each request until the
//! pipeline has caught up, answering 503 with `Retry-After` only when it stays behind for
//! longer than `ZONECAST_INGEST_HOLD_MS`. A sender at full speed is thus slowed to what the
//! pipeline delivers, and what is accepted waits at most about the bound in front of the
//! slowest stage instead of building a standing queue.
//!
//! In one process (the all-in-one) ingest also counts the positions waiting in the evaluators'
//! queues, and pushes back the same way while more than [`MAX_WAITING`] wait: that count is
//! current at every request, where a report is up to 5 ms old.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;
use uuid::Uuid;
use zonecast_bus::{Bus, BusError, Subjects};
use zonecast_model::lag::{LagReport, Stage};

/// How long a replica's report counts: one that stopped reporting (it left) no longer does. A
/// replica says an unchanged lag again every 100 ms.
const FRESH: Duration = Duration::from_secs(1);

/// How often a held input looks again: a small share of the bound, so that an input is let in
/// soon after the pipeline caught up.
const LOOK_EVERY: Duration = Duration::from_millis(2);

/// Positions that may wait in this process's queues before ingest pushes back: half a body of
/// 1,000, some 4 ms of evaluation at full speed on two shared cores. A body is taken whole once
/// fewer wait, so the evaluators still have its 1,000 and these to read while the next held
/// request is let in, within [`LOOK_EVERY`]: they do not starve. More would only add latency:
/// at full speed every position waiting here delays every event after it, and a bound of 4,096
/// gave the same rate at a median 1.4 times as long.
pub const MAX_WAITING: usize = 512;

/// Why the pipeline is behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behind {
    /// A stage reported more lag than the bound.
    Lagging {
        /// Which.
        stage: Stage,
        /// By how much, in milliseconds.
        lag_ms: u64,
        /// The bound, in milliseconds.
        bound_ms: u64,
    },
    /// More positions wait in this process's queues than [`MAX_WAITING`].
    Queued {
        /// How many.
        positions: usize,
        /// The bound.
        bound: usize,
    },
}

impl std::fmt::Display for Behind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Lagging { stage, lag_ms, bound_ms } => write!(
                f,
                "overloaded: the {} is {lag_ms} ms behind (more than {bound_ms} ms); try again later",
                stage.as_str()
            ),
            Self::Queued { positions, bound } => {
                write!(f, "overloaded: {positions} positions wait to be evaluated (more than {bound}); try again later")
            }
        }
    }
}

/// The positions waiting in this process's queues: the bus that holds them, and what their
/// subjects begin with.
pub struct Queues {
    /// The bus.
    pub bus: Arc<dyn Bus>,
    /// `<prefix>.batches.`
    pub root: String,
}

/// The latest lag of every replica that reports one, and the positions waiting in this
/// process's queues.
pub struct Pressure {
    /// 0: never behind.
    bound_ms: u64,
    reports: Mutex<HashMap<Uuid, (Stage, u64, Instant)>>,
    /// Counted when the bus holds its subscribers' queues in this process.
    queues: Option<Queues>,
}

impl Pressure {
    /// Pressure pushing back past `bound` (none when zero), with no report yet, and past
    /// [`MAX_WAITING`] positions waiting in `queues` when given.
    pub fn new(bound: Duration, queues: Option<Queues>) -> Arc<Self> {
        Arc::new(Self {
            bound_ms: u64::try_from(bound.as_millis()).unwrap_or(u64::MAX),
            reports: Mutex::new(HashMap::new()),
            queues,
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
                    Ok(report) => pressure.record(report),
                    Err(e) => tracing::debug!(error = %e, "unreadable lag report ignored"),
                }
            }
        });
        Ok(())
    }

    /// Records one replica's report.
    fn record(&self, report: LagReport) {
        let mut reports = self.reports.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        reports.retain(|_, (_, _, at)| now.duration_since(*at) < FRESH);
        reports.insert(report.replica, (report.stage, report.lag_ms, now));
    }

    /// Too many positions waiting in this process's queues, or else the stage furthest behind,
    /// when it is further than the bound.
    pub fn behind(&self) -> Option<Behind> {
        if self.bound_ms == 0 {
            return None;
        }
        if let Some(positions) = self.queues.as_ref().and_then(|q| q.bus.waiting(&q.root))
            && positions > MAX_WAITING
        {
            return Some(Behind::Queued { positions, bound: MAX_WAITING });
        }
        let reports = self.reports.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        reports
            .values()
            .filter(|(_, lag, at)| *lag > self.bound_ms && now.duration_since(*at) < FRESH)
            .max_by_key(|(_, lag, _)| *lag)
            .map(|(stage, lag_ms, _)| Behind::Lagging { stage: *stage, lag_ms: *lag_ms, bound_ms: self.bound_ms })
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

    /// Like [`Pressure::caught_up`], for at most `hold`: why the pipeline is still behind when
    /// it has not caught up by then (at once for a zero `hold`).
    pub async fn caught_up_within(&self, input: &'static str, hold: Duration) -> Result<(), Behind> {
        let Some(behind) = self.behind() else { return Ok(()) };
        if hold.is_zero() {
            return Err(behind);
        }
        match tokio::time::timeout(hold, self.caught_up(input)).await {
            Ok(()) => Ok(()),
            Err(_) => self.behind().map_or(Ok(()), Err),
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

    fn lagging(pressure: &Pressure) -> Option<(Stage, u64, u64)> {
        match pressure.behind()? {
            Behind::Lagging { stage, lag_ms, bound_ms } => Some((stage, lag_ms, bound_ms)),
            Behind::Queued { .. } => None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_replica_furthest_behind_past_the_bound_pushes_back_while_its_reports_are_fresh() {
        let pressure = Pressure::new(Duration::from_millis(500), None);
        assert_eq!(pressure.behind(), None);
        pressure.record(report(1, Stage::Evaluator, 400));
        assert_eq!(pressure.behind(), None, "within the bound");
        pressure.record(report(2, Stage::Forwarder, 900));
        pressure.record(report(3, Stage::Evaluator, 700));
        assert_eq!(lagging(&pressure), Some((Stage::Forwarder, 900, 500)));
        assert_eq!(
            pressure.behind().unwrap().to_string(),
            "overloaded: the forwarder is 900 ms behind (more than 500 ms); try again later"
        );
        pressure.record(report(2, Stage::Forwarder, 0));
        assert_eq!(lagging(&pressure).unwrap().0, Stage::Evaluator, "the replica's newest report counts");
        tokio::time::advance(FRESH).await;
        assert_eq!(pressure.behind(), None, "a replica that stopped reporting no longer counts");
        let off = Pressure::new(Duration::ZERO, None);
        off.record(report(1, Stage::Evaluator, 1_000_000));
        assert_eq!(off.behind(), None, "a zero bound never pushes back");
    }

    #[tokio::test]
    async fn more_positions_waiting_in_the_process_than_the_bound_push_back_until_they_are_read() {
        let bus = Arc::new(zonecast_bus::InProcessBus::new());
        let subjects = Subjects::new("pt");
        let mut unread = bus.subscribe(&subjects.position_batch(0)).await.unwrap();
        let queues = || Some(Queues { bus: bus.clone(), root: subjects.position_batches_root() });
        let pressure = Pressure::new(Duration::from_millis(500), queues());
        for _ in 0..MAX_WAITING {
            bus.publish(subjects.position_batch(0), bytes::Bytes::from_static(b"{}")).await.unwrap();
        }
        assert_eq!(pressure.behind(), None, "at the bound");
        bus.publish(subjects.position_batch(0), bytes::Bytes::from_static(b"{}")).await.unwrap();
        let behind = pressure.behind().unwrap();
        assert_eq!(behind, Behind::Queued { positions: MAX_WAITING + 1, bound: MAX_WAITING });
        assert_eq!(
            behind.to_string(),
            format!(
                "overloaded: {} positions wait to be evaluated (more than {MAX_WAITING}); try again later",
                MAX_WAITING + 1
            )
        );
        assert_eq!(Pressure::new(Duration::ZERO, queues()).behind(), None, "a zero bound never pushes back");
        unread.next().await.unwrap();
        assert_eq!(pressure.behind(), None, "read down to the bound");
    }
}
