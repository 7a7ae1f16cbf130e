//! The PostgreSQL store of the distributed services: a deadpool of tokio-postgres clients,
//! migrations under an advisory lock, and the helpers tests use for a fresh database each.

mod store;

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Config, NoTls};

use crate::{Result, StoreError, migrate};

/// Connect timeout used when the URL sets none, so that an unreachable server fails fast.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for a free pooled connection before a call fails as unavailable.
const POOL_WAIT: Duration = Duration::from_secs(10);

/// [`crate::Store`] over a PostgreSQL database shared by every service replica.
pub struct PgStore {
    pool: Pool,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("pool", &self.pool.status()).finish()
    }
}

impl PgStore {
    /// Connects to the database at `url` with up to `pool_size` connections and applies missing
    /// migrations. `Unavailable` (with the server address, never the password) when the
    /// server cannot be reached. TLS to PostgreSQL is not supported (`sslmode=require` fails).
    pub async fn connect(url: &str, pool_size: usize) -> Result<Self> {
        let config = parse(url)?;
        let target = describe(&config);
        let (mut client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot connect to PostgreSQL at {target}: {}", chain(&e))))?;
        let driver = tokio::spawn(connection);
        let migrated = migrate::postgres(&mut client).await;
        // Closing the migration connection releases the advisory lock even after a failure.
        drop(client);
        let _ = driver.await;
        migrated?;

        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::Backend(format!("building the PostgreSQL pool: {e}")))?;
        tracing::info!(server = %target, pool_size, "connected to PostgreSQL store");
        Ok(Self { pool })
    }

    /// A pooled client.
    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(e) => unavailable_or_backend(e),
            other => StoreError::Unavailable(format!("PostgreSQL pool: {other}")),
        })
    }
}

/// Creates the database `name` (`[a-z0-9_]+`, at most 63 bytes) on the server of `admin_url`
/// and returns `admin_url` pointing at it. For tests that want a fresh database each.
pub async fn create_database(admin_url: &str, name: &str) -> Result<String> {
    check_name(name)?;
    let client = admin(admin_url).await?;
    client
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await
        .map_err(|e| StoreError::Backend(format!("creating database {name}: {e}")))?;
    Ok(with_database(admin_url, name))
}

/// Drops the database `name` on the server of `admin_url`, closing its open connections
/// first; no error if it does not exist. The counterpart of [`create_database`].
pub async fn drop_database(admin_url: &str, name: &str) -> Result<()> {
    check_name(name)?;
    let client = admin(admin_url).await?;
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .await
        .map_err(|e| StoreError::Backend(format!("dropping database {name}: {e}")))
}

/// A single connection to the server of `url`, its driver running on its own task.
async fn admin(url: &str) -> Result<tokio_postgres::Client> {
    let config = parse(url)?;
    let (client, connection) = config.connect(NoTls).await.map_err(|e| {
        StoreError::Unavailable(format!("cannot connect to PostgreSQL at {}: {}", describe(&config), chain(&e)))
    })?;
    tokio::spawn(connection);
    Ok(client)
}

fn check_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid { Ok(()) } else { Err(StoreError::Backend(format!("invalid database name '{name}'"))) }
}

/// The connection settings in `url` (URL or key=value form), with a connect timeout.
fn parse(url: &str) -> Result<Config> {
    // The parser's messages name the offending option, never its value, so no password leaks.
    let mut config: Config =
        url.parse().map_err(|e| StoreError::Unavailable(format!("invalid PostgreSQL URL: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    Ok(config)
}

/// `host:port/dbname` of `config`, for messages (no user or password).
fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let port = config.get_ports().get(i).or(config.get_ports().first()).copied().unwrap_or(5432);
            match h {
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() { "localhost:5432".to_owned() } else { hosts.join(",") };
    format!("{hosts}/{}", config.get_dbname().unwrap_or("(default database)"))
}

/// `url` with its database replaced by `name`, in either connection-string form.
fn with_database(url: &str, name: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let (base, query) = match url.find('?') {
            Some(q) => (&url[..q], &url[q..]),
            None => (url, ""),
        };
        let authority_start = scheme_end + 3;
        let path_start = base[authority_start..].find('/').map_or(base.len(), |i| authority_start + i);
        format!("{}/{name}{query}", &base[..path_start])
    } else {
        let kept: Vec<&str> = url.split_whitespace().filter(|kv| !kv.starts_with("dbname=")).collect();
        let mut out = kept.join(" ");
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str("dbname=");
        out.push_str(name);
        out
    }
}

/// A tokio-postgres error as a store error: connection trouble and server-side "cannot serve
/// now" states are `Unavailable`, the rest `Backend`.
fn unavailable_or_backend(e: tokio_postgres::Error) -> StoreError {
    let unavailable = match e.code() {
        Some(code) => {
            let c = code.code();
            c.starts_with("08") || c.starts_with("57P") || c.starts_with("53")
        }
        None => {
            e.is_closed() || std::error::Error::source(&e).is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
        }
    };
    if unavailable {
        StoreError::Unavailable(format!("PostgreSQL: {}", chain(&e)))
    } else {
        StoreError::Backend(format!("PostgreSQL: {}", detail(&e)))
    }
}

/// `e` and its causes ("error connecting to server: Connection refused (os error 111)").
fn chain(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The server's message and code when there is one (tokio-postgres' `Display` says only
/// "db error").
fn detail(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

fn is_code(e: &tokio_postgres::Error, code: &SqlState) -> bool {
    e.code() == Some(code)
}

/// `.db()?` turns tokio-postgres results into store results.
trait Db<T> {
    fn db(self) -> Result<T>;
}

impl<T> Db<T> for std::result::Result<T, tokio_postgres::Error> {
    fn db(self) -> Result<T> {
        self.map_err(unavailable_or_backend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_of_a_url_is_replaced() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "t_1"),
            "postgres://postgres@127.0.0.1:5432/t_1"
        );
        assert_eq!(with_database("postgres://u:p@h/db?sslmode=disable", "x"), "postgres://u:p@h/x?sslmode=disable");
        assert_eq!(with_database("postgresql://h:5433", "x"), "postgresql://h:5433/x");
        assert_eq!(with_database("host=h user=u dbname=postgres", "x"), "host=h user=u dbname=x");
        assert_eq!(with_database("host=h", "x"), "host=h dbname=x");
    }

    #[test]
    fn database_names_are_restricted() {
        assert!(check_name("zonecast_test_1").is_ok());
        for bad in ["", "Upper", "a-b", "a\"; DROP", &"a".repeat(64)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn descriptions_name_the_server_not_the_password() {
        let config = parse("postgres://alice:s3cret@db.example:6543/zonecast").unwrap();
        let text = describe(&config);
        assert_eq!(text, "db.example:6543/zonecast");
        assert!(!text.contains("s3cret"));
    }
}
