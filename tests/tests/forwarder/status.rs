//! The connection status tells the truth when forwarders stop, die or wait out a broker: what
//! waits for the connection is counted whether or not a forwarder runs, a dead replica is shown
//! gone within a few seconds, `forwarded` survives a replica killed while delivering, and a
//! broker away longer than the journal's ack wait gets each event once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_bus::journal::Record;
use zonecast_model::{EventId, ZoneEventKind};
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::{Mode, Server};

use super::{WAIT, create, mac, plain, status, wait_connected, wait_status};

/// How long a replica's row may be old before the status shows it gone (the API's bound, 3 s),
/// with a margin for the status poll and a busy test machine.
const SHOWN_GONE_WITHIN: Duration = Duration::from_secs(5);

/// `count` zone events of one zone, numbered from `from` in `Content.Sequence`, with their ids.
fn zone_events(server: &Server, from: u64, count: u64) -> (Vec<Record>, Vec<String>) {
    let zone = Uuid::new_v4().to_string();
    let subject = server.subjects.zone_event(&zone, ZoneEventKind::Enter);
    (from..from + count)
        .map(|n| {
            let id = EventId::generate(Utc::now()).to_string();
            let now = zonecast_model::format_timestamp(&Utc::now());
            let e = json!({"EventID": id, "Category": "ZONE", "Type": "ZONE_ENTER", "Timestamp": now,
                           "LocalTimestamp": now, "Source": {"MAC": mac(7), "GatewayURI": null, "SiteID": 501},
                           "Content": {"ZoneID": zone, "Sequence": n}});
            let record = Record { subject: subject.clone(), payload: serde_json::to_vec(&e).unwrap().into(), id };
            let id = record.id.clone();
            (record, id)
        })
        .unzip()
}

/// Appends `count` zone events and returns their ids.
async fn append(server: &Server, from: u64, count: u64) -> Vec<String> {
    let (records, ids) = zone_events(server, from, count);
    server.journal().append(records).await.unwrap();
    ids
}

/// Copies per EventID arriving at the broker.
#[derive(Default)]
struct Arrivals {
    copies: BTreeMap<String, u64>,
}

impl Arrivals {
    /// Takes messages until every id of `ids` has arrived; panics after `timeout`.
    async fn until_all(&mut self, sub: &mut Subscriber, ids: &[String], timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut missing: BTreeSet<&String> = ids.iter().filter(|id| !self.copies.contains_key(*id)).collect();
        while !missing.is_empty() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            assert!(!left.is_zero(), "{} events never arrived, e.g. {:?}", missing.len(), missing.first());
            let (_, event) = sub.next(left).await;
            let id = event["EventID"].as_str().unwrap().to_owned();
            missing.remove(&id);
            *self.copies.entry(id).or_default() += 1;
        }
    }

    /// Takes messages until `count` of `ids` have arrived.
    async fn until_some(&mut self, sub: &mut Subscriber, ids: &[String], count: usize) {
        let wanted: BTreeSet<&String> = ids.iter().collect();
        while self.copies.keys().filter(|id| wanted.contains(id)).count() < count {
            let (_, event) = sub.next(WAIT).await;
            *self.copies.entry(event["EventID"].as_str().unwrap().to_owned()).or_default() += 1;
        }
    }

    fn unique(&self) -> u64 {
        self.copies.len() as u64
    }

    fn total(&self) -> u64 {
        self.copies.values().sum()
    }
}

/// Polls the status until it shows no live replica connected and `queued` at `queued`; returns
/// the status and how long that took from `since`.
async fn shown_gone(server: &Server, id: &str, queued: u64, since: Instant) -> (Value, Duration) {
    let s = wait_status(server, id, "no connected replica and every waiting event queued", |s| {
        s["connected"] == false && s["queued"] == queued
    })
    .await;
    (s, since.elapsed())
}

