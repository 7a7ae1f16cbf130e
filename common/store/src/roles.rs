//! The store's roles: one trait per concern and direction (zones read, zones written, …), each
//! method in exactly one of them. The views services hold ([`crate::ApiStore`],
//! [`crate::EvaluatorStore`], [`crate::ForwarderStore`]) and the whole [`crate::Store`] are
//! unions of these. Batch writes are all-or-nothing: on any error nothing changes. Listings come
//! in creation order unless a method says otherwise.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_model::{
    AlarmKey, AlarmState, AlarmUpdate, CollidingDevice, ConfigChanged, Device, EventType, Mac, Presence, Setting,
    Shelf, ShelfTarget, StoredAlarm, ZoneSpec,
};

use crate::{
    Collision, ConnectionStatus, OccupancyChange, OccupancyLimits, Result, StoredCertificate, StoredConnection,
};

/// Which database answers, and whether it does.
#[async_trait::async_trait]
pub trait Health: Send + Sync + 'static {
    /// `"postgres"` or `"sqlite"`.
    fn kind(&self) -> &'static str;
    /// Checks that the database answers (for `/healthz`).
    async fn ping(&self) -> Result<()>;
}

/// Zones, read.
#[async_trait::async_trait]
pub trait ZoneReader: Send + Sync + 'static {
    /// Every zone, in creation order.
    async fn list_zones(&self) -> Result<Vec<ZoneSpec>>;
    /// One zone; `NotFound { what: "zone" }`.
    async fn get_zone(&self, id: Uuid) -> Result<ZoneSpec>;
    /// The zones `ids`, in that order; the first missing one is `NotFound`.
    async fn get_zones(&self, ids: &[Uuid]) -> Result<Vec<ZoneSpec>>;
    /// Those of the zones `ids` that exist, in any order (a missing one was deleted).
    async fn find_zones(&self, ids: &[Uuid]) -> Result<Vec<ZoneSpec>>;
}

/// Zones, written: created, replaced, deleted and reset. Deleting or resetting a zone removes
/// its collisions too.
#[async_trait::async_trait]
pub trait ZoneWriter: Send + Sync + 'static {
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
    /// Removes and returns the collisions of `zone` (zone reset); empty for an unknown zone.
    async fn clear_collisions(&self, zone: Uuid) -> Result<Vec<Collision>>;
}

/// Current collisions, read.
#[async_trait::async_trait]
pub trait CollisionReader: Send + Sync + 'static {
    /// Devices inside `zone` now with their stays, sorted by MAC; empty for an unknown zone.
    async fn colliding_devices(&self, zone: Uuid) -> Result<Vec<CollidingDevice>>;
    /// Every current collision, sorted by zone id and MAC.
    async fn all_collisions(&self) -> Result<Vec<Collision>>;
    /// How far the collisions reflect what was evaluated: the marks written with them.
    async fn collision_marks(&self) -> Result<CollisionMarks>;
    /// Every device's recorded presence, by MAC.
    async fn all_presence(&self) -> Result<Vec<Presence>>;
}

/// How far the collisions written reflect what the evaluators evaluated, written in the same
/// transaction as the collision changes they cover.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollisionMarks {
    /// Per position partition, sorted: the stream sequence of the last stored batch whose
    /// collision changes are written, and those of every earlier batch.
    pub partitions: Vec<(u32, u64)>,
    /// Per evaluator (named by its first partition), sorted: every collision change it made
    /// before this time is written.
    pub through: Vec<(u32, DateTime<Utc>)>,
    /// Per position partition, sorted: the ownership epoch of the evaluator that owns it (see
    /// [`CollisionWriter::write_collisions`]); empty for evaluators given fixed partitions.
    pub epochs: Vec<(u32, u64)>,
}

impl CollisionMarks {
    /// The mark of `partition`, if one is written.
    pub fn partition(&self, partition: u32) -> Option<u64> {
        self.partitions.iter().find(|(p, _)| *p == partition).map(|(_, sequence)| *sequence)
    }

