//! Limits that hold on every route that could cross them: each refused with 422 and a message
//! naming the field, before the expensive work, and changing nothing. Both modes.
#![allow(clippy::unwrap_used)]

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::{ADMIN_KEY, Mode, Server, WRITE_KEY, both_modes, json, sphere};

/// Sends `body` with `key`, which must be refused 422 invalid_data changing nothing; the message.
async fn invalid(server: &Server, method: Method, path: &str, key: &str, body: &Value) -> String {
    server.refused(method, path, Some(key), Some(body.to_string().into()), 422, "invalid_data").await
}

fn macs(from: usize, n: usize) -> Vec<String> {
    (from..from + n).map(|i| format!("00:00:00:{:02X}:{:02X}:{:02X}", i >> 16, (i >> 8) & 0xFF, i & 0xFF)).collect()
}

async fn a_device_list_never_grows_past_ten_thousand_devices(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("gate", [0.0; 3], 1.0);
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
    assert_eq!(message, "must have at most 10000 entries");
    server.stop().await;
}

async fn an_info_event_message_and_a_radius_write_are_bounded(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["ZoneActions"] = json!([{"type": "info-event", "message": "é".repeat(1_025)}]);
    let message = invalid(&server, Method::POST, "/v3/modules/zones", WRITE_KEY, &input).await;
    assert_eq!(message, "ZoneActions[0].message: must be at most 1024 characters");
    input["ZoneActions"][0]["message"] = json!("é".repeat(1_024));
    server.create_zone(input).await;

    let radii: serde_json::Map<String, Value> = macs(0, 10_001).into_iter().map(|m| (m, json!(0.5))).collect();
    let radius = "/v3/modules/zones/devices/radius";
    let message = invalid(&server, Method::PUT, radius, WRITE_KEY, &Value::Object(radii)).await;
    assert_eq!(message, "must have at most 10000 entries, got 10001");
    let radii: serde_json::Map<String, Value> = macs(0, 10_000).into_iter().map(|m| (m, json!(0.5))).collect();
    assert_eq!(server.ok(Method::PUT, radius, Some(Value::Object(radii))).await["success"], true);
    server.stop().await;
}

/// Resident memory of this process, in bytes (Linux).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// A polygon of a million vertices fits the default 8 MiB body limit, and as a JSON tree it would take
/// hundreds of megabytes before the row limit could refuse it: it is refused before parsing.
async fn a_huge_polygon_is_refused_before_it_is_parsed(mode: Mode) {
    let server = Server::start_configured(mode, |c| c.http.limits.max_body_bytes = 8 << 20).await;
    let vertices = vec!["[0,0,0]"; 1_000_000].join(",");
    let body = format!(r#"{{"GeometryType": "polygon", "GeometryData": [{vertices}]}}"#).into_bytes();
    let before = rss();
    let message =
        server.refused(Method::POST, "/v3/modules/zones", Some(WRITE_KEY), Some(body), 413, "malformed").await;
    assert_eq!(message, "request body too large: GeometryData: must have at most 20000 elements");
    let grown = rss().saturating_sub(before);
    assert!(grown < 100 << 20, "refusing it grew this process by {} MB", grown >> 20);
    server.stop().await;
}

async fn a_batch_takes_at_most_a_thousand_zones(mode: Mode) {
    let server = Server::start(mode).await;
    let zones: Vec<Value> = (0..1_001).map(|i| sphere(&format!("z{i}"), [0.0; 3], 1.0)).collect();
    let message = invalid(&server, Method::POST, "/v3/modules/zones/batch", WRITE_KEY, &json!(zones)).await;
    assert_eq!(message, "must have at most 1000 zones, got 1001");
    let created = server.ok(Method::POST, "/v3/modules/zones/batch", Some(json!(zones[..1_000]))).await;
    assert_eq!(created.as_array().unwrap().len(), 1_000);
    server.stop().await;
}

/// 128 filters of a Unicode `\w{200}` once compiled for 21 s into gigabytes: each is refused
/// now, quickly and without the memory.
async fn regexes_that_compile_too_large_are_refused_without_the_memory(mode: Mode) {
    let server = Server::start(mode).await;
    let filters: Vec<Value> = (0..128)
        .map(|i| json!({"Selector": "Source.MAC", "Type": "regex", "Match": format!("\\w{{200}}{i}")}))
        .collect();
    let body =
        json!({"host": "127.0.0.1", "port": 1883, "TLS": false, "topics": [{"topic": "t", "FilterChain": filters}]});
    let before = rss();
    let message = invalid(&server, Method::POST, "/v3/modules/mqtt/connections", ADMIN_KEY, &body).await;
    assert!(message.starts_with("topics[0].FilterChain[0].Match: regex is too large when compiled"), "{message}");
    let grown = rss().saturating_sub(before);
    assert!(grown < 100 << 20, "refusing it grew this process by {} MB", grown >> 20);
    // More distinct regexes than a connection may hold, spread over topics.
    let topics: Vec<Value> = (0..2)
        .map(|t| {
            let chain: Vec<Value> = (0..70)
                .map(|i| json!({"Selector": "Source.MAC", "Type": "regex", "Match": format!("^{t}-{i}$")}))
                .collect();
            json!({"topic": format!("t{t}"), "FilterChain": chain})
        })
        .collect();
    let body = json!({"host": "127.0.0.1", "port": 1883, "TLS": false, "topics": topics});
    let message = invalid(&server, Method::POST, "/v3/modules/mqtt/connections", ADMIN_KEY, &body).await;
    assert_eq!(message, "topics[1].FilterChain[58].Match: a connection may use at most 128 distinct regexes");
    server.stop().await;
}

async fn mqtt_connections_are_created_only_up_to_the_configured_bound(mode: Mode) {
    let server = Server::start_configured(mode, |c| c.api.max_connections = 2).await;
    let body = json!({"host": "127.0.0.1", "port": 1883, "TLS": false, "topics": []});
    for _ in 0..2 {
        server.ok(Method::POST, "/v3/modules/mqtt/connections", Some(body.clone())).await;
    }
    let message = invalid(&server, Method::POST, "/v3/modules/mqtt/connections", ADMIN_KEY, &body).await;
    assert_eq!(message, "at most 2 MQTT connections may exist; delete one first");
    server.stop().await;
}

both_modes!(
    mqtt_connections_are_created_only_up_to_the_configured_bound,
    regexes_that_compile_too_large_are_refused_without_the_memory,
    a_device_list_never_grows_past_ten_thousand_devices,
    an_info_event_message_and_a_radius_write_are_bounded,
    a_huge_polygon_is_refused_before_it_is_parsed,
    a_batch_takes_at_most_a_thousand_zones,
);
