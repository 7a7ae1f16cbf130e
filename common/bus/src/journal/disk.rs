//! The file behind a persistent in-process journal: an SQLite database holding, per kind of
//! record (events in the `journal_*` tables, action requests in the `journal_actions_*`
//! tables), the records, each consumer's floor (every record before it is acknowledged or
//! counted lost) and the next sequence.
//!
//! Records are written when they are appended, before the append returns: an append writes its
//! records and nothing else. The next sequence is the one after the newest record, and is
//! written down only when records are deleted, in the same transaction, in case the newest go
//! too. The times records are stored at never go back (an append is stamped no earlier than the
//! one before it), so the records are in order of time as well as sequence, and a time is found
//! by halving the sequence range ([`first_at`]) rather than through an index of its own that
//! every append would have to write. Floors are written
//! in the background (every [`FLUSH_EVERY`]): a crash can lose the last acknowledgements, and
//! those records are delivered again after the restart (at least once; the copies carry the
//! same id). Action requests every consumer is done with are deleted in the same flush; events
//! stay for the journal's whole retention, oldest deleted first, since they are the event
//! history ([`history`]), read on a connection of its own so that it holds up no append.
//!
//! Checkpoints (copying the write-ahead log into the file, with its two fsyncs) run on a
//! thread and a connection of their own ([`checkpoint_apart`]): SQLite's own would run inside
//! the append that fills the log, and hold up every evaluator's next events by milliseconds.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use rusqlite::hooks::Wal;
use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, MAIN_DB, params};

use super::history::{Pager, from_ms, to_ms};
use super::{HistoryPage, HistoryQuery, HistoryRecord, HistoryStart, JournalSettings, Kind};
use crate::BusError;

/// How often acknowledgements reach the file.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// How often events past the retention leave the file.
pub(crate) const EXPIRE_EVERY: Duration = Duration::from_secs(1);

/// One record as stored.
pub(crate) struct Row {
    pub sequence: u64,
    /// Milliseconds since the Unix epoch when it was appended.
    pub at_ms: u64,
    pub subject: String,
    pub payload: Bytes,
    pub id: String,
}

/// What the file holds at start for one kind.
#[derive(Default)]
pub(crate) struct Loaded {
    pub next: u64,
    pub consumers: Vec<(String, u64, u64)>,
    pub rows: Vec<Row>,
}

pub(crate) struct Disk {
    connection: Connection,
    settings: JournalSettings,
    /// The payload bytes of the events in the file.
    event_bytes: u64,
}

/// Records read at a time by a history reading or a load.
const CHUNK: i64 = 512;

/// The tables of one kind: records, consumers, next sequence.
fn tables(kind: Kind) -> (&'static str, &'static str, &'static str) {
    match kind {
        Kind::Events => ("journal_records", "journal_consumers", "journal_next"),
        Kind::Actions => ("journal_actions_records", "journal_actions_consumers", "journal_actions_next"),
    }
}

/// The statement an append runs for each record of one kind. Written out rather than
/// formatted, since every append looks its cached statement up by it.
fn insert_statement(kind: Kind) -> &'static str {
    match kind {
        Kind::Events => {
            "INSERT OR REPLACE INTO journal_records (sequence, at_ms, subject, payload, id) VALUES (?1, ?2, ?3, ?4, ?5)"
        }
        Kind::Actions => {
            "INSERT OR REPLACE INTO journal_actions_records (sequence, at_ms, subject, payload, id) VALUES (?1, ?2, ?3, ?4, ?5)"
        }
    }
}

/// Writes down the next sequence of `kind` (the one after its newest record) before records
/// are deleted: once the newest are gone, the file no longer shows it.
fn keep_next(tx: &rusqlite::Transaction<'_>, kind: Kind) -> Result<(), BusError> {
    let (records, _, next) = tables(kind);
    tx.execute(
        &format!("UPDATE {next} SET next = MAX(next, (SELECT COALESCE(MAX(sequence) + 1, 1) FROM {records}))"),
        [],
    )
    .map(drop)
    .map_err(error)
}

