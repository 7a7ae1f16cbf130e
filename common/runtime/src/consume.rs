//! The one loop of a durable journal consumer (each MQTT connection's in the forwarder, the
//! http-request actions' in the evaluator): it opens the consumer and takes its deliveries
//! while fewer than `in_hand` are held, tells the journal every [`PROGRESS_EVERY`] that those
//! held are still in progress (so none is handed out again while it is held here), recognises
//! a delivery handed out again while still held (a progress report lost on the way) and renews
//! its acknowledgement instead of taking it twice, and opens the consumer again, with backoff,
//! whenever the journal is away or ends the stream. What is held when the loop stops stays
//! unacknowledged: the journal hands it out again after its ack wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use zonecast_bus::Journal;
use zonecast_bus::journal::{Ack, Delivery, Kind};

use crate::Shutdown;
use crate::backoff::Backoff;
use crate::ratelog::RateLimited;

/// How often the deliveries held are reported to the journal as in progress: well within
/// JetStream's ack wait (10 s).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// What a consumer does with the deliveries it takes.
pub trait Take {
    /// What it keeps of a delivery it has not settled yet.
    type Held: Holding;

    /// Takes `delivery`, holding `permit` for as long as it is in hand: what it keeps of it, or
    /// `None` when it settled it at once (acknowledged, or left to the journal).
    fn take(&mut self, delivery: Delivery, permit: OwnedSemaphorePermit) -> Option<Arc<Self::Held>>;

    /// The journal handed out again, with `ack`, a delivery that `held` still has.
    fn again(&mut self, held: &Self::Held, ack: Ack);
}

/// A delivery in hand: it can say that it is still being worked on.
pub trait Holding: Send + Sync + 'static {
    /// Tells the journal the delivery is still in progress.
    fn progress(&self);
}

/// The acknowledgement of a delivery in hand, renewed when the journal hands it out again.
#[derive(Debug)]
pub struct HeldAck(Mutex<Option<Ack>>);

impl HeldAck {
    /// Holding `ack`.
    pub fn new(ack: Ack) -> Self {
        Self(Mutex::new(Some(ack)))
    }

    /// The acknowledgement of the newest delivery replaces the one held.
    pub fn renew(&self, ack: Ack) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(ack);
    }

    /// Tells the journal the delivery is still in progress.
    pub fn progress(&self) {
        if let Some(ack) = &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            ack.progress();
        }
    }

    /// Acknowledges the delivery (once).
    pub fn ack(&self) {
        if let Some(ack) = self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            ack.ack();
        }
    }
}

/// A delivery in hand that needs nothing kept but its acknowledgement, holding the consumer's
/// permit until it is dropped (a taker that writes or sends each delivery on a task of its own).
pub struct Held {
    /// The acknowledgement of its newest delivery.
    pub ack: HeldAck,
    _permit: OwnedSemaphorePermit,
}

impl Held {
    /// `ack` held, with the consumer's `permit`.
    pub fn new(ack: Ack, permit: OwnedSemaphorePermit) -> Self {
        Self { ack: HeldAck::new(ack), _permit: permit }
    }
}

impl Holding for Held {
    fn progress(&self) {
        self.ack.progress();
    }
}

