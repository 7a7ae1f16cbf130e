//! The Store: zonecast's persistent state (zones, collisions, settings, device radii, MQTT
//! connections, certificate profiles, forwarder status) behind one trait, with a PostgreSQL
//! implementation for the distributed services and an embedded SQLite one for the all-in-one.

mod codec;
mod error;
mod migrate;
pub mod postgres;
mod sqlite;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_model::{CollidingDevice, Connection, Mac, Setting, ZoneSpec};

pub use error::{Result, StoreError};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;
/// The collision record belongs to the model; the store keeps it.
pub use zonecast_model::Collision;

/// Pool size [`open`] gives a [`PgStore`].
pub const DEFAULT_POOL_SIZE: usize = 8;

/// An MQTT connection as stored: the model value and its password, encrypted by the caller.
/// Read back, `connection.has_password` says whether `password_sealed` is set.
#[derive(Clone, PartialEq)]
pub struct StoredConnection {
    /// The connection (without password).
    pub connection: Connection,
    /// The sealed password, if one is set.
    pub password_sealed: Option<Vec<u8>>,
}

impl fmt::Debug for StoredConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredConnection")
            .field("connection", &self.connection)
            .field("password_sealed_len", &self.password_sealed.as_ref().map(Vec::len))
            .finish()
    }
}

/// A certificate profile as stored: CA, client bundle and its password sealed together by the
/// caller into one blob.
#[derive(Clone, PartialEq)]
pub struct StoredCertificate {
    /// Identity.
    pub id: Uuid,
    /// Name shown in listings.
    pub name: String,
    /// The encrypted profile.
    pub sealed: Vec<u8>,
}

impl fmt::Debug for StoredCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredCertificate")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("sealed_len", &self.sealed.len())
            .finish()
    }
}

/// How one forwarder replica fares with one connection. `updated_at` is kept to the microsecond;
/// counters above `i64::MAX` are stored as `i64::MAX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionStatus {
    /// The connection.
    pub connection_id: Uuid,
    /// Which forwarder replica reports.
    pub replica: String,
    /// Whether the MQTT client is connected now.
    pub connected: bool,
    /// Last connection or publish error, if any.
    pub last_error: Option<String>,
    /// Messages published.
    pub forwarded: u64,
    /// Messages given up on.
    pub dropped: u64,
    /// Messages waiting to be published.
    pub queued: u64,
    /// When the replica last reported.
    pub updated_at: DateTime<Utc>,
}