/// The sequence of the first event stored at `at_ms` or later, `None` when every event is
/// older: the range of sequences halved, each look one step down the records' own tree. Stored
/// times never go back, so the records older than `at_ms` are the ones before it.
fn first_at(connection: &Connection, at_ms: u64) -> Result<Option<i64>, BusError> {
    let at_ms = i64::try_from(at_ms).unwrap_or(i64::MAX);
    let (first, last): (Option<i64>, Option<i64>) = connection
        // Two subqueries: SQLite reads one end of the tree for a lone MIN or MAX, but the
        // whole table for both in one.
        .query_row(
            "SELECT (SELECT MIN(sequence) FROM journal_records), (SELECT MAX(sequence) FROM journal_records)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(error)?;
    let (Some(mut low), Some(last)) = (first, last) else { return Ok(None) };
    let mut at = connection
        .prepare_cached("SELECT sequence, at_ms FROM journal_records WHERE sequence >= ?1 ORDER BY sequence LIMIT 1")
        .map_err(error)?;
    // Every record before `low` is older than `at_ms`; every record from `high` on is not.
    let mut high = last + 1;
    while low < high {
        let middle = low + (high - low) / 2;
        let found: Option<(i64, i64)> = at
            .query_row([middle], |r| Ok((r.get(0)?, r.get(1)?)))
            .map(Some)
            .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })
            .map_err(error)?;
        match found {
            Some((sequence, stored)) if sequence < high => {
                if stored < at_ms {
                    low = sequence + 1;
                } else {
                    high = sequence;
                }
            }
            // No record from `middle` up to `high`.
            _ => high = middle,
        }
    }
    Ok((low <= last).then_some(low))
}

