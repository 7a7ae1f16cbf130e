//! The journal of one process: events and action requests kept in memory while a consumer
//! still needs them, within the journal's age and size bounds, and in a file too when it is
//! persistent.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use super::disk::{self, Disk, Row};
use super::history::{Pager, from_ms, to_ms};
use super::{
    Ack, ConsumerState, Deliveries, Delivery, HistoryPage, HistoryQuery, HistoryRecord, HistoryStart, Journal,
    JournalSettings, Kind, Read, Reads, Record,
};
use crate::{Bus, BusError, Subjects};

/// The newest events kept for readers ([`Journal::read`]) whether or not a consumer needs
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
    events: Arc<Inner>,
    actions: Arc<Inner>,
    /// The journal file, when persistent: history reads it.
    file: Option<PathBuf>,
}

impl Logs {
    pub(crate) fn new(prefix: &str, settings: JournalSettings) -> Self {
        Self {
            events: Arc::new(Inner::new(Kind::Events, prefix, settings)),
            actions: Arc::new(Inner::new(Kind::Actions, prefix, settings)),
            file: None,
        }
    }

    fn of(&self, kind: Kind) -> &Arc<Inner> {
        match kind {
            Kind::Events => &self.events,
            Kind::Actions => &self.actions,
        }
    }
}

/// The records of one kind.
pub(crate) struct Inner {
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
    /// Every record before it is acknowledged or lost.
    floor: u64,
    /// Acknowledged records at or after `floor`.
    acked: BTreeSet<u64>,
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
    ids: HashSet<String>,
    consumers: HashMap<String, Consumer>,
}

