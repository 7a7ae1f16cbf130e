//! The event journal: events kept until every consumer that must act on them has
//! acknowledged them, so a consumer that stops, crashes or falls behind resumes where it left
//! off instead of losing what was published meanwhile.
//!
//! Two kinds of record have consumers ([`Kind`]): the events (under `<prefix>.events.>`) and the
//! requests of http-request zone actions (under `<prefix>.actions.>`), each with sequences of
//! its own. Over NATS the journal is JetStream ([`JetStreamJournal`]): a stream per kind of
//! record (plus device alarm commands under `<prefix>.devices.*.alarm`), kept by age and size,
//! deduplicated by record id, and a durable pull consumer per name. In one process it is
//! [`MemoryJournal`], kept as long as a consumer still needs a record and within the same
//! bounds. Appending publishes too: subscribers of the subjects on the bus see every record as
//! before, whether or not they use the journal.

mod disk;
mod history;
mod jetstream;
pub(crate) mod memory;
pub(crate) mod replicas;

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;

pub use history::{Admits, HistoryPage, HistoryQuery, HistoryRecord, HistoryStart};
pub use jetstream::JetStreamJournal;
pub use memory::{MemoryJournal, READER_TAIL_BYTES, READER_TAIL_RECORDS};

use crate::BusError;

/// How much the journal keeps: a record leaves once it is older than `max_age` or once the
/// journal holds more than `max_bytes` of payload (oldest first), whether or not every consumer
/// has it. A consumer that had not acknowledged it has lost it, and the loss is counted
/// ([`ConsumerState::lost`]). The events stay for the whole of these bounds even when every
/// consumer has them: they are the event history ([`Journal::history`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalSettings {
    /// `ZONECAST_EVENT_RETENTION_SECS`, default 7 days.
    pub max_age: Duration,
    /// `ZONECAST_EVENT_RETENTION_BYTES`, default 1 GiB.
    pub max_bytes: u64,
    /// `ZONECAST_NATS_REPLICAS`, default 1: on how many NATS servers of a cluster JetStream keeps
    /// each of the journal's streams.
    pub replicas: usize,
}

impl Default for JournalSettings {
    fn default() -> Self {
        Self { max_age: Duration::from_secs(7 * 24 * 3600), max_bytes: 1 << 30, replicas: 1 }
    }
}

/// How long a repeated record id is recognised as a copy and not stored again.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// The durable consumer of the events of MQTT connection `connection`:
/// `mqtt-<connection id without dashes>`. Every forwarder replica takes the connection's events
/// from it, and the API reads its state for the connection's status.
pub fn connection_consumer(connection: uuid::Uuid) -> String {
    format!("mqtt-{}", connection.simple())
}

/// The durable consumer of the requests of http-request actions ([`Kind::Actions`]), shared by
/// every forwarder replica: the journal hands each request to one of them at a time. The
/// evaluators make it before they store their first request, so that none is appended before
/// it exists.
pub const ACTIONS_CONSUMER: &str = "http-actions";

/// Requests the actions consumer holds at once, trying or waiting for their next try; the rest
/// wait in the journal.
pub const ACTIONS_IN_HAND: usize = 10_000;

/// The records a consumer reads. Each kind is kept apart: its own stream, its own sequences,
/// its own consumers (a name may be used by both kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Zone events and alarms: every record under `<prefix>.events.>`.
    Events,
    /// Requests of http-request zone actions: every record under `<prefix>.actions.>`.
    Actions,
}

impl Kind {
    /// The pattern of the subjects the records of this kind are appended on.
    pub fn pattern(self, subjects: &crate::Subjects) -> String {
        match self {
            Self::Events => subjects.events_all(),
            Self::Actions => subjects.actions_all(),
        }
    }

    /// Both kinds.
    pub const ALL: [Kind; 2] = [Kind::Events, Kind::Actions];
}

/// One record to append: published on `subject`, stored once per `id`.
#[derive(Debug, Clone)]
pub struct Record {
    /// The concrete subject (an event's subject from [`crate::Subjects::of_event`], an action
    /// request's from [`crate::Subjects::http_action`]); its prefix says the record's [`Kind`].
    pub subject: String,
    /// The bytes as subscribers get them.
    pub payload: Bytes,
    /// The record's identity (an event's `EventID`): appending it again within
    /// [`DUPLICATE_WINDOW`] stores nothing.
    pub id: String,
}

/// Acknowledges one delivery: the consumer is done with it and it is not delivered again.
pub struct Ack {
    done: Box<dyn FnOnce() + Send>,
    progress: Option<Box<dyn Fn() + Send + Sync>>,
}

impl Ack {
    /// An acknowledgement that runs `f`.
    pub fn new(f: impl FnOnce() + Send + 'static) -> Self {
        Self { done: Box::new(f), progress: None }
    }

    /// The same acknowledgement, telling the journal of work in progress with `f`.
    pub fn with_progress(self, f: impl Fn() + Send + Sync + 'static) -> Self {
        Self { progress: Some(Box::new(f)), ..self }
    }

    /// Acknowledges. Dropping an `Ack` without calling this leaves the record unacknowledged:
    /// it is delivered again (to this consumer's next opening, or after the journal's ack wait).
    pub fn ack(self) {
        (self.done)();
    }

    /// Tells the journal the record is still being worked on: JetStream then waits another ack
    /// wait before it hands the record out again. The in-process journal never hands a record
    /// out again while the stream that delivered it is open, and needs no word.
    pub fn progress(&self) {
        if let Some(progress) = &self.progress {
            progress();
        }
    }
}

impl std::fmt::Debug for Ack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ack")
    }
}

