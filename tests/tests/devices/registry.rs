//! One device at a time, and the listing.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast_tests::{Mode, READ_KEY, Server, WRITE_KEY, assert_error, json, next_json};

use super::{all_devices, path, refused};

fn macs(page: &Value) -> Vec<String> {
    page["Devices"].as_array().unwrap().iter().map(|d| d["MAC"].as_str().unwrap().to_owned()).collect()
}

pub(crate) async fn a_device_is_created_replaced_and_read_back_by_its_mac_in_any_spelling(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let body = json!({"Name": " Forklift 3 ", "Group": "fleet", "Kind": "vehicle",
                      "Properties": {"capacity_kg": 2500, "tags": ["diesel"]}, "OfflineSeconds": 600, "Unknown": true});
    let stored = server.ok(Method::PUT, &path("00-aa-bb-cc-dd-01"), Some(body)).await;
    let expected = json!({"MAC": "00:AA:BB:CC:DD:01", "Name": "Forklift 3", "Group": "fleet", "Kind": "vehicle",
                          "Properties": {"capacity_kg": 2500, "tags": ["diesel"]}, "OfflineSeconds": 600});
    assert_eq!(stored, expected, "the answer is the device as stored");
    for spelling in ["00:AA:BB:CC:DD:01", "00:aa:bb:cc:dd:01", "00-AA-BB-CC-DD-01", "00%3Aaa%3Abb%3Acc%3Add%3A01"] {
        assert_eq!(server.ok(Method::GET, &path(spelling), None).await, expected, "{spelling}");
    }

    // A write replaces the whole record: what it leaves out is gone.
    let replaced = server.ok(Method::PUT, &path("00:AA:BB:CC:DD:01"), Some(json!({"Name": "Forklift 3b"}))).await;
    let expected = json!({"MAC": "00:AA:BB:CC:DD:01", "Name": "Forklift 3b", "Group": null, "Kind": null,
                          "Properties": {}, "OfflineSeconds": null});
    assert_eq!(replaced, expected);
    assert_eq!(server.ok(Method::GET, &path("00:AA:BB:CC:DD:01"), None).await, expected);
    let blank = json!({"Name": "Anna", "Group": "  ", "Kind": "", "Properties": null});
    let anna = server.ok(Method::PUT, &path("00:AA:BB:CC:DD:02"), Some(blank)).await;
    assert_eq!((&anna["Group"], &anna["Kind"], &anna["Properties"]), (&Value::Null, &Value::Null, &json!({})));

    // Each write is announced with the MAC it wrote, for the evaluators to name the device in
    // its events.
    for mac in ["00:AA:BB:CC:DD:01", "00:AA:BB:CC:DD:01", "00:AA:BB:CC:DD:02"] {
        let change = next_json(&mut changes, Duration::from_secs(10)).await;
        assert_eq!((&change["Kind"], &change["IDs"]), (&json!("devices"), &json!([mac])), "{change}");
    }
    server.stop().await;
}

pub(crate) async fn unknown_devices_are_not_found_and_a_deleted_one_is_gone(mode: Mode) {
    let server = Server::start(mode).await;
    let missing = |method: Method, mac: &'static str| {
        let server = &server;
        async move {
            let answer = server.call(method, &path(mac), Some(WRITE_KEY), None).await;
            assert_error(&answer, 404, "not_found")
        }
    };
    assert_eq!(missing(Method::GET, "00:00:00:00:00:99").await, "device 00:00:00:00:00:99 not found");
    assert_eq!(missing(Method::DELETE, "00-00-00-00-00-99").await, "device 00:00:00:00:00:99 not found");
    assert_eq!(missing(Method::GET, "not-a-mac").await, "device not-a-mac not found");
    assert_eq!(missing(Method::DELETE, "00:00:00:00:00").await, "device 00:00:00:00:00 not found");

    server.ok(Method::PUT, &path("00:00:00:00:00:01"), Some(json!({"Name": "a"}))).await;
    server.ok(Method::PUT, &path("00:00:00:00:00:02"), Some(json!({"Name": "b"}))).await;
    let ack = server.ok(Method::DELETE, &path("00-00-00-00-00-01"), None).await;
    assert_eq!(ack, json!({"status": 200, "success": true}));
    assert_eq!(missing(Method::GET, "00:00:00:00:00:01").await, "device 00:00:00:00:00:01 not found");
    assert_eq!(missing(Method::DELETE, "00:00:00:00:00:01").await, "device 00:00:00:00:00:01 not found");
    let left: Vec<Value> = super::all_devices(&server).await.iter().map(|d| d["MAC"].clone()).collect();
    assert_eq!(left, [json!("00:00:00:00:00:02")], "only the deleted device went");
    server.stop().await;
}

