//! The forwarder seen from outside, in both deployment modes: connections and certificate
//! profiles are made through the API, events and positions are published on the bus, and what
//! arrives is watched on real Mosquitto brokers the tests start (plain, mutual TLS, password),
//! stop, restart and freeze. Status comes from the API's status endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_model::{AlarmKind, EventId, PositionUpdate, ZoneEventKind};
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::pki::{BUNDLE_PASSWORD, b64, client_bundles, pki};
use zonecast_tests::{Mode, READ_KEY, Server, both_modes, eventually, next_matching, sphere};

const CONNECTIONS: &str = "/v3/modules/mqtt/connections";
const PROFILES: &str = "/v3/modules/mqtt/certificates";
const WAIT: Duration = Duration::from_secs(20);
/// The broker password of these tests; it must never show in a status.
const PASSWORD: &str = "mqtt-pass-4b1d-88e2";

fn mac(n: u32) -> String {
    format!("00:00:00:00:{:02X}:{:02X}", n >> 8, n & 0xff)
}

/// A plain connection to `port` on 127.0.0.1 with `topics` as `(topic, chain)`.
fn plain(port: u16, topics: &[(&str, Value)]) -> Value {
    json!({"host": "127.0.0.1", "port": port, "TLS": false, "topics": topic_list(topics)})
}

fn topic_list(topics: &[(&str, Value)]) -> Value {
    topics.iter().map(|(t, chain)| json!({"topic": t, "FilterChain": chain})).collect()
}

async fn create(server: &Server, body: Value) -> String {
    server.ok(Method::POST, CONNECTIONS, Some(body)).await["ConnectionID"].as_str().unwrap().to_owned()
}

async fn create_profile(server: &Server, body: Value) -> String {
    server.ok(Method::POST, PROFILES, Some(body)).await["ID"].as_str().unwrap().to_owned()
}

async fn status(server: &Server, id: &str) -> Value {
    server.ok(Method::GET, &format!("{CONNECTIONS}/{id}/status"), None).await
}

/// Polls the status endpoint until `pred` holds; the panic shows the last status.
async fn wait_status(server: &Server, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let s = status(server, id).await;
        if pred(&s) {
            return s;
        }
        assert!(tokio::time::Instant::now() < deadline, "status of {id} never showed {what}: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await; // sleep-ok: polling interval of a bounded wait
    }
}

async fn wait_connected(server: &Server, id: &str) -> Value {
    wait_status(server, id, "connected", |s| s["connected"] == true).await
}

/// Publishes a position of `mac` at height `z` carrying `Content.Sequence = seq`.
async fn position(server: &Server, mac: &str, z: f64, seq: u64) {
    let update = PositionUpdate {
        mac: mac.parse().unwrap(),
        position: [1.0, 2.0, z],
        timestamp: Utc::now(),
        gateway_uri: None,
        extra: [("Sequence".to_owned(), json!(seq))].into_iter().collect(),
    };
    server.publish_positions(vec![update]).await;
}

/// Appends a zone or alarm event envelope on `subject` to the event journal, as an evaluator
/// does.
async fn event(server: &Server, subject: String, category: &str, kind: &str, mac: &str, content: Value) {
    let now = zonecast_model::format_timestamp(&Utc::now());
    let id = EventId::generate(Utc::now()).to_string();
    let e = json!({"EventID": id, "Category": category, "Type": kind, "Timestamp": now, "LocalTimestamp": now,
                   "Source": {"MAC": mac, "GatewayURI": null, "SiteID": 501}, "Content": content});
    let record = zonecast_bus::journal::Record { subject, payload: serde_json::to_vec(&e).unwrap().into(), id };
    server.journal().append(vec![record]).await.unwrap();
}

fn seq(v: &Value) -> u64 {
    v["Content"]["Sequence"].as_u64().unwrap_or_else(|| panic!("no Sequence in {v}"))
}

fn client_id(connection: &str) -> String {
    zonecast_forwarder::client_id(&zonecast_forwarder::replica_id(), Uuid::parse_str(connection).unwrap())
}

