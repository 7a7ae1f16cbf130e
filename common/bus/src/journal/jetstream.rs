//! The journal on NATS JetStream: one stream for the events, one for the requests of
//! http-request actions, one for device alarm commands, and durable pull consumers on the
//! first two.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use tokio::sync::{OnceCell, mpsc};

use super::history::Pager;
use super::{
    Ack, ConsumerState, DUPLICATE_WINDOW, Deliveries, Delivery, HistoryPage, HistoryQuery, HistoryRecord, HistoryStart,
    Journal, JournalSettings, Kind, Read, Reads, Record,
};
use crate::{BusError, Subjects};

/// How long a delivered record may stay unacknowledged before JetStream hands it out again
/// (to any replica pulling from the consumer). A consumer that holds a record longer (its
/// broker is away) recognises the redelivery by its sequence, or tells of its progress
/// ([`Ack::progress`]).
const ACK_WAIT: Duration = Duration::from_secs(10);

/// How long a stream's first sequence is taken as known (see `state`).
const FIRST_FRESH: Duration = Duration::from_millis(500);

/// How often an idle pull is confirmed alive by the server.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// Records a consumer lost: every sequence up to `upto` is acknowledged or counted in `lost`.
#[derive(Default)]
struct Loss {
    upto: u64,
    lost: u64,
}

/// Longest wait for the next message of a history reading: the server has it stored, so a
/// longer silence is a server in trouble, and the request fails rather than hangs.
const HISTORY_WAIT: Duration = Duration::from_secs(10);

/// Records of one append sent ahead of their stores' confirmations.
const IN_FLIGHT: usize = 256;

/// Waits for JetStream to confirm that a record is stored.
async fn confirm(ack: jetstream::context::PublishAckFuture) -> Result<(), BusError> {
    ack.await.map(|_| ()).map_err(|e| BusError::Journal(format!("not stored: {e}")))
}

/// Acknowledgements and progress reports, sent by a task of their own.
type Acks = mpsc::UnboundedSender<(Arc<jetstream::message::Acker>, jetstream::AckKind)>;

/// A [`Journal`] on JetStream. The streams are made (or their bounds brought in line with the
/// settings) on first use: `<PREFIX>_EVENTS` on `<prefix>.events.>`, `<PREFIX>_ACTIONS` on
/// `<prefix>.actions.>` and `<PREFIX>_COMMANDS` on `<prefix>.devices.*.alarm`, file storage,
/// oldest records discarded first, copies recognised by their `Nats-Msg-Id` (the record id)
/// within [`DUPLICATE_WINDOW`].
pub struct JetStreamJournal {
    context: jetstream::Context,
    prefix: String,
    subjects: Subjects,
    settings: JournalSettings,
    ready: OnceCell<()>,
    /// Per kind, the stream's first sequence and when it was asked.
    first: Mutex<HashMap<Kind, (Instant, u64)>>,
    /// Per consumer, what has been counted as lost.
    losses: Mutex<HashMap<(Kind, String), Loss>>,
}

impl JetStreamJournal {
    /// A journal for subjects under `prefix` on the connection of `client`.
    pub fn new(client: async_nats::Client, prefix: &str, settings: JournalSettings) -> Self {
        Self {
            context: jetstream::new(client),
            prefix: prefix.to_owned(),
            subjects: Subjects::new(prefix),
            settings,
            ready: OnceCell::new(),
            first: Mutex::new(HashMap::new()),
            losses: Mutex::new(HashMap::new()),
        }
    }

    /// The name of the events stream.
    pub fn events_stream(&self) -> String {
        format!("{}_EVENTS", self.prefix)
    }

    /// The name of the stream of `kind`.
    pub fn stream_name(&self, kind: Kind) -> String {
        match kind {
            Kind::Events => self.events_stream(),
            Kind::Actions => format!("{}_ACTIONS", self.prefix),
        }
    }

    fn commands_stream(&self) -> String {
        format!("{}_COMMANDS", self.prefix)
    }

    fn stream_config(&self, name: String, subject: String) -> stream::Config {
        stream::Config {
            name,
            subjects: vec![subject],
            max_age: self.settings.max_age,
            max_bytes: i64::try_from(self.settings.max_bytes).unwrap_or(i64::MAX),
            duplicate_window: DUPLICATE_WINDOW,
            storage: stream::StorageType::File,
            discard: stream::DiscardPolicy::Old,
            retention: stream::RetentionPolicy::Limits,
            num_replicas: self.settings.replicas,
            ..stream::Config::default()
        }
    }

