//! Writes current collisions, and when each device last reported, to the store in batches, so
//! `CollidingDevices` is right from any API replica without a store round trip per event, and so
//! a restarted evaluator starts from them. The changes come a turn of the evaluator's loop at a time, with the stored batches the
//! turn evaluated; a write covers whole turns and records, in the same transaction, how far
//! they reach ([`CollisionMarks`]): the collisions in the store always match the marks written
//! with them. Nothing is dropped: a failed write is tried again with backoff (changes coalesce
//! meanwhile, so the pending set stays as large as the collisions it touches), and what is
//! pending is written on shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
// foldhash: every change of a turn is keyed by its zone and device.
use foldhash::HashMap;
use tokio::sync::{Notify, mpsc, watch};
use uuid::Uuid;
use zonecast_model::{Collision, Mac, Presence};
use zonecast_runtime::backoff::Backoff;
use zonecast_store::{CollisionMarks, EvaluatorStore};

use crate::occupancy::{Occupancy, Recount};

/// One change of the current collisions.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Now inside.
    Entered(Collision),
    /// No longer inside.
    Exited(Uuid, Mac),
    /// When a device last reported, and whether it is offline.
    Presence(Presence),
}

impl Change {
    /// The device.
    pub fn mac(&self) -> &Mac {
        match self {
            Self::Entered(c) => &c.mac,
            Self::Exited(_, mac) => mac,
            Self::Presence(p) => &p.mac,
        }
    }
}

/// What one turn of the evaluator's loop changed.
#[derive(Debug)]
pub struct Turn {
    /// The collision changes, in the order they happened.
    pub changes: Vec<Change>,
    /// The stored batches the turn evaluated: partition and stream sequence.
    pub batches: Vec<(u32, u64)>,
    /// When the turn ended: every change of it was made before.
    pub at: DateTime<Utc>,
    /// The partitions the evaluator held when the turn ended, with its epoch for each (none
    /// for an evaluator given its partitions): the store refuses the write once another
    /// evaluator holds one of them at a newer epoch.
    pub epochs: Vec<(u32, u64)>,
    /// The zones with occupancy limits to count once the turn's changes are written.
    pub recounts: Vec<Recount>,
}

/// Most collision changes written in one transaction.
const BATCH: usize = 5_000;

/// The least time from the start of one write to the start of the next. A change made after a
/// quiet spell is written at once; under a steady flow of changes, those of this long go in one
/// transaction, where writing each turn's (a few dozen) on its own rewrote the same index pages
/// and committed hundreds of times a second. The batches a write acknowledges wait for it this
/// much longer by design, which is why the evaluator's lag leaves it out; what is pending when
/// partitions are given back is written at once ([`Writer::flush`]).
pub const SPACING: Duration = Duration::from_millis(100);

/// The writer's inputs and outputs.
pub struct Writer {
    /// Turns to write, in order.
    pub turns: mpsc::UnboundedSender<Turn>,
    /// How many of the turns sent are written.
    pub written: watch::Receiver<u64>,
    /// Partitions the store said another evaluator owns now: their changes were dropped.
    pub fenced: mpsc::UnboundedReceiver<Vec<u32>>,
    /// Has the turns sent so far written without waiting for the spacing: another evaluator
    /// waits for them.
    pub flush: Arc<Notify>,
    /// Ends when every sender is dropped and the last turn is written.
    pub task: tokio::task::JoinHandle<()>,
}

/// What is taken from the channel and not yet written: the latest change of each (zone, MAC)
/// and the furthest mark of each partition.
#[derive(Default)]
struct Pending {
    changes: HashMap<(Uuid, Mac), Option<Collision>>,
    presence: HashMap<Mac, Presence>,
    recounts: Vec<Recount>,
    partitions: BTreeMap<u32, u64>,
    through: Option<DateTime<Utc>>,
    epochs: BTreeMap<u32, u64>,
    /// Turns taken from the channel so far: once the pending set is written, all of them are.
    turns: u64,
}

