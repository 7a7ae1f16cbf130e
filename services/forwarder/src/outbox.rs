//! One connection's bounded outbox: messages waiting for the broker and messages handed to the
//! MQTT client but not yet acknowledged. Pure state, no I/O: the link feeds it client events.
//!
//! A message stays here until the broker's PUBACK, so a connection that drops loses nothing it
//! held: the unacknowledged messages go back to the front of the queue, in order, and are sent
//! again on the next connection (at least once; a message the broker had received but not yet
//! acknowledged arrives twice). A message taken from the event journal carries a [`Receipt`]:
//! it is never dropped here (the journal's consumer bounds how many events are in hand), and
//! the event is acknowledged to the journal once the broker has acknowledged every topic's
//! copy. Other messages (positions, which are not journalled) count against the bound: when
//! it is reached, the new one is dropped and counted.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use zonecast_bus::journal::Ack;
use zonecast_runtime::consume::{HeldAck, Holding};

/// One event for one topic.
#[derive(Debug, Clone)]
pub struct Message {
    /// MQTT topic.
    pub topic: Arc<str>,
    /// The event JSON as it came from the bus.
    pub payload: Bytes,
    /// For an event from the journal, what acknowledges it there.
    pub receipt: Option<Arc<Receipt>>,
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        self.topic == other.topic && self.payload == other.payload
    }
}

/// What the copies of one journalled event owe the journal: once the broker has acknowledged
/// each of them, the event is acknowledged. Whatever else the receipt holds (the consumer's
/// permit for an event in hand) is released when the last copy lets go of it, delivered or not.
pub struct Receipt {
    /// When the position that caused the event was accepted (Unix milliseconds), if known.
    accepted_ms: Option<u64>,
    copies: AtomicUsize,
    ack: HeldAck,
    _hold: Box<dyn std::any::Any + Send + Sync>,
}

impl std::fmt::Debug for Receipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receipt").field("copies", &self.copies.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl Receipt {
    /// A receipt for `copies` messages that acknowledges with `ack` and holds `hold` while it
    /// lives; `accepted_ms` is when the position that caused the event was accepted.
    pub fn new(copies: usize, ack: Ack, hold: impl std::any::Any + Send + Sync, accepted_ms: Option<u64>) -> Arc<Self> {
        Arc::new(Self { accepted_ms, copies: AtomicUsize::new(copies), ack: HeldAck::new(ack), _hold: Box::new(hold) })
    }

    /// The journal delivered the event again while its copies are still here: acknowledge
    /// that delivery instead (the journal may only accept the newest).
    pub fn renew(&self, ack: Ack) {
        self.ack.renew(ack);
    }

    /// One copy was acknowledged by the broker; after the last, the event is acknowledged.
    fn delivered(&self) {
        if self.copies.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.ack.ack();
        }
    }
}

impl Holding for Receipt {
    /// Tells the journal the event is still being worked on (its copies wait for the broker),
    /// so it is not handed out again while it is held here.
    fn progress(&self) {
        self.ack.progress();
    }
}

/// A message the client has written, with its packet id.
#[derive(Debug)]
struct InFlight {
    pkid: u16,
    message: Message,
}

/// The queue and in-flight window of one connection, with its counters.
#[derive(Debug)]
pub struct Outbox {
    capacity: usize,
    window: usize,
    connected: bool,
    queue: VecDeque<Message>,
    /// Oldest first.
    in_flight: VecDeque<InFlight>,
    /// Held messages with a receipt (the rest are positions).
    journalled: usize,
    forwarded: u64,
    dropped: u64,
    /// When the broker last acknowledged something, or the connection came up.
    progress: Option<std::time::Instant>,
}

