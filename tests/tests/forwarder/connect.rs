//! Reaching a broker: plain, mutual TLS with every kind of bundle, credentials, and what is refused.

use std::collections::BTreeSet;

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::pki::{BUNDLE_PASSWORD, b64, client_bundles, pki};
use zonecast_tests::{Mode, READ_KEY, Server, eventually, next_matching, sphere};

use super::{
    CONNECTIONS, PASSWORD, WAIT, client_id, create, create_profile, mac, plain, position, seq, status, topic_list,
    wait_connected, wait_status,
};

pub(crate) async fn positions_and_zone_events_reach_a_plain_broker_with_status_and_metrics(mode: Mode) {
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

pub(crate) async fn mutual_tls_works_with_default_and_legacy_bundles(mode: Mode) {
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
pub(crate) async fn client_bundles_made_every_common_way_are_accepted_by_a_broker_requiring_certificates(mode: Mode) {
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

pub(crate) async fn a_plain_connection_without_a_port_reaches_the_broker_on_1883(mode: Mode) {
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

pub(crate) async fn a_server_certificate_from_another_ca_is_refused(mode: Mode) {
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

pub(crate) async fn a_client_certificate_the_broker_does_not_trust_is_refused(mode: Mode) {
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

pub(crate) async fn user_name_and_password_are_sent_and_a_wrong_password_is_refused(mode: Mode) {
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