    async fn ready(&self) -> Result<(), BusError> {
        self.ready
            .get_or_try_init(|| async {
                let streams = [
                    (self.stream_name(Kind::Events), Kind::Events.pattern(&self.subjects)),
                    (self.stream_name(Kind::Actions), Kind::Actions.pattern(&self.subjects)),
                    (self.commands_stream(), self.subjects.device_alarm_command("*")),
                ];
                for (name, subject) in streams {
                    super::replicas::create_or_update(&self.context, self.stream_config(name, subject)).await?;
                }
                Ok(())
            })
            .await
            .copied()
    }

    async fn stream(&self, kind: Kind) -> Result<stream::Stream, BusError> {
        self.ready().await?;
        let name = self.stream_name(kind);
        self.context.get_stream(&name).await.map_err(|e| BusError::Journal(format!("JetStream stream {name}: {e}")))
    }

    /// The durable consumer `name` of `kind` (of the records on subjects matching `filter`,
    /// when given), made or brought to the bound `in_hand`; an existing one as it is when the
    /// server refuses the change.
    async fn consumer(
        &self,
        kind: Kind,
        name: &str,
        filter: Option<&str>,
        in_hand: usize,
    ) -> Result<consumer::PullConsumer, BusError> {
        let stream = self.stream(kind).await?;
        match stream.create_consumer(self.consumer_config(kind, name, filter, in_hand)).await {
            Ok(consumer) => Ok(consumer),
            Err(e) => {
                tracing::debug!(consumer = name, error = %e, "consumer not made or updated; taking it as it is");
                stream
                    .get_consumer(name)
                    .await
                    .map_err(|e| BusError::Journal(format!("cannot open consumer {name}: {e}")))
            }
        }
    }

    /// The first sequence of the stream of `kind`, asked of the server at most once per
    /// [`FIRST_FRESH`]: every connection's status round needs it.
    async fn first_sequence(&self, kind: Kind, stream: &mut stream::Stream) -> Result<u64, BusError> {
        if let Some((at, first)) =
            self.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&kind).copied()
            && at.elapsed() < FIRST_FRESH
        {
            return Ok(first);
        }
        let first = stream
            .info()
            .await
            .map_err(|e| BusError::Journal(format!("stream {}: {e}", self.stream_name(kind))))?
            .state
            .first_sequence;
        self.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(kind, (Instant::now(), first));
        Ok(first)
    }

    fn consumer_config(&self, kind: Kind, name: &str, filter: Option<&str>, in_hand: usize) -> consumer::pull::Config {
        consumer::pull::Config {
            durable_name: Some(name.to_owned()),
            filter_subject: filter.map_or_else(|| kind.pattern(&self.subjects), str::to_owned),
            deliver_policy: consumer::DeliverPolicy::New,
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: ACK_WAIT,
            max_ack_pending: i64::try_from(in_hand.max(1)).unwrap_or(i64::MAX),
            ..consumer::pull::Config::default()
        }
    }
}

#[async_trait::async_trait]
impl Journal for JetStreamJournal {
    async fn append(&self, records: Vec<Record>) -> Result<(), BusError> {
        self.ready().await?;
        // Confirmations are awaited while later records are sent, at most `IN_FLIGHT` behind:
        // the client holds back publishes past its own bound of unconfirmed ones.
        let mut acks = std::collections::VecDeque::with_capacity(records.len().min(IN_FLIGHT));
        for record in records {
            crate::pattern::validate_subject(&record.subject)?;
            if acks.len() >= IN_FLIGHT
                && let Some(ack) = acks.pop_front()
            {
                confirm(ack).await?;
            }
            let publish = jetstream::message::PublishMessage::build().payload(record.payload).message_id(record.id);
            let ack = self
                .context
                .send_publish(record.subject, publish)
                .await
                .map_err(|e| BusError::Journal(format!("not stored: {e}")))?;
            acks.push_back(ack);
        }
        for ack in acks {
            confirm(ack).await?;
        }
        Ok(())
    }

    async fn create_consumer(&self, kind: Kind, name: &str, in_hand: usize) -> Result<(), BusError> {
        self.consumer(kind, name, None, in_hand).await.map(|_| ())
    }

    async fn consume(&self, kind: Kind, name: &str, in_hand: usize) -> Result<Deliveries, BusError> {
        deliveries(self.consumer(kind, name, None, in_hand).await?, name, in_hand).await
    }

    async fn create_narrowed(&self, kind: Kind, name: &str, filter: &str, in_hand: usize) -> Result<(), BusError> {
        self.consumer(kind, name, Some(filter), in_hand).await.map(|_| ())
    }

