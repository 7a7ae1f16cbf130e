//! Partitions claimed, not given: the evaluators of a site split the position partitions among
//! themselves through the lease bucket ([`Leases`]), and hand them over as evaluators come and go.
//!
//! Every evaluator writes a heartbeat every [`Timing::heartbeat`] and watches the bucket. From
//! the live members (a heartbeat within the lease each announces, by the server's clock) and
//! the current owners, each computes the same balanced assignment ([`assign`]): a member pinned
//! to a range gets that range, every other member its share of the rest, within one partition,
//! and keeps what it holds up to its share, so that a change of members moves as few
//! partitions as it can. A member then
//!
//! - **claims** a partition assigned to it that is free (never owned, given back, or owned by
//!   a dead member), by compare-and-set on the partition's key: the new revision is its epoch;
//! - **gives back** a partition it holds beyond its share, once the partition's collisions and
//!   acknowledgements are written ([`Order::GiveBack`], answered by [`Claims::given_back`]);
//! - **loses** a partition another member claimed (it was taken for dead), and every
//!   partition at once when its own heartbeat has not been written for two thirds of its
//!   lease ([`Timing::self_lease`]): it then stops writing, acknowledging and publishing for
//!   them before anyone may take them.
//!
//! A member that stops cleanly gives everything back and removes its key, so that the others
//! take over at once instead of after the lease.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;
use zonecast_bus::Leases;
use zonecast_bus::leases::{Change, Member, Owner};
use zonecast_runtime::ratelog::RateLimited;

mod assign;

pub use assign::assign;

/// How often a member writes its heartbeat and how long the others wait after the last one
/// they saw before they take its partitions over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How often this member writes its heartbeat.
    pub heartbeat: Duration,
    /// How long the others wait for its next heartbeat before they take it for dead.
    pub lease: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self { heartbeat: Leases::HEARTBEAT, lease: Leases::LEASE }
    }
}

impl Timing {
    /// How long after its last heartbeat written a member still acts for its partitions: two
    /// thirds of its lease, so that it stops a third of the lease before anyone may take over.
    pub fn self_lease(&self) -> Duration {
        self.lease * 2 / 3
    }

    /// How long the watch of the bucket may bring nothing (not even this member's own
    /// heartbeats) before it is taken for stalled and made anew.
    fn watch_silence(&self) -> Duration {
        (self.heartbeat * 4).max(self.self_lease())
    }
}

/// How long a dead member is kept in the bucket (and listed as dead by the cluster status)
/// before the first live member removes its key: at least ten of its leases.
const FORGET: Duration = Duration::from_secs(30);

/// What the evaluator's loop is told to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Order {
    /// Take these partitions over, at these epochs.
    Take(Vec<(u32, u64)>),
    /// Finish these partitions and give them back: write their collisions and acknowledge
    /// what was evaluated, then call [`Claims::given_back`].
    GiveBack(Vec<u32>),
    /// These partitions are another member's now: drop them without writing anything.
    Lost(Vec<u32>),
}

/// When this member last wrote its heartbeat.
pub struct LeaseClock {
    start: Instant,
    /// Milliseconds after `start` of the last heartbeat's sending.
    last_ms: AtomicU64,
    /// The lease ran out since the evaluator's loop last looked, though it may be renewed
    /// by now (the process was frozen, or NATS away).
    lapsed: AtomicBool,
    /// How long after the last heartbeat it holds.
    self_lease: Duration,
}

impl LeaseClock {
    fn new(self_lease: Duration) -> Self {
        Self { start: Instant::now(), last_ms: AtomicU64::new(0), lapsed: AtomicBool::new(false), self_lease }
    }

