//! The position log: where ingest publishes the normalised positions, in batches per partition,
//! and where the evaluator owning a partition follows them.
//! Services use the [`PositionLog`] interface only; a bus opened for a site
//! ([`crate::open`]) brings the implementation that goes with it.
//!
//! Over NATS ([`JetStreamPositions`]) one JetStream stream, `<PREFIX>_POSITIONS` on
//! `<prefix>.batches.all`, keeps every partition's positions: each of its messages holds what
//! one ingest replica took together, one JSON document per line, each partition's lines
//! together and named by the header `Zonecast-Sections` ([`rounds`]). Storing one message
//! for many partitions, rather than one per partition, is what lets NATS keep up with the
//! evaluators. The stream keeps its messages for a window (age and size; by default 60 s and
//! 1 GiB). Each evaluator process reads the stream once and hands every partition it follows
//! that partition's lines, as its batches ([`PositionLog::follow`]); the place of a batch is
//! its message's sequence. Batches that left the stream before the evaluator took them are
//! skipped, and each [`Batch`] says how many messages were skipped just before it. An evaluator
//! that restarts, or takes a partition over, resumes after the mark its predecessor's
//! collisions were written with.
//!
//! In one process ([`InProcessPositions`]) a batch per partition goes from ingest to the
//! evaluators on `<prefix>.batches.<P>` through the bus's queues, decoded (a
//! `Vec<PositionFix>`, its lines written only for a reader of bytes), and is not kept: an
//! evaluator there cannot restart without its ingest.
//!
//! Either way, core subscribers of `<prefix>.batches.*` see every batch too
//! ([`PositionLog::tap`]: the API's position streams, the forwarder's position topics, the
//! evaluators following mobile-zone sources).

mod demux;
mod in_process;
mod jetstream;
mod rounds;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;

pub use in_process::InProcessPositions;
pub use jetstream::{JetStreamPositions, stream_name};

use crate::journal::Ack;
use crate::{BusError, Decoded, Subscription};

/// What the position stream keeps: a message leaves once it is older than `max_age` or once the
/// stream holds more than `max_bytes` (oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositionSettings {
    /// `ZONECAST_POSITION_RETENTION_SECS`, default 60 s.
    pub max_age: Duration,
    /// `ZONECAST_POSITION_RETENTION_BYTES`, default 1 GiB over all partitions.
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
    /// the position stream.
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

/// The largest message positions are stored in; more are cut between lines (NATS servers
/// refuse messages above 1 MiB by default).
pub const MAX_BATCH_BYTES: usize = 512 * 1024;

/// The position batches of a site's partitions: published by ingest, followed by the
/// evaluators, tapped by whoever wants to watch them.
#[async_trait::async_trait]
pub trait PositionLog: Send + Sync + 'static {
    /// How many partitions there are.
    fn partitions(&self) -> u32;

    /// Whether batches are kept for a window (JetStream): an evaluator that restarts resumes
    /// after the mark its collisions were written with. When not (in one process), the
    /// collisions catch up with the events journaled instead.
    fn keeps(&self) -> bool;

    /// Makes what the partitions need before the first positions come (JetStream: the
    /// stream, or its bounds brought in line with the settings), so that the first positions
    /// wait for their store only.
    async fn prepare(&self) -> Result<(), BusError> {
        Ok(())
    }

    /// Publishes one payload's positions, a batch per partition, held decoded (its
    /// [`crate::Encode::encode`] gives the lines): the batches of calls made one after the other
    /// are stored, and reach their followers, in that order. Returns once they are on their
    /// way; [`Stored::confirmed`] waits until they are stored.
    async fn publish(&self, batches: Vec<(u32, Decoded)>) -> Result<Stored, BusError>;

    /// Follows `partition`, with at most `in_hand` batches delivered and not acknowledged,
    /// after `had` (the last batch the follower already has, from an earlier opening or
    /// reflected in the state it restored) where the log keeps that far.
    ///
    /// JetStream: it starts past `had` (at the oldest message the stream holds when there is
    /// none, or when `had` is beyond the stream's last message: a stream made anew). The batches
    /// come in stream order, each once; a partition with no positions in a while gets an empty
    /// batch now and then, so that its mark keeps up. Messages that left the stream before
    /// they were read are counted in the next batch's `skipped`. Ownership is not checked here:
    /// the store refuses the collisions of an evaluator that lost the partition.
    /// In one process: the batches published from now on, their acknowledgements doing nothing.
    async fn follow(&self, partition: u32, in_hand: usize, had: Option<u64>) -> Result<Batches, BusError>;

    /// Every batch holding positions of `partitions` (`None`: of every partition) published
    /// from now on, as a message of `<prefix>.batches.*` that acknowledges nothing, decoded
    /// where it was published in this process ([`crate::Message::decoded`]); with a `group`,
    /// each batch goes to one member of the group. Over NATS a batch holds positions of many
    /// partitions: the tap gets every batch, and picks the devices it wants by their lines.
    async fn tap(&self, partitions: Option<&[u32]>, group: Option<&str>) -> Result<Subscription, BusError>;

    /// Messages kept and not yet acknowledged by the evaluators reading them (the most any
    /// one of them has); `None` where nothing is kept.
    async fn backlog(&self) -> Result<Option<u64>, BusError>;

    /// Removes the stored positions (a site taken down; a test's own prefix).
    async fn remove_all(&self) -> Result<(), BusError> {
        Ok(())
    }
}

/// One batch of a partition, as its evaluator gets it.
pub struct Batch {
    /// The partition.
    pub partition: u32,
    /// Its place in the stream (its message's sequence), where the log keeps batches.
    pub sequence: Option<u64>,
    /// The position events, one per line (empty for a batch that comes decoded and was not
    /// encoded for anyone).
    pub payload: Bytes,
    /// The batch as its publisher held it, when it was published in this process.
    pub decoded: Option<Decoded>,
    /// Messages that left the stream (older than the window, or beyond its size) before the
    /// follower had them, just before this one.
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
/// redelivery of one already delivered is left out). It ends when the log can no longer
/// deliver; open it again to go on.
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

/// [`PositionLog::tap`] on `bus`: subscribers that read decoded batches where there are any,
/// or members of `group`, of the batches of `partitions` (`None`: of every partition).
async fn tap(
    bus: &dyn crate::Bus,
    prefix: &str,
    partitions: Option<&[u32]>,
    group: Option<&str>,
) -> Result<Subscription, BusError> {
    let subjects: Vec<String> = match partitions {
        Some(partitions) => partitions.iter().map(|p| subject(prefix, Some(*p))).collect(),
        None => vec![subject(prefix, None)],
    };
    let mut taps = Vec::with_capacity(subjects.len());
    for subject in &subjects {
        taps.push(match group {
            Some(group) => bus.queue_subscribe(subject, group).await?,
            None => bus.subscribe_decoded(subject).await?,
        });
    }
    Ok(match taps.len() {
        1 => taps.remove(0),
        _ => Box::pin(futures::stream::select_all(taps)),
    })
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
