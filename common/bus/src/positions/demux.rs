//! One process's reading of the position stream: a single consumer that takes every stored
//! message once and hands each followed partition its lines, in stream order, as that
//! partition's batches.
//!
//! Each partition followed keeps the last message it was handed, or passed over because the
//! message held none of its lines. The consumer starts at the earliest message a follower still
//! needs: a partition followed after a point already passed makes it start again there, and
//! the others pass over what they had. A partition with no lines in a while is handed an empty
//! batch at the newest message now and then, so that its evaluator's mark keeps up with the
//! stream and a takeover reads little again.
//!
//! A partition holds at most its `in_hand` batches unacknowledged; beyond that the consumer
//! waits, and the positions wait in the stream. The consumer acknowledges a message (and all
//! before it) once every partition has acknowledged every batch it took from it, so that its
//! backlog says what the evaluator has not yet finished.
//!
//! Messages missing from a delivery were lost on their way (a JetStream leader change) or left
//! the stream (its retention, or taken out) before anyone took them. The first time, the
//! reading starts again after the last one taken, so that those still stored come in order;
//! missing again at the same point, they are gone: each partition that needed them counts
//! them as skipped in its next batch.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use async_nats::jetstream::{self, consumer};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Batch, rounds};
use crate::journal::Ack;

/// The prefix of the consumers' names: `evaluator-<id>`, one per reading.
pub(super) const CONSUMER: &str = "evaluator-";

/// How long a message handed out may stay unacknowledged before JetStream hands it out again
/// (the partitions pass over a copy). The batches are acknowledged once their events are
/// stored and the collisions they changed are written, which while the store is away may take
/// a while.
const ACK_WAIT: Duration = Duration::from_secs(60);

/// How long a pull waits on an idle stream, and how often the server confirms it alive.
const PULL_EXPIRES: Duration = Duration::from_secs(4);
const HEARTBEAT: Duration = Duration::from_secs(1);

/// The most a pull asks for, in messages and in bytes. The bytes bound the server's queue for
/// this connection: a pull of 256 messages of up to half a megabyte each (128 MiB) outgrows
/// what a NATS server queues for one client (64 MiB by default) whenever the process falls
/// behind reading its socket, and the server then cuts the connection off as a slow consumer,
/// to be sent it all again after reconnecting. The client asks again once half a pull is in.
const PULL_MESSAGES: usize = 256;
const PULL_BYTES: usize = 4 * 1024 * 1024;
// A message larger than a pull's bytes would never be sent.
const _: () = assert!(PULL_BYTES >= 2 * super::MAX_BATCH_BYTES);

/// How long after its last pull a reading's consumer is removed by the server: that of a
/// process gone, or of one that waits for its partitions to acknowledge (it reads again anew).
const INACTIVE: Duration = Duration::from_secs(5);

/// How often a partition with no lines is handed an empty batch, at most.
const QUIET: Duration = Duration::from_secs(1);

/// The first and the longest wait before reading again after a failure.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_LAST: Duration = Duration::from_secs(2);

/// How long a reading must have lasted for its interruption to count as a first failure.
const SETTLED: Duration = Duration::from_secs(10);

/// What the reading task is told.
pub(super) enum Command {
    /// Hand `partition`'s batches from message `from` on to `tx`. `fresh`: the follower had
    /// nothing before (what left the stream earlier was never its to skip).
    Follow { partition: u32, from: u64, fresh: bool, in_hand: usize, tx: mpsc::Sender<Batch> },
    /// `partition` acknowledged its batches up to message `sequence`.
    Acked { partition: u32, sequence: u64 },
}

/// One partition followed.
struct Follower {
    tx: mpsc::Sender<Batch>,
    /// The last message handed to it or passed over for it.
    last: u64,
    fresh: bool,
    in_hand: usize,
    /// The messages of its batches handed out and not yet acknowledged, oldest first.
    outstanding: VecDeque<u64>,
    /// When it was last handed a batch.
    handed: Instant,
}

/// Starts the task reading stream `stream` for the partitions followed through the returned
/// sender.
pub(super) fn spawn(context: jetstream::Context, stream: String) -> mpsc::UnboundedSender<Command> {
    let (commands, rx) = mpsc::unbounded_channel();
    let reader =
        Reader { context, stream, commands: rx, acks: commands.clone(), followers: HashMap::new(), retried: None };
    tokio::spawn(reader.run());
    commands
}