fn error(e: rusqlite::Error) -> BusError {
    BusError::Journal(format!("journal file: {e}"))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Disk {
    /// Opens (or creates) the journal file at `path`; what it loads of the events is what
    /// consumers still need and the readers' tail (the newest `tail` records within
    /// `tail_bytes`), not the whole history.
    pub(crate) fn open(
        path: &Path,
        settings: JournalSettings,
        tail: usize,
        tail_bytes: u64,
    ) -> Result<(Self, HashMap<Kind, Loaded>), BusError> {
        let mut connection = Connection::open(path).map_err(error)?;
        connection.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").map_err(error)?;
        checkpoint_apart(&mut connection, path)?;
        let mut loaded = HashMap::new();
        for kind in Kind::ALL {
            let (records, consumers, next) = tables(kind);
            connection
                .execute_batch(&format!(
                    "CREATE TABLE IF NOT EXISTS {records} (
                         sequence INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, subject TEXT NOT NULL,
                         payload BLOB NOT NULL, id TEXT NOT NULL);
                     CREATE TABLE IF NOT EXISTS {consumers} (
                         name TEXT PRIMARY KEY, floor INTEGER NOT NULL, lost INTEGER NOT NULL);
                     CREATE TABLE IF NOT EXISTS {next} (
                         only INTEGER PRIMARY KEY CHECK (only = 1), next INTEGER NOT NULL);
                     INSERT OR IGNORE INTO {next} (only, next) VALUES (1, 1);"
                ))
                .map_err(error)?;
        }
        // Events are found by time through their sequence ([`first_at`]); files of earlier
        // releases kept an index of the times, which every append had to write.
        connection.execute_batch("DROP INDEX IF EXISTS journal_records_at;").map_err(error)?;
        let event_bytes: i64 = connection
            .query_row("SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM journal_records", [], |r| r.get(0))
            .map_err(error)?;
        let mut disk = Self { connection, settings, event_bytes: event_bytes as u64 };
        disk.expire()?;
        for kind in Kind::ALL {
            let from = match kind {
                Kind::Events => disk.events_needed(tail, tail_bytes)?,
                Kind::Actions => 0,
            };
            loaded.insert(kind, Self::load(&disk.connection, kind, from)?);
        }
        Ok((disk, loaded))
    }

    /// The first event memory needs: the lowest consumer floor or the start of the readers'
    /// tail, whichever is older.
    fn events_needed(&self, tail: usize, tail_bytes: u64) -> Result<u64, BusError> {
        let floor: Option<i64> =
            self.connection.query_row("SELECT MIN(floor) FROM journal_consumers", [], |r| r.get(0)).map_err(error)?;
        let mut statement = self
            .connection
            .prepare("SELECT sequence, LENGTH(payload) FROM journal_records ORDER BY sequence DESC LIMIT ?1")
            .map_err(error)?;
        let newest = statement
            .query_map([tail as i64], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .map_err(error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(error)?;
        let (mut bytes, mut tail_start) = (0u64, i64::MAX);
        for (sequence, length) in newest {
            bytes += length as u64;
            if bytes > tail_bytes {
                break;
            }
            tail_start = sequence;
        }
        Ok(floor.map_or(tail_start, |floor| floor.min(tail_start)).max(0) as u64)
    }

    fn load(connection: &Connection, kind: Kind, from: u64) -> Result<Loaded, BusError> {
        let (records, consumers, next) = tables(kind);
        let next: i64 = connection
            .query_row(
                &format!("SELECT MAX(next, COALESCE((SELECT MAX(sequence) + 1 FROM {records}), 1)) FROM {next}"),
                [],
                |r| r.get(0),
            )
            .map_err(error)?;
        let consumers = {
            let mut statement =
                connection.prepare(&format!("SELECT name, floor, lost FROM {consumers}")).map_err(error)?;
            statement
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64)))
                .map_err(error)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(error)?
        };
        let rows = {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT sequence, at_ms, subject, payload, id FROM {records} WHERE sequence >= ?1 ORDER BY sequence"
                ))
                .map_err(error)?;
            statement
                .query_map([from as i64], |r| {
                    Ok(Row {
                        sequence: r.get::<_, i64>(0)? as u64,
                        at_ms: r.get::<_, i64>(1)? as u64,
                        subject: r.get(2)?,
                        payload: Bytes::from(r.get::<_, Vec<u8>>(3)?),
                        id: r.get(4)?,
                    })
                })
                .map_err(error)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(error)?
        };
        Ok(Loaded { next: next as u64, consumers, rows })
    }

    /// Stores appended records of each kind, in one transaction.
    pub(crate) fn append(&mut self, batches: &[(Kind, &[Row])]) -> Result<(), BusError> {
        let tx = self.connection.transaction().map_err(error)?;
        for (kind, rows) in batches {
            if rows.is_empty() {
                continue;
            }
            let mut insert = tx.prepare_cached(insert_statement(*kind)).map_err(error)?;
            for row in *rows {
                if *kind == Kind::Events {
                    self.event_bytes += row.payload.len() as u64;
                }
                insert
                    .execute(params![row.sequence as i64, row.at_ms as i64, row.subject, &row.payload[..], row.id])
                    .map_err(error)?;
            }
        }
        tx.commit().map_err(error)
    }

    /// Writes every consumer's floor and lost count of `kind` and forgets removed consumers;
    /// deletes the action requests before `first` (the first one still kept). Events leave by
    /// the retention only ([`Disk::expire`]).
    pub(crate) fn flush(&mut self, kind: Kind, consumers: &[(String, u64, u64)], first: u64) -> Result<(), BusError> {
        let (records, consumer_table, _) = tables(kind);
        let tx = self.connection.transaction().map_err(error)?;
        tx.execute(&format!("DELETE FROM {consumer_table}"), []).map_err(error)?;
        {
            let mut insert = tx
                .prepare_cached(&format!("INSERT INTO {consumer_table} (name, floor, lost) VALUES (?1, ?2, ?3)"))
                .map_err(error)?;
            for (name, floor, lost) in consumers {
                insert.execute(params![name, *floor as i64, *lost as i64]).map_err(error)?;
            }
        }
        if kind == Kind::Actions {
            keep_next(&tx, kind)?;
            tx.execute(&format!("DELETE FROM {records} WHERE sequence < ?1"), [first as i64]).map_err(error)?;
        }
        tx.commit().map_err(error)
    }

    /// Deletes the events older than the retention, then the oldest ones while the file holds
    /// more payload than it may.
    pub(crate) fn expire(&mut self) -> Result<(), BusError> {
        let max_age = u64::try_from(self.settings.max_age.as_millis()).unwrap_or(u64::MAX);
        let cutoff = now_ms().saturating_sub(max_age);
        let tx = self.connection.transaction().map_err(error)?;
        keep_next(&tx, Kind::Events)?;
        // The events before the first one stored since the cutoff: every one when none was.
        let kept = first_at(&tx, cutoff)?.unwrap_or(i64::MAX);
        let aged: i64 = {
            let mut delete = tx
                .prepare_cached("DELETE FROM journal_records WHERE sequence < ?1 RETURNING LENGTH(payload)")
                .map_err(error)?;
            delete
                .query_map([kept], |r| r.get::<_, i64>(0))
                .map_err(error)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(error)?
                .into_iter()
                .sum()
        };
        self.event_bytes = self.event_bytes.saturating_sub(aged as u64);
        while self.event_bytes > self.settings.max_bytes {
            let oldest = {
                let mut select = tx
                    .prepare_cached("SELECT sequence, LENGTH(payload) FROM journal_records ORDER BY sequence LIMIT ?1")
                    .map_err(error)?;
                select
                    .query_map([CHUNK], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                    .map_err(error)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(error)?
            };
            if oldest.is_empty() {
                self.event_bytes = 0;
                break;
            }
            let mut upto = 0;
            for (sequence, length) in oldest {
                upto = sequence;
                self.event_bytes = self.event_bytes.saturating_sub(length as u64);
                if self.event_bytes <= self.settings.max_bytes {
                    break;
                }
            }
            tx.execute("DELETE FROM journal_records WHERE sequence <= ?1", [upto]).map_err(error)?;
        }
        tx.commit().map_err(error)
    }

    /// Deletes every record of `kind` (the journal removed).
    pub(crate) fn clear(&mut self, kind: Kind) -> Result<(), BusError> {
        let (records, _, _) = tables(kind);
        let tx = self.connection.transaction().map_err(error)?;
        keep_next(&tx, kind)?;
        tx.execute(&format!("DELETE FROM {records}"), []).map_err(error)?;
        tx.commit().map_err(error)?;
        if kind == Kind::Events {
            self.event_bytes = 0;
        }
        Ok(())
    }
}