    fn renewed(&self, sent: Instant) {
        let ms = u64::try_from(sent.duration_since(self.start).as_millis()).unwrap_or(u64::MAX);
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// Whether this member may act for its partitions now.
    fn valid(&self) -> bool {
        let last = self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        last.elapsed() < self.self_lease
    }

    /// Whether this member may still act for the partitions it held when the evaluator's loop
    /// last asked: not if the lease ran out meanwhile, even if it was renewed since.
    pub fn held(&self) -> bool {
        // The claims task flags a lapse before it sends the loss and renews the lease, and
        // before any claim after it.
        let lapsed = self.lapsed.swap(false, Ordering::SeqCst);
        self.valid() && !lapsed
    }
}

/// The evaluator's side of its claims.
pub struct Claims {
    /// What to do, in order.
    pub orders: mpsc::UnboundedReceiver<Order>,
    /// Whether this member may still act for its partitions.
    pub lease: Arc<LeaseClock>,
    /// This member's ID.
    pub member: String,
    done: mpsc::UnboundedSender<Done>,
    task: tokio::task::JoinHandle<()>,
}

/// What the evaluator's loop tells the claims task.
enum Done {
    GivenBack(Vec<u32>),
    /// The evaluator's loop found the lease run out and dropped everything it held.
    Lapsed,
    Leave,
}

impl Claims {
    /// Joins the members of `leases` for `count` partitions with `timing`, pinned to an
    /// inclusive range or sharing the partitions with the others; `about` is what this member
    /// says of itself (a JSON object, to which its lease and pinned range are added).
    pub async fn join(
        leases: Leases,
        count: u32,
        timing: Timing,
        pinned: Option<(u32, u32)>,
        mut about: serde_json::Value,
    ) -> Result<Self, zonecast_bus::BusError> {
        let member = uuid::Uuid::new_v4().simple().to_string();
        if let Some(fields) = about.as_object_mut() {
            fields.insert("LeaseMs".into(), u64::try_from(timing.lease.as_millis()).unwrap_or(u64::MAX).into());
            if let Some((lo, hi)) = pinned {
                fields.insert("Pinned".into(), serde_json::json!([lo, hi]));
            }
        }
        let lease = Arc::new(LeaseClock::new(timing.self_lease()));
        let sent = Instant::now();
        leases.heartbeat(&member, about.to_string().into()).await?;
        lease.renewed(sent);
        let changes = leases.watch().await?;
        let (orders_tx, orders) = mpsc::unbounded_channel();
        let (done, done_rx) = mpsc::unbounded_channel();
        let coordinator = Coordinator {
            leases,
            member: member.clone(),
            count,
            timing,
            pinned,
            about: about.to_string(),
            lease: lease.clone(),
            members: HashMap::new(),
            server_now: 0,
            owners: BTreeMap::new(),
            held: BTreeMap::new(),
            giving_back: BTreeMap::new(),
            current: false,
            current_at: None,
            orders: orders_tx,
            log: RateLimited::new(Duration::from_secs(10)),
        };
        let task = tokio::spawn(coordinator.run(Box::pin(changes), done_rx));
        Ok(Self { orders, lease, member, done, task })
    }

    /// The partitions of an [`Order::GiveBack`] are finished: give them back.
    pub fn given_back(&self, partitions: Vec<u32>) {
        let _ = self.done.send(Done::GivenBack(partitions));
    }

    /// The evaluator's loop found the lease run out and dropped every partition it held.
    pub fn lapsed(&self) {
        let _ = self.done.send(Done::Lapsed);
    }

    /// Gives back every partition held (their collisions written) and leaves the members.
    pub async fn leave(self) {
        let _ = self.done.send(Done::Leave);
        let _ = self.task.await;
    }
}

struct Coordinator {
    leases: Leases,
    member: String,
    count: u32,
    timing: Timing,
    /// The range this member is pinned to.
    pinned: Option<(u32, u32)>,
    about: String,
    lease: Arc<LeaseClock>,
    /// Members as last seen: their last heartbeat (server clock), lease and pinned range.
    members: HashMap<String, Member>,
    /// The newest heartbeat seen: the server's clock, as of the last change.
    server_now: i128,
    owners: BTreeMap<u32, Owner>,
    /// Partitions this member holds, with their epochs.
    held: BTreeMap<u32, u64>,
    /// Partitions told to be given back, since when.
    giving_back: BTreeMap<u32, Instant>,
    /// Whether the bucket's content at the start of the watch has been read.
    current: bool,
    /// The revision of this member's first heartbeat written after the watch began: once
    /// the watch brings it, it has brought everything before it.
    current_at: Option<u64>,
    orders: mpsc::UnboundedSender<Order>,
    log: RateLimited,
}

impl Coordinator {
    async fn run(
        mut self,
        mut changes: std::pin::Pin<Box<dyn futures::Stream<Item = Change> + Send>>,
        mut done: mpsc::UnboundedReceiver<Done>,
    ) {
        let mut heartbeat = tokio::time::interval(self.timing.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut last_change, mut ended) = (Instant::now(), false);
        loop {
            tokio::select! {
                _ = heartbeat.tick() => {
                    self.heartbeat().await;
                    // This member's own heartbeat comes back on a working watch with every
                    // beat: a watch silent for longer has stalled or ended, and is made anew
                    // (what it held is read again from the bucket).
                    if last_change.elapsed() > self.timing.watch_silence() {
                        match self.leases.watch().await {
                            Ok(watch) => {
                                changes = Box::pin(watch);
                                (self.current, self.current_at) = (false, None);
                                (ended, last_change) = (false, Instant::now());
                            }
                            Err(e) => {
                                if let Some(held_back) = self.log.allow() {
                                    tracing::warn!(error = %e, held_back, "cannot watch the evaluators' leases");
                                }
                            }
                        }
                    }
                }
                change = changes.next(), if !ended => match change {
                    Some(change) => {
                        last_change = Instant::now();
                        self.seen(change);
                    }
                    None => ended = true,
                },
                done = done.recv() => match done {
                    Some(Done::GivenBack(partitions)) => self.give_back(&partitions).await,
                    Some(Done::Lapsed) => {
                        // What the loop dropped is no longer held: claimed again (at a new
                        // epoch) once the lease holds, unless another member has it by then.
                        let lost: Vec<u32> = self.held.keys().copied().collect();
                        if !lost.is_empty() {
                            self.lose(lost);
                        }
                    }
                    Some(Done::Leave) => {
                        self.leave().await;
                        return;
                    }
                    None => return,
                },
            }
            self.rebalance().await;
        }
    }

