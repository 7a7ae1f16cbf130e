//! The live event stream (`GET /v3/events/stream`) seen by an HTTP client, in both deployment
//! modes: Server-Sent Events read off the wire and parsed here, positions published as ingest
//! does, every event compared with what the bus carried.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use zonecast_http::Auth;
use zonecast_model::PositionUpdate;
use zonecast_runtime::{Client, Keys, Secret};
use zonecast_tests::sse::{Sse, Stalled, request, url_encoded};
use zonecast_tests::{CLIENT_ID, CLIENT_SECRET, Mode, READ_KEY, Server, assert_error, both_modes, sphere};

const WAIT: Duration = Duration::from_secs(10);

fn mac(n: u32) -> String {
    format!("00:00:00:00:{:02X}:{:02X}", n >> 8, n & 0xff)
}

fn update(device: &str, position: [f64; 3], at: chrono::DateTime<Utc>) -> PositionUpdate {
    PositionUpdate {
        mac: device.parse().unwrap(),
        position,
        timestamp: at,
        gateway_uri: None,
        extra: Default::default(),
    }
}

const EVENTS: &str = "/v3/events/stream";

const READER: (&str, &str) = ("X-API-Key", READ_KEY);

/// Which events a narrowed stream must return.
type Wanted<'a> = Box<dyn Fn(&Value) -> bool + 'a>;

