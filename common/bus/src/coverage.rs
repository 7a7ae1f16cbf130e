//! Whether every position partition is followed: a watch of the evaluators' lease bucket
//! ([`Leases`]) that keeps the partitions no live evaluator owns, for the ingestors' readiness
//! and their `zonecast_ingest_partitions_unowned` gauge.
//!
//! A member is alive while its last heartbeat is within its lease by the server's clock, which
//! is taken from the newest heartbeat seen and runs on by the local clock between heartbeats, so
//! that evaluators all gone count as dead too. What is not known yet (the bucket's content still
//! arriving, the watch interrupted) can only make partitions look unowned, never owned.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::leases::{Change, Leases, Member, Owner, unowned};

/// How often the partitions are looked at again without a change (a member's lease may run
/// out with nothing written).
const TICK: Duration = Duration::from_millis(100);

/// How long the watch may bring nothing before it is made anew.
const SILENCE: Duration = Duration::from_secs(5);

/// The partitions no live evaluator follows, and since when some have been.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unowned {
    /// The partitions, ascending; all of them until the bucket has been read.
    pub partitions: Vec<u32>,
    /// Since when `partitions` has not been empty; `None` while it is.
    pub since: Option<Instant>,
    /// Whether every partition has been followed at some moment since the watch began.
    pub ever_covered: bool,
}

/// The partitions no live evaluator follows, kept up to date by a task watching the lease bucket
/// until every clone of this is dropped.
#[derive(Clone)]
pub struct Coverage {
    unowned: watch::Receiver<Unowned>,
}

impl Coverage {
    /// Watches `leases` for `count` partitions.
    pub fn spawn(leases: Leases, count: u32) -> Self {
        let start = Unowned { partitions: (0..count).collect(), since: Some(Instant::now()), ever_covered: false };
        let (tx, unowned) = watch::channel(start);
        tokio::spawn(watch_bucket(leases, count, tx));
        Self { unowned }
    }

    /// The partitions no live evaluator follows now.
    pub fn unowned(&self) -> Unowned {
        self.unowned.borrow().clone()
    }

    /// Waits for the next change of [`Coverage::unowned`]; `false` once the watch has ended.
    pub async fn changed(&mut self) -> bool {
        self.unowned.changed().await.is_ok()
    }
}

/// The bucket as seen, and the server's clock as last seen.
#[derive(Default)]
struct View {
    members: HashMap<String, Member>,
    owners: BTreeMap<u32, Owner>,
    /// The newest heartbeat seen (server clock, Unix ns) and when it was seen.
    newest: Option<(i128, Instant)>,
}

impl View {
    fn seen(&mut self, change: Change) {
        match change {
            Change::Member(member) => {
                if self.newest.is_none_or(|(ns, _)| member.heartbeat_ns > ns) {
                    self.newest = Some((member.heartbeat_ns, Instant::now()));
                }
                self.members.insert(member.id.clone(), member);
            }
            Change::Left(id) => {
                self.members.remove(&id);
            }
            Change::Partition(partition, owner) => {
                if self.owners.get(&partition).is_none_or(|known| owner.revision >= known.revision) {
                    self.owners.insert(partition, owner);
                }
            }
        }
    }

    fn unowned(&self, count: u32) -> Vec<u32> {
        let Some((ns, at)) = self.newest else { return (0..count).collect() };
        let now = ns + i128::try_from(at.elapsed().as_nanos()).unwrap_or(i128::MAX);
        let members: Vec<Member> = self.members.values().cloned().collect();
        unowned(count, &members, &self.owners, now)
    }
}

async fn watch_bucket(leases: Leases, count: u32, tx: watch::Sender<Unowned>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut view = View::default();
    'watch: loop {
        let mut changes = match leases.watch().await {
            Ok(changes) => Box::pin(changes),
            Err(e) => {
                tracing::debug!(error = %e, "lease bucket not watched; trying again");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => continue 'watch,
                    () = tx.closed() => return,
                }
            }
        };
        let mut last = Instant::now();
        loop {
            tokio::select! {
                change = changes.next() => match change {
                    Some(change) => {
                        last = Instant::now();
                        view.seen(change);
                        continue;
                    }
                    None => continue 'watch,
                },
                _ = tick.tick() => {}
                () = tx.closed() => return,
            }
            publish(&tx, view.unowned(count));
            if last.elapsed() > SILENCE {
                continue 'watch;
            }
        }
    }
}