async fn positions_and_zone_events_reach_a_plain_broker_with_status_and_metrics(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let id = create(&server, plain(broker.port, &[("zc/all", json!([]))])).await;
    wait_connected(&server, &id).await;

    let zone = server.create_zone(sphere("dock", [10.0, 10.0, 1.0], 2.0)).await;
    let mut events = server.events().await;
    let device = mac(1);
    server.position(&device, [10.0, 10.0, 1.0], Utc::now()).await;
    let enter = next_matching(&mut events, WAIT, |e| e["Type"] == "ZONE_ENTER").await;
    let got = sub.until(WAIT, |_, v| v["Type"] == "ZONE_ENTER").await;
    let got = if got.iter().any(|(_, v)| v["Type"] == "LOCATION_RAW_UPDATE") {
        got
    } else {
        [got, sub.until(WAIT, |_, v| v["Type"] == "LOCATION_RAW_UPDATE").await].concat()
    };
    assert!(got.iter().all(|(topic, _)| topic == "zc/all"), "{got:?}");
    let forwarded_enter = &got.iter().find(|(_, v)| v["Type"] == "ZONE_ENTER").unwrap().1;
    assert_eq!(forwarded_enter, &enter, "the event goes out as it was on the bus");
    assert_eq!(forwarded_enter["Content"]["ZoneID"], zone["ZoneID"]);
    let position = &got.iter().find(|(_, v)| v["Type"] == "LOCATION_RAW_UPDATE").unwrap().1;
    assert_eq!(position["Source"]["MAC"], device.as_str());
    assert_eq!(position["Content"]["Position"], json!([10.0, 10.0, 1.0]));

    let s = wait_status(&server, &id, "two forwarded", |s| s["forwarded"] == 2).await;
    assert_eq!((s["dropped"].clone(), s["queued"].clone(), s["lastError"].clone()), (json!(0), json!(0), Value::Null));
    assert_eq!(s["replicas"].as_array().unwrap().len(), 1, "{s}");
    let wanted = format!("zonecast_forwarder_forwarded_total{{connection=\"{id}\"}} 2");
    eventually(WAIT, || async {
        let (_, metrics) = server.raw(Method::GET, "/metrics", Some(READ_KEY), None).await;
        metrics.as_str().unwrap().contains(&wanted).then_some(())
    })
    .await;
    assert_eq!(broker.connects(&client_id(&id)), 1);
    server.stop().await;
}

async fn mutual_tls_works_with_default_and_legacy_bundles(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::tls(&pki().ca_pem).await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let default = create_profile(&server, pki().profile("default bundle")).await;
    let legacy = create_profile(
        &server,
        json!({"name": "legacy bundle", "ca": pki().ca_der(), "client": pki().client_legacy(), "password": BUNDLE_PASSWORD}),
    )
    .await;
    let tls = |host: &str, profile: &str, topic: &str| {
        json!({"host": host, "port": broker.port, "TLS": true, "CertificateProfileID": profile,
               "topics": [{"topic": topic, "FilterChain": []}]})
    };
    let a = create(&server, tls("localhost", &default, "zc/default")).await;
    let b = create(&server, tls("127.0.0.1", &legacy, "zc/legacy")).await;
    wait_connected(&server, &a).await;
    wait_connected(&server, &b).await;
    position(&server, &mac(2), 1.0, 7).await;
    let mut topics = BTreeSet::new();
    while topics.len() < 2 {
        let (topic, value) = sub.next(WAIT).await;
        assert_eq!(seq(&value), 7);
        topics.insert(topic);
    }
    assert_eq!(topics, BTreeSet::from(["zc/default".to_owned(), "zc/legacy".to_owned()]));
    server.stop().await;
}