struct Reader {
    context: jetstream::Context,
    stream: String,
    commands: mpsc::UnboundedReceiver<Command>,
    /// Where the acknowledgements of handed-out batches are sent back to.
    acks: mpsc::UnboundedSender<Command>,
    followers: HashMap<u32, Follower>,
    /// The message a reading last started again at because it went missing.
    retried: Option<u64>,
}

/// How a reading ended.
enum End {
    /// Start again at the earliest message a follower needs.
    Again,
    /// The delivery was interrupted (NATS away, the consumer removed): start again after a
    /// pause.
    Interrupted,
    /// Nobody sends commands any more.
    Done,
}

/// One reading: its consumer and what it has delivered.
struct Reading {
    name: String,
    /// The next message expected.
    next: u64,
    /// The acknowledgers of the messages delivered, oldest first, and the last acknowledged.
    delivered: VecDeque<(u64, jetstream::message::Acker)>,
    floor: u64,
    acker: mpsc::UnboundedSender<jetstream::message::Acker>,
}

impl Reader {
    async fn run(mut self) {
        let mut delay = RETRY_FIRST;
        loop {
            while self.followers.is_empty() {
                match self.commands.recv().await {
                    Some(command) => _ = self.command(command, None),
                    None => return,
                }
            }
            let start = self.followers.values().map(|f| f.last + 1).min().unwrap_or(1);
            let began = Instant::now();
            match self.read(start).await {
                Ok(End::Done) => return,
                Ok(End::Again) => delay = RETRY_FIRST,
                Ok(End::Interrupted) => {
                    if began.elapsed() > SETTLED {
                        delay = RETRY_FIRST;
                    }
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(RETRY_LAST);
                }
                Err(e) => {
                    tracing::warn!(stream = %self.stream, error = %e, "cannot read the position stream; trying again");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(RETRY_LAST);
                }
            }
        }
    }

    /// Takes a command; true when it needs a reading that starts earlier than `next`.
    fn command(&mut self, command: Command, next: Option<u64>) -> bool {
        match command {
            Command::Follow { partition, from, fresh, in_hand, tx } => {
                let last = from.saturating_sub(1);
                let follower = Follower {
                    tx,
                    last,
                    fresh,
                    in_hand: in_hand.max(1),
                    outstanding: VecDeque::new(),
                    handed: Instant::now(),
                };
                self.followers.insert(partition, follower);
                next.is_some_and(|next| from < next)
            }
            Command::Acked { partition, sequence } => {
                if let Some(f) = self.followers.get_mut(&partition) {
                    while f.outstanding.front().is_some_and(|s| *s <= sequence) {
                        f.outstanding.pop_front();
                    }
                }
                false
            }
        }
    }

    /// Reads from message `start` on, until a follower needs an earlier one or the messages
    /// go missing.
    async fn read(&mut self, start: u64) -> Result<End, String> {
        let name = format!("{CONSUMER}{}", uuid::Uuid::new_v4().simple());
        let stream = self.context.get_stream(&self.stream).await.map_err(|e| e.to_string())?;
        let config = consumer::pull::Config {
            name: Some(name.clone()),
            deliver_policy: consumer::DeliverPolicy::ByStartSequence { start_sequence: start },
            ack_policy: consumer::AckPolicy::All,
            ack_wait: ACK_WAIT,
            max_ack_pending: -1,
            inactive_threshold: INACTIVE,
            ..consumer::pull::Config::default()
        };
        let consumer: consumer::PullConsumer = stream.create_consumer(config).await.map_err(|e| e.to_string())?;
        let mut messages = consumer
            .stream()
            .max_messages_per_batch(PULL_MESSAGES)
            .max_bytes_per_batch(PULL_BYTES)
            .expires(PULL_EXPIRES)
            .heartbeat(HEARTBEAT)
            .messages()
            .await
            .map_err(|e| e.to_string())?;
        let (acker, mut to_send) = mpsc::unbounded_channel::<jetstream::message::Acker>();
        tokio::spawn(async move {
            while let Some(acker) = to_send.recv().await {
                if let Err(e) = acker.ack().await {
                    tracing::debug!(error = %e, "acknowledgement not sent; the messages will be delivered again");
                }
            }
        });
        let mut reading = Reading { name, next: start, delivered: VecDeque::new(), floor: start - 1, acker };
        let end = loop {
            let paused = self.followers.values().any(|f| f.outstanding.len() >= f.in_hand);
            tokio::select! {
                command = self.commands.recv() => match command {
                    Some(command) => {
                        // Commands already waiting are taken too: partitions followed together
                        // (a start, a takeover) make one new reading, not one each.
                        let mut again = self.command(command, Some(reading.next));
                        while let Ok(more) = self.commands.try_recv() {
                            again |= self.command(more, Some(reading.next));
                        }
                        if again {
                            break End::Again;
                        }
                        self.settle(&mut reading);
                    }
                    None => break End::Done,
                },
                message = messages.next(), if !paused => match message {
                    Some(Ok(message)) => {
                        if !self.take(&mut reading, message).await {
                            break End::Again;
                        }
                        self.settle(&mut reading);
                    }
                    Some(Err(e)) => {
                        tracing::debug!(stream = %self.stream, error = %e, "position stream pull interrupted; reading again");
                        break End::Interrupted;
                    }
                    None => break End::Interrupted,
                },
            }
        };
        let context = self.context.clone();
        let (stream_name, consumer_name) = (self.stream.clone(), reading.name);
        tokio::spawn(async move {
            if let Ok(stream) = context.get_stream(&stream_name).await {
                let _ = stream.delete_consumer(&consumer_name).await;
            }
        });
        Ok(end)
    }