impl Outbox {
    /// Holds at most `capacity` messages without a receipt (at least 1), and hands at most
    /// `window` (at least 1) to the client at a time.
    pub fn new(capacity: usize, window: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            capacity,
            window: window.max(1),
            connected: false,
            queue: VecDeque::new(),
            in_flight: VecDeque::new(),
            journalled: 0,
            forwarded: 0,
            dropped: 0,
            progress: None,
        }
    }

    /// Adds a message. One with a receipt is always taken (its consumer bounds them). Messages
    /// without one are bounded by the capacity: when it is reached the oldest of them still
    /// waiting is dropped and counted, or this one if all of them are in flight.
    pub fn push(&mut self, message: Message) {
        if message.receipt.is_some() {
            self.journalled += 1;
        } else if self.held_unjournalled() >= self.capacity {
            self.dropped += 1;
            match self.queue.iter().position(|m| m.receipt.is_none()) {
                Some(oldest) => {
                    self.queue.remove(oldest);
                }
                None => return,
            }
        }
        self.queue.push_back(message);
    }

    /// Hands the next message to `write`, which writes it and answers its packet id, while
    /// connected and the window has room; the message is in flight from then on. False when
    /// there was nothing to hand out.
    pub fn send_next(&mut self, write: impl FnOnce(&Message) -> u16) -> bool {
        if !self.connected || self.in_flight.len() >= self.window {
            return false;
        }
        let Some(message) = self.queue.pop_front() else { return false };
        let pkid = write(&message);
        self.in_flight.push_back(InFlight { pkid, message });
        true
    }

    /// The broker acknowledged `pkid`: that message is delivered. Returns false for an
    /// unknown packet id.
    pub fn on_acked(&mut self, pkid: u16) -> bool {
        let Some(index) = self.in_flight.iter().position(|e| e.pkid == pkid) else {
            return false;
        };
        if let Some(entry) = self.in_flight.remove(index)
            && let Some(receipt) = entry.message.receipt
        {
            self.journalled -= 1;
            receipt.delivered();
        }
        self.forwarded += 1;
        self.progress = Some(std::time::Instant::now());
        true
    }

    /// A connection is up: messages may be handed out.
    pub fn on_connected(&mut self) {
        self.connected = true;
        self.progress = Some(std::time::Instant::now());
    }

    /// The connection is gone (or the client replaced): everything not acknowledged waits
    /// again, oldest first, ahead of newer messages.
    pub fn on_disconnected(&mut self) {
        self.connected = false;
        while let Some(entry) = self.in_flight.pop_back() {
            self.queue.push_front(entry.message);
        }
    }

    /// Whether messages may be handed out.
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// Messages held: waiting plus in flight.
    pub fn held(&self) -> usize {
        self.queue.len() + self.in_flight.len()
    }

    /// Messages held that are not from the journal (positions): the journal counts the rest.
    pub fn held_unjournalled(&self) -> usize {
        self.held() - self.journalled
    }

    /// How long the broker has acknowledged nothing (since it did last, or since the
    /// connection came up); `None` while not connected.
    pub fn stalled_for(&self) -> Option<std::time::Duration> {
        self.connected.then(|| self.progress.map_or(std::time::Duration::MAX, |at| at.elapsed()))
    }

    /// When the position behind the oldest journalled message held was accepted (Unix
    /// milliseconds): how far behind the connection is.
    pub fn oldest_accepted_ms(&self) -> Option<u64> {
        let held = self.in_flight.iter().map(|e| &e.message).chain(&self.queue);
        held.filter_map(|m| m.receipt.as_ref()?.accepted_ms).next()
    }

    /// Messages acknowledged by the broker.
    pub fn forwarded(&self) -> u64 {
        self.forwarded
    }

    /// Messages given up on (overflow, or refused before sending).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Counts a message given up on outside [`Outbox::push`].
    pub fn count_dropped(&mut self) {
        self.dropped += 1;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proptest::prelude::*;

    use super::*;

    fn msg(n: u32) -> Message {
        Message { topic: Arc::from("t"), payload: Bytes::from(n.to_string()), receipt: None }
    }

    fn num(m: &Message) -> u32 {
        std::str::from_utf8(&m.payload).unwrap().parse().unwrap()
    }

    fn drain(outbox: &mut Outbox, pkid: &mut u16) -> Vec<u32> {
        let mut sent = Vec::new();
        while outbox.send_next(|m| {
            *pkid += 1;
            sent.push(num(m));
            *pkid
        }) {}
        sent
    }

    #[test]
    fn nothing_is_handed_out_until_connected_and_then_only_a_window_at_a_time() {
        let mut o = Outbox::new(10, 2);
        (1..=4).for_each(|n| o.push(msg(n)));
        assert!(!o.send_next(|_| unreachable!("nothing is handed out")));
        o.on_connected();
        let mut pkid = 0;
        assert_eq!(drain(&mut o, &mut pkid), vec![1, 2]);
        assert!(o.on_acked(1));
        assert_eq!(drain(&mut o, &mut pkid), vec![3]);
        assert_eq!((o.forwarded(), o.held()), (1, 3));
    }

    #[test]
    fn overflow_drops_the_oldest_message_without_a_receipt_and_counts_it() {
        let mut o = Outbox::new(3, 3);
        (1..=5).for_each(|n| o.push(msg(n)));
        assert_eq!((o.dropped(), o.held()), (2, 3));
        o.on_connected();
        assert_eq!(drain(&mut o, &mut 0), vec![3, 4, 5]);
        // Everything held is in flight: a new message has nothing older to displace.
        o.push(msg(6));
        assert_eq!((o.dropped(), o.held()), (3, 3));
    }

    #[test]
    fn a_journalled_event_is_never_dropped_and_is_acknowledged_after_its_last_copy() {
        let acked = Arc::new(AtomicUsize::new(0));
        let counter = acked.clone();
        let receipt = Receipt::new(
            2,
            Ack::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            }),
            (),
            Some(1_000),
        );
        let mut o = Outbox::new(1, 5);
        o.push(msg(1));
        assert_eq!(o.oldest_accepted_ms(), None, "positions do not count");
        for _ in 0..2 {
            o.push(Message { receipt: Some(receipt.clone()), ..msg(2) });
        }
        assert_eq!((o.dropped(), o.held()), (0, 3), "copies with a receipt are kept past the bound");
        assert_eq!(o.oldest_accepted_ms(), Some(1_000));
        o.on_connected();
        let mut pkid = 0;
        assert_eq!(drain(&mut o, &mut pkid), vec![1, 2, 2]);
        assert!(o.on_acked(2));
        assert_eq!(acked.load(Ordering::SeqCst), 0, "one copy is not the event");
        o.on_disconnected();
        o.on_connected();
        let mut pkid = 0;
        assert_eq!(drain(&mut o, &mut pkid), vec![1, 2]);
        assert!(o.on_acked(2));
        assert_eq!(acked.load(Ordering::SeqCst), 1, "acknowledged once the broker has every copy");
        drop(receipt);
        assert_eq!((o.held(), o.held_unjournalled()), (1, 1));
    }

    #[test]
    fn a_dropped_connection_puts_unacknowledged_messages_back_in_order() {
        let mut o = Outbox::new(10, 3);
        (1..=5).for_each(|n| o.push(msg(n)));
        o.on_connected();
        let mut pkid = 0;
        assert_eq!(drain(&mut o, &mut pkid), vec![1, 2, 3]);
        assert!(o.on_acked(1));
        o.on_disconnected();
        o.push(msg(6));
        assert!(!o.send_next(|_| unreachable!("nothing is handed out")));
        o.on_connected();
        let mut pkid = 0;
        assert_eq!(drain(&mut o, &mut pkid), vec![2, 3, 4]);
        (1..=3).for_each(|p| assert!(o.on_acked(p)));
        assert_eq!(drain(&mut o, &mut pkid), vec![5, 6]);
        assert_eq!(o.forwarded(), 4);
    }

    #[test]
    fn acks_out_of_order_and_unknown_acks_are_handled() {
        let mut o = Outbox::new(10, 5);
        (1..=3).for_each(|n| o.push(msg(n)));
        o.on_connected();
        let mut pkid = 0;
        drain(&mut o, &mut pkid);
        assert!(o.on_acked(2));
        assert!(!o.on_acked(2));
        assert!(!o.on_acked(99));
        assert!(o.on_acked(3) && o.on_acked(1));
        assert_eq!((o.forwarded(), o.held()), (3, 0));
    }

    /// One step a connection can take.
    #[derive(Debug, Clone)]
    enum Step {
        Push,
        Connect,
        Disconnect,
        Send,
        AckOldest,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => Just(Step::Push),
            1 => Just(Step::Connect),
            1 => Just(Step::Disconnect),
            3 => Just(Step::Send),
            3 => Just(Step::AckOldest),
        ]
    }

    proptest! {
        /// Whatever happens, every message pushed is exactly one of: forwarded, dropped, held;
        /// the bound is never exceeded; and no message is acknowledged twice.
        #[test]
        fn every_message_is_accounted_for_and_the_bound_holds(
            capacity in 1usize..8, window in 1usize..8, steps in proptest::collection::vec(step(), 0..200),
        ) {
            let mut o = Outbox::new(capacity, window);
            let (mut pushed, mut pkid) = (0u32, 0u16);
            let mut written: VecDeque<(u16, u32)> = VecDeque::new();
            let mut acked: Vec<u32> = Vec::new();
            for s in steps {
                match s {
                    Step::Push => { pushed += 1; o.push(msg(pushed)); }
                    Step::Connect => o.on_connected(),
                    Step::Disconnect => { o.on_disconnected(); written.clear(); }
                    Step::Send => _ = o.send_next(|m| {
                        pkid = pkid.wrapping_add(1);
                        written.push_back((pkid, num(m)));
                        pkid
                    }),
                    Step::AckOldest => if let Some((p, n)) = written.pop_front() {
                        prop_assert!(o.on_acked(p));
                        acked.push(n);
                    },
                }
                prop_assert!(o.held() <= capacity);
                prop_assert_eq!(o.forwarded() + o.dropped() + o.held() as u64, u64::from(pushed));
            }
            let mut unique = acked.clone();
            unique.sort_unstable();
            unique.dedup();
            prop_assert_eq!(unique.len(), acked.len(), "no message is acknowledged twice");
        }
    }
}
