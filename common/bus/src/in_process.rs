//! The in-process bus: NATS subject semantics over bounded tokio channels, for the all-in-one
//! binary and for tests that need no server.
//!
//! Each subscription owns a bounded channel. Publishing waits for room in every target channel
//! (backpressure instead of loss), so a subscriber that never reads eventually stalls its
//! publishers, as a slow consumer would; dropping the subscription releases them.

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use tokio::sync::mpsc;

use crate::pattern::{Pattern, validate_queue_group, validate_subject, with_tokens};
use crate::{Bus, BusError, Decoded, Message, Subscription};

/// Messages a subscription buffers before publishers wait for it to read.
pub const DEFAULT_CAPACITY: usize = 65_536;

/// An in-memory [`Bus`] with the same semantics as NATS; clones share the same subscriptions.
#[derive(Clone)]
pub struct InProcessBus {
    shared: Arc<Hub>,
}

/// What every clone of the bus shares: the subscriptions and the journals.
struct Hub {
    capacity: usize,
    registry: Mutex<Registry>,
    /// The journal of each subject prefix, shared by every service of the process.
    journals: Mutex<HashMap<String, crate::journal::memory::Logs>>,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    closed: bool,
    plain: Vec<Member>,
    groups: HashMap<String, Group>,
}

/// One subscription: its pattern and the sending half of its channel.
struct Member {
    id: u64,
    pattern: Pattern,
    /// The pattern as subscribed, for [`Bus::waiting`].
    subject: Box<str>,
    tx: mpsc::Sender<Message>,
    /// Whether it reads the bytes of a message published decoded (not `subscribe_decoded`).
    bytes: bool,
    /// The weight ([`weight`]) of the messages in its channel, not read yet.
    queued: Arc<AtomicUsize>,
}

/// What a message counts for in [`Bus::waiting`]: a message published decoded its
/// [`crate::Encode::weight`], any other one.
fn weight(message: &Message) -> usize {
    message.decoded.as_ref().map_or(1, |decoded| decoded.weight())
}

/// Hands `message` to `tx` if it has room now, counting its weight in `queued` (before it can
/// be read, so that the count never goes below zero).
fn try_hand(tx: &mpsc::Sender<Message>, queued: &AtomicUsize, message: Message) -> bool {
    let weight = weight(&message);
    queued.fetch_add(weight, Ordering::Relaxed);
    let taken = tx.try_send(message).is_ok();
    if !taken {
        queued.fetch_sub(weight, Ordering::Relaxed);
    }
    taken
}

#[derive(Default)]
struct Group {
    members: Vec<Member>,
    /// Round-robin cursor over the members matching a message.
    next: usize,
}

impl Member {
    fn target(&self) -> Target {
        Target { id: self.id, tx: self.tx.clone(), bytes: self.bytes, queued: self.queued.clone() }
    }

    fn wants(&self, tokens: &[&str]) -> bool {
        !self.tx.is_closed() && self.pattern.matches(tokens)
    }

    /// The weight of the messages in its channel not read yet.
    fn waiting(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }
}

impl Group {
    /// The next live member, in round-robin order, whose pattern matches.
    fn pick(&mut self, tokens: &[&str]) -> Option<Target> {
        let matching = self.members.iter().filter(|m| m.wants(tokens)).count();
        if matching == 0 {
            return None;
        }
        let chosen = self.next % matching;
        self.next = self.next.wrapping_add(1);
        self.members.iter().filter(|m| m.wants(tokens)).nth(chosen).map(Member::target)
    }
}

/// A subscriber a message is to be sent to.
struct Target {
    id: u64,
    tx: mpsc::Sender<Message>,
    bytes: bool,
    queued: Arc<AtomicUsize>,
}

impl Target {
    /// Hands `message` over once its channel has room; false when it is closed.
    async fn send(&self, message: Message) -> bool {
        let weight = weight(&message);
        self.queued.fetch_add(weight, Ordering::Relaxed);
        let sent = self.tx.send(message).await.is_ok();
        if !sent {
            self.queued.fetch_sub(weight, Ordering::Relaxed);
        }
        sent
    }
}

