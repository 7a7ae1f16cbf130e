//! The position log: where ingest publishes the normalised positions, in batches per partition
//! (`<prefix>.batches.<P>`), and where the evaluator owning a partition follows them.
//! Services use the [`PositionLog`] interface only; a bus opened for a site
//! ([`crate::open`]) brings the implementation that goes with it.
//!
//! Over NATS ([`JetStreamPositions`]) every partition has a JetStream stream,
//! `<PREFIX>_POSITIONS_<P>` on `<prefix>.batches.<P>`, whose messages are batches: the
//! normalised position events of that partition that one ingest replica took together, one JSON
//! document per line. Each stream keeps its batches for a window (age and size; by default 60 s
//! and 1 GiB over all partitions), and has one durable consumer that the evaluator owning the
//! partition follows and acknowledges: `evaluator-<epoch>` for one that claimed it, `evaluator`
//! for one given it ([`PositionLog::follow`]). Batches that left a stream before the evaluator
//! took them are skipped, and each [`Batch`] says how many were skipped just before it. An
//! evaluator that restarts, or takes a partition over, resumes where its predecessor stopped.
//!
//! In one process ([`InProcessPositions`]) the same batches go from ingest to the evaluators
//! through the bus's queues, decoded (a `Vec<PositionFix>`, its lines written only for a reader
//! of bytes), and are not kept: an evaluator there cannot restart without its ingest.
//!
//! Either way, core subscribers of `<prefix>.batches.<P>` see every batch too
//! ([`PositionLog::tap`]: the API's position streams, the forwarder's position topics, the
//! evaluators following mobile-zone sources).

mod in_process;
mod jetstream;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;

pub use in_process::InProcessPositions;
pub use jetstream::{JetStreamPositions, stream_name};

use crate::journal::Ack;
use crate::{BusError, Decoded, Subscription};

/// What the position streams keep: a batch leaves once it is older than `max_age` or once its
/// partition's stream holds more than its share of `max_bytes` (oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositionSettings {
    /// `ZONECAST_POSITION_RETENTION_SECS`, default 60 s.
    pub max_age: Duration,
    /// `ZONECAST_POSITION_RETENTION_BYTES`, default 1 GiB, shared equally by the partitions.
    pub max_bytes: u64,
    /// `ZONECAST_POSITION_SUBJECTS`: ingest publishes every position on its own subject,
    /// `<prefix>.positions.<P>.<MAC>`, as well, for subscribers that tap single devices.
    pub per_position_subjects: bool,
    /// `ZONECAST_INGEST_MAX_LAG_MS`: how far behind an evaluator or forwarder may be before
    /// ingest pushes back (zero: never), in both deployments.
    pub max_lag: Duration,
    /// `ZONECAST_INGEST_HOLD_MS`: how long the HTTP input holds a request while the pipeline is
    /// behind, taking it the moment it has caught up, before it answers 503 (zero: at once).
    pub hold: Duration,
    /// `ZONECAST_NATS_REPLICAS`, default 1: on how many NATS servers of a cluster JetStream keeps
    /// each partition's stream.
    pub replicas: usize,
}

/// The default of `ZONECAST_INGEST_MAX_LAG_MS`: about the queueing delay the pipeline keeps at
/// full speed. On the side-by-side workload it keeps 95 % of the rate a 25 ms bound gives, at a
/// fifth less delay; less idles the pipeline between admissions, more only delays every event.
pub const DEFAULT_MAX_LAG: Duration = Duration::from_millis(15);

/// The default of `ZONECAST_INGEST_HOLD_MS`: one second, well within an HTTP client's timeout.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(1);

impl Default for PositionSettings {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(60),
            max_bytes: 1 << 30,
            per_position_subjects: false,
            max_lag: DEFAULT_MAX_LAG,
            hold: DEFAULT_HOLD,
            replicas: 1,
        }
    }
}

/// The largest message a batch is sent in; longer batches are cut between lines (NATS servers
/// refuse messages above 1 MiB by default).
pub const MAX_BATCH_BYTES: usize = 512 * 1024;

