//! Position batches in JetStream: one stream for every partition, whose messages each carry
//! the positions of several partitions (see [`super::rounds`]), read once per process and
//! handed to each partition's follower (see [`super::demux`]); and the task that gathers
//! concurrent payloads into as few messages as fit.

use std::sync::{Arc, OnceLock};

use async_nats::jetstream::{self, stream};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::sync::{OnceCell, Semaphore, mpsc, oneshot};

use super::demux::{self, Command};
use super::{Batches, MAX_BATCH_BYTES, PositionLog, PositionSettings, Stored, rounds};
use crate::{Bus, BusError, Decoded, Subscription};

/// The position stream of a prefix on JetStream.
pub struct JetStreamPositions {
    streams: Arc<Streams>,
    /// The bus the stream's subjects are tapped on.
    bus: Arc<dyn Bus>,
    /// The task gathering published payloads into rounds, started on first use.
    coalescer: OnceLock<mpsc::Sender<Pending>>,
    /// The task reading the stream for the partitions followed, started on first use.
    reader: OnceLock<mpsc::UnboundedSender<Command>>,
}

/// The stream itself, shared with the gathering task.
struct Streams {
    context: jetstream::Context,
    prefix: String,
    partitions: u32,
    settings: PositionSettings,
    /// The stream is made (or its bounds brought in line with the settings).
    ready: OnceCell<()>,
}

impl JetStreamPositions {
    /// The position stream of `partitions` partitions under `prefix` on the connection of
    /// `client`, whose core subjects `bus` taps.
    pub fn new(
        client: async_nats::Client,
        bus: Arc<dyn Bus>,
        prefix: &str,
        partitions: u32,
        settings: PositionSettings,
    ) -> Self {
        let streams = Streams {
            context: jetstream::new(client),
            prefix: prefix.to_owned(),
            partitions,
            settings,
            ready: OnceCell::new(),
        };
        Self { streams: Arc::new(streams), bus, coalescer: OnceLock::new(), reader: OnceLock::new() }
    }
}

impl Streams {
    /// The subject the messages are stored and published on: `<prefix>.batches.all`.
    fn subject(&self) -> String {
        crate::Subjects::new(self.prefix.clone()).position_rounds()
    }

    async fn ready(&self) -> Result<(), BusError> {
        self.ready
            .get_or_try_init(|| async {
                let config = stream::Config {
                    name: stream_name(&self.prefix),
                    subjects: vec![self.subject()],
                    max_age: self.settings.max_age,
                    max_bytes: i64::try_from(self.settings.max_bytes).unwrap_or(i64::MAX),
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

    /// Sends the batches (partition, position events one per line) to the stream in as few
    /// messages as fit in [`MAX_BATCH_BYTES`] each, and returns what confirms that they are
    /// stored: the messages of one call are stored in order, and after those of earlier calls
    /// on the same connection.
    async fn send(&self, batches: Vec<(u32, Bytes)>) -> Result<Vec<jetstream::context::PublishAckFuture>, BusError> {
        self.ready().await?;
        let messages = rounds::messages(batches);
        let mut acks = Vec::with_capacity(messages.len());
        for message in messages {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(rounds::SECTIONS, message.sections.as_str());
            let ack = self
                .context
                .publish_with_headers(self.subject(), headers, message.body)
                .await
                .map_err(|e| BusError::Journal(format!("positions not stored: {e}")))?;
            acks.push(ack);
        }
        Ok(acks)
    }

    /// The stream, made if needed, with its name.
    async fn stream(&self) -> Result<(String, stream::Stream), BusError> {
        self.ready().await?;
        let name = stream_name(&self.prefix);
        match self.context.get_stream(&name).await {
            Ok(stream) => Ok((name, stream)),
            Err(e) => Err(BusError::Journal(format!("stream {name}: {e}"))),
        }
    }
}

#[async_trait::async_trait]
impl PositionLog for JetStreamPositions {
    fn partitions(&self) -> u32 {
        self.streams.partitions
    }

    fn keeps(&self) -> bool {
        true
    }

    async fn prepare(&self) -> Result<(), BusError> {
        self.streams.ready().await
    }

    async fn publish(&self, batches: Vec<(u32, Decoded)>) -> Result<Stored, BusError> {
        let batches: Vec<(u32, Bytes)> = batches.into_iter().map(|(p, batch)| (p, batch.encode())).collect();
        let bytes = batches.iter().map(|(_, b)| b.len()).sum();
        let (done, stored) = oneshot::channel();
        let sender = self.coalescer.get_or_init(|| spawn_coalescer(self.streams.clone()));
        sender
            .send(Pending { batches, bytes, done })
            .await
            .map_err(|_| BusError::Journal("positions not stored: the publisher stopped".into()))?;
        Ok(Stored(Some(stored)))
    }

    async fn follow(&self, partition: u32, in_hand: usize, had: Option<u64>) -> Result<Batches, BusError> {
        if partition >= self.streams.partitions {
            return Err(BusError::Journal(format!("no partition {partition} of {}", self.streams.partitions)));
        }
        let (name, mut stream) = self.streams.stream().await?;
        let state = stream.info().await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?.state.clone();
        // A stream made anew (its server's storage lost or wiped) numbers its messages from 1
        // again: a point past its last message belongs to the stream before it.
        let had = match had {
            Some(had) if had > state.last_sequence => {
                tracing::warn!(stream = %name, had, last = state.last_sequence, "the position stream is newer than the point to resume at; following it from its start");
                None
            }
            had => had,
        };
        let from = had.map_or(state.first_sequence.max(1), |had| had + 1);
        let (tx, rx) = mpsc::channel(FOLLOWER_QUEUE);
        let reader = self.reader.get_or_init(|| demux::spawn(self.streams.context.clone(), name));
        reader
            .send(Command::Follow { partition, from, fresh: had.is_none(), in_hand, tx })
            .map_err(|_| BusError::Journal("the position stream's reader stopped".into()))?;
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|batch| (batch, rx)) })))
    }

    async fn tap(&self, partitions: Option<&[u32]>, group: Option<&str>) -> Result<Subscription, BusError> {
        // Every message holds positions of any partition: a tap of some takes them all.
        let _ = partitions;
        super::tap(self.bus.as_ref(), &self.streams.prefix, None, group).await
    }

    async fn backlog(&self) -> Result<Option<u64>, BusError> {
        let (name, mut stream) = self.streams.stream().await?;
        let mut names = stream.consumer_names();
        let mut readings = Vec::new();
        while let Some(consumer) = names.next().await {
            let consumer = consumer.map_err(|e| BusError::Journal(format!("consumers of {name}: {e}")))?;
            if consumer.starts_with(demux::CONSUMER) {
                readings.push(consumer);
            }
        }
        if readings.is_empty() {
            let info = stream.info().await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?;
            return Ok(Some(info.state.messages));
        }
        let mut most = 0;
        for consumer in readings {
            match stream.consumer_info(&consumer).await {
                Ok(info) => most = most.max(info.num_pending + info.num_ack_pending as u64),
                // Removed meanwhile: its reading ended.
                Err(e) if e.to_string().contains("not found") => {}
                Err(e) => return Err(BusError::Journal(format!("consumer of {name}: {e}"))),
            }
        }
        Ok(Some(most))
    }

    async fn remove_all(&self) -> Result<(), BusError> {
        let name = stream_name(&self.streams.prefix);
        match self.streams.context.delete_stream(&name).await {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().contains("not found") => Ok(()),
            Err(e) => Err(BusError::Journal(format!("cannot remove stream {name}: {e}"))),
        }
    }
}