impl Pending {
    fn absorb(&mut self, turn: Turn) {
        self.turns += 1;
        for change in turn.changes {
            match change {
                Change::Entered(c) => _ = self.changes.insert((c.zone_id, c.mac.clone()), Some(c)),
                Change::Exited(zone, mac) => _ = self.changes.insert((zone, mac), None),
                Change::Presence(p) => _ = self.presence.insert(p.mac.clone(), p),
            }
        }
        for (partition, sequence) in turn.batches {
            let mark = self.partitions.entry(partition).or_default();
            *mark = (*mark).max(sequence);
        }
        self.through = Some(turn.at);
        self.recounts.extend(turn.recounts);
        for (partition, epoch) in turn.epochs {
            let held = self.epochs.entry(partition).or_default();
            *held = (*held).max(epoch);
        }
    }

    /// Drops what concerns `lost` partitions of `count`: another evaluator owns them now.
    fn drop_partitions(&mut self, lost: &[u32], count: u32) {
        self.changes.retain(|(_, mac), _| !lost.contains(&mac.partition(count)));
        self.presence.retain(|mac, _| !lost.contains(&mac.partition(count)));
        self.partitions.retain(|p, _| !lost.contains(p));
        self.epochs.retain(|p, _| !lost.contains(p));
    }

    /// As many changes as one transaction writes.
    fn full(&self) -> bool {
        self.changes.len() + self.presence.len() >= BATCH
    }

    fn is_empty(&self) -> bool {
        self.changes.is_empty()
            && self.presence.is_empty()
            && self.recounts.is_empty()
            && self.partitions.is_empty()
            && self.through.is_none()
    }

    fn clear(&mut self) {
        self.changes.clear();
        self.presence.clear();
        self.recounts.clear();
        self.partitions.clear();
        self.through = None;
        self.epochs.clear();
    }
}

