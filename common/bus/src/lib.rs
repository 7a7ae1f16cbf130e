//! The zonecast message bus: one [`Bus`] trait, a NATS and an in-process implementation, and
//! [`Subjects`], the only place subject names are written.
//!
//! Services depend on `Arc<dyn Bus>` and never learn which implementation they got: the
//! distributed deployment passes a [`NatsBus`], the all-in-one binary an [`InProcessBus`], and a
//! shared contract test suite holds both to the same semantics (subject validation, `*` and `>`
//! wildcards, queue groups, ordering, unsubscribe on drop). The bus carries bytes; payload types
//! live in the model crate.

pub mod coverage;
mod error;
mod in_process;
pub mod journal;
pub mod leases;
mod nats;
mod pattern;
pub mod positions;
pub mod presence;
mod subjects;

use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

pub use error::BusError;
pub use in_process::{DEFAULT_CAPACITY, InProcessBus};
pub use journal::{Journal, JournalSettings};
pub use leases::Leases;
pub use nats::NatsBus;
pub use positions::{PositionLog, PositionSettings};
pub use presence::Presence;
pub use subjects::{DEFAULT_PREFIX, FORWARDERS, INGESTORS, Subjects};

/// A payload its publisher holds decoded ([`Bus::publish_decoded`]): subscribers in the same
/// process can take it as it is, and the bytes are written only for one that reads them.
pub trait Encode: std::fmt::Debug + Send + Sync + 'static {
    /// The payload decoded, as [`Message::decoded`] hands it out.
    fn decoded(&self) -> &(dyn std::any::Any + Send + Sync);

    /// The payload's bytes, as [`Bus::publish`] would have sent them.
    fn encode(&self) -> Bytes;

    /// How many items it carries (a batch of positions: its positions), as [`Bus::waiting`]
    /// counts them; one unless said otherwise.
    fn weight(&self) -> usize {
        1
    }
}

/// A published payload already decoded, as the publisher had it.
pub type Decoded = Arc<dyn Encode>;

/// One message as received from a subscription.
#[derive(Clone, Debug)]
pub struct Message {
    /// The concrete subject it was published to (never a pattern).
    pub subject: String,
    /// The bytes as published; may be empty for a subscription made with
    /// [`Bus::subscribe_decoded`] when the message was published decoded in this process.
    pub payload: Bytes,
    /// The payload decoded, when it was published with [`Bus::publish_decoded`] on a bus that
    /// hands it over (the in-process one): the subscriber then need not parse the bytes. `None`
    /// over NATS.
    pub decoded: Option<Decoded>,
}

impl Message {
    /// The decoded payload, when there is one of type `T`.
    pub fn decoded<T: 'static>(&self) -> Option<&T> {
        self.decoded.as_deref()?.decoded().downcast_ref()
    }

    /// The payload's bytes: as published, or written from the decoded payload when it came
    /// without them.
    pub fn bytes(&self) -> Bytes {
        bytes_of(&self.payload, self.decoded.as_ref())
    }
}

/// `payload`, or when it is empty and there is a `decoded` payload, its encoding.
fn bytes_of(payload: &Bytes, decoded: Option<&Decoded>) -> Bytes {
    match decoded {
        Some(decoded) if payload.is_empty() => decoded.encode(),
        _ => payload.clone(),
    }
}

/// A live subscription; dropping it unsubscribes. It ends when the bus is drained or closed.
pub type Subscription = Pin<Box<dyn futures::Stream<Item = Message> + Send>>;

/// A subscription that takes what publishers outside zonecast send ([`Bus::input_subscribe`]).
pub struct Input {
    /// The messages, in the order the bus delivers them.
    pub messages: Subscription,
    /// Whether the bus drops messages its reader does not take in time (NATS: the client's
    /// queue for the subscription is full) instead of making the publishers wait (in-process).
    pub lossy: bool,
    /// Messages the bus dropped so far because its queue for the subscription was full, as
    /// the NATS client reports them (always 0 in-process).
    pub dropped: Arc<std::sync::atomic::AtomicU64>,
}