/// One broker requiring client certificates, one connection per bundle (each to its own
/// topic), one position: it must arrive once on every topic.
async fn client_bundles_made_every_common_way_are_accepted_by_a_broker_requiring_certificates(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::tls(&pki().ca_pem).await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let mut connections = Vec::new();
    for bundle in client_bundles() {
        let profile =
            json!({"name": bundle.name, "ca": pki().ca(), "client": b64(&bundle.p12), "password": BUNDLE_PASSWORD});
        let profile = create_profile(&server, profile).await;
        let topic = format!("zc/{}", bundle.name);
        let body = json!({"host": "localhost", "port": broker.port, "TLS": true, "CertificateProfileID": profile,
                          "topics": [{"topic": topic, "FilterChain": []}]});
        connections.push((create(&server, body).await, topic));
    }
    for (id, topic) in &connections {
        wait_status(&server, id, &format!("connected ({topic})"), |s| s["connected"] == true).await;
    }
    position(&server, &mac(4), 1.0, 11).await;
    let mut arrived = BTreeSet::new();
    while arrived.len() < connections.len() {
        let (topic, value) = sub.next(WAIT).await;
        assert_eq!(seq(&value), 11);
        assert!(arrived.insert(topic.clone()), "{topic} got the position twice");
    }
    let expected: BTreeSet<String> = connections.into_iter().map(|(_, topic)| topic).collect();
    assert_eq!(arrived, expected);
    server.stop().await;
}

async fn a_plain_connection_without_a_port_reaches_the_broker_on_1883(mode: Mode) {
    // The machine's Mosquitto listens on the plain MQTT port.
    let server = Server::start(mode).await;
    let topic = format!("zc-{}/plain", Uuid::new_v4().simple());
    let id =
        create(&server, json!({"host": "127.0.0.1", "TLS": false, "topics": topic_list(&[(&topic, json!([]))])})).await;
    let s = wait_connected(&server, &id).await;
    assert_eq!(s["lastError"], Value::Null, "{s}");
    server.stop().await;
}

/// Waits until `id` shows a refused connection holding `held` messages, and proves nothing
/// reached the broker.
async fn assert_refused(server: &Server, broker: &Broker, sub: &mut Subscriber, id: &str, error_mentions: &str) {
    let s =
        wait_status(server, id, "a connection error", |s| s["connected"] == false && s["lastError"].is_string()).await;
    let error = s["lastError"].as_str().unwrap();
    assert!(error.to_lowercase().contains(error_mentions), "lastError {error:?} should mention {error_mentions}");
    for n in 0..3 {
        position(server, &mac(3), 1.0, n).await;
    }
    let s = wait_status(server, id, "three queued", |s| s["queued"] == 3).await;
    assert_eq!((s["connected"].clone(), s["forwarded"].clone()), (json!(false), json!(0)), "{s}");
    assert_eq!(sub.received(), vec![], "nothing was delivered");
    assert_eq!(broker.connects(&client_id(id)), 0, "the broker never accepted the client:\n{}", broker.log());
}

async fn a_server_certificate_from_another_ca_is_refused(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::tls(&pki().ca_pem).await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let profile = create_profile(
        &server,
        json!({"name": "wrong CA", "ca": pki().other_ca(), "client": pki().client(), "password": BUNDLE_PASSWORD}),
    )
    .await;
    let body = json!({"host": "localhost", "port": broker.port, "TLS": true, "CertificateProfileID": profile,
                      "topics": [{"topic": "zc/all", "FilterChain": []}]});
    let id = create(&server, body).await;
    assert_refused(&server, &broker, &mut sub, &id, "certificate").await;
    server.stop().await;
}

async fn a_client_certificate_the_broker_does_not_trust_is_refused(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::tls(&pki().other_ca_pem).await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let profile = create_profile(&server, pki().profile("untrusted client")).await;
    let body = json!({"host": "localhost", "port": broker.port, "TLS": true, "CertificateProfileID": profile,
                      "topics": [{"topic": "zc/all", "FilterChain": []}]});
    let id = create(&server, body).await;
    // The broker's TLS alert names the reason: it does not know the client certificate's CA.
    assert_refused(&server, &broker, &mut sub, &id, "unknownca").await;
    server.stop().await;
}

