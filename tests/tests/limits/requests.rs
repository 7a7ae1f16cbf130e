//! Bounds on what one request may hold: device lists, messages, polygons, batches, topics, chains.

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::{ADMIN_KEY, Mode, Server, WRITE_KEY, json, sphere};

/// Sends `body` with `key`, which must be refused 422 invalid_data changing nothing; the message.
pub(crate) async fn invalid(server: &Server, method: Method, path: &str, key: &str, body: &Value) -> String {
    server.refused(method, path, Some(key), Some(body.to_string().into()), 422, "invalid_data").await
}

pub(crate) fn macs(from: usize, n: usize) -> Vec<String> {
    (from..from + n).map(|i| format!("00:00:00:{:02X}:{:02X}:{:02X}", i >> 16, (i >> 8) & 0xFF, i & 0xFF)).collect()
}

/// A zone whose polygon has `vertices` vertices on a circle, repeating the first at the end when
/// `closed`.
pub(crate) fn polygon(vertices: usize, closed: bool) -> Value {
    let mut rows: Vec<Value> = (0..vertices)
        .map(|i| {
            let a = i as f64 * std::f64::consts::TAU / vertices as f64;
            json!([100.0 * a.cos(), 100.0 * a.sin(), 0.0])
        })
        .collect();
    if closed {
        rows.push(rows[0].clone());
    }
    rows.extend([json!([1.0, 0.0, 0.0]), json!([0.0, 0.0, 1.0])]);
    json!({"Name": "p", "GeometryType": "polygon", "GeometryData": rows})
}

pub(crate) fn regex(pattern: impl Into<String>) -> Value {
    json!({"Selector": "Source.MAC", "Type": "regex", "Match": pattern.into()})
}

/// An MQTT connection body with one topic per chain.
pub(crate) fn connection(chains: Vec<Vec<Value>>) -> Value {
    let topics: Vec<Value> = chains
        .into_iter()
        .enumerate()
        .map(|(i, chain)| json!({"topic": format!("t{i}"), "FilterChain": chain}))
        .collect();
    json!({"host": "127.0.0.1", "port": 1883, "TLS": false, "topics": topics})
}

pub(crate) const CONNECTIONS: &str = "/v3/modules/mqtt/connections";
pub(crate) const RADIUS: &str = "/v3/modules/zones/devices/radius";

pub(crate) fn radii(n: usize) -> Value {
    Value::Object(macs(0, n).into_iter().map(|m| (m, json!(0.5))).collect())
}

pub(crate) async fn a_device_list_never_grows_past_ten_thousand_devices(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["DeviceList"] = json!(macs(0, 10_001));
    let message = invalid(&server, Method::POST, "/v3/modules/zones", WRITE_KEY, &input).await;
    assert_eq!(message, "DeviceList: must have at most 10000 entries, got 10001");
    input["DeviceList"] = json!(macs(0, 9_999));
    let zone = server.create_zone(input).await;
    let devices = format!("/v3/modules/zones/{}/devices", zone["ZoneID"].as_str().unwrap());
    // Two new devices (and one already listed) would make 10,001.
    let body: Value = json!(macs(9_998, 3));
    let message = invalid(&server, Method::POST, &devices, WRITE_KEY, &body).await;
    assert_eq!(message, "DeviceList: would hold 10001 devices; a zone's DeviceList holds at most 10000");
    // One more fits exactly.
    assert_eq!(server.ok(Method::POST, &devices, Some(json!(macs(9_999, 1)))).await["success"], true);
    let now = server.ok(Method::GET, &format!("/v3/modules/zones/{}", zone["ZoneID"].as_str().unwrap()), None).await;
    assert_eq!(now["DeviceList"].as_array().unwrap().len(), 10_000);
    // A body longer than the limit is refused as a whole, naming no field but the rule.
    let message = invalid(&server, Method::POST, &devices, WRITE_KEY, &json!(macs(20_000, 10_001))).await;
    assert_eq!(message, "must have at most 10000 entries, got 10001");
    server.stop().await;
}

pub(crate) async fn an_info_event_message_and_a_radius_write_are_bounded(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["ZoneActions"] = json!([{"type": "info-event", "message": "é".repeat(1_025)}]);
    let message = invalid(&server, Method::POST, "/v3/modules/zones", WRITE_KEY, &input).await;
    assert_eq!(message, "ZoneActions[0].message: must be at most 1024 characters");
    input["ZoneActions"][0]["message"] = json!("é".repeat(1_024));
    server.create_zone(input).await;

    let message = invalid(&server, Method::PUT, RADIUS, WRITE_KEY, &radii(10_001)).await;
    assert_eq!(message, "must have at most 10000 entries, got 10001");
    assert_eq!(server.ok(Method::PUT, RADIUS, Some(radii(10_000))).await["success"], true);
    server.stop().await;
}

