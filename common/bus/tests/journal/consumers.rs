//! The consumer contract every journal keeps, for both kinds: order, acknowledgement, copies,
//! independence, bounds and refused subjects.

use bytes::Bytes;
use futures::StreamExt;
use tokio::time::timeout;
use zonecast_bus::JournalSettings;
use zonecast_bus::journal::{Delivery, Kind, Record};

use super::setup::{ARRIVES, Setup, next, small, subject_of, text};

pub(crate) async fn records_are_delivered_in_order_until_acknowledged_and_published_too(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    let mut tap =
        s.bus.subscribe(&kind.pattern(&zonecast_bus::Subjects::new(s.prefix.clone()))).await.expect("subscribe");
    s.create("mqtt-1", 100).await;
    s.append(1..=3).await;
    let mut deliveries = s.consume("mqtt-1", 100).await;
    let got: Vec<Delivery> =
        vec![next(&mut deliveries).await, next(&mut deliveries).await, next(&mut deliveries).await];
    assert_eq!(got.iter().map(text).collect::<Vec<_>>(), ["event 1", "event 2", "event 3"]);
    assert!(got.windows(2).all(|w| w[0].sequence < w[1].sequence), "sequences grow in append order");
    let tapped = timeout(ARRIVES, tap.next()).await.expect("tap").expect("message");
    assert_eq!(tapped.payload, Bytes::from("event 1"), "subscribers of the subject see the record");
    assert_eq!(s.state("mqtt-1").await.backlog, 3);
    for d in got {
        d.ack.ack();
    }
    // Acknowledgements travel on their own; the backlog empties once they are in.
    timeout(ARRIVES, async {
        while s.state("mqtt-1").await.backlog != 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the backlog empties once everything is acknowledged");
    s.done().await;
}

pub(crate) async fn an_unacknowledged_record_comes_back_and_an_acknowledged_one_does_not(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    s.create("c", 100).await;
    s.append(1..=2).await;
    {
        let mut deliveries = s.consume("c", 100).await;
        let first = next(&mut deliveries).await;
        let second = next(&mut deliveries).await;
        assert_eq!((text(&first), text(&second)), ("event 1".into(), "event 2".into()));
        first.ack.ack();
        // The second is dropped unacknowledged: the consumer stopped before delivering it.
        drop(second);
    }
    s.append([3]).await;
    let mut deliveries = s.consume("c", 100).await;
    let again = next(&mut deliveries).await;
    let after = next(&mut deliveries).await;
    let mut got = vec![text(&again), text(&after)];
    got.sort();
    assert_eq!(got, ["event 2", "event 3"], "the unacknowledged record comes back, the acknowledged one not");
    s.done().await;
}

pub(crate) async fn a_copy_of_a_record_is_stored_once(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    s.create("c", 100).await;
    s.append([1]).await;
    s.append([1, 2]).await;
    let mut deliveries = s.consume("c", 100).await;
    assert_eq!(text(&next(&mut deliveries).await), "event 1");
    assert_eq!(text(&next(&mut deliveries).await), "event 2", "the copy of event 1 is not delivered");
    assert_eq!(s.state("c").await.backlog, 2);
    s.done().await;
}

pub(crate) async fn consumers_are_independent_and_start_at_their_creation(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    s.create("a", 100).await;
    s.append([1]).await;
    s.create("b", 100).await;
    s.append([2]).await;
    let mut a = s.consume("a", 100).await;
    let mut b = s.consume("b", 100).await;
    let one = next(&mut a).await;
    assert_eq!(text(&one), "event 1");
    one.ack.ack();
    assert_eq!(text(&next(&mut b).await), "event 2", "b starts with what came after it was made");
    assert_eq!(text(&next(&mut a).await), "event 2");
    s.journal.remove_consumer(kind, "b").await.expect("remove");
    assert_eq!(s.journal.state(kind, "b").await.expect("state"), None);
    s.journal.remove_consumer(kind, "b").await.expect("removing a missing consumer is no error");
    s.done().await;
}

pub(crate) async fn records_past_the_bounds_are_counted_as_lost_for_consumers_that_lacked_them(nats: bool, kind: Kind) {
    // Each record is about 7 bytes of payload (plus JetStream's own overhead per message).
    let s = Setup::new(nats, kind, JournalSettings { max_bytes: 2_000, ..small() }).await;
    s.create("slow", 100).await;
    s.append(1..=400).await;
    let state = s.state("slow").await;
    assert!(state.lost > 0, "records pushed out by the size bound count as lost: {state:?}");
    assert!(state.lost + state.backlog >= 400 - 1, "every record is either waiting or counted lost: {state:?}");
    let mut deliveries = s.consume("slow", 1000).await;
    let first = next(&mut deliveries).await;
    assert_ne!(text(&first), "event 1", "the oldest records are the ones gone");
    s.done().await;
}

pub(crate) async fn a_large_append_is_stored_whole(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    s.create("c", 100).await;
    s.append(0..5_000).await;
    assert_eq!(s.state("c").await.backlog, 5_000);
    s.done().await;
}

pub(crate) async fn a_subject_outside_the_rules_is_refused(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    let bad = Record { subject: format!("{}..x", subject_of(kind, &s.prefix)), payload: Bytes::new(), id: "x".into() };
    assert!(matches!(s.journal.append(vec![bad]).await, Err(zonecast_bus::BusError::InvalidSubject(_))));
    s.done().await;
}