    async fn consume_narrowed(
        &self,
        kind: Kind,
        name: &str,
        filter: &str,
        in_hand: usize,
    ) -> Result<Deliveries, BusError> {
        deliveries(self.consumer(kind, name, Some(filter), in_hand).await?, name, in_hand).await
    }

    /// An ephemeral ordered consumer from the sequence asked for (for `None`, the one after
    /// the stream's last): no acknowledgements, no durable state, removed by the server once
    /// the reader is gone, so no durable consumer notices it.
    async fn read(&self, kind: Kind, from: Option<u64>) -> Result<(u64, Reads), BusError> {
        let name = self.stream_name(kind);
        // A reader takes the stream as the evaluators and forwarders made it, and makes it only
        // when none exists yet: its bounds are theirs to set.
        let mut stream = match self.context.get_stream(&name).await {
            Ok(stream) => stream,
            Err(_) => self.stream(kind).await?,
        };
        let last =
            stream.info().await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?.state.last_sequence;
        let start = from.unwrap_or(last + 1).min(last + 1).max(1);
        let consumer = stream
            .create_consumer(consumer::pull::OrderedConfig {
                filter_subject: kind.pattern(&self.subjects),
                deliver_policy: consumer::DeliverPolicy::ByStartSequence { start_sequence: start },
                ..consumer::pull::OrderedConfig::default()
            })
            .await
            .map_err(|e| BusError::Journal(format!("cannot read stream {name}: {e}")))?;
        let messages =
            consumer.messages().await.map_err(|e| BusError::Journal(format!("cannot read stream {name}: {e}")))?;
        let reads = messages.filter_map(move |message| {
            let read = match message {
                Ok(message) => match message.info().map(|info| (info.stream_sequence, info.pending)) {
                    Ok((sequence, behind)) => Some(Read {
                        subject: message.subject.to_string(),
                        payload: message.payload.clone(),
                        sequence,
                        behind,
                    }),
                    Err(e) => {
                        tracing::warn!(error = %e, "JetStream message without delivery information skipped");
                        None
                    }
                },
                Err(e) => {
                    tracing::debug!(error = %e, "JetStream read interrupted; it goes on");
                    None
                }
            };
            std::future::ready(read)
        });
        Ok((start, Box::pin(reads)))
    }

    /// An ephemeral ordered consumer from the start asked for (by time, by sequence, or the
    /// first kept), filtered on the server by the query's subject when it has one; it stops at
    /// the page's end, at `until`, or at the newest event stored when it began (the pending
    /// count of each message tells), so it never waits for new events.
    async fn history(&self, query: &HistoryQuery) -> Result<HistoryPage, BusError> {
        let name = self.stream_name(Kind::Events);
        let mut stream = match self.context.get_stream(&name).await {
            Ok(stream) => stream,
            Err(_) => self.stream(Kind::Events).await?,
        };
        let state = stream.info().await.map_err(|e| BusError::Journal(format!("stream {name}: {e}")))?.state.clone();
        if state.messages == 0 || query.limit == 0 {
            return Ok(HistoryPage::default());
        }
        let deliver_policy = match query.start {
            HistoryStart::Oldest => consumer::DeliverPolicy::All,
            HistoryStart::Sequence(sequence) if sequence > state.last_sequence => return Ok(HistoryPage::default()),
            HistoryStart::Sequence(sequence) => {
                consumer::DeliverPolicy::ByStartSequence { start_sequence: sequence.max(state.first_sequence) }
            }
            HistoryStart::At(at) => {
                let nanos = at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
                let start_time = async_nats::datetime::from_nanos(nanos)
                    .map_err(|e| BusError::Journal(format!("history start time: {e}")))?;
                consumer::DeliverPolicy::ByStartTime { start_time }
            }
        };
        let mut pager = Pager::new(query, state.last_sequence, false)?;
        let consumer = stream
            .create_consumer(consumer::pull::OrderedConfig {
                filter_subject: Pager::server_filter(query, Kind::Events.pattern(&self.subjects)),
                deliver_policy,
                ..consumer::pull::OrderedConfig::default()
            })
            .await
            .map_err(|e| BusError::Journal(format!("cannot read stream {name}: {e}")))?;
        if consumer.cached_info().num_pending == 0 {
            return Ok(pager.finish());
        }
        let mut messages =
            consumer.messages().await.map_err(|e| BusError::Journal(format!("cannot read stream {name}: {e}")))?;
        loop {
            let message = match tokio::time::timeout(HISTORY_WAIT, messages.next()).await {
                Ok(Some(Ok(message))) => message,
                Ok(Some(Err(e))) => return Err(BusError::Journal(format!("reading stream {name}: {e}"))),
                Ok(None) => break,
                Err(_) => return Err(BusError::Journal(format!("reading stream {name}: no answer"))),
            };
            let info = message.info().map_err(|e| BusError::Journal(format!("reading stream {name}: {e}")))?;
            let (sequence, pending, stored) =
                (info.stream_sequence, info.pending, std::time::SystemTime::from(info.published));
            let record = HistoryRecord {
                subject: message.subject.to_string(),
                payload: message.payload.clone(),
                sequence,
                stored,
            };
            if !pager.offer(record, pending > 0) {
                break;
            }
        }
        Ok(pager.finish())
    }