pub(crate) async fn devices_are_listed_in_mac_order_a_page_at_a_time_and_by_group_or_text(mode: Mode) {
    let server = Server::start(mode).await;
    let devices = [
        ("00:00:00:00:00:05", json!({"Name": "Forklift 5", "Group": "fleet"})),
        ("00:00:00:00:00:01", json!({"Name": "Anna", "Group": "staff", "Kind": "person"})),
        ("00:00:00:00:00:04", json!({"Name": "Pallet 4"})),
        ("00:00:00:00:00:02", json!({"Name": "FORKLIFT 2", "Group": "fleet"})),
        ("AA:BB:CC:00:00:03", json!({"Name": "Bob", "Group": "staff"})),
    ];
    for (mac, body) in devices {
        server.ok(Method::PUT, &path(mac), Some(body)).await;
    }
    let list = |query: String| {
        let server = &server;
        async move { server.ok(Method::GET, &format!("/v3/devices{query}"), None).await }
    };

    // Pages of two follow each other through NextCursor, the last one without it.
    let mut seen = Vec::new();
    let mut page = list("?limit=2".into()).await;
    let mut pages = 1;
    while let Some(cursor) = page["NextCursor"].as_str() {
        assert_eq!(macs(&page).len(), 2);
        seen.extend(macs(&page));
        page = list(format!("?limit=2&cursor={cursor}")).await;
        pages += 1;
    }
    seen.extend(macs(&page));
    assert_eq!(pages, 3);
    let sorted =
        ["00:00:00:00:00:01", "00:00:00:00:00:02", "00:00:00:00:00:04", "00:00:00:00:00:05", "AA:BB:CC:00:00:03"];
    assert_eq!(seen, sorted);
    assert_eq!(macs(&list(String::new()).await), sorted, "the default page holds them all");

    let fleet = list("?group=fleet".into()).await;
    assert_eq!(macs(&fleet), ["00:00:00:00:00:02", "00:00:00:00:00:05"]);
    assert_eq!(fleet["Devices"][0]["Name"], "FORKLIFT 2");
    assert_eq!(macs(&list("?group=".into()).await), ["00:00:00:00:00:04"], "an empty group: devices without one");
    assert!(macs(&list("?group=Fleet".into()).await).is_empty(), "groups match exactly");
    assert_eq!(macs(&list("?q=forklift".into()).await), ["00:00:00:00:00:02", "00:00:00:00:00:05"]);
    assert_eq!(macs(&list("?q=aa-bb".into()).await), ["AA:BB:CC:00:00:03"], "a MAC in any spelling");
    let first = list("?group=staff&limit=1".into()).await;
    assert_eq!(macs(&first), ["00:00:00:00:00:01"]);
    let cursor = first["NextCursor"].as_str().unwrap();
    let next = list(format!("?group=staff&limit=1&cursor={cursor}")).await;
    assert_eq!((macs(&next), &next["NextCursor"]), (vec!["AA:BB:CC:00:00:03".to_owned()], &Value::Null));

    let bad = |query: &'static str| {
        let server = &server;
        async move { server.call(Method::GET, &format!("/v3/devices{query}"), Some(READ_KEY), None).await }
    };
    let message = assert_error(&bad("?cursor=nope").await, 400, "malformed");
    assert_eq!(message, "cursor: not a NextCursor of GET /v3/devices");
    let message = assert_error(&bad("?limit=1001").await, 422, "invalid_data");
    assert_eq!(message, "limit: must be a whole number from 1 to 1000, got '1001'");
    let message = assert_error(&bad("?page=2").await, 422, "invalid_data");
    assert_eq!(message, "page: unknown query parameter (expected group, q, limit or cursor)");
    server.stop().await;
}

