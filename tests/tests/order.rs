//! Positions that arrive out of order (a later batch overtaking an earlier one on another
//! connection) make the events of the in-order sequence: a position older than the last one
//! applied for its device is skipped and counted, never turned into a false exit/enter pair.
//! Through every input (HTTP, the NATS ingest subject, MQTT), in both modes.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};
use zonecast_tests::{Gateway, Mode, Server, both_modes, eventually, next_matching, sphere};

const WAIT: Duration = Duration::from_secs(10);

/// How a test hands one position to zonecast.
enum Input {
    Http,
    IngestSubject,
    Mqtt(Gateway),
}

impl Input {
    async fn send(&self, server: &Server, body: Value) {
        match self {
            Self::Http => {
                let r = server.post_positions(&body).await;
                assert_eq!(r.status(), StatusCode::OK);
            }
            Self::IngestSubject => {
                server.bus.publish(server.subjects.ingest(), serde_json::to_vec(&body).unwrap().into()).await.unwrap();
            }
            Self::Mqtt(gateway) => gateway.publish(serde_json::to_vec(&body).unwrap()).await,
        }
    }
}

fn at(t: DateTime<Utc>) -> String {
    zonecast_model::format_timestamp(&t)
}

fn fix(mac: &str, position: [f64; 3], t: DateTime<Utc>) -> Value {
    json!({"MAC": mac, "Position": position, "Timestamp": at(t)})
}

fn out_of_order_count(metrics: &str) -> f64 {
    metrics
        .lines()
        .find(|l| l.starts_with("zonecast_evaluator_positions_out_of_order_total"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Metrics of the process that evaluates: the API listener in the all-in-one; in distributed
/// mode the evaluator runs in the test process and shares its recorder with the API.
async fn metrics(server: &Server) -> String {
    let url = format!("{}/metrics", server.base);
    let r = server.http.get(url).header("X-API-Key", zonecast_tests::ADMIN_KEY).send().await.unwrap();
    r.text().await.unwrap()
}

/// In at t+10, out at t+30, a late "in" measured at t+20, in again at t+40: the events are
/// enter (t+10), exit (t+30), enter (t+40), and the late position is counted.
async fn a_late_position_makes_no_false_exit_or_enter(server: &Server, input: &Input, mac: &str) {
    let mut events = server.events().await;
    let before = out_of_order_count(&metrics(server).await);
    let t = Utc::now();
    let ms = chrono::Duration::milliseconds;
    let of_device = |e: &Value| e["Source"]["MAC"] == mac && e["Category"] == "ZONE";
    input.send(server, json!([fix(mac, [0.0, 0.0, 0.0], t + ms(10))])).await;
    let enter = next_matching(&mut events, WAIT, of_device).await;
    assert_eq!(
        (enter["Type"].as_str(), enter["Timestamp"].as_str()),
        (Some("ZONE_ENTER"), Some(at(t + ms(10)).as_str()))
    );
    input.send(server, json!([fix(mac, [5.0, 0.0, 0.0], t + ms(30))])).await;
    let exit = next_matching(&mut events, WAIT, of_device).await;
    assert_eq!((exit["Type"].as_str(), exit["Timestamp"].as_str()), (Some("ZONE_EXIT"), Some(at(t + ms(30)).as_str())));
    input.send(server, json!([fix(mac, [0.0, 0.0, 0.0], t + ms(20))])).await;
    input.send(server, json!([fix(mac, [0.0, 0.0, 0.0], t + ms(40))])).await;
    let next = next_matching(&mut events, WAIT, of_device).await;
    assert_eq!(
        (next["Type"].as_str(), next["Timestamp"].as_str()),
        (Some("ZONE_ENTER"), Some(at(t + ms(40)).as_str())),
        "the late t+20 position made no event: {next}"
    );
    eventually(WAIT, || async { (out_of_order_count(&metrics(server).await) > before).then_some(()) }).await;
}

async fn late_positions_over_http_are_skipped_and_counted(mode: Mode) {
    let server = Server::start(mode).await;
    server.create_zone(sphere("dock", [0.0; 3], 1.0)).await;
    a_late_position_makes_no_false_exit_or_enter(&server, &Input::Http, "00:00:00:00:0F:01").await;
    server.stop().await;
}

async fn late_positions_on_the_ingest_subject_are_skipped_and_counted(mode: Mode) {
    let server = Server::start(mode).await;
    server.create_zone(sphere("dock", [0.0; 3], 1.0)).await;
    a_late_position_makes_no_false_exit_or_enter(&server, &Input::IngestSubject, "00:00:00:00:0F:02").await;
    server.stop().await;
}

async fn late_positions_over_mqtt_are_skipped_and_counted(mode: Mode) {
    let (server, gateway) = Server::start_with_mqtt_gateway(mode).await;
    server.create_zone(sphere("dock", [0.0; 3], 1.0)).await;
    a_late_position_makes_no_false_exit_or_enter(&server, &Input::Mqtt(gateway), "00:00:00:00:0F:03").await;
    server.stop().await;
}

both_modes!(
    late_positions_over_http_are_skipped_and_counted,
    late_positions_on_the_ingest_subject_are_skipped_and_counted,
    late_positions_over_mqtt_are_skipped_and_counted,
);