/// Publishes `partitions` when they changed, noting since when some have been unowned.
fn publish(tx: &watch::Sender<Unowned>, partitions: Vec<u32>) {
    tx.send_if_modified(|unowned| {
        if unowned.partitions == partitions {
            return false;
        }
        unowned.since = match (partitions.is_empty(), unowned.since) {
            (true, _) => None,
            (false, Some(since)) => Some(since),
            (false, None) => Some(Instant::now()),
        };
        unowned.ever_covered |= partitions.is_empty();
        unowned.partitions = partitions;
        true
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SECOND: i128 = 1_000_000_000;

    fn member(id: &str, heartbeat_ns: i128, lease: Duration) -> Change {
        Change::Member(Member {
            id: id.into(),
            about: bytes::Bytes::new(),
            heartbeat_ns,
            revision: 1,
            lease,
            pinned: None,
        })
    }

    fn owner(member: &str, revision: u64) -> Owner {
        Owner { member: Some(member.into()), revision }
    }

    #[test]
    fn every_partition_is_unowned_until_a_live_member_owns_it() {
        let mut view = View::default();
        assert_eq!(view.unowned(3), [0, 1, 2]);
        view.seen(Change::Partition(0, owner("a", 5)));
        assert_eq!(view.unowned(3), [0, 1, 2], "an owner not seen alive owns nothing");
        view.seen(member("a", 100 * SECOND, Duration::from_secs(1)));
        view.seen(Change::Partition(1, owner("a", 6)));
        assert_eq!(view.unowned(3), [2]);
        // An older revision seen later changes nothing; a release frees the partition.
        view.seen(Change::Partition(1, Owner { member: None, revision: 4 }));
        assert_eq!(view.unowned(3), [2]);
        view.seen(Change::Partition(1, Owner { member: None, revision: 7 }));
        assert_eq!(view.unowned(3), [1, 2]);
        view.seen(Change::Left("a".into()));
        assert_eq!(view.unowned(3), [0, 1, 2]);
    }

    #[test]
    fn a_member_silent_past_its_own_lease_owns_nothing_even_when_nothing_else_is_written() {
        let mut view = View::default();
        view.seen(member("short", 100 * SECOND, Duration::from_secs(1)));
        view.seen(member("long", 100 * SECOND, Duration::from_secs(5)));
        view.seen(Change::Partition(0, owner("short", 1)));
        view.seen(Change::Partition(1, owner("long", 2)));
        assert!(view.unowned(2).is_empty());
        // Two seconds by the local clock since the newest heartbeat: the server's clock has
        // run on as far, past the short lease and within the long one.
        let (ns, _) = view.newest.unwrap();
        view.newest = Some((ns, Instant::now().checked_sub(Duration::from_secs(2)).unwrap()));
        assert_eq!(view.unowned(2), [0]);
    }

    #[tokio::test]
    async fn a_change_of_the_unowned_partitions_is_published_with_since_when() {
        let (tx, mut rx) =
            watch::channel(Unowned { partitions: vec![0, 1], since: Some(Instant::now()), ever_covered: false });
        let started = rx.borrow().since;
        publish(&tx, vec![1]);
        assert!(rx.has_changed().unwrap());
        let seen = rx.borrow_and_update().clone();
        assert_eq!((seen.partitions, seen.since, seen.ever_covered), (vec![1], started, false));
        publish(&tx, vec![1]);
        assert!(!rx.has_changed().unwrap(), "the same partitions are no change");
        publish(&tx, Vec::new());
        let seen = rx.borrow_and_update().clone();
        assert_eq!((seen.partitions.is_empty(), seen.since, seen.ever_covered), (true, None, true));
        publish(&tx, vec![3]);
        let seen = rx.borrow_and_update().clone();
        assert!(seen.since.is_some() && seen.ever_covered);
    }
}
