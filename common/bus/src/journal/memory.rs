//! The journal of one process: events kept in memory while a consumer still needs them,
//! within the journal's age and size bounds.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::Notify;

use super::{Ack, ConsumerState, Deliveries, Delivery, Journal, JournalSettings, Record};
use crate::{Bus, BusError, InProcessBus};

/// A [`Journal`] in memory, for the all-in-one: records are published on its in-process bus,
/// and events are kept until every consumer has acknowledged them (a record no consumer needs
/// is not kept at all: a consumer created later starts with later records), or until they
/// pass the age or size bound. What it keeps does not survive the process.
pub struct MemoryJournal {
    bus: InProcessBus,
    inner: Arc<Inner>,
}

/// The state behind every [`MemoryJournal`] of one bus and subject prefix.
pub(crate) struct Inner {
    /// `<prefix>.events.`: the subjects kept.
    events: String,
    settings: JournalSettings,
    state: Mutex<State>,
    appended: Notify,
}

struct Stored {
    sequence: u64,
    at: Instant,
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
    fn trim(&mut self, settings: &JournalSettings) {
        let now = Instant::now();
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
            }
        }
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

impl MemoryJournal {
    pub(crate) fn new(bus: InProcessBus, inner: Arc<Inner>) -> Self {
        Self { bus, inner }
    }
}

#[async_trait::async_trait]
impl Journal for MemoryJournal {
    async fn append(&self, records: Vec<Record>) -> Result<(), BusError> {
        let mut published = Vec::with_capacity(records.len());
        {
            let mut state = self.inner.lock();
            for record in records {
                crate::pattern::validate_subject(&record.subject)?;
                if !record.subject.starts_with(&self.inner.events) {
                    published.push(record);
                    continue;
                }
                if !state.ids.insert(record.id.clone()) {
                    continue;
                }
                let sequence = state.next;
                state.next += 1;
                state.bytes += record.payload.len() as u64;
                state.records.push_back(Stored {
                    sequence,
                    at: Instant::now(),
                    subject: record.subject.clone(),
                    payload: record.payload.clone(),
                    id: record.id.clone(),
                });
                published.push(record);
            }
            state.trim(&self.inner.settings);
        }
        self.inner.appended.notify_waiters();
        for record in published {
            self.bus.publish(record.subject, record.payload).await?;
        }
        Ok(())
    }

    async fn create_consumer(&self, name: &str) -> Result<(), BusError> {
        self.inner.lock().create(name);
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
        state.trim(&self.inner.settings);
        let next = state.next;
        Ok(state
            .consumers
            .get(name)
            .map(|c| ConsumerState { backlog: next - c.floor - c.acked.len() as u64, lost: c.lost }))
    }

    async fn remove_consumer(&self, name: &str) -> Result<(), BusError> {
        let mut state = self.inner.lock();
        state.consumers.remove(name);
        state.trim(&self.inner.settings);
        drop(state);
        self.inner.appended.notify_waiters();
        Ok(())
    }

    async fn remove_all(&self) -> Result<(), BusError> {
        let mut state = self.inner.lock();
        state.consumers.clear();
        state.trim(&self.inner.settings);
        drop(state);
        self.inner.appended.notify_waiters();
        Ok(())
    }
}