/// One record delivered to a consumer.
#[derive(Debug)]
pub struct Delivery {
    /// The subject it was appended on.
    pub subject: String,
    /// Its bytes.
    pub payload: Bytes,
    /// Its place in the journal: increasing in append order, the same on every delivery of the
    /// record (a redelivery has the sequence of the first).
    pub sequence: u64,
    /// Acknowledges it.
    pub ack: Ack,
}

/// The records of one consumer, in journal order, redeliveries included. It ends when the
/// consumer is opened again elsewhere in this process, removed, or the journal's connection
/// is gone; open it again to go on.
pub type Deliveries = Pin<Box<dyn futures::Stream<Item = Delivery> + Send>>;

/// One record as a reader ([`Journal::read`]) sees it.
#[derive(Debug, Clone)]
pub struct Read {
    /// The subject it was appended on.
    pub subject: String,
    /// Its bytes.
    pub payload: Bytes,
    /// Its place in the journal (the sequence a consumer would see).
    pub sequence: u64,
    /// How many records of its kind were appended after it, as far as the journal knew when it
    /// was read: how far behind the newest record the reader is.
    pub behind: u64,
}

/// The records of one reader, in journal order, each once. Dropping it ends the reading.
pub type Reads = Pin<Box<dyn futures::Stream<Item = Read> + Send>>;

/// Where a consumer stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsumerState {
    /// Records appended and not yet acknowledged by it (waiting plus delivered).
    pub backlog: u64,
    /// Records that left the journal (age or size) before it acknowledged them, counted since
    /// this process opened the journal.
    pub lost: u64,
}

/// Stores records durably and hands them to named consumers until they acknowledge them.
/// A consumer reads one [`Kind`] of record; its name is its own within that kind.
#[async_trait::async_trait]
pub trait Journal: Send + Sync + 'static {
    /// Stores `records` in order and publishes each on its subject; returns once all are
    /// stored. A record whose id was appended within [`DUPLICATE_WINDOW`] is not stored again.
    /// Records of both kinds may be appended together.
    async fn append(&self, records: Vec<Record>) -> Result<(), BusError>;

    /// Creates the durable consumer `name` of the records of `kind` if it does not exist: it
    /// gets every such record appended from then on, with at most `in_hand` delivered and
    /// unacknowledged at a time (JetStream holds back the rest; an existing consumer takes the
    /// new bound).
    async fn create_consumer(&self, kind: Kind, name: &str, in_hand: usize) -> Result<(), BusError>;

    /// Opens consumer `name` of `kind` (creating it like [`Journal::create_consumer`]): it
    /// delivers the records it has not acknowledged, oldest first, then new ones as they are
    /// appended.
    async fn consume(&self, kind: Kind, name: &str, in_hand: usize) -> Result<Deliveries, BusError>;

    /// [`Journal::create_consumer`] of a consumer that gets only the records on subjects
    /// matching the pattern `filter`. Over JetStream the server delivers (and has acknowledged)
    /// only those; in one process the journal passes the other records over as it appends
    /// them, as though delivered and acknowledged at once. An existing consumer keeps the
    /// filter it was made with; the in-process journal, whose file does not keep filters, takes
    /// it again at the first narrowing after a start (until then the consumer gets every
    /// record).
    async fn create_narrowed(&self, kind: Kind, name: &str, filter: &str, in_hand: usize) -> Result<(), BusError>;

    /// [`Journal::consume`] of a consumer narrowed as [`Journal::create_narrowed`] makes it.
    async fn consume_narrowed(
        &self,
        kind: Kind,
        name: &str,
        filter: &str,
        in_hand: usize,
    ) -> Result<Deliveries, BusError>;

    /// Where consumer `name` of `kind` stands; `None` when it does not exist.
    async fn state(&self, kind: Kind, name: &str) -> Result<Option<ConsumerState>, BusError>;

    /// Reads the records of `kind` from sequence `from` on (the first one still kept when
    /// `from` is older; `None`: only those appended from now on), then new ones as they are
    /// appended. A reader is no consumer: it acknowledges nothing, holds nothing back, and
    /// neither delays appends nor affects any consumer (over JetStream an ephemeral ordered
    /// consumer of its own; in-process a cursor over the records kept). A reader that falls
    /// behind what the journal keeps skips what left it: the next record's sequence shows the
    /// gap. Returns the sequence the reader starts at (the next to be appended, for `None`).
    async fn read(&self, kind: Kind, from: Option<u64>) -> Result<(u64, Reads), BusError>;

    /// One page of the events kept (zone events and alarms, [`Kind::Events`]) in journal order:
    /// those from `query.start` that pass its bounds and narrowing, at most `query.limit`.
    /// Answers at once: it never waits for events to be appended, and what is appended while
    /// it reads belongs to a later page. Over JetStream an ephemeral ordered consumer of the
    /// events stream; in one process the journal file (or, without one, what memory holds).
    async fn history(&self, query: &HistoryQuery) -> Result<HistoryPage, BusError>;

    /// Removes consumer `name` of `kind` and what it had not acknowledged; nothing if it does
    /// not exist.
    async fn remove_consumer(&self, kind: Kind, name: &str) -> Result<(), BusError>;

    /// Removes everything the journal holds under its prefix, consumers included (a site
    /// taken down; a test's own prefix).
    async fn remove_all(&self) -> Result<(), BusError>;

    /// Makes the journal's streams now (or brings them in line with the settings) instead of on
    /// first use, so that a service learns at start whether JetStream can keep them as
    /// configured ([`BusError::Replicas`] when it cannot). Nothing to do in one process.
    async fn prepare(&self) -> Result<(), BusError> {
        Ok(())
    }
}
