//! The journal of one process: events and action requests kept in memory while a consumer
//! still needs them, within the journal's age and size bounds, and in a file too when it is
//! persistent.

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use bytes::Bytes;
// foldhash: every append looks each record's id up, every acknowledgement its consumer's name.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use tokio::sync::Notify;

use super::disk::Disk;
use super::history::from_ms;
use super::{Ack, Delivery, HistoryRecord, JournalSettings, Kind, Read};
use crate::pattern::{Pattern, with_tokens};
use crate::{Bus, BusError, Subjects};

mod open;
mod operations;

/// The newest events kept for readers ([`Journal::read`](super::Journal::read)) whether or not a consumer needs
/// them, so that a live stream dropped and opened again resumes where it was: at most this many
/// records and [`READER_TAIL_BYTES`] of payload (within the journal's age and size bounds).
pub const READER_TAIL_RECORDS: usize = 10_000;

/// Records a reader takes from the journal at once.
const READ_AT_ONCE: usize = 256;

/// The payload bound of the readers' tail ([`READER_TAIL_RECORDS`]).
pub const READER_TAIL_BYTES: u64 = 16 << 20;

/// A [`Journal`] in memory, for the all-in-one: records are published on its bus, and events
/// and action requests are kept until every consumer of their kind has acknowledged them (a
/// record no consumer needs is not kept at all: a consumer created later starts with later
/// records), or until they pass the age or size bound (per kind). [`MemoryJournal::persistent`]
/// keeps them in an SQLite file as well, so that they survive a restart or a crash of the
/// process; otherwise they do not. The file keeps the events for the whole retention, as the
/// event history; memory holds only what consumers and readers need.
pub struct MemoryJournal {
    bus: Arc<dyn Bus>,
    logs: Logs,
}

/// The state behind every [`MemoryJournal`] of one bus and subject prefix: a log per kind.
#[derive(Clone)]
pub(crate) struct Logs {
    events: Arc<Log>,
    actions: Arc<Log>,
    /// The journal file, when persistent: history reads it.
    file: Option<PathBuf>,
}

impl Logs {
    pub(crate) fn new(prefix: &str, settings: JournalSettings) -> Self {
        Self {
            events: Arc::new(Log::new(Kind::Events, prefix, settings)),
            actions: Arc::new(Log::new(Kind::Actions, prefix, settings)),
            file: None,
        }
    }

    fn of(&self, kind: Kind) -> &Arc<Log> {
        match kind {
            Kind::Events => &self.events,
            Kind::Actions => &self.actions,
        }
    }
}

/// The records of one kind.
pub(crate) struct Log {
    kind: Kind,
    /// `<prefix>.events.` or `<prefix>.actions.`: the subjects kept.
    kept: String,
    settings: JournalSettings,
    state: Mutex<State>,
    appended: Notify,
    /// Whether the newest records stay for readers (events) or go once no consumer needs them.
    tail: bool,
    /// The file, when persistent (shared by both kinds).
    disk: Option<Arc<Mutex<Disk>>>,
    /// Floors moved or records dropped since the file was last brought up to date.
    dirty: AtomicBool,
}

struct Stored {
    sequence: u64,
    at: Instant,
    /// The same moment as milliseconds since the Unix epoch, for the file.
    at_ms: u64,
    subject: String,
    payload: Bytes,
    id: String,
}

#[derive(Default)]
struct Consumer {
    /// Every record before it is acknowledged, lost or passed over.
    floor: u64,
    /// Acknowledged (or passed over) records at or after `floor`.
    acked: BTreeSet<u64>,
    /// The subjects it is narrowed to ([`Journal::create_narrowed`](super::Journal::create_narrowed)):
    /// a record on any other subject is passed over as it is appended, as though delivered and
    /// acknowledged at once. The file does not keep it: a consumer loaded at start takes it
    /// again when it is first narrowed.
    filter: Option<Pattern>,
    /// The next record the open delivery stream looks at.
    cursor: u64,
    /// Bumped on every opening: an older stream ends.
    opening: u64,
    lost: u64,
}

struct State {
    records: VecDeque<Stored>,
    bytes: u64,
    /// The sequence the next record gets (sequences start at 1).
    next: u64,
    /// When the newest record was stored, in milliseconds since the Unix epoch: the next is
    /// stamped no earlier, so that records are in order of time too, the clock set back or not.
    last_at_ms: u64,
    ids: HashSet<String>,
    consumers: HashMap<String, Consumer>,
}