    /// The earliest time mark of any evaluator: every collision change made before it is
    /// written.
    pub fn through_all(&self) -> Option<DateTime<Utc>> {
        self.through.iter().map(|(_, t)| *t).min()
    }

    /// The epoch the store holds for `partition`, if one is written.
    pub fn epoch(&self, partition: u32) -> Option<u64> {
        self.epochs.iter().find(|(p, _)| *p == partition).map(|(_, epoch)| *epoch)
    }

    /// The names and values the store keeps the epochs under: they only grow.
    pub(crate) fn epoch_rows(&self) -> Vec<(String, i64)> {
        self.epochs
            .iter()
            .map(|(p, epoch)| (format!("{EPOCH}{p}"), i64::try_from(*epoch).unwrap_or(i64::MAX)))
            .collect()
    }

    /// The partitions of epoch rows (as [`CollisionMarks::epoch_rows`] names them) whose
    /// stored epoch is higher than the one written: the writer lost them.
    pub(crate) fn fenced(written: &[(String, i64)], stored: impl IntoIterator<Item = (String, i64)>) -> Vec<u32> {
        let mut lost: Vec<u32> = stored
            .into_iter()
            .filter(|(name, value)| written.iter().any(|(n, v)| n == name && value > v))
            .filter_map(|(name, _)| name.strip_prefix(EPOCH)?.parse().ok())
            .collect();
        lost.sort_unstable();
        lost
    }

    /// The names and values the store keeps the marks under (epochs apart).
    pub(crate) fn rows(&self) -> Vec<(String, i64)> {
        let partitions = self
            .partitions
            .iter()
            .map(|(p, sequence)| (format!("{PARTITION}{p}"), i64::try_from(*sequence).unwrap_or(i64::MAX)));
        let through = self.through.iter().map(|(p, t)| (format!("{THROUGH}{p}"), t.timestamp_micros()));
        partitions.chain(through).collect()
    }

    /// The marks kept under these names and values; names the store does not know are passed
    /// over.
    pub(crate) fn from_rows(rows: impl IntoIterator<Item = (String, i64)>) -> Self {
        let mut marks = Self::default();
        for (name, value) in rows {
            if let Some(p) = name.strip_prefix(THROUGH).and_then(|p| p.parse().ok()) {
                marks.through.extend(DateTime::from_timestamp_micros(value).map(|t| (p, t)));
            } else if let Some(p) = name.strip_prefix(PARTITION).and_then(|p| p.parse().ok()) {
                marks.partitions.push((p, u64::try_from(value).unwrap_or(0)));
            } else if let Some(p) = name.strip_prefix(EPOCH).and_then(|p| p.parse().ok()) {
                marks.epochs.push((p, u64::try_from(value).unwrap_or(0)));
            }
        }
        marks.partitions.sort_unstable();
        marks.epochs.sort_unstable();
        marks.through.sort_unstable();
        marks
    }
}

/// The prefix of a partition's mark name.
const PARTITION: &str = "partition:";
/// The prefix of an evaluator's time mark name.
const THROUGH: &str = "through:";
/// The prefix of a partition's ownership epoch name.
const EPOCH: &str = "epoch:";

/// Current collisions, recorded as devices enter and leave zones.
#[async_trait::async_trait]
pub trait CollisionWriter: Send + Sync + 'static {
    /// In one transaction: upserts `entered` by (zone, MAC), then deletes `exited`, upserts
    /// `presence` by MAC (the last row for a MAC wins), and sets the `marks` given (a partition
    /// or time not given keeps its mark). When `marks.epochs` names a partition whose stored
    /// epoch is higher (another evaluator claimed it since), nothing is written and the answer
    /// is [`crate::StoreError::Fenced`] with those partitions; otherwise the epochs given are
    /// stored, so that every older owner's write is refused from then on (a write with epochs
    /// only is how a new owner fences the old). Entries for zones that no longer exist are
    /// skipped. A pair in both lists ends up absent, so callers coalesce the transitions of one
    /// (zone, MAC) before writing; within `entered` the last row for a pair wins.
    async fn write_collisions(
        &self,
        entered: &[Collision],
        exited: &[(Uuid, Mac)],
        presence: &[Presence],
        marks: &CollisionMarks,
    ) -> Result<()>;
}