/// Where one message goes that had no room at once: plain subscribers, and one member per queue
/// group.
struct Targets {
    plain: Vec<Target>,
    /// With the name of their queue group.
    queued: Vec<(String, Target)>,
}

/// A message being delivered, taken apart so that its subject can be split into tokens while
/// its bytes are written.
struct Outgoing {
    payload: Bytes,
    decoded: Option<Decoded>,
}

impl Outgoing {
    /// Writes the bytes of a message published decoded, once, for a subscriber that reads them.
    fn encode(&mut self, wanted: bool) {
        if wanted
            && self.payload.is_empty()
            && let Some(decoded) = &self.decoded
        {
            self.payload = decoded.encode();
        }
    }

    fn message(&self, subject: &str) -> Message {
        Message { subject: subject.to_owned(), payload: self.payload.clone(), decoded: self.decoded.clone() }
    }
}

impl Registry {
    /// Hands `message` to every target that has room now; returns the targets that did not take
    /// it (full, or closed since), for the caller to wait for. Allocates nothing when all did.
    fn offer(&mut self, subject: &str, tokens: &[&str], message: &mut Outgoing) -> Targets {
        let mut left = Targets { plain: Vec::new(), queued: Vec::new() };
        for member in self.plain.iter().filter(|m| m.wants(tokens)) {
            message.encode(member.bytes);
            if !try_hand(&member.tx, &member.queued, message.message(subject)) {
                left.plain.push(member.target());
            }
        }
        for (name, group) in self.groups.iter_mut() {
            if let Some(target) = group.pick(tokens) {
                message.encode(target.bytes);
                if !try_hand(&target.tx, &target.queued, message.message(subject)) {
                    left.queued.push((name.clone(), target));
                }
            }
        }
        left
    }

    fn remove(&mut self, id: u64) {
        self.plain.retain(|m| m.id != id);
        for group in self.groups.values_mut() {
            group.members.retain(|m| m.id != id);
        }
        self.groups.retain(|_, group| !group.members.is_empty());
    }

    fn len(&self) -> usize {
        self.members().count()
    }

    fn members(&self) -> impl Iterator<Item = &Member> {
        self.plain.iter().chain(self.groups.values().flat_map(|g| &g.members))
    }
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        // The registry is consistent after every statement, so a panic elsewhere while the lock
        // was held leaves nothing to repair.
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for InProcessBus {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for InProcessBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InProcessBus")
            .field("capacity", &self.shared.capacity)
            .field("subscriptions", &self.subscription_count())
            .finish()
    }
}

impl InProcessBus {
    /// A bus whose subscriptions buffer [`DEFAULT_CAPACITY`] messages each.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// A bus whose subscriptions buffer `capacity` messages each (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            shared: Arc::new(Hub {
                capacity: capacity.max(1),
                registry: Mutex::new(Registry::default()),
                journals: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Number of live subscriptions, queue group members included.
    pub fn subscription_count(&self) -> usize {
        self.shared.lock().len()
    }

    fn add(&self, subject: &str, group: Option<&str>, bytes: bool) -> Result<Subscription, BusError> {
        let pattern = Pattern::parse(subject)?;
        if let Some(group) = group {
            validate_queue_group(group)?;
        }
        let (tx, rx) = mpsc::channel(self.shared.capacity);
        let queued = Arc::new(AtomicUsize::new(0));
        let id = {
            let mut registry = self.shared.lock();
            if registry.closed {
                return Err(BusError::Closed);
            }
            let id = registry.next_id;
            registry.next_id += 1;
            let member = Member { id, pattern, subject: subject.into(), tx, bytes, queued: queued.clone() };
            match group {
                Some(group) => registry.groups.entry(group.to_owned()).or_default().members.push(member),
                None => registry.plain.push(member),
            }
            id
        };
        Ok(Box::pin(InProcessSubscription { rx, queued, shared: Arc::downgrade(&self.shared), id }))
    }

