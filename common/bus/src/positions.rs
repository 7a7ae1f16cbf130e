//! Positions stored on their way to the evaluators, so that an evaluator that restarts resumes
//! its partitions where it left off instead of losing what was accepted meanwhile.
//!
//! Over NATS every partition has a JetStream stream, `<PREFIX>_POSITIONS_<P>` on
//! `<prefix>.batches.<P>`, whose messages are batches: the normalised position events of that
//! partition that one ingest replica took together, one JSON document per line. Each stream
//! keeps its batches for a window (age and size; by default 60 s and 1 GiB over all
//! partitions), and has one durable consumer that the evaluator owning the partition follows
//! and acknowledges: `evaluator-<epoch>` for one that claimed it, `evaluator` for one given it
//! ([`PositionStreams::follow`]). Batches that left a stream before the evaluator took them
//! are skipped, and each [`Batch`] says how many were skipped just before it. Core NATS
//! subscribers of `<prefix>.batches.<P>` see every batch too (the forwarder's position topics, the
//! evaluators following mobile-zone sources).
//!
//! In one process the same batches go from ingest to the evaluators through the bus directly,
//! decoded (a `Vec<PositionFix>`, its lines written only for a subscriber that reads bytes), and
//! are not kept: an evaluator there cannot restart without its ingest.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::sync::{OnceCell, mpsc};

use crate::BusError;
use crate::journal::Ack;

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
    /// `ZONECAST_NATS_REPLICAS`, default 1: on how many NATS servers of a cluster JetStream keeps
    /// each partition's stream.
    pub replicas: usize,
}

impl Default for PositionSettings {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(60),
            max_bytes: 1 << 30,
            per_position_subjects: false,
            max_lag: Duration::from_millis(500),
            replicas: 1,
        }
    }
}

/// The largest message a batch is sent in; longer batches are cut between lines (NATS servers
/// refuse messages above 1 MiB by default).
pub const MAX_BATCH_BYTES: usize = 512 * 1024;

/// The consumer an evaluator owning a partition follows: `evaluator` for one given its
/// partitions, `evaluator-<epoch>` for one that claimed it at that epoch.
const CONSUMER: &str = "evaluator";

fn consumer_name(epoch: Option<u64>) -> String {
    epoch.map_or_else(|| CONSUMER.to_owned(), |epoch| format!("{CONSUMER}-{epoch}"))
}

/// The epoch of an evaluator consumer's name (0 for `evaluator`); `None` for another consumer.
fn consumer_epoch(name: &str) -> Option<u64> {
    match name.strip_prefix(CONSUMER)? {
        "" => Some(0),
        rest => rest.strip_prefix('-')?.parse().ok(),
    }
}

/// How long a batch handed to the evaluator may stay unacknowledged before JetStream hands it
/// out again. The evaluator acknowledges once the batch's events are stored and the collisions
/// they changed are written, which while the store is away may take a while.
const ACK_WAIT: Duration = Duration::from_secs(60);

/// How often an idle pull is confirmed alive by the server.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// One stored batch of a partition, as the evaluator gets it.
pub struct Batch {
    /// The partition.
    pub partition: u32,
    /// Its place in the partition's stream.
    pub sequence: u64,
    /// The position events, one per line.
    pub payload: Bytes,
    /// Batches of the partition that left the stream (older than the window, or beyond its
    /// size) before the consumer had them, just before this one.
    pub skipped: u64,
    /// Acknowledges this batch and every earlier one of the partition.
    pub ack: Ack,
}

/// The batches of one partition, oldest unacknowledged first; every batch is delivered once per
/// opening (a redelivery of one already delivered is left out). It ends when the connection is
/// gone for good; open it again to go on.
pub type Batches = std::pin::Pin<Box<dyn futures::Stream<Item = Batch> + Send>>;

/// The position streams of a prefix on JetStream.
pub struct PositionStreams {
    context: jetstream::Context,
    prefix: String,
    partitions: u32,
    settings: PositionSettings,
    /// Per partition: its stream is made (or its bounds brought in line with the settings).
    ready: Vec<OnceCell<()>>,
}

impl PositionStreams {
    /// The position streams of `partitions` partitions under `prefix` on the connection of
    /// `client`.
    pub fn new(client: async_nats::Client, prefix: &str, partitions: u32, settings: PositionSettings) -> Self {
        Self {
            context: jetstream::new(client),
            prefix: prefix.to_owned(),
            partitions,
            settings,
            ready: (0..partitions).map(|_| OnceCell::new()).collect(),
        }
    }

    /// How many partitions there are.
    pub fn partitions(&self) -> u32 {
        self.partitions
    }

    /// The stream of `partition`.
    pub fn stream_name(&self, partition: u32) -> String {
        format!("{}_POSITIONS_{partition}", self.prefix)
    }