/// Consumes `kind`'s consumer `name` (narrowed to the records on subjects matching `filter`:
/// [`Journal::consume_narrowed`]) into `taker`, at most `in_hand` deliveries held, until
/// `stop`.
pub async fn run<T: Take>(
    journal: &dyn Journal,
    kind: Kind,
    name: &str,
    filter: Option<&str>,
    in_hand: usize,
    stop: &Shutdown,
    taker: &mut T,
) {
    let in_hand = in_hand.max(1);
    let permits = Arc::new(Semaphore::new(in_hand));
    let mut held: HashMap<u64, Weak<T::Held>> = HashMap::new();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
    let mut fail_log = RateLimited::new(Duration::from_secs(30));
    let mut progress = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    progress.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    'open: loop {
        let opened = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            opened = async {
                match filter {
                    Some(filter) => journal.consume_narrowed(kind, name, filter, in_hand).await,
                    None => journal.consume(kind, name, in_hand).await,
                }
            } => opened,
        };
        let mut deliveries = match opened {
            Ok(deliveries) => {
                backoff.reset();
                deliveries
            }
            Err(e) => {
                if let Some(held_back) = fail_log.allow() {
                    tracing::warn!(consumer = %name, error = %e, held_back, "journal unavailable; will retry");
                }
                tokio::select! {
                    biased;
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(backoff.next_delay()) => continue,
                }
            }
        };
        loop {
            let permit = tokio::select! {
                biased;
                () = stop.cancelled() => break 'open,
                _ = progress.tick() => {
                    in_progress(&held);
                    continue;
                }
                permit = permits.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break 'open,
                },
            };
            let delivery = loop {
                tokio::select! {
                    biased;
                    () = stop.cancelled() => break 'open,
                    _ = progress.tick() => in_progress(&held),
                    delivery = deliveries.next() => break delivery,
                }
            };
            let Some(delivery) = delivery else {
                // The journal ended the stream (connection lost, consumer opened again): open
                // it again after a pause.
                tokio::select! {
                    biased;
                    () = stop.cancelled() => break 'open,
                    () = tokio::time::sleep(backoff.next_delay()) => continue 'open,
                }
            };
            if let Some(holding) = held.get(&delivery.sequence).and_then(Weak::upgrade) {
                taker.again(&holding, delivery.ack);
                continue;
            }
            let sequence = delivery.sequence;
            if let Some(holding) = taker.take(delivery, permit) {
                held.insert(sequence, Arc::downgrade(&holding));
            }
            if held.len() > 2 * in_hand {
                held.retain(|_, holding| holding.strong_count() > 0);
            }
        }
    }
}

/// Tells the journal that every delivery still held is in progress.
fn in_progress<H: Holding>(held: &HashMap<u64, Weak<H>>) {
    held.values().filter_map(Weak::upgrade).for_each(|holding| holding.progress());
}

/// How often [`look_for_losses`] looks.
pub const LOSS_EVERY: Duration = Duration::from_secs(10);

/// Looks, every [`LOSS_EVERY`] until `stop`, for records of `kind` that left the journal (its
/// retention) before consumer `name` had them, and hands the number found since the last look
/// to `lost` (counted from this process's start).
pub async fn look_for_losses(journal: Arc<dyn Journal>, kind: Kind, name: String, stop: Shutdown, lost: impl Fn(u64)) {
    let mut losses = Losses::default();
    let mut look = tokio::time::interval(LOSS_EVERY);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            _ = look.tick() => match losses.look(journal.as_ref(), kind, &name).await {
                0 => {}
                new => lost(new),
            },
        }
    }
}

/// The records a consumer lost, as counted so far.
#[derive(Default)]
struct Losses {
    seen: u64,
}

impl Losses {
    /// How many records consumer `name` of `kind` lost since the last look (none when the
    /// journal does not answer).
    async fn look(&mut self, journal: &dyn Journal, kind: Kind, name: &str) -> u64 {
        let Ok(Some(state)) = journal.state(kind, name).await else { return 0 };
        let new = state.lost.saturating_sub(self.seen);
        self.seen = self.seen.max(state.lost);
        new
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use zonecast_bus::journal::Record;
    use zonecast_bus::{Bus, InProcessBus, JournalSettings};

    use super::*;

    #[tokio::test]
    async fn each_record_lost_is_counted_once() {
        // Records of about 7 bytes, kept within 2,000 bytes: most of 400 leave.
        let settings = JournalSettings { max_bytes: 2_000, ..JournalSettings::default() };
        let journal = InProcessBus::new().journal("loss", settings);
        journal.create_consumer(Kind::Events, "slow", 100).await.unwrap();
        let mut losses = Losses::default();
        assert_eq!(losses.look(journal.as_ref(), Kind::Events, "slow").await, 0);
        let records = (0..400)
            .map(|n| Record {
                subject: "loss.events.zone.z.enter".into(),
                payload: format!("event {n}").into(),
                id: n.to_string(),
            })
            .collect();
        journal.append(records).await.unwrap();
        let lost = journal.state(Kind::Events, "slow").await.unwrap().unwrap().lost;
        assert!(lost > 0);
        assert_eq!(losses.look(journal.as_ref(), Kind::Events, "slow").await, lost);
        assert_eq!(losses.look(journal.as_ref(), Kind::Events, "slow").await, 0, "counted once");
        assert_eq!(losses.look(journal.as_ref(), Kind::Events, "none").await, 0, "no such consumer");
    }
}
