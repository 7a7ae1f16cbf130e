//! Positions in: the batches of the owned partitions from the position log, one task per
//! partition following it and reading the batches' lines (or taking them decoded, in one
//! process), and the acknowledgements that let the log forget what is done.
//!
//! A batch is acknowledged once the events its positions caused are stored and the collisions
//! they changed are written to the store, never before: the acknowledgement floor is never
//! ahead of the collisions. The store also keeps, with the collisions, the sequence of the last
//! batch of each partition they reflect (its mark), and a restarted evaluator, or one taking
//! a partition over from another, resumes each partition after it: what it evaluates again
//! meets the collisions as they were before it, and causes the same events with the same
//! EventIDs (the journal stores them once). While the
//! store is away nothing is acknowledged: the evaluator reports itself as far behind as its oldest
//! batch has waited, so ingest pushes back once that passes its bound; each partition takes up
//! to [`IN_HAND`] batches, then the log holds back the rest and the positions wait in the
//! stream. Alarms come late, never wrong.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use zonecast_bus::PositionLog;
use zonecast_bus::journal::Ack;
use zonecast_bus::positions::{self, Batch, Batches};
use zonecast_model::PositionFix;
use zonecast_runtime::Shutdown;
use zonecast_runtime::backoff::Backoff;
use zonecast_runtime::ratelog::RateLimited;

/// Batches of a partition delivered to this evaluator and not yet acknowledged, at most.
const IN_HAND: usize = 1000;

/// Batches read and waiting for the evaluator's loop, over all partitions.
const WAITING: usize = 64;

/// One batch as the loop takes it: its positions read.
pub struct Taken {
    /// The partition.
    pub partition: u32,
    /// Its place in the position stream, where the log keeps batches.
    pub sequence: Option<u64>,
    /// Its positions, or why a line could not be read.
    pub fixes: Vec<Result<PositionFix, String>>,
    /// Stored messages skipped just before it (they left the stream unseen).
    pub skipped: u64,
    /// Acknowledges it and the partition's earlier ones.
    pub ack: Ack,
}

/// The owned partitions being followed: one task per partition, its batches coming out of
/// [`Feed::batches`] in the partition's order.
pub struct Feed {
    log: Arc<dyn PositionLog>,
    tx: mpsc::Sender<Taken>,
    /// The batches read, over all partitions followed.
    pub batches: mpsc::Receiver<Taken>,
    following: HashMap<u32, Shutdown>,
    shutdown: Shutdown,
}

impl Feed {
    /// Follows nothing yet; every partition stops following at `shutdown`.
    pub fn new(log: Arc<dyn PositionLog>, shutdown: Shutdown) -> Self {
        let (tx, batches) = mpsc::channel(WAITING);
        Self { log, tx, batches, following: HashMap::new(), shutdown }
    }