    /// The subject batches of `partition` are stored and published on:
    /// `<prefix>.batches.<partition>`.
    pub fn subject(&self, partition: u32) -> String {
        crate::Subjects::new(self.prefix.clone()).position_batch(partition)
    }

    async fn ready(&self, partition: u32) -> Result<(), BusError> {
        let cell = self
            .ready
            .get(partition as usize)
            .ok_or_else(|| BusError::Journal(format!("no partition {partition} of {}", self.partitions)))?;
        cell.get_or_try_init(|| async {
            let name = self.stream_name(partition);
            let share = (self.settings.max_bytes / u64::from(self.partitions.max(1))).max(1 << 20);
            let config = stream::Config {
                name: name.clone(),
                subjects: vec![self.subject(partition)],
                max_age: self.settings.max_age,
                max_bytes: i64::try_from(share).unwrap_or(i64::MAX),
                storage: stream::StorageType::File,
                discard: stream::DiscardPolicy::Old,
                retention: stream::RetentionPolicy::Limits,
                num_replicas: self.settings.replicas,
                ..stream::Config::default()
            };
            crate::journal::replicas::create_or_update(&self.context, config).await
        })
        .await
        .copied()
    }

    /// Makes every partition's stream now (or brings its bounds in line with the settings),
    /// instead of on its first batch: the first positions then wait for their store only,
    /// not for up to one stream set-up per partition in turn.
    pub async fn prepare(&self) -> Result<(), BusError> {
        futures::future::try_join_all((0..self.partitions).map(|partition| self.ready(partition))).await.map(|_| ())
    }

    /// Sends the batches (partition, position events one per line) to their streams, cutting
    /// any longer than [`MAX_BATCH_BYTES`] between lines, and returns what confirms that they
    /// are stored: the batches of one call are stored in the order given, and after those of
    /// earlier calls on the same connection.
    pub async fn send(&self, batches: Vec<(u32, Bytes)>) -> Result<Stored, BusError> {
        let mut acks = Vec::with_capacity(batches.len());
        for (partition, payload) in batches {
            self.ready(partition).await?;
            for chunk in cut(payload, MAX_BATCH_BYTES) {
                let ack = self
                    .context
                    .publish(self.subject(partition), chunk)
                    .await
                    .map_err(|e| BusError::Journal(format!("positions not stored: {e}")))?;
                acks.push(ack);
            }
        }
        Ok(Stored(acks))
    }

    /// Opens a durable consumer of `partition` for an owner at `epoch` (`None`: an evaluator
    /// given its partitions, which needs no fencing), with at most `in_hand` batches delivered
    /// and not acknowledged. It starts at the first batch not acknowledged by an earlier owner
    /// (at the oldest the stream holds when there was none), or past `had` when that is further:
    /// the last batch the follower already has (taken from an earlier opening, or reflected in
    /// the state it restored), ignored when the stream holds no batch that far. Batches
    /// delivered to an owner that stopped before acknowledging them come again at once, in
    /// order.
    ///
    /// Each epoch has a consumer of its own, `evaluator-<epoch>`, and opening one removes those
    /// of older epochs: an owner that lost the partition and still acknowledges, acknowledges
    /// on a consumer that is gone. A consumer of a newer epoch refuses the opening.
    pub async fn follow(
        &self,
        partition: u32,
        in_hand: usize,
        had: Option<u64>,
        epoch: Option<u64>,
    ) -> Result<Batches, BusError> {
        self.ready(partition).await?;
        let name = self.stream_name(partition);
        let mut stream =
            self.context.get_stream(&name).await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?;
        // A stream made anew (its server's storage lost or wiped) numbers its batches from 1
        // again: a point past its last batch belongs to the stream before it.
        let last =
            stream.info().await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?.state.last_sequence;
        let had = match had {
            Some(had) if had > last => {
                tracing::warn!(stream = %name, had, last, "the partition's stream is newer than the point to resume at; following it from its start");
                None
            }
            had => had,
        };
        // JetStream hands the batches an earlier opening had and did not acknowledge out again
        // only once their ack wait is over: the consumer is made anew from the acknowledgement
        // floor instead, so that they come first.
        let mine = consumer_name(epoch);
        let mut floor = None;
        for (other, other_epoch) in self.consumers(&stream).await? {
            if other_epoch > epoch.unwrap_or(0) {
                return Err(BusError::Journal(format!(
                    "partition {partition} is followed at a newer epoch ({other}); this evaluator no longer owns it"
                )));
            }
            let mut existing = stream
                .get_consumer::<consumer::pull::Config>(&other)
                .await
                .map_err(|e| BusError::Journal(format!("consumer {other} of {name}: {e}")))?;
            let info = existing.info().await.map_err(|e| BusError::Journal(format!("consumer of {name}: {e}")))?;
            floor = floor.max(Some(info.ack_floor.stream_sequence));
            stream
                .delete_consumer(&other)
                .await
                .map_err(|e| BusError::Journal(format!("cannot renew the consumer of {name}: {e}")))?;
        }
        let from = floor.max(had);
        let config = consumer::pull::Config {
            durable_name: Some(mine),
            deliver_policy: match from {
                Some(last) => consumer::DeliverPolicy::ByStartSequence { start_sequence: last + 1 },
                None => consumer::DeliverPolicy::All,
            },
            ack_policy: consumer::AckPolicy::All,
            ack_wait: ACK_WAIT,
            max_ack_pending: i64::try_from(in_hand.max(1)).unwrap_or(i64::MAX),
            ..consumer::pull::Config::default()
        };
        let consumer: consumer::PullConsumer = stream
            .create_consumer(config)
            .await
            .map_err(|e| BusError::Journal(format!("cannot make the consumer of {name}: {e}")))?;
        // A consumer made for the first time starts at the stream's oldest batch: what left
        // before it existed was never its to skip.
        let mut last = from;
        let messages = consumer
            .stream()
            .max_messages_per_batch(in_hand.clamp(1, 256))
            .heartbeat(HEARTBEAT)
            .messages()
            .await
            .map_err(|e| BusError::Journal(format!("cannot pull from consumer of {name}: {e}")))?;
        let (acks, mut to_send) = mpsc::unbounded_channel::<jetstream::message::Acker>();
        tokio::spawn(async move {
            while let Some(acker) = to_send.recv().await {
                if let Err(e) = acker.ack().await {
                    tracing::debug!(error = %e, "acknowledgement not sent; the batches will be delivered again");
                }
            }
        });
        Ok(Box::pin(messages.filter_map(move |message| {
            let batch = match message {
                Ok(message) => match message.info().map(|info| info.stream_sequence) {
                    Ok(sequence) if last.is_some_and(|last| sequence <= last) => None,
                    Ok(sequence) => {
                        let skipped = last.map_or(0, |last| sequence - last - 1);
                        last = Some(sequence);
                        let (message, acker) = message.split();
                        let acks = acks.clone();
                        Some(Batch {
                            partition,
                            sequence,
                            payload: message.payload,
                            skipped,
                            ack: Ack::new(move || {
                                let _ = acks.send(acker);
                            }),
                        })
                    }
                    Err(e) => {
                        tracing::warn!(stream = %name, error = %e, "JetStream message without delivery information skipped");
                        None
                    }
                },
                Err(e) => {
                    tracing::debug!(stream = %name, error = %e, "JetStream pull interrupted; it goes on");
                    None
                }
            };
            std::future::ready(batch)
        })))
    }