/// zonecast's persistent state. Batch writes are all-or-nothing: on any error nothing changes.
/// Listings come in creation order unless a method says otherwise.
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// `"postgres"` or `"sqlite"`.
    fn kind(&self) -> &'static str;
    /// Checks that the database answers (for `/healthz`).
    async fn ping(&self) -> Result<()>;

    /// Every zone, in creation order.
    async fn list_zones(&self) -> Result<Vec<ZoneSpec>>;
    /// One zone; `NotFound { what: "zone" }`.
    async fn get_zone(&self, id: Uuid) -> Result<ZoneSpec>;
    /// The zones `ids`, in that order; the first missing one is `NotFound`.
    async fn get_zones(&self, ids: &[Uuid]) -> Result<Vec<ZoneSpec>>;
    /// Those of the zones `ids` that exist, in any order (a missing one was deleted).
    async fn find_zones(&self, ids: &[Uuid]) -> Result<Vec<ZoneSpec>>;
    /// Inserts new zones in one transaction (listing order follows the slice). An id that
    /// exists already is a `Backend` error and nothing is inserted.
    async fn insert_zones(&self, zones: &[ZoneSpec]) -> Result<()>;
    /// Replaces zones by id in one transaction, each only if it is still at the `version` it
    /// carries (the one it was read at), and raises each version by one. A missing id is
    /// `NotFound`, a zone at another version `Conflict` (a concurrent write came first); either
    /// way nothing changes. This is what makes a read-modify-write atomic: on `Conflict`, read
    /// again and redo the change.
    async fn update_zones(&self, zones: &[ZoneSpec]) -> Result<()>;
    /// Deletes zones and their collisions in one transaction; a missing id is `NotFound` and
    /// nothing changes.
    async fn delete_zones(&self, ids: &[Uuid]) -> Result<()>;
    /// Deletes one zone and its collisions if it is at `version`: `NotFound` if it is gone,
    /// `Conflict` if it is at another version.
    async fn delete_zone_at(&self, id: Uuid, version: u64) -> Result<()>;

    /// Devices inside `zone` now with their stays, sorted by MAC; empty for an unknown zone.
    async fn colliding_devices(&self, zone: Uuid) -> Result<Vec<CollidingDevice>>;
    /// Every current collision, sorted by zone id and MAC.
    async fn all_collisions(&self) -> Result<Vec<Collision>>;
    /// In one transaction: upserts `entered` by (zone, MAC), then deletes `exited`. Entries
    /// for zones that no longer exist are skipped. A pair in both lists ends up absent, so
    /// callers coalesce the transitions of one (zone, MAC) before writing; within `entered`
    /// the last row for a pair wins.
    async fn write_collisions(&self, entered: &[Collision], exited: &[(Uuid, Mac)]) -> Result<()>;
    /// Removes and returns the collisions of `zone` (zone reset); empty for an unknown zone.
    async fn clear_collisions(&self, zone: Uuid) -> Result<Vec<Collision>>;

    /// The written settings, in `SettingName::ALL` order.
    async fn list_settings(&self) -> Result<Vec<Setting>>;
    /// Writes one setting (upsert by name).
    async fn put_setting(&self, setting: &Setting) -> Result<()>;

    /// Devices with their own radius, sorted by MAC.
    async fn list_radii(&self) -> Result<Vec<(Mac, f64)>>;
    /// Merges radii in one transaction: `Some` sets, `None` removes; the last change for a
    /// MAC wins.
    async fn merge_radii(&self, changes: &[(Mac, Option<f64>)]) -> Result<()>;

    /// Every MQTT connection, in creation order.
    async fn list_connections(&self) -> Result<Vec<StoredConnection>>;
    /// One connection; `NotFound { what: "connection" }`.
    async fn get_connection(&self, id: Uuid) -> Result<StoredConnection>;
    /// Inserts a connection unless `max` exist already (`Full`; counted and inserted in one
    /// transaction that concurrent inserts wait for, so the bound holds); a missing certificate
    /// profile is `Reference`.
    async fn insert_connection(&self, c: &StoredConnection, max: usize) -> Result<()>;
    /// Replaces a connection in one statement, its sealed password too unless `keep_password`
    /// (then the password stored at the moment of the write stays, whatever a concurrent write
    /// put there). Returns the connection as stored; `NotFound` or `Reference`.
    async fn update_connection(&self, c: &StoredConnection, keep_password: bool) -> Result<StoredConnection>;
    /// Deletes a connection and its status rows; `NotFound`.
    async fn delete_connection(&self, id: Uuid) -> Result<()>;

    /// Every certificate profile's id and name, in creation order.
    async fn list_certificates(&self) -> Result<Vec<(Uuid, String)>>;
    /// One profile; `NotFound { what: "certificate profile" }`.
    async fn get_certificate(&self, id: Uuid) -> Result<StoredCertificate>;
    /// Inserts a profile.
    async fn insert_certificate(&self, c: &StoredCertificate) -> Result<()>;
    /// Replaces a profile's name and blob; `NotFound`.
    async fn update_certificate(&self, c: &StoredCertificate) -> Result<()>;
    /// Deletes a profile; `NotFound`, or `InUse` while a connection refers to it.
    async fn delete_certificate(&self, id: Uuid) -> Result<()>;

    /// Upserts a replica's status of a connection; ignored if the connection is gone.
    async fn put_connection_status(&self, s: &ConnectionStatus) -> Result<()>;
    /// Every replica's status of connection `id`, sorted by replica; empty if none.
    async fn connection_status(&self, id: Uuid) -> Result<Vec<ConnectionStatus>>;
}

/// Opens the store: PostgreSQL at `database_url` when one is given (pool of
/// [`DEFAULT_POOL_SIZE`]), else the SQLite file `sqlite_path`. Runs migrations either way.
pub async fn open(database_url: Option<&str>, sqlite_path: &Path) -> Result<Arc<dyn Store>> {
    match database_url.map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => Ok(Arc::new(PgStore::connect(url, DEFAULT_POOL_SIZE).await?)),
        None => {
            let path = sqlite_path.to_owned();
            let store = tokio::task::spawn_blocking(move || SqliteStore::open(&path))
                .await
                .map_err(|e| StoreError::Backend(format!("opening the SQLite store failed: {e}")))??;
            Ok(Arc::new(store))
        }
    }
}