pub(crate) async fn a_put_with_a_bad_body_or_mac_is_refused_and_changes_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    server.ok(Method::PUT, &path("00:00:00:00:00:01"), Some(json!({"Name": "kept"}))).await;
    let put = |mac: &'static str, body: &'static str, status: u16, kind: &'static str| {
        let server = &server;
        async move { refused(server, Method::PUT, &path(mac), "application/json", body, status, kind).await }
    };
    let message = put("forklift-1", r#"{"Name": "a"}"#, 422, "invalid_data").await;
    assert!(message.starts_with("MAC: 'forklift-1' is not a MAC address"), "{message}");
    let message = put("00:00:00:00:00:01:02", r#"{"Name": "a"}"#, 422, "invalid_data").await;
    assert!(message.starts_with("MAC: '00:00:00:00:00:01:02' is not a MAC address"), "{message}");
    let message = put("00:00:00:00:00:01", r#"{"Name": "a""#, 400, "malformed").await;
    assert!(message.starts_with("request body is not valid JSON"), "{message}");
    assert_eq!(put("00:00:00:00:00:01", r#"["Name"]"#, 400, "malformed").await, "request body must be a JSON object");
    assert_eq!(put("00:00:00:00:00:01", r#"{"Name": ""}"#, 422, "invalid_data").await, "Name: is required");
    assert_eq!(
        put("00:00:00:00:00:01", r#"{"Name": "a", "Properties": "none"}"#, 422, "invalid_data").await,
        "Properties: must be an object, got a string"
    );
    assert_eq!(server.ok(Method::GET, &path("00:00:00:00:00:01"), None).await["Name"], "kept");
    server.stop().await;
}

pub(crate) async fn reading_needs_the_read_authority_and_writing_the_write_authority(mode: Mode) {
    let server = Server::start(mode).await;
    let device = json!({"Name": "a"});
    let (status, stored) =
        server.call(Method::PUT, &path("00:00:00:00:00:01"), Some(WRITE_KEY), Some(device.clone())).await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    for read in ["/v3/devices", "/v3/devices/00:00:00:00:00:01"] {
        let (status, answer) = server.call(Method::GET, read, Some(READ_KEY), None).await;
        assert_eq!(status, StatusCode::OK, "{read}: {answer}");
        let answer = server.call(Method::GET, read, None, None).await;
        assert_error(&answer, 401, "unauthorized");
        let answer = server.call(Method::GET, read, Some("not-a-key"), None).await;
        assert_error(&answer, 401, "unauthorized");
    }
    let import = json!([{"MAC": "00:00:00:00:00:02", "Name": "b"}]);
    let writes = [
        (Method::PUT, path("00:00:00:00:00:03"), Some(device)),
        (Method::DELETE, path("00:00:00:00:00:01"), None),
        (Method::POST, "/v3/devices/import".to_owned(), Some(import.clone())),
    ];
    for (method, path, body) in writes {
        let bytes = body.as_ref().map(|b| b.to_string().into_bytes());
        let message = server.refused(method.clone(), &path, Some(READ_KEY), bytes.clone(), 403, "forbidden").await;
        assert!(message.contains("write"), "{method} {path}: {message}");
        server.refused(method, &path, None, bytes, 401, "unauthorized").await;
    }
    let (status, answer) = server.call(Method::POST, "/v3/devices/import", Some(WRITE_KEY), Some(import)).await;
    assert_eq!((status, answer), (StatusCode::OK, json!({"Imported": 1})));
    let (status, _) = server.call(Method::DELETE, &path("00:00:00:00:00:01"), Some(WRITE_KEY), None).await;
    assert_eq!(status, StatusCode::OK);
    let left: Vec<Value> = all_devices(&server).await.iter().map(|d| d["MAC"].clone()).collect();
    assert_eq!(left, [json!("00:00:00:00:00:02")]);
    server.stop().await;
}