/// Batches handed to a partition's follower and not yet taken, at most.
const FOLLOWER_QUEUE: usize = 8;

/// The position stream under `prefix`: `<PREFIX>_POSITIONS`.
pub fn stream_name(prefix: &str) -> String {
    format!("{prefix}_POSITIONS")
}

/// One payload's positions waiting to be stored, per partition.
struct Pending {
    batches: Vec<(u32, Bytes)>,
    bytes: usize,
    /// Told once they are stored, or why not.
    done: oneshot::Sender<Result<(), String>>,
}

/// Payloads that may wait for the gathering task before a publisher waits too.
const WAITING: usize = 1024;

/// Rounds of batches sent and not yet confirmed stored: while they are, the payloads arriving
/// gather into the next round.
const ROUNDS_IN_FLIGHT: usize = 4;

/// Bytes of positions a round gathers at most.
const ROUND_BYTES: usize = 4 * MAX_BATCH_BYTES;

/// Starts the task that stores the payloads sent to it: the payloads waiting when a round
/// starts become one batch per partition, in the order they came, stored together in as few
/// messages as fit, and each is told when its round is stored. A round starts once fewer than
/// [`ROUNDS_IN_FLIGHT`] await confirmation, so
/// the batches grow with the load, and a lone payload waits for nothing but its store.
fn spawn_coalescer(streams: Arc<Streams>) -> mpsc::Sender<Pending> {
    let (tx, mut rx) = mpsc::channel::<Pending>(WAITING);
    tokio::spawn(async move {
        let in_flight = Arc::new(Semaphore::new(ROUNDS_IN_FLIGHT));
        while let Some(first) = rx.recv().await {
            let Ok(permit) = in_flight.clone().acquire_owned().await else { break };
            let mut bytes = first.bytes;
            let mut round = vec![first];
            while bytes < ROUND_BYTES
                && let Ok(next) = rx.try_recv()
            {
                bytes += next.bytes;
                round.push(next);
            }
            let mut merged: Vec<Option<BytesMut>> = Vec::new();
            let mut waiting = Vec::with_capacity(round.len());
            for pending in round {
                for (partition, batch) in pending.batches {
                    let index = partition as usize;
                    if merged.len() <= index {
                        merged.resize_with(index + 1, || None);
                    }
                    match &mut merged[index] {
                        Some(into) => into.extend_from_slice(&batch),
                        slot => *slot = Some(BytesMut::from(batch)),
                    }
                }
                waiting.push(pending.done);
            }
            let batches = merged.into_iter().enumerate().filter_map(|(p, b)| Some((p as u32, b?.freeze()))).collect();
            let sent = streams.send(batches).await;
            tokio::spawn(async move {
                let result = match sent {
                    Ok(acks) => confirmed(acks).await,
                    Err(e) => Err(e),
                };
                drop(permit);
                let result = result.map_err(|e| e.to_string());
                for done in waiting {
                    let _ = done.send(result.clone());
                }
            });
        }
    });
    tx
}

/// Waits until every batch sent is stored; an error when one is not (NATS or JetStream away or
/// too slow): then some of them may be stored, and some not.
async fn confirmed(acks: Vec<jetstream::context::PublishAckFuture>) -> Result<(), BusError> {
    for ack in acks {
        ack.await.map_err(|e| BusError::Journal(format!("positions not stored: {e}")))?;
    }
    Ok(())
}
