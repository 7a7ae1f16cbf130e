//! Who owns which position partition: the evaluators of a site announce themselves and claim
//! partitions in a JetStream key-value bucket, `<prefix>_EVALUATORS`.
//!
//! - `members.<id>`: one key per evaluator, written again every heartbeat, with what the member
//!   says of itself (JSON): its lease (`LeaseMs`, [`Leases::LEASE`] when it names none) and the
//!   range it is pinned to, if any (`Pinned`, `[lo, hi]`). A member whose key has not been
//!   written for its lease, by the server's clock, is dead; a member leaving cleanly deletes
//!   its key.
//! - `partitions.<P>`: the evaluator that owns partition `P`, claimed and given back by
//!   compare-and-set on the key's revision, so that two evaluators never both succeed. The
//!   revision of a successful claim is the owner's **epoch** for the partition: it only grows,
//!   and the store and the position consumers refuse what carries an older one (fencing).
//!
//! The bucket keeps one value per key; everything in it is rebuilt by the evaluators that run.

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures::StreamExt;

use crate::BusError;

/// One evaluator as the bucket knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its ID (random per start).
    pub id: String,
    /// What it says of itself (JSON: its address, for the cluster status).
    pub about: Bytes,
    /// When its key was last written, by the server's clock (Unix ns).
    pub heartbeat_ns: i128,
    /// The revision of that write.
    pub revision: u64,
    /// How long it may go without a heartbeat before it counts as dead (its `LeaseMs`).
    pub lease: Duration,
    /// The inclusive partition range it is pinned to (its `Pinned`): it owns those and no
    /// others.
    pub pinned: Option<(u32, u32)>,
}

impl Member {
    /// Whether this member is alive at `now_ns`, by the server's clock (Unix ns): its last
    /// heartbeat within its lease.
    pub fn alive(&self, now_ns: i128) -> bool {
        now_ns - self.heartbeat_ns <= i128::try_from(self.lease.as_nanos()).unwrap_or(i128::MAX)
    }
}

/// What a member says of itself in its key, besides anything else it adds.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct About {
    lease_ms: Option<u64>,
    pinned: Option<(u32, u32)>,
}

/// A partition's owner as the bucket knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The owning evaluator's ID; `None` when the partition was given back.
    pub member: Option<String>,
    /// The key's revision: the owner's epoch, and what a claim or a release must name.
    pub revision: u64,
}

/// A change seen in the bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A member wrote its heartbeat.
    Member(Member),
    /// A member left (deleted its key) or its key was removed as dead.
    Left(String),
    /// A partition's owner changed.
    Partition(u32, Owner),
}

/// The lease bucket of a site's evaluators.
#[derive(Clone)]
pub struct Leases {
    store: kv::Store,
}

impl Leases {
    /// How often a member writes its heartbeat unless it is told otherwise.
    pub const HEARTBEAT: Duration = Duration::from_millis(200);
    /// How long a member may go without a heartbeat before it counts as dead and its
    /// partitions are taken over, unless it names its own lease.
    pub const LEASE: Duration = Duration::from_millis(1000);

    /// Opens (making it if needed) the bucket of the evaluators under `prefix`, its stream kept
    /// on `replicas` servers.
    pub async fn open(client: async_nats::Client, prefix: &str, replicas: usize) -> Result<Self, BusError> {
        let context = jetstream::new(client);
        let bucket = format!("{prefix}_EVALUATORS");
        let store = crate::journal::replicas::key_value(&context, &bucket, replicas, Duration::ZERO).await?;
        Ok(Self { store })
    }

    /// Writes `member`'s heartbeat, with what it says of itself, and returns its revision: a
    /// watch that has brought it has brought everything written before it.
    pub async fn heartbeat(&self, member: &str, about: Bytes) -> Result<u64, BusError> {
        self.store
            .put(format!("members.{member}"), about)
            .await
            .map_err(|e| BusError::Journal(format!("heartbeat not written: {e}")))
    }

    /// Removes `member`'s key: it left, or it is dead and was seen so.
    pub async fn remove(&self, member: &str) -> Result<(), BusError> {
        self.store
            .delete(format!("members.{member}"))
            .await
            .map_err(|e| BusError::Journal(format!("member not removed: {e}")))
    }

