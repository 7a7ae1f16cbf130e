//! Unit tests of the in-process bus: subject matching, delivery, bounds.
use std::time::Duration;

use futures::StreamExt;
use tokio::time::timeout;

use super::*;

const WAIT: Duration = Duration::from_secs(5);

async fn next(sub: &mut Subscription) -> Message {
    timeout(WAIT, sub.next()).await.expect("a message within the timeout").expect("the subscription is open")
}

#[tokio::test]
async fn take_ready_takes_what_is_queued_up_to_the_limit_and_never_waits() {
    let bus = InProcessBus::new();
    let mut sub = bus.subscribe("a.b").await.expect("subscribe");
    for n in 0..3 {
        bus.publish("a.b".into(), Bytes::from(n.to_string())).await.expect("publish");
    }
    let mut got = Vec::new();
    assert_eq!(crate::take_ready(&mut sub, 2, |m| got.push(m.payload)), 2);
    assert_eq!(crate::take_ready(&mut sub, 2, |m| got.push(m.payload)), 1);
    assert_eq!(crate::take_ready(&mut sub, 2, |m| got.push(m.payload)), 0, "an empty queue returns at once");
    assert_eq!(got, ["0", "1", "2"].map(Bytes::from));
}

#[tokio::test]
async fn waiting_counts_the_unread_messages_of_the_subscriptions_under_a_prefix() {
    let bus = InProcessBus::new();
    let mut positions = bus.subscribe("p.positions.0.*").await.expect("subscribe");
    let _grouped = bus.queue_subscribe("p.positions.>", "g").await.expect("subscribe");
    let _events = bus.subscribe("p.events.>").await.expect("subscribe");
    assert_eq!(bus.waiting("p.positions."), Some(0));
    for _ in 0..3 {
        bus.publish("p.positions.0.AA".into(), Bytes::from_static(b"x")).await.expect("publish");
    }
    bus.publish("p.events.zone".into(), Bytes::from_static(b"x")).await.expect("publish");
    assert_eq!(bus.waiting("p.positions."), Some(6), "three in each of the two subscriptions");
    next(&mut positions).await;
    assert_eq!(bus.waiting("p.positions."), Some(5), "a message read no longer waits");
    assert_eq!(bus.waiting("p.events."), Some(1));
    assert_eq!(bus.waiting("q."), Some(0));
}

/// A batch of positions, published decoded.
#[derive(Debug)]
struct Batch(usize);

impl crate::Encode for Batch {
    fn decoded(&self) -> &(dyn std::any::Any + Send + Sync) {
        &self.0
    }
    fn encode(&self) -> Bytes {
        Bytes::from(self.0.to_string())
    }
    fn weight(&self) -> usize {
        self.0
    }
}

#[tokio::test]
async fn a_message_published_decoded_waits_with_its_weight_until_read() {
    let bus = InProcessBus::new();
    let mut decoded = bus.subscribe_decoded("p.batches.*").await.expect("subscribe");
    let mut bytes = bus.subscribe("p.batches.0").await.expect("subscribe");
    bus.publish_decoded("p.batches.0".into(), Arc::new(Batch(62))).await.expect("publish");
    bus.publish("p.batches.1".into(), Bytes::from_static(b"line")).await.expect("publish");
    assert_eq!(bus.waiting("p.batches."), Some(62 + 62 + 1));
    assert_eq!(next(&mut decoded).await.decoded::<usize>(), Some(&62));
    assert_eq!(bus.waiting("p.batches."), Some(62 + 1));
    assert_eq!(next(&mut bytes).await.payload, Bytes::from("62"), "written for the subscriber of bytes");
    next(&mut decoded).await;
    assert_eq!(bus.waiting("p.batches."), Some(0));
}

#[tokio::test]
async fn dropping_a_subscription_removes_it_from_the_registry() {
    let bus = InProcessBus::new();
    let plain = bus.subscribe("a.>").await.expect("subscribe");
    let member = bus.queue_subscribe("a.b", "g").await.expect("subscribe");
    assert_eq!(bus.subscription_count(), 2);
    drop(plain);
    drop(member);
    assert_eq!(bus.subscription_count(), 0);
    assert!(bus.shared.lock().groups.is_empty());
}

#[tokio::test]
async fn a_full_subscription_makes_the_publisher_wait_instead_of_dropping() {
    let bus = InProcessBus::with_capacity(2);
    let mut sub = bus.subscribe("a").await.expect("subscribe");
    let publisher = {
        let bus = bus.clone();
        tokio::spawn(async move {
            for i in 0..5u8 {
                bus.publish("a".into(), Bytes::from(vec![i])).await.expect("publish");
            }
        })
    };
    for i in 0..5u8 {
        assert_eq!(next(&mut sub).await.payload, Bytes::from(vec![i]));
    }
    timeout(WAIT, publisher).await.expect("publisher finishes").expect("publisher does not panic");
}

#[tokio::test]
async fn dropping_a_full_subscription_releases_a_waiting_publisher() {
    let bus = InProcessBus::with_capacity(1);
    let stuck = bus.subscribe("a").await.expect("subscribe");
    let mut reader = bus.subscribe("a").await.expect("subscribe");
    bus.publish("a".into(), Bytes::from_static(b"1")).await.expect("publish");
    assert_eq!(next(&mut reader).await.payload, Bytes::from_static(b"1"));
    let publisher = {
        let bus = bus.clone();
        tokio::spawn(async move { bus.publish("a".into(), Bytes::from_static(b"2")).await })
    };
    drop(stuck);
    timeout(WAIT, publisher)
        .await
        .expect("publisher finishes")
        .expect("publisher does not panic")
        .expect("publish succeeds");
    assert_eq!(next(&mut reader).await.payload, Bytes::from_static(b"2"));
    assert_eq!(bus.subscription_count(), 1);
}

#[tokio::test]
async fn a_queue_group_skips_a_member_that_went_away() {
    let bus = InProcessBus::with_capacity(1);
    let stuck = bus.queue_subscribe("a", "g").await.expect("subscribe");
    let mut live = bus.queue_subscribe("a", "g").await.expect("subscribe");
    // Round-robin: "1" fills the first member's queue, "2" goes to the live one, "3" waits
    // for the first member until it is dropped and then goes to the live one.
    for payload in ["1", "2"] {
        bus.publish("a".into(), Bytes::from(payload)).await.expect("publish");
    }
    assert_eq!(next(&mut live).await.payload, Bytes::from_static(b"2"));
    let publisher = {
        let bus = bus.clone();
        tokio::spawn(async move { bus.publish("a".into(), Bytes::from_static(b"3")).await })
    };
    tokio::task::yield_now().await;
    drop(stuck);
    timeout(WAIT, publisher)
        .await
        .expect("publisher finishes")
        .expect("publisher does not panic")
        .expect("publish succeeds");
    assert_eq!(next(&mut live).await.payload, Bytes::from_static(b"3"));
}

#[tokio::test]
async fn round_robin_alternates_between_members() {
    let bus = InProcessBus::new();
    let mut a = bus.queue_subscribe("x", "g").await.expect("subscribe");
    let mut b = bus.queue_subscribe("x", "g").await.expect("subscribe");
    for i in 0..4u8 {
        bus.publish("x".into(), Bytes::from(vec![i])).await.expect("publish");
    }
    assert_eq!(next(&mut a).await.payload, Bytes::from(vec![0]));
    assert_eq!(next(&mut b).await.payload, Bytes::from(vec![1]));
    assert_eq!(next(&mut a).await.payload, Bytes::from(vec![2]));
    assert_eq!(next(&mut b).await.payload, Bytes::from(vec![3]));
}
