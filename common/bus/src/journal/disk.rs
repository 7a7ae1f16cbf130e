//! The file behind a persistent in-process journal: an SQLite database holding, per kind of
//! record (events in the `journal_*` tables, action requests in the `journal_actions_*`
//! tables), the records still needed, each consumer's floor (every record before it is
//! acknowledged or counted lost) and the next sequence.
//!
//! Records are written when they are appended, before the append returns. Floors are written
//! in the background (every [`FLUSH_EVERY`]): a crash can lose the last acknowledgements, and
//! those records are delivered again after the restart (at least once; the copies carry the
//! same id). Records every consumer is done with are deleted in the same flush.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use rusqlite::{Connection, params};

use super::Kind;
use crate::BusError;

/// How often acknowledgements reach the file.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(100);

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
}

/// The tables of one kind: records, consumers, next sequence.
fn tables(kind: Kind) -> (&'static str, &'static str, &'static str) {
    match kind {
        Kind::Events => ("journal_records", "journal_consumers", "journal_next"),
        Kind::Actions => ("journal_actions_records", "journal_actions_consumers", "journal_actions_next"),
    }
}

fn error(e: rusqlite::Error) -> BusError {
    BusError::Journal(format!("journal file: {e}"))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Disk {
    /// Opens (or creates) the journal file at `path`.
    pub(crate) fn open(path: &Path) -> Result<(Self, HashMap<Kind, Loaded>), BusError> {
        let connection = Connection::open(path).map_err(error)?;
        connection.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").map_err(error)?;
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
            loaded.insert(kind, Self::load(&connection, kind)?);
        }
        Ok((Self { connection }, loaded))
    }

    fn load(connection: &Connection, kind: Kind) -> Result<Loaded, BusError> {
        let (records, consumers, next) = tables(kind);
        let next: i64 = connection.query_row(&format!("SELECT next FROM {next}"), [], |r| r.get(0)).map_err(error)?;
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
                .prepare(&format!("SELECT sequence, at_ms, subject, payload, id FROM {records} ORDER BY sequence"))
                .map_err(error)?;
            statement
                .query_map([], |r| {
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

    /// Stores appended records and the next sequence of each kind, in one transaction.
    pub(crate) fn append(&mut self, batches: &[(Kind, &[Row], u64)]) -> Result<(), BusError> {
        let tx = self.connection.transaction().map_err(error)?;
        for (kind, rows, next) in batches {
            if rows.is_empty() {
                continue;
            }
            let (records, _, next_table) = tables(*kind);
            let mut insert = tx
                .prepare_cached(&format!(
                    "INSERT OR REPLACE INTO {records} (sequence, at_ms, subject, payload, id)
                     VALUES (?1, ?2, ?3, ?4, ?5)"
                ))
                .map_err(error)?;
            for row in *rows {
                insert
                    .execute(params![row.sequence as i64, row.at_ms as i64, row.subject, &row.payload[..], row.id])
                    .map_err(error)?;
            }
            tx.execute(&format!("UPDATE {next_table} SET next = ?1"), [*next as i64]).map_err(error)?;
        }
        tx.commit().map_err(error)
    }

    /// Writes every consumer's floor and lost count of `kind`, forgets removed consumers, and
    /// deletes the records before `first` (the first one still kept).
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
        tx.execute(&format!("DELETE FROM {records} WHERE sequence < ?1"), [first as i64]).map_err(error)?;
        tx.commit().map_err(error)
    }
}