    /// Claims `partition` for `member`, if its key is still at `revision` (`None`: it has none
    /// yet). Returns the new revision, the member's epoch for the partition, or `None` when
    /// another claim or release came first.
    pub async fn claim(&self, partition: u32, member: &str, revision: Option<u64>) -> Result<Option<u64>, BusError> {
        self.set(partition, Bytes::from(member.to_owned()), revision).await
    }

    /// Gives `partition` back, if its key is still at `revision` (the giver's epoch). Returns
    /// the key's new revision, or `None` when it had moved on (another member claimed it).
    pub async fn release(&self, partition: u32, revision: u64) -> Result<Option<u64>, BusError> {
        self.set(partition, Bytes::new(), Some(revision)).await
    }

    async fn set(&self, partition: u32, value: Bytes, revision: Option<u64>) -> Result<Option<u64>, BusError> {
        let key = format!("partitions.{partition}");
        let result = match revision {
            Some(revision) => self.store.update(&key, value, revision).await.map_err(|e| {
                (e.kind() == kv::UpdateErrorKind::WrongLastRevision).then_some(()).ok_or_else(|| e.to_string())
            }),
            None => self.store.create(&key, value).await.map_err(|e| {
                (e.kind() == kv::CreateErrorKind::AlreadyExists).then_some(()).ok_or_else(|| e.to_string())
            }),
        };
        match result {
            Ok(revision) => Ok(Some(revision)),
            Err(Ok(())) => Ok(None),
            Err(Err(e)) => Err(BusError::Journal(format!("partition {partition} not claimed or released: {e}"))),
        }
    }

    /// What the bucket holds now, then every change from now on, in the order written. The
    /// stream ends when the connection is gone for good.
    pub async fn watch(&self) -> Result<impl futures::Stream<Item = Change> + Send + use<>, BusError> {
        let watch = self
            .store
            .watch_with_history(">")
            .await
            .map_err(|e| BusError::Journal(format!("cannot watch the evaluators' leases: {e}")))?;
        Ok(watch.filter_map(|entry| {
            std::future::ready(match entry {
                Ok(entry) => change(&entry),
                Err(e) => {
                    tracing::debug!(error = %e, "lease watch interrupted; it goes on");
                    None
                }
            })
        }))
    }

    /// What the bucket holds now: the members with their last heartbeat, and the partitions'
    /// owners.
    pub async fn snapshot(&self) -> Result<(Vec<Member>, BTreeMap<u32, Owner>), BusError> {
        let err = |e: String| BusError::Journal(format!("cannot read the evaluators' leases: {e}"));
        let (mut members, mut owners) = (Vec::new(), BTreeMap::new());
        for entry in crate::journal::replicas::entries(&self.store).await.map_err(err)? {
            match change(&entry) {
                Some(Change::Member(member)) => members.push(member),
                Some(Change::Partition(partition, owner)) => {
                    owners.insert(partition, owner);
                }
                _ => {}
            }
        }
        Ok((members, owners))
    }
}

/// The partitions of `0..count` that no member alive at `now_ns` (by the server's clock, Unix
/// ns) owns, ascending: none while every partition is followed.
pub fn unowned(count: u32, members: &[Member], owners: &BTreeMap<u32, Owner>, now_ns: i128) -> Vec<u32> {
    let alive = |id: &str| members.iter().any(|m| m.id == id && m.alive(now_ns));
    (0..count).filter(|p| !owners.get(p).and_then(|o| o.member.as_deref()).is_some_and(alive)).collect()
}

/// What an entry of the bucket says.
fn change(entry: &kv::Entry) -> Option<Change> {
    let deleted = matches!(entry.operation, kv::Operation::Delete | kv::Operation::Purge);
    if let Some(id) = entry.key.strip_prefix("members.") {
        if deleted {
            return Some(Change::Left(id.to_owned()));
        }
        let about: About = serde_json::from_slice(&entry.value).unwrap_or_default();
        return Some(Change::Member(Member {
            id: id.to_owned(),
            about: entry.value.clone(),
            heartbeat_ns: entry.created.unix_timestamp_nanos(),
            revision: entry.revision,
            lease: about.lease_ms.map_or(Leases::LEASE, Duration::from_millis),
            pinned: about.pinned,
        }));
    }
    let partition = entry.key.strip_prefix("partitions.")?.parse().ok()?;
    let member = (!deleted && !entry.value.is_empty()).then(|| String::from_utf8_lossy(&entry.value).into_owned());
    Some(Change::Partition(partition, Owner { member, revision: entry.revision }))
}
