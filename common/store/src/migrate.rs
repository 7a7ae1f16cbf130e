//! Schema migrations: the embedded SQL files of each dialect and the runner that applies the
//! missing ones in order, each in its own transaction, recording them in `zonecast_migrations`.

use crate::{Result, StoreError};

/// One schema step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// Position in the sequence, from 1 (the `V<n>` of the file name).
    pub version: i64,
    /// The rest of the file name.
    pub name: &'static str,
    /// The statements.
    pub sql: &'static str,
}

/// PostgreSQL migrations, in order.
pub(crate) const POSTGRES: &[Migration] = &[
    Migration { version: 1, name: "init", sql: include_str!("../migrations/postgres/V1__init.sql") },
    Migration { version: 2, name: "zone_versions", sql: include_str!("../migrations/postgres/V2__zone_versions.sql") },
    Migration {
        version: 3,
        name: "config_changes",
        sql: include_str!("../migrations/postgres/V3__config_changes.sql"),
    },
    Migration {
        version: 4,
        name: "collision_marks",
        sql: include_str!("../migrations/postgres/V4__collision_marks.sql"),
    },
    Migration { version: 5, name: "devices", sql: include_str!("../migrations/postgres/V5__devices.sql") },
    Migration {
        version: 6,
        name: "evaluator_state",
        sql: include_str!("../migrations/postgres/V6__evaluator_state.sql"),
    },
    Migration { version: 7, name: "alarms", sql: include_str!("../migrations/postgres/V7__alarms.sql") },
    Migration {
        version: 8,
        name: "alarm_conditions",
        sql: include_str!("../migrations/postgres/V8__alarm_conditions.sql"),
    },
];

/// SQLite migrations, in order.
pub(crate) const SQLITE: &[Migration] = &[
    Migration { version: 1, name: "init", sql: include_str!("../migrations/sqlite/V1__init.sql") },
    Migration { version: 2, name: "zone_versions", sql: include_str!("../migrations/sqlite/V2__zone_versions.sql") },
    Migration { version: 3, name: "config_changes", sql: include_str!("../migrations/sqlite/V3__config_changes.sql") },
    Migration {
        version: 4,
        name: "collision_marks",
        sql: include_str!("../migrations/sqlite/V4__collision_marks.sql"),
    },
    Migration { version: 5, name: "devices", sql: include_str!("../migrations/sqlite/V5__devices.sql") },
    Migration {
        version: 6,
        name: "evaluator_state",
        sql: include_str!("../migrations/sqlite/V6__evaluator_state.sql"),
    },
    Migration { version: 7, name: "alarms", sql: include_str!("../migrations/sqlite/V7__alarms.sql") },
    Migration {
        version: 8,
        name: "alarm_conditions",
        sql: include_str!("../migrations/sqlite/V8__alarm_conditions.sql"),
    },
];

/// Key of the PostgreSQL advisory lock held while migrating ("zonecast" in ASCII), so that
/// replicas starting together migrate one at a time.
const PG_LOCK_KEY: i64 = 0x7a6f_6e65_6361_7374;

/// The migrations of `all` not in `applied`, warning about applied ones this binary does
/// not know (a newer replica migrated first; the schema stays compatible within a release).
fn pending<'a>(all: &'a [Migration], applied: &[i64]) -> Vec<&'a Migration> {
    warn_if_newer(all, applied.iter().copied().max().unwrap_or(0));
    all.iter().filter(|m| !applied.contains(&m.version)).collect()
}

fn warn_if_newer(all: &[Migration], newest_applied: i64) {
    let newest = all.last().map_or(0, |m| m.version);
    if newest_applied > newest {
        tracing::warn!(database = newest_applied, binary = newest, "database schema is newer than this binary");
    }
}