/// Occupancy limits, counted over the collisions every evaluator wrote.
#[async_trait::async_trait]
pub trait OccupancyWriter: Send + Sync + 'static {
    /// In one transaction, for each zone of `zones` (in ZoneID order; a zone that no longer
    /// exists is passed over): counts the devices inside it, moves its state on (see
    /// [`crate::OccupancyState`]) with a change to report when the count crossed a limit, or
    /// forgets it when both limits are `None`. Answers every change of these zones whose event
    /// is not stored yet, oldest generation first. Two evaluators asking at once are served
    /// one after the other, so each transition is found once.
    async fn count_occupancy(&self, zones: &[OccupancyLimits], now: DateTime<Utc>) -> Result<Vec<OccupancyChange>>;
    /// The event of `zone`'s change `generation` is stored: it is not answered again.
    async fn occupancy_published(&self, zone: Uuid, generation: u64) -> Result<()>;
}

/// Zone settings, read.
#[async_trait::async_trait]
pub trait SettingReader: Send + Sync + 'static {
    /// The written settings, in `SettingName::ALL` order.
    async fn list_settings(&self) -> Result<Vec<Setting>>;
}

/// Zone settings, written.
#[async_trait::async_trait]
pub trait SettingWriter: Send + Sync + 'static {
    /// Writes one setting (upsert by name).
    async fn put_setting(&self, setting: &Setting) -> Result<()>;
}

/// Device radii, read.
#[async_trait::async_trait]
pub trait RadiusReader: Send + Sync + 'static {
    /// Devices with their own radius, sorted by MAC.
    async fn list_radii(&self) -> Result<Vec<(Mac, f64)>>;
    /// The radius of each of `macs` (once each, sorted by MAC): `None` for a device without
    /// one of its own. What a burst of radius writes changed, without reading the others.
    async fn find_radii(&self, macs: &[Mac]) -> Result<Vec<(Mac, Option<f64>)>>;
}

/// Device radii, written.
#[async_trait::async_trait]
pub trait RadiusWriter: Send + Sync + 'static {
    /// Merges radii in one transaction: `Some` sets, `None` removes; the last change for a
    /// MAC wins.
    async fn merge_radii(&self, changes: &[(Mac, Option<f64>)]) -> Result<()>;
}

/// Which named devices a listing asks for, a page at a time in MAC order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceQuery {
    /// Only the devices of this group (`Some(None)`: those without one); all when `None`.
    pub group: Option<Option<String>>,
    /// Only the devices whose folded name ([`fold`]) or MAC contains this text, as given to
    /// [`DeviceQuery::search`].
    pub search: Option<Search>,
    /// Only the devices after this MAC: where the previous page ended.
    pub after: Option<Mac>,
    /// Most devices in the answer.
    pub limit: usize,
}

/// A search text, folded for names and normalised for MACs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    /// Matched against the folded name.
    pub name: String,
    /// Matched against the MAC (upper case, `:`).
    pub mac: String,
}

impl DeviceQuery {
    /// The search for `text`, in any case; a `-` in it matches the `:` of a MAC.
    pub fn search(text: &str) -> Search {
        Search { name: fold(text), mac: text.to_uppercase().replace('-', ":") }
    }
}

/// A device name as searches compare it: in lower case (Unicode).
pub fn fold(name: &str) -> String {
    name.to_lowercase()
}

/// Named devices, read.
#[async_trait::async_trait]
pub trait DeviceReader: Send + Sync + 'static {
    /// One device; `NotFound { what: "device" }`.
    async fn get_device(&self, mac: &Mac) -> Result<Device>;
    /// The devices `query` selects, sorted by MAC, at most `query.limit` of them.
    async fn list_devices(&self, query: &DeviceQuery) -> Result<Vec<Device>>;
}

