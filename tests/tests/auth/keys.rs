//! API keys and what needs none: read authority, probes, metrics.

use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode};
use zonecast_tests::pki::pki;
use zonecast_tests::{Mode, READ_KEY, Server, assert_error, json, sphere};

use super::tokens::admin_requests;
use super::{ZONES, refused};

pub(crate) async fn the_read_key_can_read_everything_readable(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = server.create_zone(sphere("readable", [0.0, 0.0, 0.0], 1.0)).await;
    let zone_id = zone["ZoneID"].as_str().unwrap();
    let connection = server
        .ok(Method::POST, "/v3/modules/mqtt/connections", Some(json!({"host": "broker.example", "TLS": false})))
        .await;
    let connection_id = connection["ConnectionID"].as_str().unwrap();
    server.ok(Method::POST, "/v3/modules/mqtt/certificates", Some(pki().profile("readable"))).await;
    let paths = [
        ZONES.to_owned(),
        format!("{ZONES}/{zone_id}"),
        format!("{ZONES}/settings"),
        "/v3/modules/mqtt/connections".into(),
        format!("/v3/modules/mqtt/connections/{connection_id}"),
        format!("/v3/modules/mqtt/connections/{connection_id}/status"),
        "/v3/modules/mqtt/certificates".into(),
        "/v3/system/cluster".into(),
        "/v3/openapi.json".into(),
        "/metrics".into(),
    ];
    for path in paths {
        let (status, body) = server.call(Method::GET, &path, Some(READ_KEY), None).await;
        assert_eq!(status, StatusCode::OK, "GET {path} with the read key: {body}");
    }
    let (_, read) = server.call(Method::GET, &format!("{ZONES}/{zone_id}"), Some(READ_KEY), None).await;
    assert_eq!(read, zone);
    server.stop().await;
}

pub(crate) async fn the_read_key_is_forbidden_to_write(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = server.create_zone(sphere("read only", [0.0, 0.0, 0.0], 1.0)).await;
    let id = zone["ZoneID"].as_str().unwrap();
    let mut writes = vec![
        (Method::POST, ZONES.to_owned(), Some(sphere("new", [1.0, 1.0, 1.0], 1.0))),
        (Method::PUT, format!("{ZONES}/{id}"), Some(json!({"Name": "renamed"}))),
        (Method::DELETE, format!("{ZONES}/{id}"), None),
        (Method::POST, format!("{ZONES}/batch"), Some(json!([sphere("batch", [1.0, 1.0, 1.0], 1.0)]))),
        (Method::POST, format!("{ZONES}/deactivate"), Some(json!([id]))),
        (Method::POST, format!("{ZONES}/{id}/devices"), Some(json!(["00:AA:BB:CC:DD:EE"]))),
        (Method::POST, format!("{ZONES}/{id}/lock"), None),
        (Method::POST, format!("{ZONES}/{id}/reset"), None),
        (
            Method::PUT,
            format!("{ZONES}/settings"),
            Some(json!({"SettingName": "ExitDelayMs", "SettingValue": 500, "IsActive": true})),
        ),
        (Method::PUT, format!("{ZONES}/devices/radius"), Some(json!({"00:AA:BB:CC:DD:EE": 0.5}))),
    ];
    writes.extend(admin_requests(&server).await);
    for (method, path, body) in writes {
        let message =
            refused(&server, server.call(method.clone(), &path, Some(READ_KEY), body), 403, "forbidden").await;
        assert!(message.contains("read"), "{method} {path}: {message}");
    }
    server.stop().await;
}

pub(crate) async fn liveness_and_readiness_need_no_credentials_and_readiness_reports_store_and_bus(mode: Mode) {
    let server = Server::start(mode).await;
    let (status, live) = server.call(Method::GET, "/livez", None, None).await;
    assert_eq!((status, live), (StatusCode::OK, json!({"status": "ok"})));
    let (store, bus) = match mode {
        Mode::AllInOne => ("sqlite", "in-process"),
        Mode::Distributed => ("postgres", "nats"),
    };
    let ready = json!({"status": "ok", "store": {"kind": store, "status": "ok"}, "bus": {"kind": bus, "status": "ok"}});
    // `/healthz` is the former name of `/readyz` and answers the same.
    for path in ["/readyz", "/healthz"] {
        let (status, health) = server.call(Method::GET, path, None, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {health}");
        assert_eq!(health, ready, "{path}");
    }
    server.stop().await;
}

pub(crate) async fn the_operations_listener_serves_metrics_and_probes_without_credentials(mode: Mode) {
    let data_dir = tempfile::tempdir().unwrap();
    let mut config = zonecast_tests::test_config(data_dir.path());
    config.ops_addr = Some("127.0.0.1:0".parse().unwrap());
    let server = Server::start_with(mode, config, data_dir).await;
    let ops = server.ops_base.clone().expect("an operations listener when ops_addr is set");
    server.ok(Method::GET, ZONES, None).await;
    for path in ["/livez", "/readyz", "/healthz", "/metrics"] {
        let response = server.http.get(format!("{ops}{path}")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path} on the operations listener");
    }
    let text = server.http.get(format!("{ops}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(text.contains("zonecast_api_requests_total{"), "the API's metrics on the operations listener:\n{text}");
    // The API listener keeps its rule: metrics need read authority there.
    assert_error(&server.call(Method::GET, "/metrics", None, None).await, 401, "unauthorized");
    server.stop().await;
}

pub(crate) async fn metrics_need_read_authority_and_count_api_requests(mode: Mode) {
    let server = Server::start(mode).await;
    assert_error(&server.call(Method::GET, "/metrics", None, None).await, 401, "unauthorized");
    server.ok(Method::GET, ZONES, None).await;
    let response =
        server.http.get(format!("{}/metrics", server.base)).header("X-API-Key", READ_KEY).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()[CONTENT_TYPE].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let text = response.text().await.unwrap();
    // The recorder is process-wide, so other tests' requests are counted too: look for ours.
    let counted = text.lines().any(|l| {
        l.starts_with("zonecast_api_requests_total{")
            && l.contains("operation=\"listZones\"")
            && l.contains("status=\"200\"")
    });
    assert!(counted, "no zonecast_api_requests_total for a listZones answered 200 in:\n{text}");
    server.stop().await;
}