    /// Hands a message's lines to the partitions following; false to end the reading: messages
    /// went missing before it (read again after the last one taken), or nobody follows.
    async fn take(&mut self, reading: &mut Reading, message: jetstream::Message) -> bool {
        let Ok(sequence) = message.info().map(|info| info.stream_sequence) else {
            tracing::warn!(stream = %self.stream, "JetStream message without delivery information passed over");
            return true;
        };
        if sequence < reading.next {
            return true; // delivered again after the ack wait: already handed out
        }
        if sequence > reading.next && self.retried != Some(reading.next) {
            tracing::warn!(stream = %self.stream, missing = sequence - reading.next, "position messages missing from the delivery; reading again after the last one taken");
            self.retried = Some(reading.next);
            return false;
        }
        let gap = sequence > reading.next;
        reading.next = sequence + 1;
        let (message, acker) = message.split();
        reading.delivered.push_back((sequence, acker));
        let header = message.headers.as_ref().and_then(|h| h.get(rounds::SECTIONS)).map(|v| v.as_str().to_owned());
        let sections = header.as_deref().and_then(|h| rounds::sections(h, message.payload.len()));
        if sections.is_none() {
            tracing::warn!(stream = %self.stream, sequence, "position message without a readable index of its partitions passed over");
        }
        let sections = sections.unwrap_or_default();
        let acks = self.acks.clone();
        self.followers.retain(|_, f| !f.tx.is_closed());
        if self.followers.is_empty() {
            return false; // nobody follows any more: wait for the next follower
        }
        for (&partition, f) in &mut self.followers {
            if sequence <= f.last {
                continue;
            }
            let skipped = match gap && !f.fresh {
                true => sequence - f.last - 1,
                false => 0,
            };
            f.fresh = false;
            f.last = sequence;
            let lines = rounds::of_partition(&message.payload, &sections, partition);
            if lines.is_none() && skipped == 0 && f.handed.elapsed() < QUIET {
                continue;
            }
            let acks = acks.clone();
            let batch = Batch {
                partition,
                sequence: Some(sequence),
                payload: lines.unwrap_or_default(),
                decoded: None,
                skipped,
                ack: Ack::new(move || _ = acks.send(Command::Acked { partition, sequence })),
            };
            f.outstanding.push_back(sequence);
            f.handed = Instant::now();
            if f.tx.send(batch).await.is_err() {
                f.outstanding.clear();
            }
        }
        true
    }

    /// Acknowledges the messages every partition is done with (a partition no longer followed
    /// never will be, and no longer counts).
    fn settle(&mut self, reading: &mut Reading) {
        self.followers.retain(|_, f| !f.tx.is_closed());
        let done = self
            .followers
            .values()
            .filter_map(|f| f.outstanding.front().map(|s| s - 1))
            .min()
            .unwrap_or(reading.next - 1);
        if done <= reading.floor {
            return;
        }
        let mut newest = None;
        while reading.delivered.front().is_some_and(|(s, _)| *s <= done) {
            newest = reading.delivered.pop_front();
        }
        if let Some((sequence, acker)) = newest {
            reading.floor = sequence;
            let _ = reading.acker.send(acker);
        }
    }
}