/// Named devices, written.
#[async_trait::async_trait]
pub trait DeviceWriter: Send + Sync + 'static {
    /// Creates or replaces the devices by MAC in one transaction; the last one of a MAC wins.
    async fn put_devices(&self, devices: &[Device]) -> Result<()>;
    /// Deletes one device; `NotFound`.
    async fn delete_device(&self, mac: &Mac) -> Result<()>;
}

/// Which alarms a listing asks for, a page at a time: newest `RaisedAt` first, and among
/// alarms raised at the same instant the greatest AlarmID first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlarmQuery {
    /// Only alarms in these states; every state when empty.
    pub states: Vec<AlarmState>,
    /// Only the alarms of this device.
    pub mac: Option<Mac>,
    /// Only the alarms of this zone.
    pub zone: Option<Uuid>,
    /// Only the alarms of this `Type`.
    pub kind: Option<EventType>,
    /// Only the alarms whose condition holds (true) or has cleared (false).
    pub active: Option<bool>,
    /// Only the alarms raised (first) before this time.
    pub raised_before: Option<DateTime<Utc>>,
    /// Only the alarms after this one in the listing's order (its `RaisedAt` and AlarmID):
    /// where the previous page ended.
    pub after: Option<(DateTime<Utc>, Uuid)>,
    /// Most alarms in the answer.
    pub limit: usize,
}

impl AlarmQuery {
    /// Whether the listing takes alarms in `state`.
    pub fn takes(&self, state: AlarmState) -> bool {
        self.states.is_empty() || self.states.contains(&state)
    }
}

/// What a change of an alarm's state came to.
#[derive(Debug, Clone, PartialEq)]
pub enum AlarmChanged {
    /// The alarm was in a state the change may start from: it is changed, as returned.
    Changed(StoredAlarm),
    /// The alarm was in another state (a concurrent change came first, or it was never
    /// there): nothing changed, and it is returned as it is.
    Refused(StoredAlarm),
}

/// What recording an alarm event came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raised {
    /// No alarm of its key was unresolved: it opened one.
    Opened,
    /// It counted on the unresolved alarm of its key.
    Counted,
    /// It was counted before (a copy): nothing changed.
    Copy,
    /// Its zone or device was shelved when it was raised: it opened no alarm and counted on
    /// none.
    Shelved,
}

/// Alarms, read.
#[async_trait::async_trait]
pub trait AlarmReader: Send + Sync + 'static {
    /// One alarm; `NotFound { what: "alarm" }`.
    async fn get_alarm(&self, id: Uuid) -> Result<StoredAlarm>;
    /// The alarms `query` selects in its order, at most `query.limit` of them.
    async fn list_alarms(&self, query: &AlarmQuery) -> Result<Vec<StoredAlarm>>;
    /// The shelves that have not expired by `now`, the soonest to expire first.
    async fn list_shelves(&self, now: DateTime<Utc>) -> Result<Vec<Shelf>>;
}

/// Alarms, written: recorded as alarm events are raised, and changed by people.
#[async_trait::async_trait]
pub trait AlarmWriter: Send + Sync + 'static {
    /// Records the alarm event `alarm` stands for (as [`StoredAlarm::raised`] makes it), in one
    /// transaction: an event counted before changes nothing; otherwise it counts on the
    /// unresolved alarm of its key (its `Count`, `LastRaisedAt`, `LastEventID`, and active again
    /// unless its condition cleared after the event), or opens a new alarm.
    async fn record_alarm(&self, alarm: &StoredAlarm) -> Result<Raised>;
    /// Notes that the condition of `key` cleared at `at`, and clears its unresolved alarm if it
    /// was not raised again after `at` (an acknowledged one is resolved by zonecast); returns
    /// that alarm as it is now when it changed. A clearing read before the event that raised
    /// the alarm is kept, so that the alarm is recorded cleared.
    async fn clear_alarm(&self, key: &AlarmKey, at: DateTime<Utc>) -> Result<Option<StoredAlarm>>;
    /// Shelves the zone or device of `shelf` (replacing a shelf it had).
    async fn shelve(&self, shelf: &Shelf) -> Result<()>;
    /// Takes the shelf of `target` back; whether it had one that had not expired by `now`.
    async fn unshelve(&self, target: &ShelfTarget, now: DateTime<Utc>) -> Result<bool>;
    /// Makes `update` on alarm `id` in one conditional statement: only if the alarm is in a
    /// state the change may start from, so that of two concurrent changes one wins and the
    /// other is [`AlarmChanged::Refused`]. `NotFound` for an unknown alarm.
    async fn change_alarm(&self, id: Uuid, update: &AlarmUpdate) -> Result<AlarmChanged>;
}

