//! A sustained overload: pushed back, and every accepted position delivered.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::{Mode, Server, sphere};

use super::{create, mac, plain, wait_connected, wait_status};

/// Devices each poster of the overload test moves, and posters.
const OVERLOAD_DEVICES: u32 = 200;
const POSTERS: u32 = 4;

/// Under a sustained overload ingest pushes back instead of letting events pile up: posters
/// flood `POST /v3/positions` with every device crossing a zone's boundary each time (one
/// event per position), the forwarder falls behind the bound, answers turn to 503 with
/// `Retry-After` (the input holds no request here, `ZONECAST_INGEST_HOLD_MS=0`), and every
/// position that was accepted has its event delivered, none dropped.
pub(crate) async fn a_sustained_overload_is_pushed_back_and_every_accepted_position_is_delivered(mode: Mode) {
    let server = Server::start_configured(mode, |c| {
        c.bus.positions.max_lag = Duration::from_millis(50);
        c.bus.positions.hold = Duration::ZERO;
    })
    .await;
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