pub(crate) async fn a_polygon_takes_at_most_a_thousand_vertices_and_zone_actions_ten_thousand(mode: Mode) {
    // Ten thousand actions take more than the test servers' usual body limit.
    let server = Server::start_configured(mode, |c| c.http.limits.max_body_bytes = 1 << 20).await;
    let zones = "/v3/modules/zones";
    let message = invalid(&server, Method::POST, zones, WRITE_KEY, &polygon(1_001, false)).await;
    assert_eq!(message, "GeometryData: polygon takes at most 1000 vertices, got 1001");
    let message = invalid(&server, Method::POST, zones, WRITE_KEY, &polygon(1_002, false)).await;
    assert_eq!(message, "GeometryData: must have at most 1003 rows (a polygon of at most 1000 vertices), got 1004");
    // A closing vertex does not count.
    server.create_zone(polygon(1_000, true)).await;

    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["ZoneActions"] = json!(vec![json!({"type": "device-alarm"}); 10_001]);
    let message = invalid(&server, Method::POST, zones, WRITE_KEY, &input).await;
    assert_eq!(message, "ZoneActions: must have at most 10000 entries, got 10001");
    input["ZoneActions"] = json!(vec![json!({"type": "device-alarm"}); 10_000]);
    server.create_zone(input).await;
    server.stop().await;
}

pub(crate) async fn a_batch_takes_at_most_a_thousand_zones(mode: Mode) {
    let server = Server::start(mode).await;
    let zones: Vec<Value> = (0..1_001).map(|i| sphere(&format!("z{i}"), [0.0; 3], 1.0)).collect();
    let message = invalid(&server, Method::POST, "/v3/modules/zones/batch", WRITE_KEY, &json!(zones)).await;
    assert_eq!(message, "must have at most 1000 zones, got 1001");
    let message = invalid(&server, Method::PUT, "/v3/modules/zones/batch", WRITE_KEY, &json!(zones)).await;
    assert_eq!(message, "must have at most 1000 zones, got 1001");
    let created = server.ok(Method::POST, "/v3/modules/zones/batch", Some(json!(zones[..1_000]))).await;
    assert_eq!(created.as_array().unwrap().len(), 1_000);
    server.stop().await;
}

/// Topics, filters per chain and distinct regexes at their defaults; 128 filters of a Unicode
/// `\w{200}` once compiled for 21 s into gigabytes: each is refused now.
pub(crate) async fn a_connection_takes_a_hundred_topics_and_bounded_chains_and_regexes(mode: Mode) {
    // A hundred full chains take more than the test servers' usual body limit.
    let server = Server::start_configured(mode, |c| c.http.limits.max_body_bytes = 1 << 20).await;
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(vec![vec![]; 101])).await;
    assert_eq!(message, "topics: must have at most 100 entries, got 101");
    let all = json!({"FilterTemplate": "all"});
    let message =
        invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(vec![vec![all.clone(); 257]])).await;
    assert_eq!(message, "topics[0].FilterChain[256]: chain has more than 256 filters");
    // How soon and at what memory cost is measured on a process of its own (`memory` below).
    let filters: Vec<Value> = (0..128).map(|i| regex(format!("\\w{{200}}{i}"))).collect();
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(vec![filters])).await;
    assert!(
        message.starts_with("topics[0].FilterChain[0].Match: regex is too large when compiled (at most 256 KiB)"),
        "{message}"
    );

    // More distinct regexes than a connection may hold, spread over topics.
    let chains: Vec<Vec<Value>> = (0..2).map(|t| (0..70).map(|i| regex(format!("^{t}-{i}$"))).collect()).collect();
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(chains)).await;
    assert_eq!(message, "topics[1].FilterChain[58].Match: a connection may use at most 128 distinct regexes");
    // The product bound (25,600 filters) is what a hundred full chains hold: it cannot be
    // crossed while the other two are at their defaults.
    server.ok(Method::POST, CONNECTIONS, Some(connection(vec![vec![all; 256]; 100]))).await;
    server.stop().await;
}
