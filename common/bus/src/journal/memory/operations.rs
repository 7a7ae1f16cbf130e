//! The [`Journal`] operations of a [`MemoryJournal`]: appending, consuming, reading and paging
//! through the history.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use foldhash::{HashSet, HashSetExt};

use super::{Log, MemoryJournal, Next, READ_AT_ONCE, Stored};
use crate::BusError;
use crate::journal::disk::{self, Row};
use crate::journal::history::{Pager, to_ms};
use crate::journal::{
    ConsumerState, Deliveries, HistoryPage, HistoryQuery, HistoryStart, Journal, Kind, Read, Reads, Record,
};

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
            let (at, at_ms) = (Instant::now(), disk::now_ms().max(events.last_at_ms).max(actions.last_at_ms));
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
                disk.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .append(&[(Kind::Events, e.rows().as_slice()), (Kind::Actions, a.rows().as_slice())])?;
            }
            let [e, a] = batches;
            for (state, batch, inner) in [(&mut events, e, &self.logs.events), (&mut actions, a, &self.logs.actions)] {
                state.next = batch.next;
                state.last_at_ms = at_ms;
                for record in batch.stored {
                    state.bytes += record.payload.len() as u64;
                    state.ids.insert(record.id.clone());
                    state.pass_over(record.sequence, &record.subject);
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
        let name: Arc<str> = Arc::from(name);
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

    /// Records on other subjects are passed over as they are appended: the consumer's stream
    /// never holds them, and they count as acknowledged.
    async fn create_narrowed(&self, kind: Kind, name: &str, filter: &str, _in_hand: usize) -> Result<(), BusError> {
        let inner = self.logs.of(kind);
        inner.lock().narrow(name, filter)?;
        inner.dirty.store(true, Ordering::Release);
        inner.flush();
        Ok(())
    }

    async fn consume_narrowed(
        &self,
        kind: Kind,
        name: &str,
        filter: &str,
        in_hand: usize,
    ) -> Result<Deliveries, BusError> {
        self.create_narrowed(kind, name, filter, in_hand).await?;
        self.consume(kind, name, in_hand).await
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
            |(inner, mut cursor, mut taken): (Arc<Log>, u64, VecDeque<Read>)| async move {
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
                if !pager.offer(record, true) {
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
