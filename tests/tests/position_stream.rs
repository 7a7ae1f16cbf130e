//! The live position stream (`GET /v3/positions/stream`) and how soon the event stream shows
//! what a position caused, seen by an HTTP client in both deployment modes.
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use zonecast_model::PositionUpdate;
use zonecast_tests::sse::{Sse, request, url_encoded};
use zonecast_tests::{Mode, READ_KEY, Server, assert_error, both_modes, sphere};

const WAIT: Duration = Duration::from_secs(10);

const POSITIONS: &str = "/v3/positions/stream";

const EVENTS: &str = "/v3/events/stream";

const READER: (&str, &str) = ("X-API-Key", READ_KEY);

fn mac(n: u32) -> String {
    format!("00:00:00:00:{:02X}:{:02X}", n >> 8, n & 0xff)
}

fn update(device: &str, x: f64, at: chrono::DateTime<Utc>) -> PositionUpdate {
    PositionUpdate {
        mac: device.parse().unwrap(),
        position: [x, 1.0, 0.5],
        timestamp: at,
        gateway_uri: None,
        extra: Default::default(),
    }
}

/// The positions of the next tick the stream sends (a frame without an `event:` name).
async fn tick(stream: &mut Sse) -> Vec<Value> {
    let frame = stream.event(WAIT).await;
    assert_eq!(frame.event, None, "a tick, not {frame:?}");
    assert_eq!(frame.id, None, "positions are not resumable, so ticks carry no id");
    match frame.json() {
        Value::Array(positions) => positions,
        other => panic!("a tick is an array of positions, got {other}"),
    }
}

/// Reads ticks until `mac`'s position has x = `x`, checking that no tick holds a device twice;
/// returns how many positions of `mac` came.
async fn until_at(stream: &mut Sse, mac: &str, x: f64) -> usize {
    let mut seen = 0;
    loop {
        let positions = tick(stream).await;
        let macs: Vec<&str> = positions.iter().map(|p| p["MAC"].as_str().unwrap()).collect();
        let distinct: HashSet<&&str> = macs.iter().collect();
        assert_eq!(distinct.len(), macs.len(), "a device is at most once in a tick: {macs:?}");
        for position in positions.iter().filter(|p| p["MAC"] == mac) {
            seen += 1;
            if position["Position"][0].as_f64() == Some(x) {
                return seen;
            }
        }
    }
}

async fn a_stream_thins_each_device_to_its_newest_position(mode: Mode) {
    let server = Server::start(mode).await;
    let mut stream = Sse::open(&server, POSITIONS, "", &[READER]).await;
    let (walker, still) = (mac(1), mac(2));
    let t = Utc::now();
    // 200 positions of one device in a moment: far more than the 5 per second it may be sent.
    let mut updates: Vec<PositionUpdate> =
        (0..200).map(|i| update(&walker, f64::from(i), t + chrono::Duration::milliseconds(i64::from(i)))).collect();
    updates.push(update(&still, -7.0, t));
    server.publish_positions(updates).await;
    let seen = until_at(&mut stream, &walker, 199.0).await;
    assert!(seen < 20, "the walker's 200 positions came thinned, the newest last: {seen} sent");
    // A position older than one sent arrives late: the device is not moved back.
    server.publish_positions(vec![update(&walker, 1000.0, t - chrono::Duration::seconds(1))]).await;
    server.publish_positions(vec![update(&still, -8.0, t + chrono::Duration::seconds(1))]).await;
    loop {
        let positions = tick(&mut stream).await;
        assert!(!positions.iter().any(|p| p["MAC"] == walker.as_str()), "the late position was sent: {positions:?}");
        if let Some(p) = positions.iter().find(|p| p["MAC"] == still.as_str()) {
            assert_eq!(p["Position"], json!([-8.0, 1.0, 0.5]));
            assert_eq!(p["Timestamp"].as_str().unwrap().len(), "2026-11-24T10:00:00.000Z".len());
            break;
        }
    }
    drop(stream);
    server.stop().await;
}