/// Distributed: the forwarder stopped, then a forwarder process killed (SIGKILL) while its
/// broker hangs with events in hand, then another killed while delivering. The status counts
/// what waits for the connection from the journal (no forwarder needs to be alive), shows a
/// dead replica gone within a few seconds, and its `forwarded` misses nothing of what the
/// killed replicas delivered.
pub(crate) async fn a_stopped_or_killed_forwarder_is_shown_gone_and_what_waits_for_it_stays_queued() {
    let mut server = Server::start(Mode::Distributed).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let id = create(&server, plain(broker.port, &[("zc/events", json!([{"FilterTemplate": "zone_events"}]))])).await;
    wait_connected(&server, &id).await;
    let mut arrivals = Arrivals::default();

    // No forwarder at all: what is appended waits in the journal and is counted there.
    server.stop_forwarder().await;
    let first = append(&server, 0, 300).await;
    shown_gone(&server, &id, 300, Instant::now()).await;
    let mut replica = server.forwarder_process();
    replica.healthy(&server.http, WAIT).await;
    arrivals.until_all(&mut sub, &first, WAIT).await;
    wait_status(&server, &id, "the backlog delivered", |s| s["connected"] == true && s["queued"] == 0).await;

    // Killed while its broker hangs: the events it holds are the journal's again after the
    // ack wait, and until then they still count as waiting; the dead replica shows as gone.
    broker.pause();
    let second = append(&server, 300, 2_000).await;
    wait_status(&server, &id, "the events in hand", |s| s["queued"] == 2_000).await;
    replica.kill().await;
    let killed = Instant::now();
    let (s, took) = shown_gone(&server, &id, 2_000, killed).await;
    eprintln!("a killed replica was shown gone after {} ms", took.as_millis());
    assert!(took <= SHOWN_GONE_WITHIN, "shown gone only after {took:?}: {s}");
    assert!(s["replicas"].as_array().unwrap().iter().all(|r| r["stale"] == true), "{s}");
    broker.resume();
    let mut replica = server.forwarder_process();
    replica.healthy(&server.http, WAIT).await;
    arrivals.until_all(&mut sub, &second, Duration::from_secs(60)).await;
    wait_status(&server, &id, "the held events delivered", |s| s["connected"] == true && s["queued"] == 0).await;

    // Killed while delivering (the broker's first copies reach the subscriber while most are
    // still on their way): what it had forwarded stays counted.
    let third = append(&server, 2_300, 20_000).await;
    arrivals.until_some(&mut sub, &third, 200).await;
    replica.kill().await;
    let mut replica = server.forwarder_process();
    replica.healthy(&server.http, WAIT).await;
    arrivals.until_all(&mut sub, &third, Duration::from_secs(120)).await;
    wait_status(&server, &id, "everything delivered", |s| s["queued"] == 0 && s["connected"] == true).await;
    // Every copy the broker acknowledged arrived before an event appended after all of them.
    let marker = append(&server, 22_300, 1).await;
    arrivals.until_all(&mut sub, &marker, WAIT).await;
    // Every message the broker acknowledged is counted: at least each event once, at most every
    // copy that arrived (a copy sent again after the kill may count twice).
    let (forwarded, s) = eventually_forwarded(&server, &id, arrivals.unique()).await;
    eprintln!("forwarded {forwarded}: {} events arrived as {} copies", arrivals.unique(), arrivals.total());
    assert!(
        forwarded <= arrivals.total(),
        "forwarded {forwarded}, {} events arrived as {} copies: {s}",
        arrivals.unique(),
        arrivals.total()
    );
    drop(replica);
    server.stop().await;
}

/// `forwarded` once it has reached `at_least` (rows are written a moment after delivery), with
/// the status that showed it.
async fn eventually_forwarded(server: &Server, id: &str, at_least: u64) -> (u64, Value) {
    let s = wait_status(server, id, &format!("at least {at_least} forwarded"), |s| {
        s["forwarded"].as_u64().unwrap() >= at_least
    })
    .await;
    (s["forwarded"].as_u64().unwrap(), s)
}

/// A broker away longer than the journal's ack wait (10 s) while events come: they wait in hand
/// (reported to the journal as in progress), and when the broker returns each arrives once.
pub(crate) async fn a_broker_away_longer_than_the_ack_wait_gets_every_event_exactly_once(mode: Mode) {
    let server = Server::start(mode).await;
    let mut broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let id = create(&server, plain(broker.port, &[("zc/events", json!([{"FilterTemplate": "zone_events"}]))])).await;
    wait_connected(&server, &id).await;
    broker.stop().await;
    wait_status(&server, &id, "disconnected", |s| s["connected"] == false).await;

    // More than a connection holds in hand: the journal's window of unacknowledged events is
    // full, so an event it handed out again would wait behind the window and be sent twice.
    let count = zonecast_forwarder::DEFAULT_QUEUE as u64 + 500;
    let ids = append(&server, 0, count).await;
    wait_status(&server, &id, "every event queued", |s| s["queued"] == count).await;
    let outage = tokio::time::Instant::now() + Duration::from_secs(13);
    while tokio::time::Instant::now() < outage {
        let s = status(&server, &id).await;
        assert_eq!((s["queued"].as_u64(), s["connected"].as_bool()), (Some(count), Some(false)), "{s}");
        tokio::time::sleep(Duration::from_millis(500)).await; // sleep-ok: pacing; the outage must outlast the journal's 10 s ack wait
    }

    broker.start().await;
    let back = Instant::now();
    let (_, first) = sub.next(Duration::from_secs(30)).await;
    eprintln!("first event {} ms after the broker was back ({mode:?})", back.elapsed().as_millis());
    let mut arrivals = Arrivals::default();
    arrivals.copies.insert(first["EventID"].as_str().unwrap().to_owned(), 1);
    arrivals.until_all(&mut sub, &ids, Duration::from_secs(60)).await;
    wait_status(&server, &id, "everything acknowledged", |s| s["queued"] == 0).await;
    // Nothing is left to be handed out again: what arrives before a last event is all there is.
    let marker = append(&server, count, 1).await;
    arrivals.until_all(&mut sub, &marker, WAIT).await;
    let twice: Vec<_> = arrivals.copies.iter().filter(|(_, n)| **n > 1).take(5).collect();
    assert!(twice.is_empty(), "events arrived more than once, e.g. {twice:?}");
    assert_eq!(arrivals.unique(), count + 1);
    server.stop().await;
}