async fn user_name_and_password_are_sent_and_a_wrong_password_is_refused(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::with_password("zonecast", PASSWORD).await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let with = |password: &str, topic: &str| {
        json!({"host": "127.0.0.1", "port": broker.port, "TLS": false, "username": "zonecast", "password": password,
               "topics": [{"topic": topic, "FilterChain": []}]})
    };
    let good = create(&server, with(PASSWORD, "zc/good")).await;
    let bad = create(&server, with("not-the-password", "zc/bad")).await;
    wait_connected(&server, &good).await;
    assert_refused(&server, &broker, &mut Subscriber::new(&broker, "zc/bad").await, &bad, "refused").await;
    let (topic, value) = sub.next(WAIT).await;
    assert_eq!((topic.as_str(), seq(&value)), ("zc/good", 0), "the good connection delivered the first position");
    sub.until(WAIT, |t, v| t == "zc/good" && seq(v) == 2).await;
    let shown = status(&server, &bad).await.to_string();
    assert!(!shown.contains("not-the-password") && !shown.contains(PASSWORD), "{shown}");

    server.ok(Method::PUT, &format!("{CONNECTIONS}/{bad}"), Some(with(PASSWORD, "zc/bad"))).await;
    let got = sub.until(WAIT, |t, v| t == "zc/bad" && seq(v) == 2).await;
    let seqs: Vec<u64> = got.iter().map(|(_, v)| seq(v)).collect();
    assert_eq!(seqs, vec![0, 1, 2], "the messages held while refused go out once the password is right");
    wait_status(&server, &bad, "three forwarded", |s| {
        s["connected"] == true && s["forwarded"] == 3 && s["queued"] == 0
    })
    .await;
    server.stop().await;
}