impl Inner {
    fn new(kind: Kind, prefix: &str, settings: JournalSettings) -> Self {
        Self {
            kind,
            kept: kind.pattern(&Subjects::new(prefix)).trim_end_matches('>').to_owned(),
            settings,
            state: Mutex::new(State {
                records: VecDeque::new(),
                bytes: 0,
                next: 1,
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
        if let Some(consumer) = state.consumers.get_mut(name)
            && sequence >= consumer.floor
        {
            consumer.acked.insert(sequence);
            while consumer.acked.remove(&consumer.floor) {
                consumer.floor += 1;
            }
        }
        state.trim(&self.settings, self.tail);
        self.dirty.store(true, Ordering::Release);
    }

    /// The next record for the stream of `opening`, or why there is none.
    fn next_for(self: &Arc<Self>, name: &str, opening: u64) -> Next {
        let mut state = self.lock();
        let first = state.records.front().map_or(state.next, |r| r.sequence);
        let Some(consumer) = state.consumers.get_mut(name) else { return Next::End };
        if consumer.opening != opening {
            return Next::End;
        }
        let mut cursor = consumer.cursor.max(consumer.floor).max(first);
        while consumer.acked.contains(&cursor) {
            cursor += 1;
        }
        let index = (cursor - first) as usize;
        let Some(record) = state.records.get(index) else {
            if let Some(consumer) = state.consumers.get_mut(name) {
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
                let (name, sequence) = (name.to_owned(), record.sequence);
                Ack::new(move || {
                    if let Some(inner) = inner.upgrade() {
                        inner.ack(&name, sequence);
                    }
                })
            },
        };
        if let Some(consumer) = state.consumers.get_mut(name) {
            consumer.cursor = cursor + 1;
        }
        Next::Record(delivery)
    }
}

impl Inner {
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
        let next = self.next;
        self.consumers.entry(name.to_owned()).or_insert_with(|| Consumer {
            floor: next,
            cursor: next,
            ..Consumer::default()
        })
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.flush();
    }
}

impl MemoryJournal {
    pub(crate) fn new(bus: Arc<dyn Bus>, logs: Logs) -> Self {
        Self { bus, logs }
    }

    /// A journal of the events and action requests under `prefix` kept in the SQLite file at
    /// `path` as well as in memory (created if missing; what it holds is delivered again),
    /// publishing on `bus`. Must be called within a Tokio runtime: a task brings
    /// acknowledgements to the file.
    pub fn persistent(
        bus: Arc<dyn Bus>,
        prefix: &str,
        settings: JournalSettings,
        path: &Path,
    ) -> Result<Self, BusError> {
        let (file, mut loaded) = Disk::open(path, settings, READER_TAIL_RECORDS, READER_TAIL_BYTES)?;
        let file = Arc::new(Mutex::new(file));
        let (now, now_ms) = (Instant::now(), disk::now_ms());
        let mut log = |kind: Kind| {
            let loaded = loaded.remove(&kind).unwrap_or_default();
            let mut inner = Inner::new(kind, prefix, settings);
            let state = inner.state.get_mut().unwrap_or_else(PoisonError::into_inner);
            state.next = loaded.next.max(loaded.rows.last().map_or(1, |r| r.sequence + 1));
            for row in loaded.rows.into_iter().filter(|r| r.subject.starts_with(&inner.kept)) {
                let age = Duration::from_millis(now_ms.saturating_sub(row.at_ms));
                state.bytes += row.payload.len() as u64;
                state.ids.insert(row.id.clone());
                state.records.push_back(Stored {
                    sequence: row.sequence,
                    at: now.checked_sub(age).unwrap_or(now),
                    at_ms: row.at_ms,
                    subject: row.subject,
                    payload: row.payload,
                    id: row.id,
                });
            }
            for (name, floor, lost) in loaded.consumers {
                state.consumers.insert(name, Consumer { floor, cursor: floor, lost, ..Consumer::default() });
            }
            inner.disk = Some(file.clone());
            inner.dirty.store(true, Ordering::Release);
            Arc::new(inner)
        };
        let logs = Logs { events: log(Kind::Events), actions: log(Kind::Actions), file: Some(path.to_owned()) };
        let weak = [Arc::downgrade(&logs.events), Arc::downgrade(&logs.actions)];
        tokio::spawn(async move {
            let mut every = tokio::time::interval(disk::FLUSH_EVERY);
            let mut expired = Instant::now();
            loop {
                every.tick().await;
                let mut alive = false;
                for inner in weak.iter().filter_map(std::sync::Weak::upgrade) {
                    inner.flush();
                    alive = true;
                }
                if !alive {
                    break;
                }
                if expired.elapsed() >= disk::EXPIRE_EVERY {
                    expired = Instant::now();
                    if let Err(e) = file.lock().unwrap_or_else(PoisonError::into_inner).expire() {
                        tracing::warn!(error = %e, "events past the retention not deleted from the journal file; will retry");
                    }
                }
            }
        });
        Ok(Self { bus, logs })
    }
}

/// The records of one append that one kind's log stores.
#[derive(Default)]
struct Batch {
    stored: Vec<Stored>,
    next: u64,
}

impl Batch {
    fn rows(&self) -> Vec<Row> {
        self.stored
            .iter()
            .map(|s| Row {
                sequence: s.sequence,
                at_ms: s.at_ms,
                subject: s.subject.clone(),
                payload: s.payload.clone(),
                id: s.id.clone(),
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl Journal for MemoryJournal {
    async fn append(&self, records: Vec<Record>) -> Result<(), BusError> {
        for record in &records {
            crate::pattern::validate_subject(&record.subject)?;
        }
        let mut published = Vec::with_capacity(records.len());
        {
            // Both logs at once, events first (every append takes them in this order), so the
            // records of one append reach the file in one transaction.
            let mut events = self.logs.events.lock();
            let mut actions = self.logs.actions.lock();
            let (at, at_ms) = (Instant::now(), disk::now_ms());
            let mut batches =
                [Batch { next: events.next, ..Batch::default() }, Batch { next: actions.next, ..Batch::default() }];
            let mut batch_ids = HashSet::new();
            for record in records {
                let (index, state) = if record.subject.starts_with(&self.logs.events.kept) {
                    (0, &events)
                } else if record.subject.starts_with(&self.logs.actions.kept) {
                    (1, &actions)
                } else {
                    published.push(record);
                    continue;
                };
                if state.ids.contains(&record.id) || !batch_ids.insert((index, record.id.clone())) {
                    continue;
                }
                let batch = &mut batches[index];
                batch.stored.push(Stored {
                    sequence: batch.next,
                    at,
                    at_ms,
                    subject: record.subject.clone(),
                    payload: record.payload.clone(),
                    id: record.id.clone(),
                });
                batch.next += 1;
                published.push(record);
            }
            // In the file first: a record is appended once it is there.
            if let Some(disk) = &self.logs.events.disk
                && batches.iter().any(|b| !b.stored.is_empty())
            {
                let [e, a] = &batches;
                disk.lock().unwrap_or_else(PoisonError::into_inner).append(&[
                    (Kind::Events, e.rows().as_slice(), e.next),
                    (Kind::Actions, a.rows().as_slice(), a.next),
                ])?;
            }
            let [e, a] = batches;
            for (state, batch, inner) in [(&mut events, e, &self.logs.events), (&mut actions, a, &self.logs.actions)] {
                state.next = batch.next;
                for record in batch.stored {
                    state.bytes += record.payload.len() as u64;
                    state.ids.insert(record.id.clone());
                    state.records.push_back(record);
                }
                state.trim(&inner.settings, inner.tail);
            }
        }
        for inner in [&self.logs.events, &self.logs.actions] {
            inner.dirty.store(true, Ordering::Release);
            inner.appended.notify_waiters();
        }
        for record in published {
            self.bus.publish(record.subject, record.payload).await?;
        }
        Ok(())
    }

    /// The bound on records in hand is the consumer's business here.
    async fn create_consumer(&self, kind: Kind, name: &str, _in_hand: usize) -> Result<(), BusError> {
        let inner = self.logs.of(kind);
        inner.lock().create(name);
        inner.dirty.store(true, Ordering::Release);
        inner.flush();
        Ok(())
    }

    async fn consume(&self, kind: Kind, name: &str, _in_hand: usize) -> Result<Deliveries, BusError> {
        let inner = self.logs.of(kind).clone();
        let opening = {
            let mut state = inner.lock();
            let consumer = state.create(name);
            consumer.opening += 1;
            consumer.cursor = consumer.floor;
            consumer.opening
        };
        // The previous stream of this consumer, if any, ends at its next look.
        inner.appended.notify_waiters();
        let name = name.to_owned();
        Ok(Box::pin(futures::stream::unfold((inner, name), move |(inner, name)| async move {
            loop {
                let next = {
                    let appended = inner.appended.notified();
                    tokio::pin!(appended);
                    appended.as_mut().enable();
                    match inner.next_for(&name, opening) {
                        Next::Wait => {
                            appended.await;
                            continue;
                        }
                        next => next,
                    }
                };
                return match next {
                    Next::Record(delivery) => Some((delivery, (inner, name))),
                    Next::End | Next::Wait => None,
                };
            }
        })))
    }

    async fn state(&self, kind: Kind, name: &str) -> Result<Option<ConsumerState>, BusError> {
        let inner = self.logs.of(kind);
        let mut state = inner.lock();
        if state.trim(&inner.settings, inner.tail) {
            inner.dirty.store(true, Ordering::Release);
        }
        let next = state.next;
        Ok(state
            .consumers
            .get(name)
            .map(|c| ConsumerState { backlog: next - c.floor - c.acked.len() as u64, lost: c.lost }))
    }

    /// A cursor over the records kept: it takes no lock an append waits on for longer than one
    /// record's copy, and pins nothing (what it has not read may be trimmed, and it skips it).
    async fn read(&self, kind: Kind, from: Option<u64>) -> Result<(u64, Reads), BusError> {
        let inner = self.logs.of(kind).clone();
        let start = {
            let state = inner.lock();
            from.unwrap_or(state.next).min(state.next).max(1)
        };
        let reads = futures::stream::unfold(
            (inner, start, VecDeque::new()),
            |(inner, mut cursor, mut taken): (Arc<Inner>, u64, VecDeque<Read>)| async move {
                loop {
                    if let Some(read) = taken.pop_front() {
                        return Some((read, (inner, cursor, taken)));
                    }
                    let appended = inner.appended.notified();
                    tokio::pin!(appended);
                    appended.as_mut().enable();
                    let (reads, next) = inner.read_from(cursor, READ_AT_ONCE);
                    if reads.is_empty() {
                        appended.await;
                        continue;
                    }
                    cursor = next;
                    taken.extend(reads);
                }
            },
        );
        Ok((start, Box::pin(reads)))
    }

    /// The journal file when there is one (it keeps the events for the whole retention), read
    /// on a blocking thread; otherwise the events memory holds.
    async fn history(&self, query: &HistoryQuery) -> Result<HistoryPage, BusError> {
        if let Some(file) = &self.logs.file {
            let (file, query) = (file.clone(), query.clone());
            return tokio::task::spawn_blocking(move || disk::history(&file, &query))
                .await
                .map_err(|e| BusError::Journal(format!("history reading failed: {e}")))?;
        }
        let inner = &self.logs.events;
        let (last, mut cursor) = {
            let state = inner.lock();
            let cursor = match query.start {
                HistoryStart::Oldest => 0,
                HistoryStart::Sequence(sequence) => sequence,
                HistoryStart::At(at) => {
                    let at = to_ms(at);
                    let index = state.records.partition_point(|r| r.at_ms < at);
                    state.records.get(index).map_or(state.next, |r| r.sequence)
                }
            };
            (state.next - 1, cursor)
        };
        let mut pager = Pager::new(query, last, true)?;
        loop {
            let chunk = inner.history_chunk(cursor, 256);
            if chunk.is_empty() {
                return Ok(pager.finish());
            }
            for record in chunk {
                cursor = record.sequence + 1;
                if !pager.take(record, true) {
                    return Ok(pager.finish());
                }
            }
        }
    }

    async fn remove_consumer(&self, kind: Kind, name: &str) -> Result<(), BusError> {
        self.logs.of(kind).forget(|consumers| {
            consumers.remove(name);
        });
        Ok(())
    }

    async fn remove_all(&self) -> Result<(), BusError> {
        for kind in Kind::ALL {
            self.logs.of(kind).forget(|consumers| consumers.clear());
            // The readers' tail too.
            let inner = self.logs.of(kind);
            let mut state = inner.lock();
            state.records.clear();
            state.ids.clear();
            state.bytes = 0;
            if let Some(disk) = &inner.disk {
                disk.lock().unwrap_or_else(PoisonError::into_inner).clear(kind)?;
            }
        }
        Ok(())
    }
}