    async fn state(&self, kind: Kind, name: &str) -> Result<Option<ConsumerState>, BusError> {
        // Asking leaves the stream as the evaluators and forwarders made it (the API asks too).
        let mut stream = match self.context.get_stream(self.stream_name(kind)).await {
            Ok(stream) => stream,
            Err(_) => self.stream(kind).await?,
        };
        let info = match stream.consumer_info(name).await {
            Ok(info) => info,
            Err(e) if e.kind() == async_nats::jetstream::context::ConsumerInfoErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(BusError::Journal(format!("consumer {name}: {e}"))),
        };
        let first = self.first_sequence(kind, &mut stream).await?;
        // Records before the stream's first that the consumer had not acknowledged left the
        // stream unseen: each counted once, when first seen gone.
        let floor = info.ack_floor.stream_sequence;
        let gone = first.saturating_sub(1);
        let mut losses = self.losses.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let loss = losses.entry((kind, name.to_owned())).or_default();
        let accounted = loss.upto.max(floor);
        if gone > accounted {
            loss.lost += gone - accounted;
        }
        loss.upto = accounted.max(gone);
        let lost = loss.lost;
        Ok(Some(ConsumerState { backlog: info.num_pending + info.num_ack_pending as u64, lost }))
    }

    async fn remove_consumer(&self, kind: Kind, name: &str) -> Result<(), BusError> {
        let stream = self.stream(kind).await?;
        match stream.delete_consumer(name).await {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().contains("not found") => Ok(()),
            Err(e) => Err(BusError::Journal(format!("cannot remove consumer {name}: {e}"))),
        }
    }

    async fn prepare(&self) -> Result<(), BusError> {
        self.ready().await
    }

    async fn remove_all(&self) -> Result<(), BusError> {
        for name in [self.stream_name(Kind::Events), self.stream_name(Kind::Actions), self.commands_stream()] {
            match self.context.delete_stream(&name).await {
                Ok(_) => {}
                Err(e) if e.to_string().contains("not found") => {}
                Err(e) => return Err(BusError::Journal(format!("cannot remove stream {name}: {e}"))),
            }
        }
        Ok(())
    }
}

/// The deliveries of `consumer` (named `name`), pulled up to `in_hand` at a time.
async fn deliveries(consumer: consumer::PullConsumer, name: &str, in_hand: usize) -> Result<Deliveries, BusError> {
    let messages = consumer
        .stream()
        .max_messages_per_batch(in_hand.clamp(1, 1000))
        .heartbeat(HEARTBEAT)
        .messages()
        .await
        .map_err(|e| BusError::Journal(format!("cannot pull from consumer {name}: {e}")))?;
    // Acknowledgements are sent by a task of their own, so that acknowledging never waits.
    let (acks, mut to_send): (Acks, _) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some((acker, kind)) = to_send.recv().await {
            if let Err(e) = acker.ack_with(kind).await {
                tracing::debug!(error = %e, "acknowledgement not sent; the record will be delivered again");
            }
        }
    });
    let name = name.to_owned();
    Ok(Box::pin(messages.filter_map(move |message| {
        let delivery = match message {
            Ok(message) => match message.info().map(|info| info.stream_sequence) {
                Ok(sequence) => {
                    let (message, acker) = message.split();
                    let acker = Arc::new(acker);
                    let (done, progress) = (acks.clone(), acks.clone());
                    let in_progress = acker.clone();
                    let ack = Ack::new(move || {
                        let _ = done.send((acker, jetstream::AckKind::Ack));
                    })
                    .with_progress(move || {
                        let _ = progress.send((in_progress.clone(), jetstream::AckKind::Progress));
                    });
                    Some(Delivery { subject: message.subject.to_string(), payload: message.payload, sequence, ack })
                }
                Err(e) => {
                    tracing::warn!(consumer = %name, error = %e, "JetStream message without delivery information skipped");
                    None
                }
            },
            Err(e) => {
                tracing::debug!(consumer = %name, error = %e, "JetStream pull interrupted; it goes on");
                None
            }
        };
        std::future::ready(delivery)
    })))
}