/// Publish/subscribe with NATS semantics, implemented over NATS and in-process.
#[async_trait::async_trait]
pub trait Bus: Send + Sync + 'static {
    /// Publishes `payload` on `subject`; a subject with empty tokens, whitespace or wildcards is
    /// rejected with [`BusError::InvalidSubject`] before anything is sent.
    async fn publish(&self, subject: String, payload: Bytes) -> Result<(), BusError>;

    /// Publishes `decoded`, the payload as the publisher has it decoded, like [`Bus::publish`]
    /// of its encoding. Subscribers in the same process get it as it is
    /// ([`Message::decoded`]), and it is encoded only if one of them reads bytes. The NATS bus
    /// encodes it and sends the bytes.
    async fn publish_decoded(&self, subject: String, decoded: Decoded) -> Result<(), BusError> {
        self.publish(subject, decoded.encode()).await
    }

    /// Subscribes like [`Bus::subscribe`], for a subscriber that reads [`Message::decoded`]
    /// whenever there is one: a message published decoded in this process is never encoded for
    /// its sake, and reaches it with an empty payload unless another subscriber needed the
    /// bytes. Over NATS, the same as `subscribe`.
    async fn subscribe_decoded(&self, subject: &str) -> Result<Subscription, BusError> {
        self.subscribe(subject).await
    }

    /// How many items wait, not read yet, in this process's subscriptions to subjects or
    /// patterns that begin with `prefix` (the in-process bus, whose queues hold them): a message
    /// published decoded counts its [`Encode::weight`], any other one. `None` where a server
    /// holds what subscribers have not read (NATS).
    fn waiting(&self, _prefix: &str) -> Option<usize> {
        None
    }

    /// Subscribes to a subject or pattern (`*` matches one token, a final `>` one or more);
    /// every subscription gets every matching message once.
    async fn subscribe(&self, subject: &str) -> Result<Subscription, BusError>;

    /// Subscribes as a member of queue group `group`: each matching message goes to exactly one
    /// member of each group.
    async fn queue_subscribe(&self, subject: &str, group: &str) -> Result<Subscription, BusError>;

    /// Subscribes an input (publishers outside zonecast send to `subject`) as a member of queue
    /// group `group`. Over NATS it has a connection of its own, so that a flood on it neither
    /// delays the process's other traffic nor mixes its drops with theirs: when its reader falls
    /// behind the client's queue of the subscription (65,536 messages), the client drops
    /// messages, counts them in [`Input::dropped`] and in `zonecast_bus_slow_consumer_total`.
    /// In-process, the same as [`Bus::queue_subscribe`]: publishers wait for room.
    async fn input_subscribe(&self, subject: &str, group: &str) -> Result<Input, BusError> {
        let messages = self.queue_subscribe(subject, group).await?;
        Ok(Input { messages, lossy: false, dropped: Arc::default() })
    }

    /// Returns once every message published before the call has reached the server (NATS,
    /// confirmed by a round trip) or the subscribers' queues (in-process).
    async fn flush(&self) -> Result<(), BusError>;

    /// Flushes, ends every subscription after its buffered messages, and closes the bus; for
    /// graceful shutdown. Later calls fail with [`BusError::Closed`]; draining again is a no-op.
    /// Both implementations override it; the default only flushes.
    async fn drain(&self) -> Result<(), BusError> {
        self.flush().await
    }

    /// The event journal of subjects under `prefix` on this bus (JetStream over NATS, memory
    /// shared by every service of the process in-process), keeping records within `settings`.
    fn journal(&self, prefix: &str, settings: JournalSettings) -> Arc<dyn Journal>;

    /// The position log of `partitions` partitions under `prefix` on this bus, kept within
    /// `settings` (JetStream over NATS; handed over decoded and not kept in-process).
    fn position_log(&self, prefix: &str, partitions: u32, settings: PositionSettings) -> Arc<dyn PositionLog>;

    /// The lease bucket in which the evaluators under `prefix` claim partitions, its stream
    /// kept on `replicas` servers (JetStream over NATS); `None` in-process, where each
    /// evaluator of the process is given its partitions.
    async fn leases(&self, _prefix: &str, _replicas: usize) -> Result<Option<Leases>, BusError> {
        Ok(None)
    }

    /// The bucket in which the service replicas under `prefix` write their heartbeats, its
    /// stream kept on `replicas` servers (JetStream over NATS); `None` in-process, where one
    /// process is every replica.
    async fn presence(&self, _prefix: &str, _replicas: usize) -> Result<Option<Presence>, BusError> {
        Ok(None)
    }

    /// Whether the bus can currently deliver messages; for `/healthz`.
    fn is_connected(&self) -> bool;

    /// `"nats"` or `"in-process"`, for logs and health output.
    fn kind(&self) -> &'static str;
}

