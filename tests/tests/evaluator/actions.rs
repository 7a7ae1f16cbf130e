//! Alarms and http-request actions, a restart, and malformed positions.

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zonecast_tests::{Mode, Server, next_json, next_matching, sphere};

use super::{WAIT, colliding, id, mac, wait_colliding};

pub(crate) async fn alert_levels_raise_site_and_device_alarms(mode: Mode) {
    let server = Server::start(mode).await;
    let mut site = sphere("crane", [0.0, 0.0, 0.0], 1.0);
    // Levels have no upper bound; any level from SiteAlarmMinLevel (8) up raises a site alarm.
    site["AlertLevel"] = json!(u64::MAX);
    let mut device = sphere("edge", [10.0, 0.0, 0.0], 1.0);
    device["AlertLevel"] = json!(5);
    server.create_zone(site).await;
    let edge = id(&server.create_zone(device).await);
    let mut events = server.events().await;
    let mut commands = server.bus.subscribe(&server.subjects.device_alarm_command(&mac(8))).await.unwrap();
    let d = mac(8);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(enter["Content"]["Alarm"], "site");
    assert_eq!(enter["Content"]["AlertLevel"], json!(u64::MAX));
    let alarm = next_json(&mut events, WAIT).await;
    assert_eq!((alarm["Category"].as_str(), alarm["Type"].as_str()), (Some("ALARM"), Some("SITE_ALARM")));
    assert_eq!(alarm["Content"]["CollisionID"], enter["Content"]["CollisionID"]);
    server.position(&d, [10.0, 0.0, 0.0], Utc::now()).await;
    let alarm = next_matching(&mut events, WAIT, |e| e["Type"] == "DEVICE_ALARM").await;
    assert_eq!(alarm["Content"]["ZoneID"], edge.as_str());
    let command = next_json(&mut commands, WAIT).await;
    assert_eq!(command["Content"]["ZoneID"], edge.as_str());
    server.stop().await;
}

/// A one-shot HTTP receiver: the body of the first request, answered 200.
async fn receiver() -> (String, tokio::sync::oneshot::Receiver<(String, Value)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let (head, body) = loop {
            let n = socket.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).into_owned();
            if let Some(split) = text.find("\r\n\r\n") {
                let head = text[..split].to_owned();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if buf.len() >= split + 4 + length {
                    break (head, serde_json::from_slice(&buf[split + 4..split + 4 + length]).unwrap());
                }
            }
        };
        socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await.unwrap();
        let _ = tx.send((head, body));
    });
    (url, rx)
}

pub(crate) async fn an_http_request_action_posts_the_triggering_event_to_its_uri(mode: Mode) {
    let server = Server::start(mode).await;
    let (url, received) = receiver().await;
    let mut input = sphere("gate", [0.0, 0.0, 0.0], 1.0);
    input["ZoneActions"] = json!([{"type": "http-request", "uri": url, "headers": {"X-Site": "north"}}]);
    let zone = id(&server.create_zone(input).await);
    let d = mac(9);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let (head, body) = tokio::time::timeout(WAIT, received).await.unwrap().unwrap();
    assert!(head.starts_with("POST /hook "), "{head}");
    assert!(head.to_ascii_lowercase().contains("x-site: north"), "{head}");
    assert_eq!(body["Type"], "ZONE_ENTER");
    assert_eq!(body["Content"]["ZoneID"], zone.as_str());
    assert_eq!(body["Source"]["MAC"], d.as_str());
    server.stop().await;
}

pub(crate) async fn after_a_restart_a_device_that_stayed_inside_gets_no_second_enter(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = id(&server.create_zone(sphere("room", [0.0, 0.0, 0.0], 2.0)).await);
    let mut events = server.events().await;
    let d = mac(10);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let enter = next_json(&mut events, WAIT).await;
    wait_colliding(&server, &zone, vec![d.clone()]).await;
    drop(events);
    let server = server.restart().await;
    let mut events = server.events().await;
    assert_eq!(colliding(&server, &zone).await, vec![d.clone()], "collisions survive the restart");
    server.position(&d, [0.5, 0.0, 0.0], Utc::now()).await;
    server.position(&d, [9.0, 0.0, 0.0], Utc::now()).await;
    let first = next_json(&mut events, WAIT).await;
    assert_eq!(first["Type"], "ZONE_EXIT", "no duplicate enter after the restart: {first}");
    assert_eq!(first["Content"]["CollisionID"], enter["Content"]["CollisionID"]);
    server.stop().await;
}

pub(crate) async fn malformed_position_messages_are_counted_and_skipped(mode: Mode) {
    let server = Server::start(mode).await;
    server.create_zone(sphere("z", [0.0, 0.0, 0.0], 1.0)).await;
    let mut events = server.events().await;
    let d = mac(11);
    let parsed: zonecast_model::Mac = d.parse().unwrap();
    let bad: [&[u8]; 4] = [
        b"not json",
        br#"{"Type": "LOCATION_RAW_UPDATE"}"#,
        br#"{"Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T10:00:00Z", "Source": {"MAC": "zz"}, "Content": {"Position": [0, 0, 0]}}"#,
        br#"{"Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T10:00:00Z", "Source": {"MAC": "00:00:00:00:00:0B"}, "Content": {"Position": [0, "x", 0]}}"#,
    ];
    for payload in bad {
        server.position_bytes(&parsed, payload).await;
    }
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    assert_eq!(next_json(&mut events, WAIT).await["Type"], "ZONE_ENTER", "the evaluator went on after bad messages");
    let (_, metrics) = server.raw(Method::GET, "/metrics", Some(zonecast_tests::READ_KEY), None).await;
    let text = metrics.as_str().unwrap();
    let count: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("zonecast_evaluator_bad_messages_total "))
        .map(|v| v.trim().parse().unwrap())
        .expect("bad message counter exported");
    assert!(count >= 4.0, "{count}");
    server.stop().await;
}
