//! The Store: zonecast's persistent state (zones, collisions, settings, device radii, named
//! devices, alarms, MQTT connections, certificate profiles, forwarder status), with a PostgreSQL
//! implementation for the distributed services and an embedded SQLite one for the all-in-one.
//! Each service holds only its view of it ([`ApiStore`], [`EvaluatorStore`],
//! [`ForwarderStore`]): a union of role traits, one per concern and direction ([`ZoneReader`],
//! [`ZoneWriter`], …). [`Store`] is the union of them all.

mod alarm_rows;
mod codec;
mod error;
mod migrate;
mod occupancy;
pub mod postgres;
mod roles;
mod sqlite;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_model::Connection;

pub use error::{Result, StoreError};
pub use occupancy::{OccupancyChange, OccupancyLimits, OccupancyState};
pub use postgres::PgStore;
pub use roles::{
    AlarmChanged, AlarmQuery, AlarmReader, AlarmWriter, CHANGES_KEPT, CertificateReader, CertificateWriter, ChangeLog,
    ChangeReader, CollisionMarks, CollisionReader, CollisionWriter, ConnectionReader, ConnectionWriter, DeviceQuery,
    DeviceReader, DeviceWriter, Health, OccupancyWriter, RadiusReader, RadiusWriter, Raised, Search, SettingReader,
    SettingWriter, StatusReader, StatusWriter, ZoneReader, ZoneWriter, fold,
};
pub use sqlite::SqliteStore;
/// The collision record belongs to the model; the store keeps it.
pub use zonecast_model::{Collision, Presence};

/// PostgreSQL connections a process holds at most unless configured (`ZONECAST_DATABASE_POOL`).
pub const DEFAULT_POOL_SIZE: usize = 16;

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

/// What the config API uses: zones, settings, named devices, alarms, connections and
/// certificate profiles to read and write, device radii to write, current collisions to show
/// (and reset with their zone), and the forwarders' connection status to show, and the change
/// log to append every write to. It records no collisions and reports no status.
///
/// ```compile_fail,E0599
/// async fn f(store: &dyn zonecast_store::ApiStore) {
///     let _ = store.write_collisions(&[], &[], &[], &Default::default()).await;
/// }
/// ```
pub trait ApiStore:
    Health
    + ChangeLog
    + ZoneReader
    + ZoneWriter
    + CollisionReader
    + SettingReader
    + SettingWriter
    + RadiusWriter
    + DeviceReader
    + DeviceWriter
    + AlarmReader
    + AlarmWriter
    + ConnectionReader
    + ConnectionWriter
    + CertificateReader
    + CertificateWriter
    + StatusReader
{
}

impl<T> ApiStore for T where
    T: Health
        + ChangeLog
        + ZoneReader
        + ZoneWriter
        + CollisionReader
        + SettingReader
        + SettingWriter
        + RadiusWriter
        + DeviceReader
        + DeviceWriter
        + AlarmReader
        + AlarmWriter
        + ConnectionReader
        + ConnectionWriter
        + CertificateReader
        + CertificateWriter
        + StatusReader
{
}

/// What an evaluator uses: zones, settings and device radii to read, and the collision record
/// it restores at start and keeps as devices enter and leave, and the change log to follow. It
/// changes no configuration.
///
/// ```compile_fail,E0599
/// async fn f(store: &dyn zonecast_store::EvaluatorStore) {
///     let _ = store.delete_zones(&[]).await;
/// }
/// ```
pub trait EvaluatorStore:
    Health
    + ChangeReader
    + ZoneReader
    + SettingReader
    + RadiusReader
    + DeviceReader
    + CollisionReader
    + CollisionWriter
    + OccupancyWriter
{
}

impl<T> EvaluatorStore for T where
    T: Health
        + ChangeReader
        + ZoneReader
        + SettingReader
        + RadiusReader
        + DeviceReader
        + CollisionReader
        + CollisionWriter
        + OccupancyWriter
{
}

/// What a forwarder uses: connections and certificate profiles to read, and its status to
/// report, and the change log to follow. It sees no zones and changes no configuration.
///
/// ```compile_fail,E0599
/// async fn f(store: &dyn zonecast_store::ForwarderStore) {
///     let _ = store.list_zones().await;
/// }
/// ```
pub trait ForwarderStore: Health + ChangeReader + ConnectionReader + CertificateReader + StatusWriter {}

impl<T> ForwarderStore for T where T: Health + ChangeReader + ConnectionReader + CertificateReader + StatusWriter {}

/// zonecast's whole persistent state: every role, so every view. What [`open`] returns; a
/// composition hands the one store to each service as that service's view (an
/// `Arc<dyn Store>` coerces to an `Arc<dyn EvaluatorStore>`, and to any role). Batch writes are
/// all-or-nothing: on any error nothing changes. Listings come in creation order unless a
/// method says otherwise.
pub trait Store: ApiStore + EvaluatorStore + ForwarderStore {}

impl<T> Store for T where T: ApiStore + EvaluatorStore + ForwarderStore {}

/// Opens the store: PostgreSQL at `database_url` when one is given, with at most `pool`
/// connections, else the SQLite file `sqlite_path`. Runs migrations either way.
pub async fn open(database_url: Option<&str>, pool: usize, sqlite_path: &Path) -> Result<Arc<dyn Store>> {
    match database_url.map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => Ok(Arc::new(PgStore::connect(url, pool).await?)),
        None => {
            let path = sqlite_path.to_owned();
            let store = tokio::task::spawn_blocking(move || SqliteStore::open(&path))
                .await
                .map_err(|e| StoreError::Backend(format!("opening the SQLite store failed: {e}")))??;
            Ok(Arc::new(store))
        }
    }
}