/// MQTT connections, read.
#[async_trait::async_trait]
pub trait ConnectionReader: Send + Sync + 'static {
    /// Every MQTT connection, in creation order.
    async fn list_connections(&self) -> Result<Vec<StoredConnection>>;
    /// One connection; `NotFound { what: "connection" }`.
    async fn get_connection(&self, id: Uuid) -> Result<StoredConnection>;
}

/// MQTT connections, written.
#[async_trait::async_trait]
pub trait ConnectionWriter: Send + Sync + 'static {
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
}

/// Certificate profiles, read.
#[async_trait::async_trait]
pub trait CertificateReader: Send + Sync + 'static {
    /// Every certificate profile's id and name, in creation order.
    async fn list_certificates(&self) -> Result<Vec<(Uuid, String)>>;
    /// One profile; `NotFound { what: "certificate profile" }`.
    async fn get_certificate(&self, id: Uuid) -> Result<StoredCertificate>;
}

/// Certificate profiles, written.
#[async_trait::async_trait]
pub trait CertificateWriter: Send + Sync + 'static {
    /// Inserts a profile.
    async fn insert_certificate(&self, c: &StoredCertificate) -> Result<()>;
    /// Replaces a profile's name and blob; `NotFound`.
    async fn update_certificate(&self, c: &StoredCertificate) -> Result<()>;
    /// Deletes a profile; `NotFound`, or `InUse` while a connection refers to it.
    async fn delete_certificate(&self, id: Uuid) -> Result<()>;
}

/// Forwarder replicas' connection status, read.
#[async_trait::async_trait]
pub trait StatusReader: Send + Sync + 'static {
    /// Every replica's status of connection `id`, sorted by replica; empty if none.
    async fn connection_status(&self, id: Uuid) -> Result<Vec<ConnectionStatus>>;
}

/// Forwarder replicas' connection status, written.
#[async_trait::async_trait]
pub trait StatusWriter: Send + Sync + 'static {
    /// Upserts a replica's status of a connection; ignored if the connection is gone.
    async fn put_connection_status(&self, s: &ConnectionStatus) -> Result<()>;
}

/// Entries the change log keeps: older ones are pruned as new ones are appended. A service
/// further behind than this reads the whole configuration again.
pub const CHANGES_KEPT: u64 = 10_000;

/// The configuration change log, appended to: one entry per configuration write, after it
/// committed.
#[async_trait::async_trait]
pub trait ChangeLog: Send + Sync + 'static {
    /// Appends `change` under the next revision and returns that revision (the first is 1).
    /// Appends are ordered: an entry becomes visible only after every entry before it.
    async fn log_change(&self, change: &ConfigChanged) -> Result<u64>;
}

/// The configuration change log, read by the services that apply changes.
#[async_trait::async_trait]
pub trait ChangeReader: Send + Sync + 'static {
    /// The revision of the last change logged; 0 before any.
    async fn revision(&self) -> Result<u64>;
    /// The changes logged after `revision`, in order, each with its revision set; empty when
    /// there are none. `None` when some of them have been pruned ([`CHANGES_KEPT`]): then the
    /// whole configuration must be read again.
    async fn changes_since(&self, revision: u64) -> Result<Option<Vec<ConfigChanged>>>;
}

/// The entries read after `after` (in revision order) if they follow it without a hole.
pub(crate) fn contiguous(after: u64, changes: Vec<ConfigChanged>) -> Option<Vec<ConfigChanged>> {
    match changes.first() {
        Some(first) if first.revision != after + 1 => None,
        _ => Some(changes),
    }
}
