//! Position batches in JetStream: a stream per partition, a durable consumer per owner's
//! epoch, and the task that gathers concurrent payloads into one batch per partition.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::sync::{OnceCell, Semaphore, mpsc, oneshot};

use super::{Batch, Batches, MAX_BATCH_BYTES, PositionLog, PositionSettings, Stored};
use crate::journal::Ack;
use crate::{Bus, BusError, Decoded, Subscription};

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

/// The position streams of a prefix on JetStream.
pub struct JetStreamPositions {
    streams: Arc<Streams>,
    /// The bus the streams' subjects are tapped on.
    bus: Arc<dyn Bus>,
    /// The task gathering published payloads into rounds, started on first use.
    coalescer: OnceLock<mpsc::Sender<Pending>>,
}

/// The streams themselves, shared with the gathering task.
struct Streams {
    context: jetstream::Context,
    prefix: String,
    partitions: u32,
    settings: PositionSettings,
    /// Per partition: its stream is made (or its bounds brought in line with the settings).
    ready: Vec<OnceCell<()>>,
}

impl JetStreamPositions {
    /// The position streams of `partitions` partitions under `prefix` on the connection of
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
            ready: (0..partitions).map(|_| OnceCell::new()).collect(),
        };
        Self { streams: Arc::new(streams), bus, coalescer: OnceLock::new() }
    }
}

impl Streams {
    /// The stream of `partition`.
    fn stream_name(&self, partition: u32) -> String {
        stream_name(&self.prefix, partition)
    }

    /// The subject batches of `partition` are stored and published on:
    /// `<prefix>.batches.<partition>`.
    fn subject(&self, partition: u32) -> String {
        super::subject(&self.prefix, Some(partition))
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

    /// Sends the batches (partition, position events one per line) to their streams, cutting
    /// any longer than [`MAX_BATCH_BYTES`] between lines, and returns what confirms that they
    /// are stored: the batches of one call are stored in the order given, and after those of
    /// earlier calls on the same connection.
    async fn send(&self, batches: Vec<(u32, Bytes)>) -> Result<Vec<jetstream::context::PublishAckFuture>, BusError> {
        let mut acks = Vec::with_capacity(batches.len());
        for (partition, payload) in batches {
            self.ready(partition).await?;
            for chunk in super::cut(payload, MAX_BATCH_BYTES) {
                let ack = self
                    .context
                    .publish(self.subject(partition), chunk)
                    .await
                    .map_err(|e| BusError::Journal(format!("positions not stored: {e}")))?;
                acks.push(ack);
            }
        }
        Ok(acks)
    }

    /// The stream of `partition`, made if needed, with its name.
    async fn stream(&self, partition: u32) -> Result<(String, stream::Stream), BusError> {
        self.ready(partition).await?;
        let name = self.stream_name(partition);
        match self.context.get_stream(&name).await {
            Ok(stream) => Ok((name, stream)),
            Err(e) => Err(BusError::Journal(format!("stream {name}: {e}"))),
        }
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
        futures::future::try_join_all((0..self.streams.partitions).map(|partition| self.streams.ready(partition)))
            .await
            .map(|_| ())
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

    async fn follow(
        &self,
        partition: u32,
        in_hand: usize,
        had: Option<u64>,
        epoch: Option<u64>,
    ) -> Result<Batches, BusError> {
        let (name, mut stream) = self.streams.stream(partition).await?;
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
        for (other, other_epoch) in self.streams.consumers(&stream).await? {
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
        // The scan keeps the last batch passed on and whether none has been yet. A consumer made
        // for the first time starts at the stream's oldest batch: what left before it existed
        // was never its to skip.
        //
        // Batches come in stream order. Missing ones before the first of an opening left the
        // stream unseen (its retention): they are counted as skipped. Missing ones further on
        // were lost on their way (a JetStream leader change while they were delivered) and are
        // still stored: the opening ends without passing on the batch after the gap, and is
        // made anew after the last batch taken (the feed's `had`), so that they come in order.
        // Passed on, that batch would have been acknowledged, and with it the lost ones.
        let batches = messages.scan((from, true), move |(last, opening), message| {
            let step = match message {
                Ok(message) => match message.info().map(|info| info.stream_sequence) {
                    Ok(sequence) if last.is_some_and(|last| sequence <= last) => Some(None),
                    Ok(sequence) => {
                        let skipped = last.map_or(0, |last| sequence - last - 1);
                        if skipped > 0 && !*opening {
                            tracing::warn!(stream = %name, missing = skipped, "batches delivered out of order; following the partition again after the last batch taken");
                            return std::future::ready(None);
                        }
                        *opening = false;
                        *last = Some(sequence);
                        let (message, acker) = message.split();
                        let acks = acks.clone();
                        Some(Some(Batch {
                            partition,
                            sequence: Some(sequence),
                            payload: message.payload,
                            decoded: None,
                            skipped,
                            ack: Ack::new(move || {
                                let _ = acks.send(acker);
                            }),
                        }))
                    }
                    Err(e) => {
                        tracing::warn!(stream = %name, error = %e, "JetStream message without delivery information skipped");
                        Some(None)
                    }
                },
                Err(e) => {
                    tracing::debug!(stream = %name, error = %e, "JetStream pull interrupted; it goes on");
                    Some(None)
                }
            };
            std::future::ready(step)
        });
        Ok(Box::pin(batches.filter_map(std::future::ready)))
    }

    async fn tap(&self, partition: Option<u32>, group: Option<&str>) -> Result<Subscription, BusError> {
        super::tap(self.bus.as_ref(), &self.streams.prefix, partition, group).await
    }

    async fn backlog(&self, partition: u32) -> Result<Option<u64>, BusError> {
        let (name, mut stream) = self.streams.stream(partition).await?;
        let newest = self.streams.consumers(&stream).await?.into_iter().max_by_key(|(_, epoch)| *epoch);
        match newest {
            Some((consumer, _)) => match stream.consumer_info(&consumer).await {
                Ok(info) => Ok(Some(info.num_pending + info.num_ack_pending as u64)),
                Err(e) => Err(BusError::Journal(format!("consumer of {name}: {e}"))),
            },
            None => {
                let info = stream.info().await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?;
                Ok(Some(info.state.messages))
            }
        }
    }

    async fn remove_all(&self) -> Result<(), BusError> {
        for partition in 0..self.streams.partitions {
            let name = self.streams.stream_name(partition);
            match self.streams.context.delete_stream(&name).await {
                Ok(_) => {}
                Err(e) if e.to_string().contains("not found") => {}
                Err(e) => return Err(BusError::Journal(format!("cannot remove stream {name}: {e}"))),
            }
        }
        Ok(())
    }
}

/// The stream of `partition` under `prefix`: `<PREFIX>_POSITIONS_<P>`.
pub fn stream_name(prefix: &str, partition: u32) -> String {
    format!("{prefix}_POSITIONS_{partition}")
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
/// starts become one batch per partition, in the order they came, and each is told when its
/// round is stored. A round starts once fewer than [`ROUNDS_IN_FLIGHT`] await confirmation, so
/// the batches grow with the load, and a lone payload waits for nothing but its store.
fn spawn_coalescer(streams: Arc<Streams>) -> mpsc::Sender<Pending> {
    let (tx, mut rx) = mpsc::channel::<Pending>(WAITING);
    tokio::spawn(async move {
        let rounds = Arc::new(Semaphore::new(ROUNDS_IN_FLIGHT));
        while let Some(first) = rx.recv().await {
            let Ok(permit) = rounds.clone().acquire_owned().await else { break };
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