async fn a_stream_narrowed_to_macs_sends_only_those_devices(mode: Mode) {
    let server = Server::start(mode).await;
    let (a, b, c) = (mac(1), mac(2), mac(3));
    let query = format!("mac={},{}", a.replace(':', "-").to_ascii_lowercase(), b);
    let mut narrowed = Sse::open(&server, POSITIONS, &query, &[READER]).await;
    let mut all = Sse::open(&server, POSITIONS, "", &[READER]).await;
    let t = Utc::now();
    server.publish_positions(vec![update(&a, 1.0, t), update(&b, 2.0, t), update(&c, 3.0, t)]).await;
    let mut got: HashMap<String, f64> = HashMap::new();
    while got.len() < 2 {
        for p in tick(&mut narrowed).await {
            let mac = p["MAC"].as_str().unwrap().to_owned();
            assert!(mac == a || mac == b, "{mac} is not one of the stream's devices");
            got.insert(mac, p["Position"][0].as_f64().unwrap());
        }
    }
    assert_eq!(got, HashMap::from([(a.clone(), 1.0), (b.clone(), 2.0)]));
    let mut everyone = HashSet::new();
    while everyone.len() < 3 {
        everyone.extend(tick(&mut all).await.iter().map(|p| p["MAC"].as_str().unwrap().to_owned()));
    }
    assert_eq!(everyone, HashSet::from([a.clone(), b, c.clone()]));
    // A tick that moves none of its devices sends the narrowed stream nothing: once the
    // unnarrowed stream has had a tick of `c` alone, the narrowed one's next frame is `a`'s.
    server.publish_positions(vec![update(&c, 30.0, t + chrono::Duration::seconds(1))]).await;
    until_at(&mut all, &c, 30.0).await;
    server.publish_positions(vec![update(&a, 10.0, t + chrono::Duration::seconds(2))]).await;
    let positions = tick(&mut narrowed).await;
    assert_eq!(positions.len(), 1, "the next frame has a's position alone: {positions:?}");
    assert_eq!(positions[0]["MAC"], json!(a));
    assert_eq!(positions[0]["Position"][0], json!(10.0));
    drop((narrowed, all));
    server.stop().await;
}