/// The position batches of a site's partitions: published by ingest, followed by the
/// evaluators, tapped by whoever wants to watch them.
#[async_trait::async_trait]
pub trait PositionLog: Send + Sync + 'static {
    /// How many partitions there are.
    fn partitions(&self) -> u32;

    /// Whether batches are kept until the partition's owner acknowledges them (JetStream): an
    /// evaluator that restarts resumes after the mark its collisions were written with. When
    /// not (in one process), the collisions catch up with the events journaled instead.
    fn keeps(&self) -> bool;

    /// Makes what the partitions need before the first positions come (JetStream: every
    /// partition's stream, or its bounds brought in line with the settings), so that the first
    /// positions wait for their store only.
    async fn prepare(&self) -> Result<(), BusError> {
        Ok(())
    }

    /// Publishes one payload's positions, a batch per partition, held decoded (its
    /// [`crate::Encode::encode`] gives the lines): the batches of calls made one after the other
    /// are stored, and reach their followers, in that order. Returns once they are on their
    /// way; [`Stored::confirmed`] waits until they are stored.
    async fn publish(&self, batches: Vec<(u32, Decoded)>) -> Result<Stored, BusError>;

    /// Follows `partition` for its owner at `epoch` (`None`: an evaluator given its
    /// partitions, which needs no fencing), with at most `in_hand` batches delivered and not
    /// acknowledged, after `had` (the last batch the follower already has, from an earlier
    /// opening or reflected in the state it restored) where the log keeps that far.
    ///
    /// JetStream: it starts at the first batch not acknowledged by an earlier owner (at the
    /// oldest the stream holds when there was none), or past `had` when that is further,
    /// ignoring a `had` beyond the stream's last batch. Batches delivered to an owner that
    /// stopped before acknowledging them come again at once, in order. Each epoch has a consumer
    /// of its own, `evaluator-<epoch>`, and opening one removes those of older epochs: an owner
    /// that lost the partition and still acknowledges, acknowledges on a consumer that is gone.
    /// A consumer of a newer epoch refuses the opening. The batches come in stream order; those
    /// that left the stream before the first of an opening are counted in its `skipped`, and
    /// when some go missing further on (lost on their way in a leader change), the opening
    /// ends before the batch after them: open it again after the last batch taken to have them.
    /// In one process: the batches published from now on, their acknowledgements doing nothing.
    async fn follow(
        &self,
        partition: u32,
        in_hand: usize,
        had: Option<u64>,
        epoch: Option<u64>,
    ) -> Result<Batches, BusError>;

    /// Every batch of `partition` (`None`: of every partition) published from now on, as a
    /// message of `<prefix>.batches.<P>` that acknowledges nothing, decoded where it was
    /// published in this process ([`crate::Message::decoded`]); with a `group`, each batch
    /// goes to one member of the group.
    async fn tap(&self, partition: Option<u32>, group: Option<&str>) -> Result<Subscription, BusError>;

    /// Batches of `partition` kept and not yet acknowledged by its evaluator (the consumer of
    /// the newest epoch); `None` where nothing is kept.
    async fn backlog(&self, partition: u32) -> Result<Option<u64>, BusError>;

    /// Removes every partition's stored batches (a site taken down; a test's own prefix).
    async fn remove_all(&self) -> Result<(), BusError> {
        Ok(())
    }
}

/// One batch of a partition, as its evaluator gets it.
pub struct Batch {
    /// The partition.
    pub partition: u32,
    /// Its place in the partition's stream, where the log keeps batches.
    pub sequence: Option<u64>,
    /// The position events, one per line (empty for a batch that comes decoded and was not
    /// encoded for anyone).
    pub payload: Bytes,
    /// The batch as its publisher held it, when it was published in this process.
    pub decoded: Option<Decoded>,
    /// Batches of the partition that left the stream (older than the window, or beyond its
    /// size) before the follower had them, just before this one.
    pub skipped: u64,
    /// Acknowledges this batch and every earlier one of the partition.
    pub ack: Ack,
}

impl Batch {
    /// The decoded batch, when there is one of type `T`.
    pub fn decoded<T: 'static>(&self) -> Option<&T> {
        self.decoded.as_deref()?.decoded().downcast_ref()
    }

    /// The position events, one per line: as they came, or written from the decoded batch.
    pub fn lines(&self) -> Bytes {
        crate::bytes_of(&self.payload, self.decoded.as_ref())
    }
}