async fn a_stream_sees_enter_and_exit_after_a_position(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = server.create_zone(sphere("dock", [10.0, 10.0, 1.0], 2.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let mut stream = Sse::open(&server, EVENTS, "", &[READER]).await;
    let device = mac(1);
    let t = Utc::now();
    server.position(&device, [10.0, 10.0, 1.0], t).await;
    let enter = stream.events(1, WAIT).await.remove(0);
    assert_eq!(enter.1["Type"], "ZONE_ENTER", "{enter:?}");
    assert_eq!(enter.1["Source"]["MAC"], device.as_str());
    assert_eq!(enter.1["Content"]["ZoneID"], zone.as_str());
    assert!(enter.1["EventID"].is_string());
    server.position(&device, [30.0, 10.0, 1.0], t + chrono::Duration::milliseconds(10)).await;
    let exit = stream.events(1, WAIT).await.remove(0);
    assert_eq!(exit.1["Type"], "ZONE_EXIT", "{exit:?}");
    assert_eq!(exit.1["Content"]["CollisionID"], enter.1["Content"]["CollisionID"]);
    assert!(exit.0 > enter.0, "ids follow the journal: {} then {}", enter.0, exit.0);
    drop(stream);
    server.stop().await;
}

/// Publishes `rounds` rounds in which each of `devices` devices enters (even rounds) or leaves
/// (odd rounds) the zone around the origin.
async fn toggle(server: &Server, devices: u32, rounds: u32) {
    let t = Utc::now();
    for round in 0..rounds {
        let x = if round % 2 == 0 { 0.0 } else { 50.0 };
        let at = t + chrono::Duration::milliseconds(i64::from(round) * 10);
        let updates = (0..devices).map(|n| update(&mac(n), [x, 0.0, 0.0], at)).collect();
        server.publish_positions(updates).await;
    }
}

/// Every EventID the bus carries until `count` have come.
async fn tapped(tap: &mut zonecast_bus::Subscription, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    while ids.len() < count {
        let event = zonecast_tests::next_json(tap, WAIT).await;
        ids.push(event["EventID"].as_str().unwrap().to_owned());
    }
    ids
}

async fn a_stream_reopened_with_last_event_id_misses_nothing_and_repeats_nothing(mode: Mode) {
    let server = Arc::new(Server::start(mode).await);
    server.create_zone(sphere("yard", [0.0, 0.0, 0.0], 5.0)).await;
    let mut tap = server.events().await;
    let mut first = Sse::open(&server, EVENTS, "", &[READER]).await;
    let (devices, rounds) = (10, 12);
    let producer = tokio::spawn({
        let server = server.clone();
        async move { toggle(&server, devices, rounds).await }
    });
    let mut seen = first.events(15, WAIT).await;
    drop(first);
    let last = seen.last().unwrap().0.to_string();
    // Events go on coming while the client is away; it comes back with the last id it had.
    let mut second = Sse::open(&server, EVENTS, "", &[READER, ("Last-Event-ID", &last)]).await;
    producer.await.unwrap();
    let total = (devices * rounds) as usize;
    let all = tapped(&mut tap, total).await;
    seen.extend(second.events(total - seen.len(), WAIT).await);
    let ids: Vec<u64> = seen.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids rise without repeats: {ids:?}");
    let streamed: Vec<String> = seen.iter().map(|(_, e)| e["EventID"].as_str().unwrap().to_owned()).collect();
    let distinct: HashSet<&String> = streamed.iter().collect();
    assert_eq!(distinct.len(), streamed.len(), "no event came twice");
    assert_eq!(distinct, all.iter().collect::<HashSet<_>>(), "the two streams together carried every event");
    drop(second);
    Arc::into_inner(server).unwrap().stop().await;
}

async fn narrowing_by_type_zone_mac_and_filter_returns_exactly_the_matching_events(mode: Mode) {
    let server = Server::start(mode).await;
    let mut high = sphere("high", [0.0, 0.0, 0.0], 2.0);
    high["AlertLevel"] = json!(5);
    let high = server.create_zone(high).await["ZoneID"].as_str().unwrap().to_owned();
    let low = server.create_zone(sphere("low", [100.0, 0.0, 0.0], 2.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let (d1, d2) = (mac(1), mac(2));
    let chain = url_encoded(r#"[{"Selector": "Content.AlertLevel", "Type": "gte", "Match": 5}]"#);
    let queries = [
        String::new(),
        "type=ZONE_EXIT".to_owned(),
        format!("zone={}", high.to_ascii_lowercase()),
        format!("mac={}", d2.replace(':', "-").to_ascii_lowercase()),
        format!("filter={chain}"),
        format!("type=zone_enter,ZONE_EXIT&mac={d1},{d2}&zone={low}"),
    ];
    let mut streams = Vec::new();
    for query in &queries {
        streams.push(Sse::open(&server, EVENTS, query, &[READER]).await);
    }
    let t = Utc::now();
    let at = |n: i64| t + chrono::Duration::milliseconds(n * 10);
    server.position(&d1, [0.0, 0.0, 0.0], at(0)).await;
    server.position(&d2, [100.0, 0.0, 0.0], at(1)).await;
    server.position(&d1, [50.0, 0.0, 0.0], at(2)).await;
    server.position(&d2, [50.0, 0.0, 0.0], at(3)).await;
    // The unnarrowed stream holds everything, alarms included.
    let mut everything: Vec<(u64, Value)> = Vec::new();
    let zone_events = |all: &[(u64, Value)]| all.iter().filter(|(_, e)| e["Category"] == "ZONE").count();
    // Devices of other partitions are evaluated side by side: their events are in the journal
    // in the order they were stored, whatever order the positions were sent in.
    while zone_events(&everything) < 4 {
        everything.extend(streams[0].events(1, WAIT).await);
    }
    let zone_of = |e: &Value| e["Content"]["ZoneID"].as_str().unwrap_or_default().to_owned();
    let wanted: [Wanted<'_>; 5] = [
        Box::new(|e| e["Type"] == "ZONE_EXIT"),
        Box::new(|e| zone_of(e) == high),
        Box::new(|e| e["Source"]["MAC"] == d2.as_str()),
        Box::new(|e| e["Content"]["AlertLevel"].as_u64().is_some_and(|l| l >= 5)),
        Box::new(|e| (e["Type"] == "ZONE_ENTER" || e["Type"] == "ZONE_EXIT") && zone_of(e) == low),
    ];
    for ((query, stream), wanted) in queries.iter().zip(&mut streams).skip(1).zip(&wanted) {
        let expected: Vec<(u64, Value)> = everything.iter().filter(|(_, e)| wanted(e)).cloned().collect();
        assert!(!expected.is_empty(), "{query}: the scenario gives it something");
        let got = stream.events(expected.len(), WAIT).await;
        assert_eq!(got, expected, "{query} returns exactly the matching events");
    }
    drop(streams);
    server.stop().await;
}

async fn a_slow_reader_lags_while_other_streams_and_the_pipeline_go_on(mode: Mode) {
    let server = Server::start_configured(mode, |config| {
        config.api.stream_buffer = 500;
    })
    .await;
    server.create_zone(sphere("hall", [0.0, 0.0, 0.0], 5.0)).await;
    let mut tap = server.events().await;
    // The slow one reads nothing until the end, through a small socket buffer.
    let slow = Stalled::open(&server, EVENTS, &[READER]).await;
    let mut fast = Sse::open(&server, EVENTS, "", &[READER]).await;
    let (devices, rounds) = (100, 160);
    let total = (devices * rounds) as usize;
    let t = Utc::now();
    for round in 0..rounds {
        let x = if round % 2 == 0 { 0.0 } else { 50.0 };
        let at = t + chrono::Duration::milliseconds(i64::from(round) * 10);
        server.publish_positions((0..devices).map(|n| update(&mac(n), [x, 0.0, 0.0], at)).collect()).await;
        // The pipeline goes on, and so does the stream whose client keeps up.
        let all: HashSet<String> = tapped(&mut tap, devices as usize).await.into_iter().collect();
        let streamed = fast.events(devices as usize, WAIT).await;
        let streamed: HashSet<String> =
            streamed.iter().map(|(_, e)| e["EventID"].as_str().unwrap().to_owned()).collect();
        assert_eq!(streamed, all, "round {round}: the fast stream saw every event the pipeline produced");
    }
    // The slow one gets what was on its way, then `lagged`, then the end.
    let (status, frames) = slow.finish(WAIT).await;
    assert!(status.ends_with(" 200 OK"), "{status}");
    let (lagged, delivered) = frames.split_last().expect("frames");
    assert!(delivered.iter().all(|f| f.event.is_none()), "only events before lagged");
    assert_eq!(lagged.event.as_deref(), Some("lagged"), "the stream ends with lagged");
    let skipped = lagged.json()["skipped"].as_u64().expect("skipped is a number");
    let delivered = delivered.len();
    assert!(skipped > 0 && delivered + skipped as usize <= total, "delivered {delivered}, skipped {skipped}");
    assert!(lagged.id.is_some(), "lagged carries the id a reconnecting client resumes after");
    let (status, metrics) = server.raw(Method::GET, "/metrics", Some(READ_KEY), None).await;
    assert_eq!(status, StatusCode::OK);
    let metrics = metrics.as_str().unwrap().to_owned();
    assert!(metrics.contains("zonecast_api_streams_lagged_total"), "the lag is counted");
    assert!(metrics.contains("zonecast_api_streams_open"), "open streams are counted");
    drop(fast);
    server.stop().await;
}

/// A token for the test client, issued with `ttl` seconds by an API holding the server's key.
fn token(server: &Server, ttl: u64) -> String {
    let keys = Keys::from_secret(server.config.secret_key.as_ref().unwrap()).unwrap();
    let clients = [Client {
        id: CLIENT_ID.into(),
        secret: Secret::new(CLIENT_SECRET),
        authority: zonecast_runtime::Authority::Read,
    }];
    Auth::new(Arc::new(keys), &[], &clients, ttl).issue_token(CLIENT_ID, CLIENT_SECRET).unwrap().0
}

async fn access_tokens_open_a_stream_and_wrong_missing_or_expired_ones_are_refused(mode: Mode) {
    let server = Server::start(mode).await;
    let good = &server.client_token().await;
    drop(Sse::open(&server, EVENTS, &format!("access_token={}", url_encoded(good)), &[]).await);
    drop(Sse::open(&server, EVENTS, &format!("type=ZONE_ENTER&access_token={}", url_encoded(good)), &[]).await);
    let expired = token(&server, 0);
    for (query, message) in [
        (String::new(), "credentials required"),
        ("access_token=zc1.abc.def".to_owned(), "access_token is not valid"),
        (format!("access_token={}", url_encoded(&good.replace('.', "x"))), "access_token is not valid"),
        (format!("access_token={READ_KEY}"), "access_token is not valid"),
        (format!("access_token={}", url_encoded(&expired)), "access_token has expired"),
    ] {
        let response = request(&server, EVENTS, &query, &[]).await;
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        let got = assert_error(&(status, body), 401, "unauthorized");
        assert!(got.starts_with(message), "{query}: {got}");
    }
    // A credential header, when sent, is the one checked.
    let response =
        request(&server, EVENTS, &format!("access_token={}", url_encoded(good)), &[("X-API-Key", "nope")]).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    server.stop().await;
}

async fn cors_preflight_and_answers_allow_configured_origins_only(mode: Mode) {
    let server = Server::start_configured(mode, |config| {
        config.api.cors_origins = vec!["https://dash.example".to_owned()];
    })
    .await;
    let preflight = |origin: &'static str| {
        server
            .http
            .request(Method::OPTIONS, format!("{}/v3/events/stream", server.base))
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "GET")
            .header("Access-Control-Request-Headers", "last-event-id")
            .send()
    };
    let allowed = preflight("https://dash.example").await.unwrap();
    assert_eq!(allowed.status(), StatusCode::NO_CONTENT);
    assert_eq!(allowed.headers()["access-control-allow-origin"], "https://dash.example");
    assert_eq!(allowed.headers()["access-control-allow-methods"], "GET");
    assert!(allowed.headers()["access-control-allow-headers"].to_str().unwrap().contains("last-event-id"));
    let other = preflight("https://evil.example").await.unwrap();
    assert_eq!(other.status(), StatusCode::NO_CONTENT);
    assert!(other.headers().get("access-control-allow-origin").is_none(), "{:?}", other.headers());
    let stream = Sse::open(&server, EVENTS, "", &[READER, ("Origin", "https://dash.example")]).await;
    assert_eq!(stream.response.headers()["access-control-allow-origin"], "https://dash.example");
    drop(stream);
    let stream = Sse::open(&server, EVENTS, "", &[READER, ("Origin", "https://evil.example")]).await;
    assert!(stream.response.headers().get("access-control-allow-origin").is_none());
    drop(stream);
    // Other routes take no preflight.
    let (status, _) = server.raw(Method::OPTIONS, "/v3/modules/zones", Some(READ_KEY), None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    server.stop().await;
    // Without configured origins, none is allowed.
    let server = Server::start(mode).await;
    let response = server
        .http
        .request(Method::OPTIONS, format!("{}/v3/events/stream", server.base))
        .header("Origin", "https://dash.example")
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("access-control-allow-origin").is_none());
    server.stop().await;
}

async fn bad_parameters_are_refused_before_the_stream_starts(mode: Mode) {
    let server = Server::start(mode).await;
    let bad_chain = url_encoded(r#"[{"Selector": "Content.AlertLevel", "Type": "gt", "Match": "high"}]"#);
    for (query, headers, status, kind, message) in [
        ("type=NOPE", vec![], 422, "invalid_data", "type: 'NOPE' is not an event type of this stream"),
        ("type=LOCATION_RAW_UPDATE", vec![], 422, "invalid_data", "type: 'LOCATION_RAW_UPDATE'"),
        ("zone=loading-dock", vec![], 422, "invalid_data", "zone: 'loading-dock' is not a UUID"),
        ("mac=00:AA", vec![], 422, "invalid_data", "mac: '00:AA' is not a MAC address"),
        ("filter=%5B", vec![], 400, "malformed", "filter: not JSON"),
        (&format!("filter={bad_chain}"), vec![], 422, "invalid_data", "filter[0].Match: Match must be a number for gt"),
        ("since=yesterday", vec![], 422, "invalid_data", "since: unknown query parameter"),
        ("", vec![("Last-Event-ID", "abc")], 400, "malformed", "Last-Event-ID: must be the id of an event"),
    ] {
        let mut all = vec![READER];
        all.extend(headers);
        let response = request(&server, EVENTS, query, &all).await;
        let got = response.status();
        let body: Value = response.json().await.unwrap();
        let text = assert_error(&(got, body), status, kind);
        assert!(text.starts_with(message), "{query}: {text}");
    }
    server.stop().await;
}

async fn an_idle_stream_gets_keep_alive_comments_and_open_streams_end_when_the_server_stops(mode: Mode) {
    let server = Server::start_configured(mode, |config| {
        config.api.stream_heartbeat = Duration::from_millis(200);
    })
    .await;
    let mut stream = Sse::open(&server, EVENTS, "", &[READER]).await;
    let mut comments = 0;
    while comments < 2 {
        let frame = stream.frame(WAIT).await.expect("the stream stays open");
        assert!(frame.comment, "nothing happens, so only comments come: {frame:?}");
        comments += 1;
    }
    // The server does not wait for its clients to hang up.
    tokio::time::timeout(WAIT, server.stop()).await.expect("the server stops with a stream open");
    loop {
        match stream.frame(WAIT).await {
            None => break,
            Some(frame) => assert!(frame.comment, "{frame:?}"),
        }
    }
}

both_modes!(
    a_stream_sees_enter_and_exit_after_a_position,
    a_stream_reopened_with_last_event_id_misses_nothing_and_repeats_nothing,
    narrowing_by_type_zone_mac_and_filter_returns_exactly_the_matching_events,
    a_slow_reader_lags_while_other_streams_and_the_pipeline_go_on,
    access_tokens_open_a_stream_and_wrong_missing_or_expired_ones_are_refused,
    cors_preflight_and_answers_allow_configured_origins_only,
    bad_parameters_are_refused_before_the_stream_starts,
    an_idle_stream_gets_keep_alive_comments_and_open_streams_end_when_the_server_stops,
);
