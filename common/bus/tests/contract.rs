//! One contract suite run against both bus implementations: what holds in-process must hold on
//! NATS, so services behave the same in the all-in-one binary and distributed.
//!
//! The NATS half needs a server at `ZONECAST_TEST_NATS_URL` (default `nats://127.0.0.1:4222`)
//! and fails, never skips, when there is none.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use tokio::time::timeout;
use zonecast_bus::{Bus, BusError, Encode, FORWARDERS, INGESTORS, InProcessBus, NatsBus, Subjects};
use zonecast_model::{AlarmKind, ZoneEventKind};

const START_NATS: &str = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log";

/// Longest wait for a message that must arrive.
const ARRIVES: Duration = Duration::from_secs(10);
/// Wait used only to assert that nothing more arrives, after a flush.
const ABSENT: Duration = Duration::from_millis(300);

const MAC: &str = "00:AA:BB:CC:DD:EE";

fn in_process_bus() -> Arc<dyn Bus> {
    Arc::new(InProcessBus::new())
}

async fn nats_bus() -> Arc<dyn Bus> {
    let url = std::env::var("ZONECAST_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
    match NatsBus::connect(&url, "zonecast-bus-contract").await {
        Ok(bus) => Arc::new(bus),
        Err(err) => panic!(
            "the NATS contract tests need a NATS server ({err}); start one with:\n  {START_NATS}\nor point ZONECAST_TEST_NATS_URL at another server"
        ),
    }
}

/// Subjects under a fresh prefix, so concurrent and repeated runs never see each other.
fn fresh_subjects() -> Subjects {
    Subjects::new(format!("test-{}", uuid::Uuid::new_v4().simple()))
}

fn text(payload: &str) -> Bytes {
    Bytes::copy_from_slice(payload.as_bytes())
}

async fn publish(bus: &Arc<dyn Bus>, subject: String, payload: &str) {
    bus.publish(subject, text(payload)).await.expect("publish");
}

async fn next<S, T>(sub: &mut S) -> T
where
    S: futures::Stream<Item = T> + Unpin,
{
    timeout(ARRIVES, sub.next())
        .await
        .expect("a message should arrive in time")
        .expect("the subscription should stay open")
}

/// After a flush, asserts that nothing (more) is waiting on the subscription.
async fn assert_nothing_more<S, T>(bus: &Arc<dyn Bus>, sub: &mut S)
where
    S: futures::Stream<Item = T> + Unpin,
    T: std::fmt::Debug,
{
    bus.flush().await.expect("flush");
    if let Ok(Some(extra)) = timeout(ABSENT, sub.next()).await {
        panic!("unexpected message: {extra:?}");
    }
}

async fn an_exact_subject_reaches_every_plain_subscriber_and_no_other(bus: Arc<dyn Bus>) {
    let s = fresh_subjects();
    let mut first = bus.subscribe(&s.ingest()).await.expect("subscribe");
    let mut second = bus.subscribe(&s.ingest()).await.expect("subscribe");
    let mut other = bus.subscribe(&s.config_changed()).await.expect("subscribe");

    publish(&bus, s.ingest(), "position").await;
    publish(&bus, s.config_changed(), "sentinel").await;

    for sub in [&mut first, &mut second] {
        let message = next(sub).await;
        assert_eq!(message.subject, s.ingest());
        assert_eq!(message.payload, text("position"));
    }
    // The sentinel came after the position: had the position leaked here, it would be first.
    assert_eq!(next(&mut other).await.payload, text("sentinel"));
    assert_nothing_more(&bus, &mut first).await;
}

async fn a_star_matches_exactly_one_token(bus: Arc<dyn Bus>) {
    let s = fresh_subjects();
    let mut partition = bus.subscribe(&s.positions_partition(3)).await.expect("subscribe");

    publish(&bus, s.positions(3, MAC), "match").await;
    publish(&bus, s.positions(4, MAC), "other partition").await;
    publish(&bus, format!("{}.positions.3", s.prefix()), "too short").await;
    publish(&bus, format!("{}.extra", s.positions(3, MAC)), "too long").await;
    publish(&bus, s.positions(3, "sentinel"), "sentinel").await;

    let message = next(&mut partition).await;
    assert_eq!(message.subject, s.positions(3, MAC));
    assert_eq!(message.payload, text("match"));
    assert_eq!(next(&mut partition).await.payload, text("sentinel"));
    assert_nothing_more(&bus, &mut partition).await;
}

async fn a_greater_than_matches_one_or_more_trailing_tokens(bus: Arc<dyn Bus>) {
    let s = fresh_subjects();
    let mut all_events = bus.subscribe(&s.events_all()).await.expect("subscribe");
    let mut zone_7 = bus.subscribe(&s.zone_events("7")).await.expect("subscribe");

    publish(&bus, s.zone_event("7", ZoneEventKind::Enter), "enter 7").await;
    publish(&bus, s.zone_event("8", ZoneEventKind::Enter), "enter 8").await;
    publish(&bus, s.alarm(AlarmKind::Device, MAC), "alarm").await;
    publish(&bus, format!("{}.events", s.prefix()), "no trailing token").await;
    publish(&bus, s.positions(0, MAC), "not an event").await;
    publish(&bus, s.device_alarm_command(MAC), "not an event").await;
    publish(&bus, s.zone_event("7", ZoneEventKind::Exit), "exit 7").await;

    let mut everything = Vec::new();
    for _ in 0..4 {
        everything.push(next(&mut all_events).await.payload);
    }
    assert_eq!(everything, ["enter 7", "enter 8", "alarm", "exit 7"].map(text).to_vec());
    assert_eq!(next(&mut zone_7).await.payload, text("enter 7"));
    assert_eq!(next(&mut zone_7).await.payload, text("exit 7"));
    assert_nothing_more(&bus, &mut all_events).await;
    assert_nothing_more(&bus, &mut zone_7).await;
}

async fn a_queue_group_delivers_each_message_to_exactly_one_member(bus: Arc<dyn Bus>) {
    const N: usize = 200;
    let s = fresh_subjects();
    let first = bus.queue_subscribe(&s.events_all(), FORWARDERS).await.expect("queue subscribe");
    let second = bus.queue_subscribe(&s.events_all(), FORWARDERS).await.expect("queue subscribe");
    let mut members = futures::stream::select(first.map(|m| (0, m)), second.map(|m| (1, m)));
    let mut tap = bus.subscribe(&s.events_all()).await.expect("subscribe");

    for i in 0..N {
        publish(&bus, s.zone_event("1", ZoneEventKind::Enter), &i.to_string()).await;
    }

    let mut seen = HashSet::new();
    let mut per_member = [0usize; 2];
    for _ in 0..N {
        let (member, message) = next(&mut members).await;
        per_member[member] += 1;
        assert!(seen.insert(message.payload.clone()), "{:?} delivered twice", message.payload);
    }
    assert_nothing_more(&bus, &mut members).await;
    assert!(per_member.iter().all(|&count| count > 0), "both members should share the load: {per_member:?}");
    for i in 0..N {
        assert_eq!(next(&mut tap).await.payload, text(&i.to_string()));
    }
}

async fn each_queue_group_gets_its_own_copy(bus: Arc<dyn Bus>) {
    let s = fresh_subjects();
    let mut ingestor = bus.queue_subscribe(&s.ingest(), INGESTORS).await.expect("queue subscribe");
    let mut forwarder = bus.queue_subscribe(&s.ingest(), FORWARDERS).await.expect("queue subscribe");

    publish(&bus, s.ingest(), "one").await;

    assert_eq!(next(&mut ingestor).await.payload, text("one"));
    assert_eq!(next(&mut forwarder).await.payload, text("one"));
    assert_nothing_more(&bus, &mut ingestor).await;
    assert_nothing_more(&bus, &mut forwarder).await;
}

async fn messages_from_one_publisher_arrive_in_order(bus: Arc<dyn Bus>) {
    const N: usize = 1_000;
    let s = fresh_subjects();
    let mut positions = bus.subscribe(&s.positions_all()).await.expect("subscribe");
    let mut member = bus.queue_subscribe(&s.positions_all(), INGESTORS).await.expect("queue subscribe");

    for i in 0..N {
        let partition = u32::try_from(i % 16).expect("small");
        publish(&bus, s.positions(partition, MAC), &i.to_string()).await;
    }
    for sub in [&mut positions, &mut member] {
        for i in 0..N {
            assert_eq!(next(sub).await.payload, text(&i.to_string()));
        }
    }
}

/// An input subscription shares its subject with the queue group's other members, gets one
/// publisher's messages in order, and has dropped none when its reader keeps up; only NATS
/// may drop (the in-process bus makes publishers wait instead).
async fn an_input_subscription_takes_its_share_in_order(bus: Arc<dyn Bus>) {
    const N: usize = 1_000;
    let s = fresh_subjects();
    let mut input = bus.input_subscribe(&s.ingest(), INGESTORS).await.expect("input subscribe");
    assert_eq!(input.lossy, bus.kind() == "nats");
    let mut other_group = bus.queue_subscribe(&s.ingest(), FORWARDERS).await.expect("queue subscribe");
    for i in 0..N {
        publish(&bus, s.ingest(), &i.to_string()).await;
    }
    for i in 0..N {
        assert_eq!(next(&mut input.messages).await.payload, text(&i.to_string()));
        assert_eq!(next(&mut other_group).await.payload, text(&i.to_string()));
    }
    assert_nothing_more(&bus, &mut input.messages).await;
    assert_eq!(input.dropped.load(Ordering::Relaxed), 0);
    let invalid = bus.input_subscribe(&format!("{}..x", s.prefix()), INGESTORS).await.map(|_| ());
    assert!(matches!(invalid, Err(BusError::InvalidSubject(_))), "{invalid:?}");
}

async fn invalid_subjects_are_rejected(bus: Arc<dyn Bus>) {
    let s = fresh_subjects();
    let bad_subjects = [
        String::new(),
        format!("{}..ingest", s.prefix()),
        format!(".{}", s.ingest()),
        format!("{}.", s.ingest()),
        format!("{} x", s.ingest()),
        format!("{}\tx", s.ingest()),
        format!("{}\r\nPUB x 1", s.ingest()),
        s.positions_partition(1),
        s.events_all(),
        s.positions(1, "*"),
    ];
    for subject in bad_subjects {
        let result = bus.publish(subject.clone(), text("x")).await;
        assert!(
            matches!(result, Err(BusError::InvalidSubject(_))),
            "publishing to {subject:?} should be rejected, got {result:?}"
        );
    }
    let bad_patterns = [
        String::new(),
        format!("{}..>", s.prefix()),
        format!("{}.>.ingest", s.prefix()),
        format!("{}.in*", s.prefix()),
        format!("{} >", s.prefix()),
    ];
    for pattern in bad_patterns {
        let result = bus.subscribe(&pattern).await.map(|_| ());
        assert!(
            matches!(result, Err(BusError::InvalidSubject(_))),
            "subscribing to {pattern:?} should be rejected, got {result:?}"
        );
        let result = bus.queue_subscribe(&pattern, INGESTORS).await.map(|_| ());
        assert!(
            matches!(result, Err(BusError::InvalidSubject(_))),
            "queue subscribing to {pattern:?} should be rejected, got {result:?}"
        );
    }
    for group in ["", "two words"] {
        let result = bus.queue_subscribe(&s.ingest(), group).await.map(|_| ());
        assert!(
            matches!(result, Err(BusError::InvalidQueueGroup(_))),
            "queue group {group:?} should be rejected, got {result:?}"
        );
    }
    // The bus still works after rejecting.
    let mut ingest = bus.subscribe(&s.ingest()).await.expect("subscribe");
    publish(&bus, s.ingest(), "ok").await;
    assert_eq!(next(&mut ingest).await.payload, text("ok"));
}

async fn dropping_a_subscription_unsubscribes(bus: Arc<dyn Bus>) {
    const N: usize = 50;
    let s = fresh_subjects();
    let leaving = bus.queue_subscribe(&s.ingest(), INGESTORS).await.expect("queue subscribe");
    let mut staying = bus.queue_subscribe(&s.ingest(), INGESTORS).await.expect("queue subscribe");
    let plain = bus.subscribe(&s.ingest()).await.expect("subscribe");
    drop(leaving);
    drop(plain);
    // Make sure the unsubscriptions reached the server before publishing.
    bus.flush().await.expect("flush");

    for i in 0..N {
        publish(&bus, s.ingest(), &i.to_string()).await;
    }
    // Had the dropped member stayed in the group, about half of these would be lost to it.
    for i in 0..N {
        assert_eq!(next(&mut staying).await.payload, text(&i.to_string()));
    }
    assert_nothing_more(&bus, &mut staying).await;
}

async fn ten_thousand_messages_arrive_without_loss(bus: Arc<dyn Bus>) {
    const N: usize = 10_000;
    let s = fresh_subjects();
    let mut sub = bus.subscribe(&s.positions_all()).await.expect("subscribe");
    let consumer = tokio::spawn(async move {
        let mut expected = 0usize;
        while expected < N {
            let message = next(&mut sub).await;
            assert_eq!(message.payload, text(&expected.to_string()));
            expected += 1;
        }
        expected
    });
    for i in 0..N {
        let partition = u32::try_from(i % 16).expect("small");
        publish(&bus, s.positions(partition, MAC), &i.to_string()).await;
    }
    bus.flush().await.expect("flush");
    let received = timeout(Duration::from_secs(60), consumer)
        .await
        .expect("all messages within a minute")
        .expect("consumer does not panic");
    assert_eq!(received, N);
}

async fn draining_ends_subscriptions_after_their_buffered_messages(bus: Arc<dyn Bus>) {
    let s = fresh_subjects();
    let mut sub = bus.subscribe(&s.config_changed()).await.expect("subscribe");
    publish(&bus, s.config_changed(), "last").await;
    bus.flush().await.expect("flush");
    assert!(bus.is_connected());

    bus.drain().await.expect("drain");

    assert_eq!(next(&mut sub).await.payload, text("last"));
    let end = timeout(ARRIVES, sub.next()).await.expect("the subscription should end in time");
    assert!(end.is_none(), "no message after the drain: {end:?}");
    assert!(!bus.is_connected());
    assert!(matches!(bus.publish(s.config_changed(), text("late")).await, Err(BusError::Closed)));
    bus.drain().await.expect("a second drain is harmless");
}

/// Runs each contract function once per implementation, as `in_process::<name>` and
/// `nats::<name>`.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod in_process {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::in_process_bus()).await;
                }
            )*
        }
        mod nats {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::nats_bus().await).await;
                }
            )*
        }
    };
}

