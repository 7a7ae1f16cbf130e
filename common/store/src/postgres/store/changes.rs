//! The configuration change log in PostgreSQL: logging a change and reading what changed since a
//! revision.

use tokio_postgres::types::Json;
use zonecast_model::ConfigChanged;

use crate::postgres::{Db, PgStore};
use crate::{CHANGES_KEPT, ChangeLog, ChangeReader, Result, codec};

#[async_trait::async_trait]
impl ChangeLog for PgStore {
    async fn log_change(&self, change: &ConfigChanged) -> Result<u64> {
        let client = self.client().await?;
        // One statement: the counter row stays locked until it commits, so a later revision
        // can never be visible before an earlier one.
        let stmt = client
            .prepare_cached(
                "WITH r AS (UPDATE config_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision),
                      pruned AS (DELETE FROM config_changes WHERE revision <= (SELECT revision FROM r) - $2)
                 INSERT INTO config_changes (revision, change) SELECT revision, $1 FROM r RETURNING revision",
            )
            .await
            .db()?;
        let row = client.query_one(&stmt, &[&Json(change), &codec::counter(CHANGES_KEPT)]).await.db()?;
        Ok(codec::uncounter(row.try_get(0).db()?))
    }
}

#[async_trait::async_trait]
impl ChangeReader for PgStore {
    async fn revision(&self) -> Result<u64> {
        let client = self.client().await?;
        let stmt = client.prepare_cached("SELECT revision FROM config_revision WHERE id = 1").await.db()?;
        Ok(codec::uncounter(client.query_one(&stmt, &[]).await.db()?.try_get(0).db()?))
    }

    async fn changes_since(&self, revision: u64) -> Result<Option<Vec<ConfigChanged>>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT revision, change FROM config_changes WHERE revision > $1 ORDER BY revision")
            .await
            .db()?;
        let rows = client.query(&stmt, &[&codec::counter(revision)]).await.db()?;
        let changes = rows
            .iter()
            .map(|row| {
                let Json(mut change): Json<ConfigChanged> = row.try_get(1).db()?;
                change.revision = codec::uncounter(row.try_get(0).db()?);
                Ok(change)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(crate::roles::contiguous(revision, changes))
    }
}
