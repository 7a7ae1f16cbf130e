//! The forwarder seen from outside, in both deployment modes: connections and certificate
//! profiles are made through the API, events and positions are published on the bus, and what
//! arrives is watched on real Mosquitto brokers the tests start (plain, mutual TLS, password),
//! stop, restart and freeze. Status comes from the API's status endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod connect;
mod outages;
mod overload;
mod routing;
mod status;

use std::time::Duration;

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_model::{EventId, PositionUpdate};
use zonecast_tests::{Server, both_modes};

use connect::{
    a_client_certificate_the_broker_does_not_trust_is_refused,
    a_plain_connection_without_a_port_reaches_the_broker_on_1883, a_server_certificate_from_another_ca_is_refused,
    client_bundles_made_every_common_way_are_accepted_by_a_broker_requiring_certificates,
    mutual_tls_works_with_default_and_legacy_bundles,
    positions_and_zone_events_reach_a_plain_broker_with_status_and_metrics,
    user_name_and_password_are_sent_and_a_wrong_password_is_refused,
};
use outages::{
    a_restarted_broker_gets_what_was_held_and_the_oldest_beyond_the_bound_are_dropped,
    an_event_right_after_the_connection_is_created_is_delivered,
    zone_events_held_while_the_broker_is_away_are_all_delivered_when_it_returns,
};
use overload::a_sustained_overload_is_pushed_back_and_every_accepted_position_is_delivered;
use routing::{
    a_dead_or_hanging_broker_does_not_delay_another_connection,
    changing_topics_redirects_new_events_without_restarting_any_client,
    every_filter_form_routes_exactly_the_matching_events,
    positions_are_taken_from_the_bus_only_while_a_topic_wants_them,
};
use status::{
    a_broker_away_longer_than_the_ack_wait_gets_every_event_exactly_once,
    a_stopped_or_killed_forwarder_is_shown_gone_and_what_waits_for_it_stays_queued,
};

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
    a_broker_away_longer_than_the_ack_wait_gets_every_event_exactly_once,
);

/// Forwarders as processes of their own, stopped and killed: distributed only (in the
/// all-in-one the forwarder dies with the API that reports on it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_or_killed_forwarder_is_shown_gone_and_what_waits_for_it_stays_queued_distributed() {
    a_stopped_or_killed_forwarder_is_shown_gone_and_what_waits_for_it_stays_queued().await;
}