async fn a_restarted_broker_gets_what_was_held_and_the_oldest_beyond_the_bound_are_dropped(mode: Mode) {
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
async fn zone_events_held_while_the_broker_is_away_are_all_delivered_when_it_returns(mode: Mode) {
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
async fn an_event_right_after_the_connection_is_created_is_delivered(mode: Mode) {
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

async fn every_filter_form_routes_exactly_the_matching_events(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "f/#").await;
    let (one, two, three, last) = (mac(0x11), mac(0x12), mac(0x13), mac(0xFF));
    let topics = [
        ("f/template", json!([{"FilterTemplate": "zone_events"}])),
        ("f/dashboard", json!([{"FilterTemplate": "dashboard"}])),
        ("f/equals", json!([{"Selector": "Source.MAC", "Type": "equals", "Match": one}])),
        ("f/regex", json!([{"Selector": "Content.ZoneName", "Type": "regex", "Match": "^dock-"}])),
        ("f/exists", json!([{"Selector": "Content.AlertLevel", "Type": "exists"}])),
        ("f/lt", json!([{"Selector": "Content.Position.2", "Type": "lt", "Match": 1}])),
        ("f/gte", json!([{"Selector": "Content.Position.2", "Type": "gte", "Match": 3}])),
        ("f/invert", json!([{"Selector": "Source.MAC", "Type": "equals", "Match": one, "Invert": true}])),
        (
            "f/all",
            json!([{"FilterTemplate": "position_events", "Children": {"all": [
                {"Selector": "Source.MAC", "Type": "equals", "Match": two},
                {"Selector": "Content.Position.2", "Type": "gte", "Match": 2}]}}]),
        ),
        (
            "f/any",
            json!([{"FilterTemplate": "zone_events", "Children": {"any": [
                {"Selector": "Content.ZoneName", "Type": "equals", "Match": "yard"},
                {"Selector": "Content.AlertLevel", "Type": "gte", "Match": 5}]}}]),
        ),
        ("f/everything", json!([])),
    ];
    let id = create(&server, plain(broker.port, &topics)).await;
    wait_connected(&server, &id).await;

    let zone = Uuid::new_v4().to_string().to_uppercase();
    let subjects = &server.subjects;
    position(&server, &one, 0.5, 1).await;
    position(&server, &two, 3.0, 2).await;
    let enter = json!({"ZoneID": zone, "ZoneName": "dock-a", "AlertLevel": 5, "Position": [0, 0, 10], "Sequence": 3});
    event(&server, subjects.zone_event(&zone, ZoneEventKind::Enter), "ZONE", "ZONE_ENTER", &one, enter).await;
    let exit = json!({"ZoneID": zone, "ZoneName": "yard", "AlertLevel": 1, "Position": [0, 0, 2.5], "Sequence": 4});
    event(&server, subjects.zone_event(&zone, ZoneEventKind::Exit), "ZONE", "ZONE_EXIT", &two, exit).await;
    let alarm = json!({"ZoneID": zone, "ZoneName": "dock-a", "AlertLevel": 9, "Sequence": 5});
    event(&server, subjects.alarm(AlarmKind::Site, &three), "ALARM", "SITE_ALARM", &three, alarm).await;
    position(&server, &two, 1.5, 6).await;
    // Published last and matched by the last topic, so once it is there everything is.
    position(&server, &last, 2.0, 7).await;
    let got = sub.until(WAIT, |t, v| t == "f/everything" && seq(v) == 7).await;

    let mut routed: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (topic, value) in &got {
        routed.entry(topic.clone()).or_default().push(seq(value));
    }
    let expected: BTreeMap<String, Vec<u64>> = [
        ("f/template", vec![3, 4]),
        ("f/dashboard", vec![1, 2, 3, 4, 6, 7]),
        ("f/equals", vec![1, 3]),
        ("f/regex", vec![3, 5]),
        ("f/exists", vec![3, 4, 5]),
        ("f/lt", vec![1]),
        ("f/gte", vec![2, 3]),
        ("f/invert", vec![2, 4, 5, 6, 7]),
        ("f/all", vec![2]),
        ("f/any", vec![3, 4]),
        ("f/everything", vec![1, 2, 3, 4, 5, 6, 7]),
    ]
    .into_iter()
    .map(|(t, s)| (t.to_owned(), s))
    .collect();
    // Over NATS, positions and events arrive on two subscriptions, so compare each topic's set.
    // Positions and zone events come on two subscriptions, so the sentinel position may overtake
    // an event: compare each topic's set, waiting for stragglers, and refuse anything unexpected.
    let as_sets = |m: &BTreeMap<String, Vec<u64>>| -> BTreeMap<String, BTreeSet<u64>> {
        m.iter().map(|(t, s)| (t.clone(), s.iter().copied().collect())).collect()
    };
    let expected = as_sets(&expected);
    let mut sets = as_sets(&routed);
    assert_eq!(sets.values().map(BTreeSet::len).sum::<usize>(), got.len(), "no duplicates: {routed:?}");
    loop {
        for (topic, seqs) in &sets {
            let allowed = expected.get(topic).cloned().unwrap_or_default();
            assert!(seqs.is_subset(&allowed), "{topic} got {seqs:?}, but only {allowed:?} match its chain");
        }
        if sets == expected {
            break;
        }
        let (topic, value) = sub.next(WAIT).await;
        assert!(sets.entry(topic).or_default().insert(seq(&value)), "a duplicate: {value}");
    }
    server.stop().await;
}

async fn changing_topics_redirects_new_events_without_restarting_any_client(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let a = create(&server, plain(broker.port, &[("zc/a/old", json!([]))])).await;
    let b = create(&server, plain(broker.port, &[("zc/b", json!([]))])).await;
    wait_connected(&server, &a).await;
    wait_connected(&server, &b).await;

    server.ok(Method::PUT, &format!("{CONNECTIONS}/{a}"), Some(plain(broker.port, &[("zc/a/new", json!([]))]))).await;
    // The change is announced on the bus; publish until an event shows it has been applied.
    let mut n = 0;
    loop {
        n += 1;
        position(&server, &mac(5), 1.0, n).await;
        let got = sub.until(WAIT, |t, v| t.starts_with("zc/a/") && seq(v) == n).await;
        if got.iter().any(|(t, v)| t == "zc/a/new" && seq(v) == n) {
            break;
        }
        assert!(n < 200, "the new topic was never used");
    }
    let after = n + 1;
    position(&server, &mac(5), 1.0, after).await;
    let mut seen = BTreeSet::new();
    while seen.len() < 2 {
        let (topic, value) = sub.next(WAIT).await;
        if seq(&value) == after {
            assert_ne!(topic, "zc/a/old", "after the switch nothing goes to the old topic");
            seen.insert(topic);
        }
    }
    assert_eq!(seen, BTreeSet::from(["zc/a/new".to_owned(), "zc/b".to_owned()]));
    assert_eq!((broker.connects(&client_id(&a)), broker.connects(&client_id(&b))), (1, 1), "{}", broker.log());

    // A change of client settings restarts that client only.
    let mut with_user = plain(broker.port, &[("zc/a/new", json!([]))]);
    with_user["username"] = json!("someone");
    server.ok(Method::PUT, &format!("{CONNECTIONS}/{a}"), Some(with_user)).await;
    eventually(WAIT, || async { (broker.connects(&client_id(&a)) == 2).then_some(()) }).await;
    wait_connected(&server, &a).await;
    assert_eq!(broker.connects(&client_id(&b)), 1, "{}", broker.log());

    // A deleted connection lets go of its broker; the others go on.
    server.ok(Method::DELETE, &format!("{CONNECTIONS}/{b}"), None).await;
    let gone = format!("Client {} ", client_id(&b));
    let let_go =
        |log: String| log.lines().any(|l| l.contains(&gone) && (l.contains("disconnected") || l.contains("closed")));
    eventually(WAIT, || async { let_go(broker.log()).then_some(()) }).await;
    position(&server, &mac(5), 1.0, 1000).await;
    let (topic, value) = sub.until(WAIT, |_, v| seq(v) == 1000).await.pop().unwrap();
    assert_eq!((topic.as_str(), seq(&value)), ("zc/a/new", 1000));
    server.stop().await;
}

async fn a_dead_or_hanging_broker_does_not_delay_another_connection(mode: Mode) {
    let server = Server::start(mode).await;
    let hanging = Broker::plain().await;
    let healthy = Broker::plain().await;
    // Accepts TCP connections (the kernel does) but never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    // A port where nothing listens and that no test's broker can be given (free ports come
    // from the ephemeral range): a released ephemeral port could become another test's
    // broker, which would then receive this connection's messages.
    let dead_port = 1;
    let mut hanging_sub = Subscriber::new(&hanging, "zc/#").await;
    let mut healthy_sub = Subscriber::new(&healthy, "zc/#").await;
    let a = create(&server, plain(hanging.port, &[("zc/a", json!([]))])).await;
    let b = create(&server, plain(healthy.port, &[("zc/b", json!([]))])).await;
    let c = create(&server, plain(silent.local_addr().unwrap().port(), &[("zc/c", json!([]))])).await;
    let d = create(&server, plain(dead_port, &[("zc/d", json!([]))])).await;
    wait_connected(&server, &a).await;
    wait_connected(&server, &b).await;

    hanging.pause();
    let count = 3000;
    for n in 1..=count {
        position(&server, &mac(6), 1.0, n).await;
    }
    let got = healthy_sub.until(WAIT, |_, v| seq(v) == count).await;
    let received: BTreeSet<u64> = got.iter().map(|(_, v)| seq(v)).collect();
    assert_eq!(received, (1..=count).collect(), "the healthy broker got everything while the other hung");
    wait_status(&server, &b, "everything forwarded", |s| s["forwarded"] == count).await;
    wait_status(&server, &a, "messages held for the hanging broker", |s| s["queued"].as_u64().unwrap() > 0).await;
    wait_status(&server, &d, "a connection error", |s| s["connected"] == false && s["lastError"].is_string()).await;
    wait_status(&server, &c, "a connection error", |s| s["connected"] == false && s["lastError"].is_string()).await;

    hanging.resume();
    let got = hanging_sub.until(WAIT, |_, v| seq(v) == count).await;
    let received: BTreeSet<u64> = got.iter().map(|(_, v)| seq(v)).collect();
    assert_eq!(received, (1..=count).collect(), "the hanging broker gets everything once it answers again");
    drop(silent);
    server.stop().await;
}

async fn positions_are_taken_from_the_bus_only_while_a_topic_wants_them(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let zone_events = json!([{"FilterTemplate": "zone_events"}]);
    let id = create(&server, plain(broker.port, &[("zc/zones", zone_events.clone())])).await;
    wait_connected(&server, &id).await;
    let zone = Uuid::new_v4().to_string().to_uppercase();
    let enter = |n: u64| json!({"ZoneID": zone, "ZoneName": "dock", "Position": [0, 0, 1], "Sequence": n});

    // Only zone events are wanted: a position published before an event is not forwarded.
    position(&server, &mac(7), 1.0, 1).await;
    event(&server, server.subjects.zone_event(&zone, ZoneEventKind::Enter), "ZONE", "ZONE_ENTER", &mac(7), enter(2))
        .await;
    let got = sub.until(WAIT, |_, v| seq(v) == 2).await;
    assert_eq!(got.iter().map(|(t, v)| (t.as_str(), seq(v))).collect::<Vec<_>>(), vec![("zc/zones", 2)]);

    // A topic that takes everything: positions are subscribed to and forwarded again.
    let both = plain(broker.port, &[("zc/zones", zone_events), ("zc/all", json!([]))]);
    server.ok(Method::PUT, &format!("{CONNECTIONS}/{id}"), Some(both)).await;
    let mut n = 10;
    loop {
        n += 1;
        position(&server, &mac(7), 1.0, n).await;
        event(
            &server,
            server.subjects.zone_event(&zone, ZoneEventKind::Enter),
            "ZONE",
            "ZONE_ENTER",
            &mac(7),
            enter(n + 1000),
        )
        .await;
        let got = sub.until(WAIT, |_, v| seq(v) == n + 1000).await;
        if got.iter().any(|(t, v)| t == "zc/all" && seq(v) == n) {
            break;
        }
        assert!(n < 200, "positions were never forwarded after the change");
    }
    // And back: without a topic for them, positions stop.
    server
        .ok(
            Method::PUT,
            &format!("{CONNECTIONS}/{id}"),
            Some(plain(broker.port, &[("zc/zones", json!([{"FilterTemplate": "zone_events"}]))])),
        )
        .await;
    loop {
        n += 1;
        position(&server, &mac(7), 1.0, n).await;
        event(
            &server,
            server.subjects.zone_event(&zone, ZoneEventKind::Enter),
            "ZONE",
            "ZONE_ENTER",
            &mac(7),
            enter(n + 1000),
        )
        .await;
        let got = sub.until(WAIT, |_, v| seq(v) == n + 1000).await;
        if got.iter().all(|(t, _)| t == "zc/zones") {
            break;
        }
        assert!(n < 400, "positions were still forwarded after the topic was removed");
    }
    server.stop().await;
}

/// Devices each poster of the overload test moves, and posters.
const OVERLOAD_DEVICES: u32 = 200;
const POSTERS: u32 = 4;

/// Under a sustained overload ingest pushes back instead of letting events pile up: posters
/// flood `POST /v3/positions` with every device crossing a zone's boundary each time (one
/// event per position), the forwarder falls behind the bound, answers turn to 503 with
/// `Retry-After`, and every position that was accepted has its event delivered, none dropped.
async fn a_sustained_overload_is_pushed_back_and_every_accepted_position_is_delivered(mode: Mode) {
    let server = Server::start_configured(mode, |c| c.bus.positions.max_lag = Duration::from_millis(50)).await;
    server.create_zone(sphere("dock", [0.0, 0.0, 0.0], 5.0)).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let id = create(&server, plain(broker.port, &[("zc/zones", json!([{"FilterTemplate": "zone_events"}]))])).await;
    wait_connected(&server, &id).await;

    let post = |poster: u32, inside: bool| {
        let x = if inside { 1.0 } else { 100.0 };
        let body: Vec<Value> = (0..OVERLOAD_DEVICES)
            .map(|n| json!({"MAC": mac(poster * OVERLOAD_DEVICES + n), "Position": [x, 0, 0]}))
            .collect();
        server
            .http
            .post(format!("{}/v3/positions", server.ingest_base))
            .header("X-API-Key", zonecast_tests::WRITE_KEY)
            .json(&body)
            .send()
    };
    // Each poster sends its devices in and out until it has seen a refusal and had ten of its
    // batches accepted; a refused batch is sent again as it was.
    let posters = (0..POSTERS).map(|poster| async move {
        let (mut accepted, mut refused, mut inside) = (0u32, 0u32, true);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while accepted < 10 || refused == 0 {
            assert!(tokio::time::Instant::now() < deadline, "no refusal within 120 s of flooding");
            let r = post(poster, inside).await.unwrap();
            match r.status() {
                reqwest::StatusCode::OK => {
                    let answer: Value = r.json().await.unwrap();
                    assert_eq!(answer["accepted"], OVERLOAD_DEVICES);
                    accepted += 1;
                    inside = !inside;
                }
                reqwest::StatusCode::SERVICE_UNAVAILABLE => {
                    assert_eq!(r.headers()["retry-after"], "1");
                    let answer: Value = r.json().await.unwrap();
                    assert_eq!(answer["error"], "unavailable", "{answer}");
                    assert!(answer["message"].as_str().unwrap().starts_with("overloaded: "), "{answer}");
                    refused += 1;
                }
                other => panic!("unexpected answer {other}"),
            }
        }
        accepted
    });
    let accepted: Vec<u32> = futures::future::join_all(posters).await;

    // Every accepted batch moved each of its devices across the boundary once.
    let expected: usize = accepted.iter().map(|a| (*a * OVERLOAD_DEVICES) as usize).sum();
    let mut seen: BTreeMap<String, Value> = BTreeMap::new();
    while seen.len() < expected {
        let (_, event) = sub.next(Duration::from_secs(60)).await;
        seen.insert(event["EventID"].as_str().unwrap().to_owned(), event);
    }
    let mut kinds: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for event in seen.values() {
        let mac = event["Source"]["MAC"].as_str().unwrap().to_owned();
        kinds.entry(mac).or_default().push(event["Type"].as_str().unwrap().to_owned());
    }
    for (poster, batches) in accepted.iter().enumerate() {
        let want: Vec<String> =
            (0..*batches).map(|b| if b % 2 == 0 { "ZONE_ENTER" } else { "ZONE_EXIT" }.to_owned()).collect();
        for n in 0..OVERLOAD_DEVICES {
            let device = mac(poster as u32 * OVERLOAD_DEVICES + n);
            let mut got = kinds.remove(&device).unwrap_or_default();
            got.sort_unstable();
            let mut want = want.clone();
            want.sort_unstable();
            assert_eq!(got, want, "{device}: one event per accepted position");
        }
    }
    assert!(kinds.is_empty(), "events of devices never posted: {kinds:?}");
    wait_status(&server, &id, "everything delivered", |s| s["queued"] == 0 && s["dropped"] == 0).await;
    server.stop().await;
}

both_modes!(
    a_plain_connection_without_a_port_reaches_the_broker_on_1883,
    a_sustained_overload_is_pushed_back_and_every_accepted_position_is_delivered,
    positions_are_taken_from_the_bus_only_while_a_topic_wants_them,
    positions_and_zone_events_reach_a_plain_broker_with_status_and_metrics,
    mutual_tls_works_with_default_and_legacy_bundles,
    client_bundles_made_every_common_way_are_accepted_by_a_broker_requiring_certificates,
    a_server_certificate_from_another_ca_is_refused,
    a_client_certificate_the_broker_does_not_trust_is_refused,
    user_name_and_password_are_sent_and_a_wrong_password_is_refused,
    a_restarted_broker_gets_what_was_held_and_the_oldest_beyond_the_bound_are_dropped,
    zone_events_held_while_the_broker_is_away_are_all_delivered_when_it_returns,
    an_event_right_after_the_connection_is_created_is_delivered,
    every_filter_form_routes_exactly_the_matching_events,
    changing_topics_redirects_new_events_without_restarting_any_client,
    a_dead_or_hanging_broker_does_not_delay_another_connection,
);
