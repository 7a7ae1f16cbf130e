//! The journal consumer of http-request actions: it takes the requests the evaluators stored
//! in the journal, takes each to its final outcome with [`Delivery::send`], and acknowledges
//! it then — delivered, refused by a final answer, or expired. A request still waiting for a
//! try when the evaluator stops is not acknowledged: the journal delivers it again after the
//! restart, or to another replica, so a crash or a redeploy loses no request.
//!
//! Every replica consumes from the same durable consumer ([`CONSUMER`]), and the journal hands
//! each request to one of them at a time. At most [`IN_HAND`] requests are held (trying or
//! waiting for their next try); the rest wait in the journal. A request held longer than the
//! journal's ack wait reports its progress, so JetStream does not hand it to another replica;
//! should it still come again (a progress report lost on the way), it is recognised by its
//! sequence and its acknowledgement renewed instead of sending it twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::Semaphore;
use zonecast_bus::Journal;
use zonecast_bus::journal::{Ack, Delivery as Record, Kind};
use zonecast_runtime::Shutdown;
use zonecast_runtime::backoff::Backoff;
use zonecast_runtime::ratelog::RateLimited;

use crate::http_actions::{self, Delivery, Outcome, Request};

/// The journal consumer of http-request actions, shared by every evaluator replica.
pub const CONSUMER: &str = "http-actions";

/// Requests held at once, trying or waiting for their next try; the rest wait in the journal.
pub const IN_HAND: usize = 10_000;

/// How often a held request tells the journal it is still in progress: well within the
/// journal's ack wait (10 s).
const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// How often the consumer looks for requests that left the journal before they were
/// delivered.
const LOSS_EVERY: Duration = Duration::from_secs(10);

/// The acknowledgement of a request in hand, renewed when the journal delivers it again.
struct Held(Mutex<Option<Ack>>);

impl Held {
    fn progress(&self) {
        if let Some(ack) = &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            ack.progress();
        }
    }

    fn renew(&self, ack: Ack) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(ack);
    }

    fn ack(&self) {
        if let Some(ack) = self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            ack.ack();
        }
    }
}

/// Makes the consumer if it does not exist, so that every request appended from now on is
/// kept for it: called before the evaluator stores its first request.
pub async fn create(journal: &dyn Journal) -> Result<(), zonecast_bus::BusError> {
    journal.create_consumer(Kind::Actions, CONSUMER, IN_HAND).await
}

/// Starts consuming: the task ends after `shutdown`, once every request in hand has its
/// outcome or is left to the journal.
pub fn spawn(journal: Arc<dyn Journal>, delivery: Delivery, shutdown: Shutdown) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(journal, Arc::new(delivery), shutdown))
}

async fn run(journal: Arc<dyn Journal>, delivery: Arc<Delivery>, shutdown: Shutdown) {
    let permits = Arc::new(Semaphore::new(IN_HAND));
    let mut held: HashMap<u64, Weak<Held>> = HashMap::new();
    let mut running = tokio::task::JoinSet::new();
    let log = Arc::new(Mutex::new(RateLimited::new(Duration::from_secs(10))));
    let mut fail_log = RateLimited::new(Duration::from_secs(30));
    let mut losses = Losses::default();
    let mut look = tokio::time::interval(LOSS_EVERY);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pause = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
    'open: loop {
        let opened = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            opened = journal.consume(Kind::Actions, CONSUMER, IN_HAND) => opened,
        };
        let mut records = match opened {
            Ok(records) => {
                pause.reset();
                records
            }
            Err(e) => {
                if let Some(held_back) = fail_log.allow() {
                    tracing::warn!(error = %e, held_back, "http-request actions: journal unavailable; will retry");
                }
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(pause.next_delay()) => {}
                }
                continue;
            }
        };
        loop {
            let permit = tokio::select! {
                biased;
                () = shutdown.cancelled() => break 'open,
                _ = look.tick() => {
                    losses.look(journal.as_ref()).await;
                    continue;
                }
                permit = permits.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break 'open,
                },
            };
            let record = tokio::select! {
                biased;
                () = shutdown.cancelled() => break 'open,
                record = records.next() => record,
            };
            let Some(record) = record else {
                // The journal ended the stream (connection lost): open it again after a pause.
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break 'open,
                    () = tokio::time::sleep(pause.next_delay()) => continue 'open,
                }
            };
            dispatch(record, permit, &mut held, &mut running, &delivery, &shutdown, &log);
            while running.try_join_next().is_some() {}
            if held.len() > 2 * IN_HAND {
                held.retain(|_, h| h.strong_count() > 0);
            }
        }
    }
    // Requests trying finish their try; those waiting for their next one are left to the
    // journal.
    while running.join_next().await.is_some() {}
}

/// Sends a request taken from the journal on a task of its own; a redelivery of one still
/// held renews its acknowledgement instead. A record that is no request is acknowledged at
/// once and counted as failed.
fn dispatch(
    record: Record,
    permit: tokio::sync::OwnedSemaphorePermit,
    held: &mut HashMap<u64, Weak<Held>>,
    running: &mut tokio::task::JoinSet<()>,
    delivery: &Arc<Delivery>,
    shutdown: &Shutdown,
    log: &Arc<Mutex<RateLimited>>,
) {
    if let Some(holding) = held.get(&record.sequence).and_then(Weak::upgrade) {
        holding.renew(record.ack);
        return;
    }
    let request: Request = match serde_json::from_slice(&record.payload) {
        Ok(request) => request,
        Err(e) => {
            metrics::counter!("zonecast_evaluator_http_actions_total", "outcome" => "failed").increment(1);
            tracing::warn!(subject = %record.subject, error = %e, "stored http-request action unreadable; skipped");
            record.ack.ack();
            return;
        }
    };
    let holding = Arc::new(Held(Mutex::new(Some(record.ack))));
    held.insert(record.sequence, Arc::downgrade(&holding));
    let (delivery, shutdown, log) = (delivery.clone(), shutdown.clone(), log.clone());
    running.spawn(async move {
        let _permit = permit;
        let send = delivery.send(&request, &shutdown);
        tokio::pin!(send);
        let mut progress = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        let outcome = loop {
            tokio::select! {
                outcome = &mut send => break outcome,
                _ = progress.tick() => holding.progress(),
            }
        };
        http_actions::record(&request.uri, &outcome, &log);
        match outcome {
            Outcome::Interrupted => {
                metrics::counter!("zonecast_evaluator_http_actions_interrupted_total").increment(1);
            }
            Outcome::Delivered | Outcome::GaveUp { .. } => holding.ack(),
        }
    });
}

/// Requests that left the journal before they were delivered, as counted so far.
#[derive(Default)]
struct Losses {
    seen: u64,
}

impl Losses {
    /// Counts and logs what the journal lost since the last look.
    async fn look(&mut self, journal: &dyn Journal) {
        let Ok(Some(state)) = journal.state(Kind::Actions, CONSUMER).await else { return };
        if state.lost > self.seen {
            let lost = state.lost - self.seen;
            metrics::counter!("zonecast_evaluator_http_actions_total", "outcome" => "lost").increment(lost);
            tracing::warn!(
                requests = lost,
                "http-request actions lost: they left the journal (older than ZONECAST_EVENT_RETENTION_SECS, or beyond its size) before they were delivered"
            );
        }
        self.seen = self.seen.max(state.lost);
    }
}