    /// Hands `message` to every matching subscriber and one member of each matching queue group.
    async fn deliver(&self, subject: String, payload: Bytes, decoded: Option<Decoded>) -> Result<(), BusError> {
        validate_subject(&subject)?;
        let mut message = Outgoing { payload, decoded };
        // Every target with room takes the message at once, under the registry lock; only the
        // ones that are full (or just closed) are waited for, below, outside it.
        let targets = with_tokens(&subject, |tokens| {
            let mut registry = self.shared.lock();
            if registry.closed {
                return Err(BusError::Closed);
            }
            Ok(registry.offer(&subject, tokens, &mut message))
        })?;

        let mut gone = Vec::new();
        for target in targets.plain {
            message.encode(target.bytes);
            if !target.send(message.message(&subject)).await {
                gone.push(target.id);
            }
        }
        for (group, mut target) in targets.queued {
            // A member can be dropped between selection and send; the message then goes to
            // another member so the group still gets it exactly once.
            loop {
                message.encode(target.bytes);
                if target.send(message.message(&subject)).await {
                    break;
                }
                let mut registry = self.shared.lock();
                registry.remove(target.id);
                let next = registry.groups.get_mut(&group).and_then(|g| with_tokens(&subject, |t| g.pick(t)));
                match next {
                    Some(next) => target = next,
                    None => break,
                }
            }
        }
        if !gone.is_empty() {
            let mut registry = self.shared.lock();
            for id in gone {
                registry.remove(id);
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Bus for InProcessBus {
    async fn publish(&self, subject: String, payload: Bytes) -> Result<(), BusError> {
        self.deliver(subject, payload, None).await
    }

    async fn publish_decoded(&self, subject: String, decoded: Decoded) -> Result<(), BusError> {
        self.deliver(subject, Bytes::new(), Some(decoded)).await
    }

    fn waiting(&self, prefix: &str) -> Option<usize> {
        Some(self.shared.lock().members().filter(|m| m.subject.starts_with(prefix)).map(Member::waiting).sum())
    }

    async fn subscribe(&self, subject: &str) -> Result<Subscription, BusError> {
        self.add(subject, None, true)
    }

    async fn subscribe_decoded(&self, subject: &str) -> Result<Subscription, BusError> {
        self.add(subject, None, false)
    }

    async fn queue_subscribe(&self, subject: &str, group: &str) -> Result<Subscription, BusError> {
        self.add(subject, Some(group), true)
    }

    async fn flush(&self) -> Result<(), BusError> {
        // `publish` returns only after the message sits in every target queue, so there is
        // nothing in flight to wait for.
        if self.shared.lock().closed {
            return Err(BusError::Closed);
        }
        Ok(())
    }

    async fn drain(&self) -> Result<(), BusError> {
        let (plain, groups) = {
            let mut registry = self.shared.lock();
            registry.closed = true;
            (std::mem::take(&mut registry.plain), std::mem::take(&mut registry.groups))
        };
        // Dropping the senders ends each subscription once its buffered messages are read.
        drop((plain, groups));
        Ok(())
    }

    /// The first call for a prefix fixes its settings; later calls share that journal.
    fn position_log(
        &self,
        prefix: &str,
        partitions: u32,
        _settings: crate::PositionSettings,
    ) -> Arc<dyn crate::PositionLog> {
        Arc::new(crate::positions::InProcessPositions::new(Arc::new(self.clone()), prefix, partitions))
    }

    fn journal(&self, prefix: &str, settings: crate::JournalSettings) -> Arc<dyn crate::Journal> {
        let logs = self
            .shared
            .journals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(prefix.to_owned())
            .or_insert_with(|| crate::journal::memory::Logs::new(prefix, settings))
            .clone();
        Arc::new(crate::journal::MemoryJournal::new(Arc::new(self.clone()), logs))
    }

    fn is_connected(&self) -> bool {
        !self.shared.lock().closed
    }

    fn kind(&self) -> &'static str {
        "in-process"
    }
}

/// The receiving half of one subscription; unsubscribes when dropped.
struct InProcessSubscription {
    rx: mpsc::Receiver<Message>,
    /// Hub with its [`Member`]: the weight of what `rx` holds.
    queued: Arc<AtomicUsize>,
    shared: Weak<Hub>,
    id: u64,
}

impl Stream for InProcessSubscription {
    type Item = Message;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(message)) = &polled {
            self.queued.fetch_sub(weight(message), Ordering::Relaxed);
        }
        polled
    }
}

impl Drop for InProcessSubscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.lock().remove(self.id);
        }
    }
}

#[cfg(test)]
mod tests;
