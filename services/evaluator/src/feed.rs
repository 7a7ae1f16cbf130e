//! Positions in over NATS: the stored batches of the owned partitions, one task per partition
//! following its stream and reading the batches' lines, and the acknowledgements that let the
//! streams forget what is done.
//!
//! A batch is acknowledged once the events its positions caused are stored and the collisions
//! they changed are written to the store, so that an evaluator that restarts, resuming at the
//! first batch not acknowledged, starts from collisions that match what it resumes from. While
//! the store is away, collision writes wait; batches are then acknowledged [`ACK_AT_LATEST`]
//! after they were evaluated, and evaluation goes on.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use zonecast_bus::PositionStreams;
use zonecast_bus::journal::Ack;
use zonecast_bus::positions::{self, Batch};
use zonecast_model::PositionFix;
use zonecast_runtime::Shutdown;
use zonecast_runtime::ratelog::RateLimited;

/// Batches of a partition delivered to this evaluator and not yet acknowledged, at most.
const IN_HAND: usize = 1000;

/// Batches read and waiting for the evaluator's loop, over all partitions.
const WAITING: usize = 64;

/// How long after its evaluation a batch is acknowledged at the latest, collisions written or
/// not (the store is away).
pub const ACK_AT_LATEST: Duration = Duration::from_secs(5);

/// One batch as the loop takes it: its positions read.
pub struct Taken {
    /// The partition.
    pub partition: u32,
    /// Its positions, or why a line could not be read.
    pub fixes: Vec<Result<PositionFix, String>>,
    /// Batches of the partition skipped just before it (they left the stream unseen).
    pub skipped: u64,
    /// Acknowledges it and the partition's earlier ones.
    pub ack: Ack,
}

/// Follows the streams of partitions `lo..=hi` until `shutdown`, each opened again after its
/// connection is lost; the batches come out in each partition's order.
pub fn follow(streams: Arc<PositionStreams>, lo: u32, hi: u32, shutdown: Shutdown) -> mpsc::Receiver<Taken> {
    let (tx, rx) = mpsc::channel(WAITING);
    for partition in lo..=hi {
        let (streams, tx, shutdown) = (streams.clone(), tx.clone(), shutdown.clone());
        tokio::spawn(async move {
            let mut log = RateLimited::new(Duration::from_secs(10));
            let mut delay = Duration::from_millis(100);
            // The last batch taken: a new opening goes on after it.
            let mut had = None;
            while !shutdown.is_cancelled() {
                match streams.follow(partition, IN_HAND, had).await {
                    Ok(mut batches) => {
                        delay = Duration::from_millis(100);
                        loop {
                            let batch = tokio::select! {
                                () = shutdown.cancelled() => return,
                                batch = batches.next() => batch,
                            };
                            let Some(batch) = batch else { break };
                            had = Some(batch.sequence);
                            if tx.send(read(batch)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(e) => {
                        if let Some(held_back) = log.allow() {
                            tracing::warn!(partition, error = %e, held_back, "cannot follow the partition's positions; trying again");
                        }
                    }
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(Duration::from_secs(2));
            }
        });
    }
    rx
}

/// Reads a batch's lines.
fn read(batch: Batch) -> Taken {
    let fixes = lines(&batch.payload).collect();
    Taken { partition: batch.partition, fixes, skipped: batch.skipped, ack: batch.ack }
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
    positions::lines(&batch.payload)
        .filter(|line| macs.iter().any(|mac| memchr::memmem::find(line, mac.as_bytes()).is_some()))
        .map(|line| PositionFix::from_event_bytes(&line))
        .filter(|fix| fix.as_ref().map_or(true, |fix| wanted(fix.mac.as_str())))
        .collect()
}

/// Batches evaluated and not yet acknowledged, oldest first, each with the number of
/// collision changes that must be written before it is.
pub struct Acks {
    waiting: VecDeque<(u32, Ack, u64, Instant)>,
    /// Collision changes written so far.
    written: watch::Receiver<u64>,
}

impl Acks {
    /// Acknowledgements waiting for the collision changes counted by `written`.
    pub fn new(written: watch::Receiver<u64>) -> Self {
        Self { waiting: VecDeque::new(), written }
    }

    /// A batch whose events are stored, to be acknowledged once `changes` collision changes
    /// are written.
    pub fn hold(&mut self, partition: u32, ack: Ack, changes: u64) {
        self.waiting.push_back((partition, ack, changes, Instant::now()));
    }

    /// Waits until more collision changes are written.
    pub async fn written(&mut self) {
        if self.written.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Acknowledges, per partition, the newest batch whose collisions are written or that has
    /// waited [`ACK_AT_LATEST`] (the partition's earlier batches with it).
    pub fn settle(&mut self) {
        let written = *self.written.borrow_and_update();
        let due = self
            .waiting
            .iter()
            .take_while(|(_, _, changes, since)| *changes <= written || since.elapsed() >= ACK_AT_LATEST)
            .count();
        ack_newest(self.waiting.drain(..due));
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
