//! Opening a [`MemoryJournal`]: in memory only, or loaded from its SQLite file with a task that
//! brings acknowledgements to the file.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{Consumer, Log, Logs, MemoryJournal, READER_TAIL_BYTES, READER_TAIL_RECORDS, Stored};
use crate::journal::disk::{self, Disk};
use crate::journal::{JournalSettings, Kind};
use crate::{Bus, BusError};

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
            let mut inner = Log::new(kind, prefix, settings);
            let state = inner.state.get_mut().unwrap_or_else(PoisonError::into_inner);
            state.next = loaded.next.max(loaded.rows.last().map_or(1, |r| r.sequence + 1));
            state.last_at_ms = loaded.rows.iter().map(|r| r.at_ms).max().unwrap_or(0);
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
