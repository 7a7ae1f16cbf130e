//! A broker away or restarted: what was held is delivered, within its bound.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_model::{EventId, ZoneEventKind};
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::{Mode, Server};

use super::{WAIT, create, event, mac, plain, position, seq, wait_connected, wait_status};

pub(crate) async fn a_restarted_broker_gets_what_was_held_and_the_oldest_beyond_the_bound_are_dropped(mode: Mode) {
    let server = Server::start(mode).await;
    let mut broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let id = create(&server, plain(broker.port, &[("zc/all", json!([]))])).await;
    wait_connected(&server, &id).await;
    position(&server, &mac(4), 1.0, 0).await;
    assert_eq!(seq(&sub.next(WAIT).await.1), 0);

    broker.stop().await;
    wait_status(&server, &id, "disconnected", |s| s["connected"] == false).await;
    let bound = zonecast_forwarder::DEFAULT_QUEUE as u64;
    let over = 500;
    for n in 1..=bound + over {
        position(&server, &mac(4), 1.0, n).await;
    }
    let s = wait_status(&server, &id, "a full queue", |s| s["queued"] == bound && s["dropped"] == over).await;
    assert_eq!(s["forwarded"], 1, "{s}");

    broker.start().await;
    let last = bound + over;
    let got = sub.until(Duration::from_secs(60), |_, v| seq(v) == last).await;
    // Seq 0 may come again: the observer's own session redelivers what it had not acknowledged
    // when the broker stopped (QoS 1 is at least once).
    let received: BTreeSet<u64> = got.iter().map(|(_, v)| seq(v)).filter(|n| *n != 0).collect();
    let expected: BTreeSet<u64> = (over + 1..=last).collect();
    let missing: Vec<_> = expected.difference(&received).take(10).collect();
    let extra: Vec<_> = received.difference(&expected).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the {bound} newest arrive, the {over} oldest were dropped; missing {missing:?}, unexpected {extra:?}"
    );
    wait_status(&server, &id, "everything delivered", |s| {
        s["connected"] == true && s["forwarded"] == 1 + bound && s["queued"] == 0 && s["dropped"] == over
    })
    .await;
    server.stop().await;
}

/// Zone events are journalled: a broker away while more events arrive than a connection holds
/// in hand gets every one of them when it returns, and nothing is counted as dropped.
pub(crate) async fn zone_events_held_while_the_broker_is_away_are_all_delivered_when_it_returns(mode: Mode) {
    let server = Server::start(mode).await;
    let mut broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let id = create(&server, plain(broker.port, &[("zc/events", json!([{"FilterTemplate": "zone_events"}]))])).await;
    wait_connected(&server, &id).await;
    broker.stop().await;
    wait_status(&server, &id, "disconnected", |s| s["connected"] == false).await;

    // More than a connection holds at a time: the rest wait in the journal.
    let count = zonecast_forwarder::DEFAULT_QUEUE as u64 + 500;
    let zone = Uuid::new_v4().to_string();
    let subject = server.subjects.zone_event(&zone, ZoneEventKind::Enter);
    let mut ids = BTreeSet::new();
    let records: Vec<_> = (0..count)
        .map(|n| {
            let id = EventId::generate(Utc::now()).to_string();
            ids.insert(id.clone());
            let now = zonecast_model::format_timestamp(&Utc::now());
            let e = json!({"EventID": id, "Category": "ZONE", "Type": "ZONE_ENTER", "Timestamp": now,
                           "LocalTimestamp": now, "Source": {"MAC": mac(9), "GatewayURI": null, "SiteID": 501},
                           "Content": {"ZoneID": zone, "Sequence": n}});
            zonecast_bus::journal::Record {
                subject: subject.clone(),
                payload: serde_json::to_vec(&e).unwrap().into(),
                id,
            }
        })
        .collect();
    server.journal().append(records).await.unwrap();
    let s = wait_status(&server, &id, "every event queued", |s| s["queued"] == count).await;
    assert_eq!(s["dropped"], 0, "{s}");

    broker.start().await;
    let mut received = BTreeSet::new();
    let mut copies: BTreeMap<String, Value> = BTreeMap::new();
    while received.len() < ids.len() {
        let (_, event) = sub.next(Duration::from_secs(60)).await;
        let id = event["EventID"].as_str().unwrap().to_owned();
        if let Some(first) = copies.get(&id) {
            assert_eq!(first, &event, "a copy carries the same EventID and is the same event");
        }
        copies.insert(id.clone(), event);
        received.insert(id);
    }
    assert_eq!(received, ids, "every event arrives");
    wait_status(&server, &id, "everything delivered", |s| s["queued"] == 0 && s["dropped"] == 0).await;
    server.stop().await;
}

/// A connection takes every event appended once its creation is answered, before its client
/// has even connected.
pub(crate) async fn an_event_right_after_the_connection_is_created_is_delivered(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    create(&server, plain(broker.port, &[("zc/all", json!([]))])).await;
    let zone = Uuid::new_v4().to_string();
    let subject = server.subjects.zone_event(&zone, ZoneEventKind::Enter);
    event(&server, subject, "ZONE", "ZONE_ENTER", &mac(3), json!({"ZoneID": zone})).await;
    let (_, got) = sub.next(WAIT).await;
    assert_eq!(got["Content"]["ZoneID"], zone.as_str());
    server.stop().await;
}