    async fn heartbeat(&mut self) {
        // A lease that ran out (the process was frozen, NATS away) is over: what was held is
        // lost before the heartbeat renews it.
        if !self.lease.valid() {
            self.lease.lapsed.store(true, Ordering::SeqCst);
            if !self.held.is_empty() {
                tracing::error!(
                    partitions = self.held.len(),
                    "this evaluator's heartbeat was not written in time: it stops acting for its partitions, which the others take over"
                );
                let lost: Vec<u32> = self.held.keys().copied().collect();
                self.lose(lost);
            }
        }
        let sent = Instant::now();
        match self.leases.heartbeat(&self.member, self.about.clone().into()).await {
            Ok(revision) => {
                self.lease.renewed(sent);
                self.current_at.get_or_insert(revision);
            }
            Err(e) => {
                if let Some(held_back) = self.log.allow() {
                    tracing::warn!(error = %e, held_back, "heartbeat not written");
                }
            }
        }
    }

    fn seen(&mut self, change: Change) {
        match change {
            Change::Member(member) => {
                self.server_now = self.server_now.max(member.heartbeat_ns);
                if member.id == self.member && self.current_at.is_some_and(|at| member.revision >= at) {
                    self.current = true;
                }
                self.members.insert(member.id.clone(), member);
            }
            Change::Left(id) => {
                self.members.remove(&id);
            }
            Change::Partition(partition, owner) => {
                let newer = self.owners.get(&partition).is_none_or(|known| owner.revision >= known.revision);
                if newer {
                    self.owners.insert(partition, owner);
                }
            }
        }
    }

    /// Members whose heartbeat is within their lease, sorted, with their pinned ranges; this
    /// one while its lease holds.
    fn live(&self) -> Vec<(String, Option<(u32, u32)>)> {
        let mut live: Vec<(String, Option<(u32, u32)>)> = self
            .members
            .values()
            .filter(|m| m.id != self.member && m.alive(self.server_now))
            .map(|m| (m.id.clone(), m.pinned))
            .collect();
        if self.lease.valid() {
            live.push((self.member.clone(), self.pinned));
        }
        live.sort_unstable();
        live
    }

