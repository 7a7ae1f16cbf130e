//! The embedded SQLite store of the all-in-one binary: one file, one connection behind a
//! mutex, every call on tokio's blocking pool.

mod store;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode};

use crate::{Result, StoreError, migrate};

/// How long a statement waits for another process's lock on the file before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Pages in the write-ahead log from which a commit checkpoints it (SQLite's default is 1,000).
/// The collision writes rewrite the same few hundred pages commit after commit, and a checkpoint
/// copies each page once however often the log holds it: at 1,000 pages a checkpoint copied
/// some 600, at 16,384 one copies about as many for sixteen times the commits. The log takes about
/// 64 MiB on disk.
const CHECKPOINT_PAGES: i64 = 16_384;

/// The page cache, in KiB (SQLite's default is 2,000): the collisions, devices and zones of a
/// large site stay in memory instead of being read back from the file at every write.
const CACHE_KIB: i64 = 16_384;

/// [`crate::Store`] over one SQLite file (WAL journal, foreign keys enforced).
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed, parent directory included) the SQLite file at `path` and
    /// applies missing migrations. Blocking: call it at start-up or in `spawn_blocking`.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Unavailable(format!("cannot create directory {}: {e}", dir.display())))?;
        }
        let unavailable =
            |e: rusqlite::Error| StoreError::Unavailable(format!("cannot open SQLite file {}: {e}", path.display()));
        let mut conn = Connection::open(path).map_err(unavailable)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(unavailable)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(unavailable)?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), mode, "SQLite file is not in WAL mode");
        }
        // NORMAL is durable enough with WAL (a power cut may lose the last commits, never
        // corrupts) and avoids an fsync per collision batch.
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(unavailable)?;
        conn.pragma_update(None, "foreign_keys", true).map_err(unavailable)?;
        conn.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES).map_err(unavailable)?;
        conn.pragma_update(None, "cache_size", -CACHE_KIB).map_err(unavailable)?;
        migrate::sqlite(&mut conn)?;
        tracing::info!(path = %path.display(), "opened SQLite store");
        Ok(Self { conn: Arc::new(Mutex::new(conn)) })
    }

    /// Runs `f` with the connection on the blocking pool.
    async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            // A panic while the lock was held left no open transaction (rusqlite rolls back on
            // drop), so the connection is still good.
            let mut guard = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut guard)
        })
        .await
        .map_err(|e| StoreError::Backend(format!("SQLite task failed: {e}")))?
    }
}

/// Whether `e` is the violation of a foreign key. SQLite reports an `ON DELETE RESTRICT`
/// action as a trigger constraint; the schema has no triggers of its own, so that code can
/// only mean a foreign key here.
fn is_foreign_key(e: &rusqlite::Error) -> bool {
    e.sqlite_error().is_some_and(|f| {
        f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
            || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_TRIGGER
    })
}

/// Whether `e` is the violation of a primary key or unique constraint.
fn is_unique(e: &rusqlite::Error) -> bool {
    e.sqlite_error().is_some_and(|f| {
        f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
            || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
    })
}

/// A rusqlite error as a store error: a locked or unreadable file is `Unavailable`.
fn store_error(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::DiskFull
            | ErrorCode::SystemIoFailure
            | ErrorCode::ReadOnly,
        ) => StoreError::Unavailable(format!("SQLite: {e}")),
        _ => StoreError::Backend(format!("SQLite: {e}")),
    }
}

/// `.db()?` turns rusqlite results into store results.
trait Db<T> {
    fn db(self) -> Result<T>;
}

impl<T> Db<T> for rusqlite::Result<T> {
    fn db(self) -> Result<T> {
        self.map_err(store_error)
    }
}
