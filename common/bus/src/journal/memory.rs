//! The journal of one process: events kept in memory while a consumer still needs them,
//! within the journal's age and size bounds, and in a file too when it is persistent.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use super::disk::{self, Disk, Row};
use super::{Ack, ConsumerState, Deliveries, Delivery, Journal, JournalSettings, Record};
use crate::{Bus, BusError};

/// A [`Journal`] in memory, for the all-in-one: records are published on its bus, and events
/// are kept until every consumer has acknowledged them (a record no consumer needs is not kept
/// at all: a consumer created later starts with later records), or until they pass the age or
/// size bound. [`MemoryJournal::persistent`] keeps them in an SQLite file as well, so that they
/// survive a restart or a crash of the process; otherwise they do not.
pub struct MemoryJournal {
    bus: Arc<dyn Bus>,
    inner: Arc<Inner>,
}

/// The state behind every [`MemoryJournal`] of one bus and subject prefix.
pub(crate) struct Inner {
    /// `<prefix>.events.`: the subjects kept.
    events: String,
    settings: JournalSettings,
    state: Mutex<State>,
    appended: Notify,
    /// The file, when persistent.
    disk: Option<Mutex<Disk>>,
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
    pub(crate) fn new(prefix: &str, settings: JournalSettings) -> Self {
        Self {
            events: format!("{prefix}.events."),
            settings,
            state: Mutex::new(State {
                records: VecDeque::new(),
                bytes: 0,
                next: 1,
                ids: HashSet::new(),
                consumers: HashMap::new(),
            }),
            appended: Notify::new(),
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
            state.trim(&self.settings);
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
        if let Err(e) = file.flush(&consumers, first) {
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
        state.trim(&self.settings);
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

enum Next {
    Record(Delivery),
    Wait,
    End,
}

impl State {
    /// Drops records every consumer is done with, and those past the bounds (counted as lost
    /// for each consumer that had not acknowledged them).
    /// Whether it dropped any.
    fn trim(&mut self, settings: &JournalSettings) -> bool {
        let now = Instant::now();
        let mut dropped = false;
        while let Some(front) = self.records.front() {
            let sequence = front.sequence;
            let done = self.consumers.values().all(|c| c.floor > sequence);
            let expired = self.bytes > settings.max_bytes || now.duration_since(front.at) > settings.max_age;
            if !done && !expired {
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
    pub(crate) fn new(bus: Arc<dyn Bus>, inner: Arc<Inner>) -> Self {
        Self { bus, inner }
    }

    /// A journal of the events under `prefix` kept in the SQLite file at `path` as well as in
    /// memory (created if missing; what it holds is delivered again), publishing on `bus`.
    /// Must be called within a Tokio runtime: a task brings acknowledgements to the file.
    pub fn persistent(
        bus: Arc<dyn Bus>,
        prefix: &str,
        settings: JournalSettings,
        path: &Path,
    ) -> Result<Self, BusError> {
        let (file, loaded) = Disk::open(path)?;
        let mut inner = Inner::new(prefix, settings);
        {
            let state = inner.state.get_mut().unwrap_or_else(PoisonError::into_inner);
            state.next = loaded.next.max(loaded.rows.last().map_or(1, |r| r.sequence + 1));
            let (now, now_ms) = (Instant::now(), disk::now_ms());
            for row in loaded.rows.into_iter().filter(|r| r.subject.starts_with(&inner.events)) {
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
        }
        inner.disk = Some(Mutex::new(file));
        let inner = Arc::new(inner);
        inner.dirty.store(true, Ordering::Release);
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(disk::FLUSH_EVERY);
            loop {
                every.tick().await;
                match weak.upgrade() {
                    Some(inner) => inner.flush(),
                    None => break,
                }
            }
        });
        Ok(Self { bus, inner })
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
            let mut state = self.inner.lock();
            let (at, at_ms) = (Instant::now(), disk::now_ms());
            let mut stored: Vec<Stored> = Vec::new();
            let mut batch_ids = HashSet::new();
            let mut next = state.next;
            for record in records {
                if !record.subject.starts_with(&self.inner.events) {
                    published.push(record);
                    continue;
                }
                if state.ids.contains(&record.id) || !batch_ids.insert(record.id.clone()) {
                    continue;
                }
                stored.push(Stored {
                    sequence: next,
                    at,
                    at_ms,
                    subject: record.subject.clone(),
                    payload: record.payload.clone(),
                    id: record.id.clone(),
                });
                next += 1;
                published.push(record);
            }
            // In the file first: a record is appended once it is there.
            if let Some(disk) = &self.inner.disk
                && !stored.is_empty()
            {
                let rows: Vec<Row> = stored
                    .iter()
                    .map(|s| Row {
                        sequence: s.sequence,
                        at_ms: s.at_ms,
                        subject: s.subject.clone(),
                        payload: s.payload.clone(),
                        id: s.id.clone(),
                    })
                    .collect();
                disk.lock().unwrap_or_else(PoisonError::into_inner).append(&rows, next)?;
            }
            state.next = next;
            for record in stored {
                state.bytes += record.payload.len() as u64;
                state.ids.insert(record.id.clone());
                state.records.push_back(record);
            }
            state.trim(&self.inner.settings);
        }
        self.inner.dirty.store(true, Ordering::Release);
        self.inner.appended.notify_waiters();
        for record in published {
            self.bus.publish(record.subject, record.payload).await?;
        }
        Ok(())
    }

    /// The bound on events in hand is the consumer's business here.
    async fn create_consumer(&self, name: &str, _in_hand: usize) -> Result<(), BusError> {
        self.inner.lock().create(name);
        self.inner.dirty.store(true, Ordering::Release);
        self.inner.flush();
        Ok(())
    }

    async fn consume(&self, name: &str, _in_hand: usize) -> Result<Deliveries, BusError> {
        let opening = {
            let mut state = self.inner.lock();
            let consumer = state.create(name);
            consumer.opening += 1;
            consumer.cursor = consumer.floor;
            consumer.opening
        };
        // The previous stream of this consumer, if any, ends at its next look.
        self.inner.appended.notify_waiters();
        let inner = self.inner.clone();
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

    async fn state(&self, name: &str) -> Result<Option<ConsumerState>, BusError> {
        let mut state = self.inner.lock();
        if state.trim(&self.inner.settings) {
            self.inner.dirty.store(true, Ordering::Release);
        }
        let next = state.next;
        Ok(state
            .consumers
            .get(name)
            .map(|c| ConsumerState { backlog: next - c.floor - c.acked.len() as u64, lost: c.lost }))
    }

    async fn remove_consumer(&self, name: &str) -> Result<(), BusError> {
        self.inner.forget(|consumers| {
            consumers.remove(name);
        });
        Ok(())
    }

    async fn remove_all(&self) -> Result<(), BusError> {
        self.inner.forget(HashMap::clear);
        Ok(())
    }
}