    async fn rebalance(&mut self) {
        // Partitions another member claimed since: lost.
        let taken: Vec<u32> = self
            .held
            .iter()
            .filter(|(p, epoch)| {
                self.owners.get(p).is_some_and(|o| o.member.as_deref() != Some(&self.member) || o.revision != **epoch)
            })
            .map(|(p, _)| *p)
            .collect();
        if !taken.is_empty() {
            tracing::warn!(partitions = ?taken, "partitions claimed by another evaluator (this one was taken for dead)");
            self.lose(taken);
        }
        if !self.current || !self.lease.valid() {
            return;
        }
        let (live, pins): (Vec<String>, Vec<Option<(u32, u32)>>) = self.live().into_iter().unzip();
        self.forget_dead(&live).await;
        let owners: Vec<Option<String>> = (0..self.count)
            .map(|p| {
                self.owners
                    .get(&p)
                    .and_then(|o| o.member.clone())
                    .filter(|m| live.binary_search_by(|l| l.as_str().cmp(m)).is_ok())
            })
            .collect();
        let target = assign(self.count, &live, &pins, &owners.iter().map(Option::as_deref).collect::<Vec<_>>());
        let mut claims = Vec::new();
        let mut give = Vec::new();
        for p in 0..self.count {
            let mine = target[p as usize].as_deref() == Some(self.member.as_str());
            let held = self.held.contains_key(&p);
            if mine && !held && owners[p as usize].as_ref().is_none_or(|o| *o == self.member) {
                claims.push((p, self.owners.get(&p).map(|o| o.revision)));
            } else if !mine && held && !self.giving_back.contains_key(&p) && target[p as usize].is_some() {
                self.giving_back.insert(p, Instant::now());
                give.push(p);
            }
        }
        // All at once: claimed one after the other, on a busy replicated bucket, they would
        // keep the next heartbeat waiting past the lease.
        let (leases, member) = (&self.leases, self.member.as_str());
        let results =
            futures::future::join_all(claims.iter().map(|&(p, revision)| leases.claim(p, member, revision))).await;
        let mut taken = Vec::new();
        for ((p, _), result) in claims.into_iter().zip(results) {
            match result {
                Ok(Some(epoch)) => {
                    self.owners.insert(p, Owner { member: Some(self.member.clone()), revision: epoch });
                    self.held.insert(p, epoch);
                    taken.push((p, epoch));
                }
                Ok(None) => {}
                Err(e) => {
                    if let Some(held_back) = self.log.allow() {
                        tracing::warn!(partition = p, error = %e, held_back, "partition not claimed");
                    }
                }
            }
        }
        if !taken.is_empty() {
            metrics::counter!("zonecast_evaluator_rebalances_total").increment(1);
            tracing::info!(partitions = ?taken.iter().map(|(p, _)| *p).collect::<Vec<_>>(), "partitions claimed");
            let _ = self.orders.send(Order::Take(taken));
        }
        if !give.is_empty() {
            metrics::counter!("zonecast_evaluator_rebalances_total").increment(1);
            tracing::info!(partitions = ?give, "partitions to hand over to another evaluator");
            let _ = self.orders.send(Order::GiveBack(give));
        }
    }

    /// Removes the keys of members dead for long (killed, never back), so that the bucket
    /// does not grow with every restart: the first live member does it.
    async fn forget_dead(&mut self, live: &[String]) {
        if live.first() != Some(&self.member) {
            return;
        }
        let long = i128::try_from(FORGET.as_nanos()).unwrap_or(i128::MAX);
        let dead: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                self.server_now - m.heartbeat_ns > long.max(10 * i128::try_from(m.lease.as_nanos()).unwrap_or(0))
            })
            .map(|m| m.id.clone())
            .collect();
        for id in dead {
            if self.leases.remove(&id).await.is_ok() {
                self.members.remove(&id);
            }
        }
    }

    fn lose(&mut self, partitions: Vec<u32>) {
        for p in &partitions {
            self.held.remove(p);
            self.giving_back.remove(p);
        }
        let _ = self.orders.send(Order::Lost(partitions));
    }

    async fn give_back(&mut self, partitions: &[u32]) {
        for &p in partitions {
            let Some(epoch) = self.held.remove(&p) else { continue };
            if let Some(since) = self.giving_back.remove(&p) {
                metrics::histogram!("zonecast_evaluator_handover_seconds").record(since.elapsed().as_secs_f64());
            }
            match self.leases.release(p, epoch).await {
                Ok(Some(revision)) => {
                    self.owners.insert(p, Owner { member: None, revision });
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(partition = p, error = %e, "partition not given back; it is taken over once this evaluator's lease ends")
                }
            }
        }
    }

    async fn leave(&mut self) {
        let held: Vec<u32> = self.held.keys().copied().collect();
        self.give_back(&held).await;
        if let Err(e) = self.leases.remove(&self.member).await {
            tracing::warn!(error = %e, "membership not removed; the others take this evaluator for dead after its lease");
        }
        tracing::info!(partitions = held.len(), "partitions given back; left the evaluators");
    }
}