contract!(
    an_exact_subject_reaches_every_plain_subscriber_and_no_other,
    a_star_matches_exactly_one_token,
    a_greater_than_matches_one_or_more_trailing_tokens,
    a_queue_group_delivers_each_message_to_exactly_one_member,
    each_queue_group_gets_its_own_copy,
    messages_from_one_publisher_arrive_in_order,
    an_input_subscription_takes_its_share_in_order,
    invalid_subjects_are_rejected,
    dropping_a_subscription_unsubscribes,
    ten_thousand_messages_arrive_without_loss,
    draining_ends_subscriptions_after_their_buffered_messages,
);

/// A decoded test payload: a number whose bytes are its decimal text, counting its encodings.
#[derive(Debug)]
struct Number {
    value: u32,
    encoded: AtomicUsize,
}

impl Number {
    fn new(value: u32) -> Arc<Self> {
        Arc::new(Self { value, encoded: AtomicUsize::new(0) })
    }
}

impl Encode for Number {
    fn decoded(&self) -> &(dyn std::any::Any + Send + Sync) {
        &self.value
    }

    fn encode(&self) -> Bytes {
        self.encoded.fetch_add(1, Ordering::SeqCst);
        Bytes::from(self.value.to_string())
    }
}

#[tokio::test]
async fn a_decoded_payload_is_handed_over_in_process_and_only_the_bytes_cross_nats() {
    for (bus, handed_over) in [(in_process_bus(), true), (nats_bus().await, false)] {
        let s = fresh_subjects();
        let mut plain = bus.subscribe(&s.positions_all()).await.expect("subscribe");
        let mut member = bus.queue_subscribe(&s.positions_all(), FORWARDERS).await.expect("subscribe");
        let mut decoded_only = bus.subscribe_decoded(&s.positions_all()).await.expect("subscribe");
        bus.flush().await.expect("flush");
        let number = Number::new(42);
        bus.publish_decoded(s.positions(3, MAC), number.clone()).await.expect("publish");
        bus.publish(s.positions(3, MAC), text("plain")).await.expect("publish");
        assert_eq!(number.encoded.load(Ordering::SeqCst), 1, "encoded once for all, {}", bus.kind());
        for sub in [&mut plain, &mut member, &mut decoded_only] {
            let first: zonecast_bus::Message = next(sub).await;
            assert_eq!(first.payload, text("42"), "{}", bus.kind());
            assert_eq!(first.decoded::<u32>().copied(), handed_over.then_some(42), "{}", bus.kind());
            assert!(first.decoded::<String>().is_none(), "another type is not there");
            let second: zonecast_bus::Message = next(sub).await;
            assert_eq!(second.payload, text("plain"));
            assert!(second.decoded::<u32>().is_none(), "a plain publish carries no decoded payload");
        }
    }
}