impl Log {
    fn new(kind: Kind, prefix: &str, settings: JournalSettings) -> Self {
        Self {
            kind,
            kept: kind.pattern(&Subjects::new(prefix)).trim_end_matches('>').to_owned(),
            settings,
            state: Mutex::new(State {
                records: VecDeque::new(),
                bytes: 0,
                next: 1,
                last_at_ms: 0,
                ids: HashSet::new(),
                consumers: HashMap::new(),
            }),
            appended: Notify::new(),
            tail: kind == Kind::Events,
            disk: None,
            dirty: AtomicBool::new(false),
        }
    }

    /// Removes consumers (`forget` changes the map), drops what no consumer needs any more, and
    /// ends the delivery streams of removed consumers.
    fn forget(&self, forget: impl FnOnce(&mut HashMap<String, Consumer>)) {
        {
            let mut state = self.lock();
            forget(&mut state.consumers);
            state.trim(&self.settings, self.tail);
        }
        self.dirty.store(true, Ordering::Release);
        self.flush();
        self.appended.notify_waiters();
    }

    /// Brings the file's floors and records up to date with memory.
    fn flush(&self) {
        let Some(disk) = &self.disk else { return };
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return;
        }
        // The file is taken before memory is let go (the order appends take them in), so no
        // older snapshot can be written over a newer one.
        let state = self.lock();
        let consumers: Vec<(String, u64, u64)> =
            state.consumers.iter().map(|(name, c)| (name.clone(), c.floor, c.lost)).collect();
        let first = state.records.front().map_or(state.next, |r| r.sequence);
        let mut file = disk.lock().unwrap_or_else(PoisonError::into_inner);
        drop(state);
        if let Err(e) = file.flush(self.kind, &consumers, first) {
            self.dirty.store(true, Ordering::Release);
            tracing::warn!(error = %e, "journal file not brought up to date; will retry");
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ack(&self, name: &str, sequence: u64) {
        let mut state = self.lock();
        if let Some(consumer) = state.consumers.get_mut(name) {
            consumer.settle(sequence);
        }
        state.trim(&self.settings, self.tail);
        self.dirty.store(true, Ordering::Release);
    }

    /// The next record for the stream of `opening`, or why there is none.
    fn next_for(self: &Arc<Self>, name: &Arc<str>, opening: u64) -> Next {
        let mut state = self.lock();
        let first = state.records.front().map_or(state.next, |r| r.sequence);
        let Some(consumer) = state.consumers.get_mut(&**name) else { return Next::End };
        if consumer.opening != opening {
            return Next::End;
        }
        let mut cursor = consumer.cursor.max(consumer.floor).max(first);
        while consumer.acked.contains(&cursor) {
            cursor += 1;
        }
        let index = (cursor - first) as usize;
        let Some(record) = state.records.get(index) else {
            if let Some(consumer) = state.consumers.get_mut(&**name) {
                consumer.cursor = cursor;
            }
            return Next::Wait;
        };
        let delivery = Delivery {
            subject: record.subject.clone(),
            payload: record.payload.clone(),
            sequence: record.sequence,
            ack: {
                let inner = Arc::downgrade(self);
                let (name, sequence) = (name.clone(), record.sequence);
                Ack::new(move || {
                    if let Some(inner) = inner.upgrade() {
                        inner.ack(&name, sequence);
                    }
                })
            },
        };
        if let Some(consumer) = state.consumers.get_mut(&**name) {
            consumer.cursor = cursor + 1;
        }
        Next::Record(delivery)
    }
}

impl Log {
    /// Up to `count` records from sequence `cursor` on (from the first kept, when it is gone),
    /// copied out so that the lock is held no longer.
    fn history_chunk(&self, cursor: u64, count: usize) -> Vec<HistoryRecord> {
        let state = self.lock();
        let first = state.records.front().map_or(state.next, |r| r.sequence);
        let skip = usize::try_from(cursor.saturating_sub(first)).unwrap_or(usize::MAX);
        state
            .records
            .iter()
            .skip(skip)
            .take(count)
            .map(|r| HistoryRecord {
                subject: r.subject.clone(),
                payload: r.payload.clone(),
                sequence: r.sequence,
                stored: from_ms(r.at_ms),
            })
            .collect()
    }

