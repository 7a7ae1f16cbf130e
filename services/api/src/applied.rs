//! Read-your-writes: which evaluator and forwarder replicas are alive and which configuration
//! revision each has in force, from their `<prefix>.config.applied` reports, so that a write
//! can be answered once every live replica has applied it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::Notify;
use tokio::time::Instant;
use uuid::Uuid;
use warp::http::HeaderValue;
use warp::reply::Response;
use zonecast_bus::{Bus, BusError, Subjects};
use zonecast_model::ConfigApplied;

/// How often a replica reports while it runs: [`zonecast_runtime::applier::REPORT_EVERY`].
const REPORT_EVERY: Duration = zonecast_runtime::applier::REPORT_EVERY;

/// A replica not heard from for this long is taken for gone: three reports missed.
const ALIVE_FOR: Duration = Duration::from_secs(3);

/// How long after its roll call an API takes to have heard every running replica answer.
const ROLL_CALL: Duration = Duration::from_millis(250);

/// How many live replicas had a write in force when the API answered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// The write's revision in the change log; 0 if it could not be logged.
    pub revision: u64,
    /// Live replicas with that revision in force.
    pub applied: usize,
    /// Live replicas.
    pub live: usize,
}

impl Applied {
    /// `response` with the headers `X-Zonecast-Revision` (when logged) and
    /// `X-Zonecast-Applied: <applied>/<live>`.
    pub fn stamp(self, mut response: Response) -> Response {
        let headers = response.headers_mut();
        if self.revision > 0 {
            headers.insert("x-zonecast-revision", HeaderValue::from(self.revision));
        }
        if let Ok(v) = HeaderValue::from_str(&format!("{}/{}", self.applied, self.live)) {
            headers.insert("x-zonecast-applied", v);
        }
        response
    }
}

struct Replica {
    revision: u64,
    seen: Instant,
}

/// The replicas that apply configuration, as their reports tell.
pub struct Appliers {
    replicas: Mutex<HashMap<Uuid, Replica>>,
    /// Woken on every report.
    reported: Notify,
    /// When this API began listening to reports.
    since: Instant,
    /// How many replicas there are when the composition knows it (the all-in-one): then a
    /// write waits for that many, not for the reports of those heard of so far.
    expected: Option<usize>,
}

impl Appliers {
    /// Follows the reports on `bus` until the bus closes, and calls the roll so that the
    /// replicas running already answer at once. `expected`: the number of replicas when it is
    /// known.
    pub async fn follow(bus: &dyn Bus, subjects: &Subjects, expected: Option<usize>) -> Result<Arc<Self>, BusError> {
        let mut reports = bus.subscribe(&subjects.config_applied()).await?;
        bus.publish(subjects.config_roll(), bytes::Bytes::new()).await?;
        let this = Arc::new(Self {
            replicas: Mutex::new(HashMap::new()),
            reported: Notify::new(),
            since: Instant::now(),
            expected,
        });
        let weak = Arc::downgrade(&this);
        tokio::spawn(async move {
            while let Some(msg) = reports.next().await {
                let Some(this) = weak.upgrade() else { break };
                match serde_json::from_slice::<ConfigApplied>(&msg.payload) {
                    Ok(report) => this.record(&report),
                    Err(e) => tracing::debug!(error = %e, "unreadable config.applied report ignored"),
                }
            }
        });
        Ok(this)
    }

    fn record(&self, report: &ConfigApplied) {
        {
            let mut replicas = self.replicas.lock().unwrap_or_else(PoisonError::into_inner);
            if report.leaving {
                replicas.remove(&report.instance);
            } else {
                let replica = replicas.entry(report.instance).or_insert(Replica { revision: 0, seen: Instant::now() });
                replica.revision = replica.revision.max(report.revision);
                replica.seen = Instant::now();
            }
        }
        self.reported.notify_waiters();
    }

    /// Live replicas and those of them with `revision` in force.
    fn count(&self, revision: u64) -> (usize, usize) {
        let now = Instant::now();
        let replicas = self.replicas.lock().unwrap_or_else(PoisonError::into_inner);
        let live = replicas.values().filter(|r| now.duration_since(r.seen) < ALIVE_FOR);
        let (applied, live) = live.fold((0, 0), |(a, l), r| (a + usize::from(r.revision >= revision), l + 1));
        (applied, live)
    }

    /// Whether every replica has `revision` in force: all the expected ones, or, when their
    /// number is not known, all those alive. Until the answers to the roll call are in, a
    /// replica may not have been heard from yet, so the answer is not yet.
    fn complete(&self, applied: usize, live: usize) -> bool {
        match self.expected {
            Some(expected) => applied >= expected,
            None => applied == live && self.since.elapsed() > ROLL_CALL,
        }
    }

    /// Waits until every replica has `revision` in force, or `wait` has passed. Revision 0
    /// (a write that could not be logged) is in force nowhere that can be told: no wait.
    pub async fn wait(&self, revision: u64, wait: Duration) -> Applied {
        if revision == 0 {
            return Applied { revision, applied: 0, live: self.count(u64::MAX).1 };
        }
        let deadline = Instant::now() + wait;
        loop {
            let reported = self.reported.notified();
            tokio::pin!(reported);
            reported.as_mut().enable();
            let (applied, live) = self.count(revision);
            if self.complete(applied, live) {
                return Applied { revision, applied, live };
            }
            if Instant::now() >= deadline {
                if !wait.is_zero() {
                    metrics::counter!("zonecast_api_apply_wait_timeouts_total").increment(1);
                }
                return Applied { revision, applied, live };
            }
            // Reports also come every second, and a replica goes quiet without one; the roll
            // call ends without one: look again at least that often.
            let now = Instant::now();
            let roll_call_over = self.since + ROLL_CALL + Duration::from_millis(1);
            let next =
                deadline.min(now + REPORT_EVERY).min(if roll_call_over > now { roll_call_over } else { deadline });
            tokio::select! {
                () = reported => {}
                () = tokio::time::sleep_until(next) => {}
            }
        }
    }
}