#[tokio::test]
async fn a_decoded_payload_nobody_reads_as_bytes_is_never_encoded_in_process() {
    for (bus, handed_over) in [(in_process_bus(), true), (nats_bus().await, false)] {
        let s = fresh_subjects();
        let mut decoded_only = bus.subscribe_decoded(&s.positions_all()).await.expect("subscribe");
        bus.flush().await.expect("flush");
        let number = Number::new(7);
        bus.publish_decoded(s.positions(3, MAC), number.clone()).await.expect("publish");
        let got: zonecast_bus::Message = next(&mut decoded_only).await;
        assert_eq!(got.decoded::<u32>().copied(), handed_over.then_some(7), "{}", bus.kind());
        // In one process the bytes are never written; over NATS they are all there is.
        let (payload, encodings) = if handed_over { (Bytes::new(), 0) } else { (text("7"), 1) };
        assert_eq!(got.payload, payload, "{}", bus.kind());
        assert_eq!(number.encoded.load(Ordering::SeqCst), encodings, "{}", bus.kind());
    }
}

#[tokio::test]
async fn each_implementation_names_its_kind_and_reports_connected() {
    let in_process = zonecast_bus::connect(None, "contract").await.expect("in-process");
    assert_eq!(in_process.kind(), "in-process");
    assert!(in_process.is_connected());
    let blank = zonecast_bus::connect(Some("  "), "contract").await.expect("in-process");
    assert_eq!(blank.kind(), "in-process");
    let nats = nats_bus().await;
    assert_eq!(nats.kind(), "nats");
    assert!(nats.is_connected());
}

#[tokio::test]
async fn connecting_to_a_closed_port_fails_fast_naming_the_url_but_not_its_password() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0");
        listener.local_addr().expect("local address").port()
    };
    let url = format!("nats://alice:s3cret@127.0.0.1:{port}");
    let started = Instant::now();

    let result = timeout(Duration::from_secs(10), NatsBus::connect(&url, "contract"))
        .await
        .expect("connect should give up on its own");

    let elapsed = started.elapsed();
    let err = result.expect_err("nothing listens on the port");
    assert!(matches!(err, BusError::Connect { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(!message.contains("s3cret"), "{message}");
    assert!(!format!("{err:?}").contains("s3cret"), "{err:?}");
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    let via_connect = zonecast_bus::connect(Some(&url), "contract").await.map(|_| ());
    assert!(matches!(via_connect, Err(BusError::Connect { .. })));
}