    /// The evaluator consumers of a partition's stream with their epochs (0: given, not
    /// claimed).
    async fn consumers(&self, stream: &stream::Stream) -> Result<Vec<(String, u64)>, BusError> {
        let mut names = stream.consumer_names();
        let mut found = Vec::new();
        while let Some(name) = names.next().await {
            let name =
                name.map_err(|e| BusError::Journal(format!("consumers of {}: {e}", stream.cached_info().config.name)))?;
            if let Some(epoch) = consumer_epoch(&name) {
                found.push((name, epoch));
            }
        }
        Ok(found)
    }

    /// Batches stored in `partition`'s stream and not yet acknowledged by its evaluator (the
    /// consumer of the newest epoch).
    pub async fn backlog(&self, partition: u32) -> Result<u64, BusError> {
        self.ready(partition).await?;
        let name = self.stream_name(partition);
        let mut stream =
            self.context.get_stream(&name).await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?;
        let newest = self.consumers(&stream).await?.into_iter().max_by_key(|(_, epoch)| *epoch);
        match newest {
            Some((consumer, _)) => match stream.consumer_info(&consumer).await {
                Ok(info) => Ok(info.num_pending + info.num_ack_pending as u64),
                Err(e) => Err(BusError::Journal(format!("consumer of {name}: {e}"))),
            },
            None => {
                Ok(stream.info().await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?.state.messages)
            }
        }
    }

    /// Removes every partition's stream (a site taken down; a test's own prefix).
    pub async fn remove_all(&self) -> Result<(), BusError> {
        for partition in 0..self.partitions {
            let name = self.stream_name(partition);
            match self.context.delete_stream(&name).await {
                Ok(_) => {}
                Err(e) if e.to_string().contains("not found") => {}
                Err(e) => return Err(BusError::Journal(format!("cannot remove stream {name}: {e}"))),
            }
        }
        Ok(())
    }
}

/// What confirms that the batches of one [`PositionStreams::send`] are stored.
#[must_use = "the batches are stored only once confirmed"]
pub struct Stored(Vec<jetstream::context::PublishAckFuture>);

impl Stored {
    /// Waits until every batch is stored; an error when one is not (NATS or JetStream away or
    /// too slow): then some of them may be stored, and some not.
    pub async fn confirmed(self) -> Result<(), BusError> {
        for ack in self.0 {
            ack.await.map_err(|e| BusError::Journal(format!("positions not stored: {e}")))?;
        }
        Ok(())
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
