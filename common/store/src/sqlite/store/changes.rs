//! The configuration change log in SQLite: logging a change and reading what changed since a revision.

use rusqlite::params;
use zonecast_model::ConfigChanged;

use super::write;
use crate::codec::{self, from_json, to_json};
use crate::sqlite::{Db, SqliteStore};
use crate::{CHANGES_KEPT, ChangeLog, ChangeReader, Result};

#[async_trait::async_trait]
impl ChangeLog for SqliteStore {
    async fn log_change(&self, change: &ConfigChanged) -> Result<u64> {
        let text = to_json(change)?;
        self.run(move |conn| {
            let tx = write(conn)?;
            let revision: i64 = tx
                .prepare_cached("UPDATE config_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision")
                .db()?
                .query_row([], |r| r.get(0))
                .db()?;
            tx.prepare_cached("INSERT INTO config_changes (revision, change) VALUES (?1, ?2)")
                .db()?
                .execute(params![revision, text])
                .db()?;
            tx.prepare_cached("DELETE FROM config_changes WHERE revision <= ?1")
                .db()?
                .execute([revision - codec::counter(CHANGES_KEPT)])
                .db()?;
            tx.commit().db()?;
            Ok(codec::uncounter(revision))
        })
        .await
    }
}

#[async_trait::async_trait]
impl ChangeReader for SqliteStore {
    async fn revision(&self) -> Result<u64> {
        self.run(|conn| {
            let revision: i64 = conn
                .prepare_cached("SELECT revision FROM config_revision WHERE id = 1")
                .db()?
                .query_row([], |r| r.get(0))
                .db()?;
            Ok(codec::uncounter(revision))
        })
        .await
    }

    async fn changes_since(&self, revision: u64) -> Result<Option<Vec<ConfigChanged>>> {
        self.run(move |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT revision, change FROM config_changes WHERE revision > ?1 ORDER BY revision")
                .db()?;
            let rows = stmt
                .query_map([codec::counter(revision)], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            let changes = rows
                .into_iter()
                .map(|(n, text)| {
                    let mut change: ConfigChanged = from_json(&text, "configuration change")?;
                    change.revision = codec::uncounter(n);
                    Ok(change)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(crate::roles::contiguous(revision, changes))
        })
        .await
    }
}