/// Applies the missing PostgreSQL migrations over `client`, a connection of its own: the
/// session-level advisory lock is held until it unlocks or the connection closes.
pub(crate) async fn postgres(client: &mut tokio_postgres::Client) -> Result<()> {
    let fail = |e: tokio_postgres::Error| StoreError::Backend(format!("migrating PostgreSQL: {e}"));
    client.execute("SELECT pg_advisory_lock($1)", &[&PG_LOCK_KEY]).await.map_err(fail)?;
    let outcome = postgres_locked(client).await;
    // On failure the caller drops the connection, which releases the lock anyway.
    client.execute("SELECT pg_advisory_unlock($1)", &[&PG_LOCK_KEY]).await.map_err(fail)?;
    outcome
}

async fn postgres_locked(client: &mut tokio_postgres::Client) -> Result<()> {
    let fail = |e: tokio_postgres::Error| StoreError::Backend(format!("migrating PostgreSQL: {e}"));
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS zonecast_migrations (
                version BIGINT PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )",
        )
        .await
        .map_err(fail)?;
    let applied: Vec<i64> = client
        .query("SELECT version FROM zonecast_migrations", &[])
        .await
        .map_err(fail)?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<std::result::Result<_, _>>()
        .map_err(fail)?;
    for m in pending(POSTGRES, &applied) {
        let tx = client.transaction().await.map_err(fail)?;
        tx.batch_execute(m.sql)
            .await
            .map_err(|e| StoreError::Backend(format!("PostgreSQL migration V{}__{} failed: {e}", m.version, m.name)))?;
        tx.execute("INSERT INTO zonecast_migrations (version, name) VALUES ($1, $2)", &[&m.version, &m.name])
            .await
            .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        tracing::info!(version = m.version, name = m.name, "applied PostgreSQL migration");
    }
    Ok(())
}

/// Applies the missing SQLite migrations. Each runs in an IMMEDIATE transaction that first
/// re-reads the applied versions, so two processes opening one file cannot both apply a step.
pub(crate) fn sqlite(conn: &mut rusqlite::Connection) -> Result<()> {
    let fail = |e: rusqlite::Error| StoreError::Backend(format!("migrating SQLite: {e}"));
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS zonecast_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
        )",
    )
    .map_err(fail)?;
    let mut newest_applied = 0;
    for m in SQLITE {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(fail)?;
        let applied = {
            let mut stmt = tx.prepare("SELECT version FROM zonecast_migrations").map_err(fail)?;
            let rows = stmt.query_map([], |r| r.get::<_, i64>(0)).map_err(fail)?;
            rows.collect::<std::result::Result<Vec<_>, _>>().map_err(fail)?
        };
        newest_applied = applied.iter().copied().max().unwrap_or(0).max(newest_applied);
        if applied.contains(&m.version) {
            continue;
        }
        tx.execute_batch(m.sql)
            .map_err(|e| StoreError::Backend(format!("SQLite migration V{}__{} failed: {e}", m.version, m.name)))?;
        tx.execute(
            "INSERT INTO zonecast_migrations (version, name) VALUES (?1, ?2)",
            rusqlite::params![m.version, m.name],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        tracing::info!(version = m.version, name = m.name, "applied SQLite migration");
    }
    warn_if_newer(SQLITE, newest_applied);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dialects_have_the_same_ascending_versions() {
        let versions = |ms: &[Migration]| ms.iter().map(|m| m.version).collect::<Vec<_>>();
        assert_eq!(versions(POSTGRES), versions(SQLITE));
        let expected: Vec<i64> = (1..=POSTGRES.len() as i64).collect();
        assert_eq!(versions(POSTGRES), expected);
    }

    #[test]
    fn only_unapplied_migrations_are_pending() {
        assert_eq!(pending(SQLITE, &[]).len(), SQLITE.len());
        let versions = |ms: Vec<&Migration>| ms.iter().map(|m| m.version).collect::<Vec<_>>();
        let newest = SQLITE.len() as i64;
        assert_eq!(versions(pending(SQLITE, &[1])), (2..=newest).collect::<Vec<_>>());
        assert_eq!(versions(pending(SQLITE, &[1, 2, 3])), (4..=newest).collect::<Vec<_>>());
        let all: Vec<i64> = (1..=newest).collect();
        assert!(pending(SQLITE, &all).is_empty());
        assert!(pending(SQLITE, &[all, vec![99]].concat()).is_empty());
    }
}