/// Calls `f` with up to `max` messages that `subscription` already holds, without waiting, and
/// returns how many: a consumer that was woken by one message takes the burst behind it in the
/// same turn of its `select!` loop instead of going round it per message.
pub fn take_ready<S>(subscription: &mut S, max: usize, mut f: impl FnMut(Message)) -> usize
where
    S: futures::Stream<Item = Message> + Unpin,
{
    use futures::{FutureExt, StreamExt};
    let mut taken = 0;
    while taken < max {
        match subscription.next().now_or_never() {
            Some(Some(message)) => f(message),
            _ => break,
        }
        taken += 1;
    }
    taken
}

/// What the services of a site exchange through one bus: the bus itself, the event journal and
/// the position log, opened together ([`open`]).
#[derive(Clone)]
pub struct Channels {
    /// Publish/subscribe.
    pub bus: Arc<dyn Bus>,
    /// The events, stored before anyone acts on them.
    pub journal: Arc<dyn Journal>,
    /// The positions, from ingest to the evaluators.
    pub positions: Arc<dyn PositionLog>,
}

/// The site a bus is opened for: its subject prefix, partitions and what its streams keep.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    /// Every subject begins with it.
    pub prefix: &'a str,
    /// The position partitions.
    pub partitions: u32,
    /// What the event journal keeps.
    pub journal: JournalSettings,
    /// What the position log keeps.
    pub positions: PositionSettings,
    /// Without NATS, the file the journal keeps events awaiting delivery in, so that a restart
    /// or a crash of the process loses none (`None`: in memory only).
    pub journal_file: Option<&'a std::path::Path>,
}

/// Connects to NATS when a URL is given, otherwise builds an in-process bus (see [`connect`]),
/// with the journal and position log of `site` on it.
pub async fn open(nats_url: Option<&str>, client_name: &str, site: Site<'_>) -> Result<Channels, BusError> {
    let nats_url = nats_url.map(str::trim).filter(|url| !url.is_empty());
    let bus = connect(nats_url, client_name).await?;
    let journal = match (nats_url, site.journal_file) {
        (None, Some(file)) => {
            Arc::new(journal::MemoryJournal::persistent(bus.clone(), site.prefix, site.journal, file)?)
        }
        _ => bus.journal(site.prefix, site.journal),
    };
    let positions = bus.position_log(site.prefix, site.partitions, site.positions);
    Ok(Channels { bus, journal, positions })
}

/// Connects to NATS when a URL is given, otherwise builds an in-process bus.
///
/// An empty or blank URL counts as none, so an empty `ZONECAST_NATS_URL` selects the in-process
/// bus. `client_name` is shown by the NATS server (e.g. `zonecast-ingestor`).
pub async fn connect(nats_url: Option<&str>, client_name: &str) -> Result<Arc<dyn Bus>, BusError> {
    match nats_url.map(str::trim).filter(|url| !url.is_empty()) {
        Some(url) => Ok(Arc::new(NatsBus::connect(url, client_name).await?)),
        None => {
            tracing::info!(client = client_name, "using the in-process bus");
            Ok(Arc::new(InProcessBus::new()))
        }
    }
}