    /// Follows `partition`, after `mark` (the last batch the stored collisions reflect), and
    /// opens it again after its connection is lost. A log that keeps nothing hands over only
    /// what is published once the follower is there: it is followed before this returns.
    pub async fn start(&mut self, partition: u32, mark: Option<u64>) {
        let stop = self.shutdown.child_token();
        if let Some(earlier) = self.following.insert(partition, stop.clone()) {
            earlier.cancel();
        }
        let (log, tx) = (self.log.clone(), self.tx.clone());
        let mut opened: Option<Batches> = match log.keeps() {
            true => None,
            false => log.follow(partition, IN_HAND, mark).await.ok(),
        };
        // The last batch taken, or reflected in the collisions: an opening goes on after it.
        let mut had = mark;
        tokio::spawn(async move {
            let mut errors = RateLimited::new(Duration::from_secs(10));
            let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
            while !stop.is_cancelled() {
                let batches = match opened.take() {
                    Some(batches) => Ok(batches),
                    None => log.follow(partition, IN_HAND, had).await,
                };
                match batches {
                    Ok(mut batches) => {
                        backoff.reset();
                        loop {
                            let batch = tokio::select! {
                                () = stop.cancelled() => return,
                                batch = batches.next() => batch,
                            };
                            let Some(batch) = batch else { break };
                            had = batch.sequence.or(had);
                            if tx.send(read(batch)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(e) => {
                        if let Some(held_back) = errors.allow() {
                            tracing::warn!(partition, error = %e, held_back, "cannot follow the partition's positions; trying again");
                        }
                    }
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(backoff.next_delay()) => {}
                }
            }
        });
    }

    /// Stops following `partition`; batches of it already read still come out, for the
    /// evaluator to pass over.
    pub fn stop(&mut self, partition: u32) {
        if let Some(stop) = self.following.remove(&partition) {
            stop.cancel();
        }
    }
}

/// Reads a batch's lines, or takes its positions as published in this process.
fn read(batch: Batch) -> Taken {
    let fixes = match batch.decoded::<Vec<PositionFix>>() {
        Some(fixes) => fixes.iter().cloned().map(Ok).collect(),
        None => lines(&batch.lines()).collect(),
    };
    Taken { partition: batch.partition, sequence: batch.sequence, fixes, skipped: batch.skipped, ack: batch.ack }
}

/// The positions of a batch's lines, each read, or why it could not be.
pub fn lines(payload: &bytes::Bytes) -> impl Iterator<Item = Result<PositionFix, String>> + '_ {
    positions::lines(payload).map(|line| PositionFix::from_event_bytes(&line))
}

/// The positions of `macs` in a batch from the bus (an evaluator following mobile-zone sources
/// of partitions it does not own): taken from the decoded fixes when ingest published it in
/// this process, else from its lines, where a line that does not name one of them is not
/// parsed.
pub fn of_devices(batch: &zonecast_bus::Message, macs: &[String]) -> Vec<Result<PositionFix, String>> {
    let wanted = |mac: &str| macs.iter().any(|m| m == mac);
    if let Some(fixes) = batch.decoded::<Vec<PositionFix>>() {
        return fixes.iter().filter(|fix| wanted(fix.mac.as_str())).cloned().map(Ok).collect();
    }
    positions::lines(&batch.bytes())
        .filter(|line| macs.iter().any(|mac| memchr::memmem::find(line, mac.as_bytes()).is_some()))
        .map(|line| PositionFix::from_event_bytes(&line))
        .filter(|fix| fix.as_ref().map_or(true, |fix| wanted(fix.mac.as_str())))
        .collect()
}

/// Batches evaluated and not yet acknowledged, oldest first, each with the turn of the
/// evaluator's loop whose collision changes must be written before it is.
pub struct Acks {
    /// Partition, acknowledgement, turn, and when it began to wait.
    waiting: VecDeque<(u32, Ack, u64, Instant)>,
    /// Turns written so far.
    written: watch::Receiver<u64>,
}

impl Acks {
    /// Acknowledgements waiting for the turns counted by `written`.
    pub fn new(written: watch::Receiver<u64>) -> Self {
        Self { waiting: VecDeque::new(), written }
    }

    /// A batch whose events are stored, to be acknowledged once turn `turn` is written.
    pub fn hold(&mut self, partition: u32, ack: Ack, turn: u64) {
        self.waiting.push_back((partition, ack, turn, Instant::now()));
    }

    /// How long the oldest batch has waited for its collisions to be written: the evaluator is
    /// that far behind, however quickly it evaluates (the store is away, or slow).
    pub fn oldest(&self) -> Option<Duration> {
        self.waiting.front().map(|(.., since)| since.elapsed())
    }

    /// Waits until more turns are written.
    pub async fn written(&mut self) {
        if self.written.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Acknowledges, per partition, the newest batch whose collisions are written (the
    /// partition's earlier batches with it), and returns how many turns are written.
    pub fn settle(&mut self) -> u64 {
        let written = *self.written.borrow_and_update();
        let due = self.waiting.iter().take_while(|(_, _, turn, _)| *turn <= written).count();
        ack_newest(self.waiting.drain(..due));
        written
    }

    /// Forgets the batches of `partitions` held: another evaluator owns them now, and takes
    /// them again from the collisions written.
    pub fn forget(&mut self, partitions: &[u32]) {
        self.waiting.retain(|(partition, ..)| !partitions.contains(partition));
    }

    /// Acknowledges every batch held: the collision writer has written everything.
    pub fn finish(mut self) {
        ack_newest(self.waiting.drain(..));
    }
}

/// Acknowledges the newest of each partition's batches: with it, the earlier ones.
fn ack_newest(batches: impl Iterator<Item = (u32, Ack, u64, Instant)>) {
    let mut newest: Vec<(u32, Ack)> = Vec::new();
    for (partition, ack, ..) in batches {
        match newest.iter_mut().find(|(p, _)| *p == partition) {
            Some(slot) => slot.1 = ack,
            None => newest.push((partition, ack)),
        }
    }
    for (_, ack) in newest {
        ack.ack();
    }
}