    /// The record at `cursor` for a reader (or the first kept after it, when it is gone), and
    /// the cursor after it; `None` when the reader has read everything appended.
    /// Up to `max` records from `cursor` on (from the first one kept when it is older), and the
    /// cursor after them: a reader takes what is there under one lock.
    fn read_from(&self, cursor: u64, max: usize) -> (Vec<Read>, u64) {
        let state = self.lock();
        let first = state.records.front().map_or(state.next, |r| r.sequence);
        let cursor = cursor.max(first);
        let skip = usize::try_from(cursor - first).unwrap_or(usize::MAX);
        let reads: Vec<Read> = state
            .records
            .iter()
            .skip(skip)
            .take(max)
            .map(|record| Read {
                subject: record.subject.clone(),
                payload: record.payload.clone(),
                sequence: record.sequence,
                behind: state.next - 1 - record.sequence,
            })
            .collect();
        let next = reads.last().map_or(cursor, |read| read.sequence + 1);
        (reads, next)
    }
}

enum Next {
    Record(Delivery),
    Wait,
    End,
}

impl State {
    /// Drops records every consumer is done with, and those past the bounds (counted as lost
    /// for each consumer that had not acknowledged them).
    /// Whether it dropped any.
    /// With `tail`, the newest records stay for readers within [`READER_TAIL_RECORDS`] and
    /// [`READER_TAIL_BYTES`].
    fn trim(&mut self, settings: &JournalSettings, tail: bool) -> bool {
        let now = Instant::now();
        let mut dropped = false;
        while let Some(front) = self.records.front() {
            let sequence = front.sequence;
            let done = self.consumers.values().all(|c| c.floor > sequence);
            let for_readers = tail && self.records.len() <= READER_TAIL_RECORDS && self.bytes <= READER_TAIL_BYTES;
            let expired = self.bytes > settings.max_bytes || now.duration_since(front.at) > settings.max_age;
            if (!done || for_readers) && !expired {
                break;
            }
            for consumer in self.consumers.values_mut().filter(|c| c.floor <= sequence) {
                if !consumer.acked.remove(&sequence) {
                    consumer.lost += 1;
                }
                consumer.floor = sequence + 1;
            }
            if let Some(gone) = self.records.pop_front() {
                self.bytes -= gone.payload.len() as u64;
                self.ids.remove(&gone.id);
                dropped = true;
            }
        }
        dropped
    }

    fn create(&mut self, name: &str) -> &mut Consumer {
        created(&mut self.consumers, self.next, name)
    }

    /// Creates consumer `name` narrowed to `filter` unless it is narrowed already, passing over
    /// the records it holds on other subjects.
    fn narrow(&mut self, name: &str, filter: &str) -> Result<(), BusError> {
        let pattern = Pattern::parse(filter)?;
        let Self { records, consumers, next, .. } = self;
        let consumer = created(consumers, *next, name);
        if consumer.filter.is_some() {
            return Ok(());
        }
        let first = records.front().map_or(*next, |r| r.sequence);
        let from = usize::try_from(consumer.floor.saturating_sub(first)).unwrap_or(usize::MAX);
        for record in records.iter().skip(from) {
            if !with_tokens(&record.subject, |tokens| pattern.matches(tokens)) {
                consumer.settle(record.sequence);
            }
        }
        consumer.filter = Some(pattern);
        Ok(())
    }

    /// Passes record `sequence` on `subject` over for every consumer narrowed to other
    /// subjects.
    fn pass_over(&mut self, sequence: u64, subject: &str) {
        let mut narrowed = self.consumers.values_mut().filter(|c| c.filter.is_some()).peekable();
        if narrowed.peek().is_none() {
            return;
        }
        with_tokens(subject, |tokens| {
            for consumer in narrowed {
                if consumer.filter.as_ref().is_some_and(|f| !f.matches(tokens)) {
                    consumer.settle(sequence);
                }
            }
        });
    }
}

/// Consumer `name` of `consumers`, made (from record `next` on) if it is not there.
fn created<'a>(consumers: &'a mut HashMap<String, Consumer>, next: u64, name: &str) -> &'a mut Consumer {
    consumers.entry(name.to_owned()).or_insert_with(|| Consumer { floor: next, cursor: next, ..Consumer::default() })
}

impl Consumer {
    /// Record `sequence` is done with: acknowledged or passed over.
    fn settle(&mut self, sequence: u64) {
        if sequence < self.floor {
            return;
        }
        if sequence == self.floor {
            self.floor += 1;
        } else {
            self.acked.insert(sequence);
        }
        while self.acked.remove(&self.floor) {
            self.floor += 1;
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.flush();
    }
}