/// Pages in the write-ahead log from which it is checkpointed: SQLite's own default.
const CHECKPOINT_PAGES: i32 = 1000;

/// Turns off SQLite's checkpoints on `connection`, the appending one, and has a thread with a
/// connection of its own to the file at `path` checkpoint it instead whenever a commit leaves
/// [`CHECKPOINT_PAGES`] or more in the log. The checkpoint is passive: it copies what no reader
/// still needs, concurrently with the appends, and the next append after a complete one starts
/// the log over. The thread ends once `connection` is closed.
fn checkpoint_apart(connection: &mut Connection, path: &Path) -> Result<(), BusError> {
    let checkpointer = Connection::open(path).map_err(error)?;
    // A connection reads the file, and learns that it has a log to checkpoint, at its first
    // statement.
    checkpointer.execute_batch("PRAGMA journal_mode = WAL;").map_err(error)?;
    // At most one request waits: one checkpoint copies everything committed before it began.
    let (due, requests) = std::sync::mpsc::sync_channel::<()>(1);
    std::thread::Builder::new()
        .name("journal-checkpoint".into())
        .spawn(move || {
            while requests.recv().is_ok() {
                // A log of -1 frames: the connection found no log to checkpoint.
                match checkpointer.wal_checkpoint_v2(Some(MAIN_DB), CheckpointMode::PASSIVE) {
                    Ok((frames, _)) if frames >= 0 => {}
                    Ok(_) => tracing::warn!("journal file not checkpointed: it has no write-ahead log"),
                    Err(e) => {
                        tracing::warn!(error = %e, "journal file not checkpointed; will retry after the next append")
                    }
                }
            }
        })
        .map_err(|e| BusError::Journal(format!("journal file: checkpoint thread: {e}")))?;
    // Set before the hook: the pragma replaces the hook with SQLite's own.
    connection.pragma_update(None, "wal_autocheckpoint", 0).map_err(error)?;
    connection
        .wal_hook(Some(move |_: &mut Wal, pages: std::ffi::c_int| {
            if pages >= CHECKPOINT_PAGES {
                let _ = due.try_send(());
            }
            Ok(())
        }))
        .map_err(error)
}

/// One page of the event history in the file at `path`, read on a connection of its own.
pub(crate) fn history(path: &Path, query: &HistoryQuery) -> Result<HistoryPage, BusError> {
    let connection = Connection::open(path).map_err(error)?;
    // One snapshot for the whole page: a page never sees half of an append.
    let tx = connection.unchecked_transaction().map_err(error)?;
    let last: i64 =
        tx.query_row("SELECT COALESCE(MAX(sequence), 0) FROM journal_records", [], |r| r.get(0)).map_err(error)?;
    let mut pager = Pager::new(query, last as u64, true)?;
    let mut cursor: i64 = match query.start {
        HistoryStart::Oldest => 0,
        HistoryStart::Sequence(sequence) => i64::try_from(sequence).unwrap_or(i64::MAX),
        HistoryStart::At(at) => match first_at(&tx, to_ms(at))? {
            Some(sequence) => sequence,
            None => return Ok(pager.finish()),
        },
    };
    let mut select = tx
        .prepare("SELECT sequence, at_ms, subject, payload FROM journal_records WHERE sequence >= ?1 ORDER BY sequence LIMIT ?2")
        .map_err(error)?;
    loop {
        let chunk = select
            .query_map([cursor, CHUNK], |r| {
                Ok(HistoryRecord {
                    sequence: r.get::<_, i64>(0)? as u64,
                    stored: from_ms(r.get::<_, i64>(1)? as u64),
                    subject: r.get(2)?,
                    payload: Bytes::from(r.get::<_, Vec<u8>>(3)?),
                })
            })
            .map_err(error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(error)?;
        if chunk.is_empty() {
            break;
        }
        for record in chunk {
            cursor = record.sequence as i64 + 1;
            if !pager.offer(record, true) {
                return Ok(pager.finish());
            }
        }
    }
    Ok(pager.finish())
}