async fn a_slow_reader_gets_each_devices_newest_position_less_often_and_is_told(mode: Mode) {
    let server = Server::start_configured(mode, |config| {
        config.api.stream_position_hz = 50;
    })
    .await;
    // The slow one reads nothing until the end; the kernel's socket buffers take a few MB first.
    let mut slow = Sse::open(&server, POSITIONS, "", &[READER]).await;
    let mut fast = Sse::open(&server, POSITIONS, "", &[READER]).await;
    let (devices, rounds) = (8000, 40);
    let t = Utc::now();
    for round in 0..rounds {
        let at = t + chrono::Duration::milliseconds(i64::from(round) * 10);
        server.publish_positions((0..devices).map(|n| update(&mac(n), f64::from(round), at)).collect()).await;
        // The stream whose client keeps up sees every round's positions: the feed waits for
        // no stream.
        until_at(&mut fast, &mac(devices - 1), f64::from(round)).await;
    }
    // One more position, the last: the slow client gets it after all the others.
    server.publish_positions(vec![update(&mac(0), 1000.0, t + chrono::Duration::seconds(5))]).await;
    let mut newest: HashMap<String, f64> = HashMap::new();
    let (mut ticks, mut skipped) = (0, 0);
    while newest.get(&mac(0)) != Some(&1000.0) {
        let frame = slow.event(WAIT).await;
        match frame.event.as_deref() {
            None => {
                ticks += 1;
                for p in frame.json().as_array().unwrap() {
                    newest.insert(p["MAC"].as_str().unwrap().to_owned(), p["Position"][0].as_f64().unwrap());
                }
            }
            Some("lagged") => skipped += frame.json()["skipped"].as_u64().expect("skipped is a number"),
            Some(other) => panic!("unexpected event {other}"),
        }
    }
    assert!(skipped > 0, "the slow client was told it fell behind ({ticks} ticks)");
    // It got fewer positions, not fewer devices: each one's newest came.
    assert_eq!(newest.len(), devices as usize);
    let last = f64::from(rounds - 1);
    assert!(newest.iter().all(|(m, x)| *x == last || (*m == mac(0) && *x == 1000.0)), "every device at its last round");
    let (status, metrics) = server.raw(Method::GET, "/metrics", Some(READ_KEY), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(metrics.as_str().unwrap().contains("zonecast_api_position_streams_lagged_total"), "the lag is counted");
    drop((slow, fast));
    server.stop().await;
}

async fn credentials_and_parameters_are_checked_before_the_stream_starts(mode: Mode) {
    let server = Server::start(mode).await;
    let token = server.client_token().await;
    drop(Sse::open(&server, POSITIONS, &format!("access_token={}", url_encoded(&token)), &[]).await);
    for (query, headers, status, kind, message) in [
        ("", vec![], 401, "unauthorized", "credentials required"),
        ("access_token=zc1.abc.def", vec![], 401, "unauthorized", "access_token is not valid"),
        ("", vec![("X-API-Key", "nope")], 401, "unauthorized", ""),
        ("mac=00:AA", vec![READER], 422, "invalid_data", "mac: '00:AA' is not a MAC address"),
        ("type=ZONE_ENTER", vec![READER], 422, "invalid_data", "type: unknown query parameter"),
    ] {
        let response = request(&server, POSITIONS, query, &headers).await;
        let got = response.status();
        let body: Value = response.json().await.unwrap();
        let text = assert_error(&(got, body), status, kind);
        assert!(text.starts_with(message), "{query}: {text}");
    }
    server.stop().await;
}

/// Posts one position over HTTP, as a gateway does, and returns when it was sent.
async fn post(server: &Server, device: &str, x: f64) -> Instant {
    let body = json!([{"MAC": device, "Position": [x, 0.0, 0.0], "Timestamp": Utc::now().to_rfc3339()}]);
    let sent = Instant::now();
    let response = server.post_positions(&body).await;
    assert!(response.status().is_success(), "{}", response.status());
    sent
}

async fn an_event_stream_shows_enters_and_exits_within_100_ms_of_the_position(mode: Mode) {
    let server = Server::start(mode).await;
    server.create_zone(sphere("gate", [0.0, 0.0, 0.0], 2.0)).await;
    let mut stream = Sse::open(&server, EVENTS, "type=ZONE_ENTER,ZONE_EXIT", &[READER]).await;
    let device = mac(7);
    let mut delays = Vec::new();
    for round in 0..20 {
        let (x, kind) = if round % 2 == 0 { (0.0, "ZONE_ENTER") } else { (10.0, "ZONE_EXIT") };
        let sent = post(&server, &device, x).await;
        let (_, event) = stream.events(1, WAIT).await.remove(0);
        delays.push(sent.elapsed());
        assert_eq!(event["Type"], kind, "round {round}: {event}");
        assert_eq!(event["Source"]["MAC"], device.as_str());
    }
    // The median, so that one turn of a busy shared host's scheduler does not decide.
    delays.sort();
    let median = delays[delays.len() / 2];
    assert!(median <= Duration::from_millis(100), "from posting to the stream: median {median:?}, all {delays:?}");
    server.stop().await;
}

both_modes!(
    a_stream_thins_each_device_to_its_newest_position,
    a_stream_narrowed_to_macs_sends_only_those_devices,
    a_slow_reader_gets_each_devices_newest_position_less_often_and_is_told,
    credentials_and_parameters_are_checked_before_the_stream_starts,
    an_event_stream_shows_enters_and_exits_within_100_ms_of_the_position,
);