/// Starts the writer of an evaluator of `count` partitions; `time_mark` names its time mark
/// (its first partition), if it keeps one (an evaluator given its partitions). After each
/// write, the zones with occupancy limits it changed are counted ([`Occupancy`]).
pub fn spawn(store: Arc<dyn EvaluatorStore>, count: u32, time_mark: Option<u32>, mut occupancy: Occupancy) -> Writer {
    let (tx, mut rx) = mpsc::unbounded_channel::<Turn>();
    let (written_tx, written) = watch::channel(0u64);
    let (fenced_tx, fenced) = mpsc::unbounded_channel();
    let flush = Arc::new(Notify::new());
    let flushed = flush.clone();
    let task = tokio::spawn(async move {
        let mut pending = Pending::default();
        let failures = metrics::counter!("zonecast_evaluator_collision_write_failures_total");
        let mut next_write = tokio::time::Instant::now();
        let mut open = true;
        loop {
            if pending.is_empty() {
                match rx.recv().await {
                    Some(turn) => pending.absorb(turn),
                    None => break,
                }
            }
            // Turns coming until the next write is due join it (those already sent first, the
            // select being biased); once every sender is gone, or a flush is asked for, what is
            // pending is written at once.
            let due = tokio::time::sleep_until(next_write);
            tokio::pin!(due);
            while open && !pending.full() {
                tokio::select! {
                    biased;
                    turn = rx.recv() => match turn {
                        Some(turn) => pending.absorb(turn),
                        None => open = false,
                    },
                    () = flushed.notified() => break,
                    () = &mut due => break,
                }
            }
            next_write = tokio::time::Instant::now() + SPACING;
            let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
            loop {
                let entered: Vec<Collision> = pending.changes.values().flatten().cloned().collect();
                let exited: Vec<(Uuid, Mac)> =
                    pending.changes.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k.clone()).collect();
                let presence: Vec<Presence> = pending.presence.values().cloned().collect();
                let marks = CollisionMarks {
                    partitions: pending.partitions.iter().map(|(p, s)| (*p, *s)).collect(),
                    through: time_mark.zip(pending.through).into_iter().collect(),
                    epochs: pending.epochs.iter().map(|(p, e)| (*p, *e)).collect(),
                };
                match store.write_collisions(&entered, &exited, &presence, &marks).await {
                    Ok(()) => {
                        for recount in pending.recounts.drain(..) {
                            occupancy.add(recount);
                        }
                        pending.clear();
                        written_tx.send_replace(pending.turns);
                        // A count that fails is tried again after the next write.
                        if !occupancy.is_empty()
                            && let Err(e) = occupancy.count(store.as_ref()).await
                        {
                            metrics::counter!("zonecast_evaluator_occupancy_failures_total").increment(1);
                            tracing::warn!(error = %e, "zones with occupancy limits not counted; trying again after the next write");
                        }
                        break;
                    }
                    Err(zonecast_store::StoreError::Fenced { partitions }) => {
                        metrics::counter!("zonecast_evaluator_fenced_writes_total").increment(1);
                        tracing::warn!(partitions = ?partitions, "collision changes of partitions another evaluator owns now dropped");
                        pending.drop_partitions(&partitions, count);
                        let _ = fenced_tx.send(partitions);
                    }
                    Err(e) => {
                        failures.increment(1);
                        tracing::warn!(error = %e, pending = pending.changes.len(), "collision batch not written; retrying");
                        tokio::time::sleep(backoff.next_delay()).await;
                        // Keep absorbing turns so the latest state wins when the store is back.
                        while let Ok(turn) = rx.try_recv() {
                            pending.absorb(turn);
                        }
                    }
                }
            }
        }
    });
    Writer { turns: tx, written, fenced, flush, task }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::time::Instant;
    use zonecast_bus::{Bus, InProcessBus, JournalSettings, Subjects};
    use zonecast_store::{CollisionReader, SqliteStore};

    use super::*;

    /// A turn that saw device `n`.
    fn seen(n: u8) -> Turn {
        let mac: Mac = format!("00:00:00:00:00:{n:02X}").parse().unwrap();
        let presence = Presence { mac, last_seen: Utc::now(), offline: false };
        Turn {
            changes: vec![Change::Presence(presence)],
            batches: vec![],
            at: Utc::now(),
            epochs: vec![],
            recounts: vec![],
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_after_a_quiet_spell_is_written_at_once_and_a_steady_flow_once_per_spacing() {
        let dir = std::env::temp_dir().join(format!("zonecast-collisions-{}", Uuid::new_v4()));
        let store = Arc::new(SqliteStore::open(&dir.join("store.sqlite")).unwrap());
        let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
        let occupancy = Occupancy::new(bus.journal("t", JournalSettings::default()), Subjects::new("t"), 501);
        let Writer { turns, mut written, task, flush, .. } = spawn(store.clone(), 1, None, occupancy);
        let start = Instant::now();

        turns.send(seen(1)).unwrap();
        written.wait_for(|n| *n == 1).await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO, "nothing was written before: no wait");

        turns.send(seen(2)).unwrap();
        turns.send(seen(3)).unwrap();
        written.changed().await.unwrap();
        assert_eq!(*written.borrow(), 3, "the turns that came within the spacing are written together");
        assert_eq!(start.elapsed(), SPACING, "the second write starts a spacing after the first");

        // Partitions given back: what is pending is written without waiting.
        turns.send(seen(4)).unwrap();
        flush.notify_one();
        written.wait_for(|n| *n == 4).await.unwrap();
        assert_eq!(start.elapsed(), SPACING, "a flush does not wait for the spacing");

        // Once the evaluator is gone, what is pending is written without waiting.
        turns.send(seen(5)).unwrap();
        drop(turns);
        task.await.unwrap();
        assert_eq!(start.elapsed(), SPACING);
        let mut macs: Vec<String> =
            store.all_presence().await.unwrap().into_iter().map(|p| p.mac.to_string()).collect();
        macs.sort();
        let every: Vec<String> = (1..=5).map(|n| format!("00:00:00:00:00:{n:02X}")).collect();
        assert_eq!(macs, every);
        let _ = std::fs::remove_dir_all(dir);
    }
}