/// The batches of one partition, oldest first; every batch is delivered once per opening (a
/// redelivery of one already delivered is left out). It ends when the connection is gone for
/// good; open it again to go on.
pub type Batches = std::pin::Pin<Box<dyn futures::Stream<Item = Batch> + Send>>;

/// What confirms that the batches of one [`PositionLog::publish`] are stored.
#[must_use = "the batches are stored only once confirmed"]
pub struct Stored(Option<oneshot::Receiver<Result<(), String>>>);

impl Stored {
    /// Batches already where they go (handed to the queues of this process).
    pub fn done() -> Self {
        Self(None)
    }

    /// Waits until every batch is stored; an error when one is not (NATS or JetStream away or
    /// too slow): then some of them may be stored, and some not.
    pub async fn confirmed(self) -> Result<(), BusError> {
        match self.0 {
            Some(stored) => stored
                .await
                .map_err(|_| BusError::Journal("positions not stored: the publisher stopped".into()))?
                .map_err(BusError::Journal),
            None => Ok(()),
        }
    }
}

/// `payload` in pieces of at most `max` bytes, cut after a newline (a single longer line is a
/// piece of its own).
fn cut(payload: Bytes, max: usize) -> Vec<Bytes> {
    if payload.len() <= max {
        return vec![payload];
    }
    let mut pieces = Vec::new();
    let mut rest = payload;
    while rest.len() > max {
        let end = rest[..max]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or_else(|| rest.iter().position(|&b| b == b'\n').map_or(rest.len(), |i| i + 1), |i| i + 1);
        pieces.push(rest.split_to(end));
    }
    if !rest.is_empty() {
        pieces.push(rest);
    }
    pieces
}

/// Lines of position events, as a batch carries them: each line is one event's bytes.
pub fn lines(payload: &Bytes) -> impl Iterator<Item = Bytes> + '_ {
    let mut rest = payload.clone();
    std::iter::from_fn(move || {
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n').map_or(rest.len(), |i| i + 1);
            let mut line = rest.split_to(end);
            if line.last() == Some(&b'\n') {
                line.truncate(line.len() - 1);
            }
            if !line.is_empty() {
                return Some(line);
            }
        }
        None
    })
}

/// Appends one event's bytes to a batch being built.
pub fn push_line(batch: &mut BytesMut, event: &[u8]) {
    batch.extend_from_slice(event);
    batch.extend_from_slice(b"\n");
}

/// The subject of `partition`'s batches under `prefix`, or of every partition's.
fn subject(prefix: &str, partition: Option<u32>) -> String {
    let subjects = crate::Subjects::new(prefix.to_owned());
    partition.map_or_else(|| subjects.position_batches(), |p| subjects.position_batch(p))
}

/// [`PositionLog::tap`] on `bus`: a subscriber that reads decoded batches where there are any,
/// or a member of `group`.
async fn tap(
    bus: &dyn crate::Bus,
    prefix: &str,
    partition: Option<u32>,
    group: Option<&str>,
) -> Result<Subscription, BusError> {
    let subject = subject(prefix, partition);
    match group {
        Some(group) => bus.queue_subscribe(&subject, group).await,
        None => bus.subscribe_decoded(&subject).await,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn long_batches_are_cut_between_lines() {
        let mut batch = BytesMut::new();
        for i in 0..100 {
            push_line(&mut batch, format!("{{\"n\":{i:04}}}").as_bytes());
        }
        let batch = batch.freeze();
        let pieces = cut(batch.clone(), 100);
        assert!(pieces.iter().all(|p| p.len() <= 100 && p.ends_with(b"\n")), "{pieces:?}");
        let joined: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
        assert_eq!(joined, batch.to_vec());
        let read: Vec<Bytes> = pieces.iter().flat_map(lines).collect();
        assert_eq!(read.len(), 100);
        assert_eq!(read[42], Bytes::from_static(b"{\"n\":0042}"));
    }

    #[test]
    fn a_line_longer_than_the_bound_is_a_piece_of_its_own() {
        let pieces = cut(Bytes::from_static(b"a\nbbbbbbbbbb\nc\n"), 4);
        assert_eq!(pieces, [&b"a\n"[..], b"bbbbbbbbbb\n", b"c\n"]);
        assert_eq!(lines(&Bytes::from_static(b"x\n\ny")).collect::<Vec<_>>(), [&b"x"[..], b"y"]);
    }
}
