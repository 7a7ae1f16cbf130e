//! Credentials and authorities, in both deployment modes: bearer tokens for client
//! credentials (JSON and form bodies), what they and the API keys may do, and every way a
//! credential is refused. Refused requests change nothing. Distributed only: tokens and data
//! are shared by API replicas on the same database, NATS and secret key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast_runtime::{Config, Secret, Shutdown};
use zonecast_tests::pki::pki;
use zonecast_tests::{
    ADMIN_KEY, CLIENT_ID, CLIENT_SECRET, Mode, READ_KEY, Server, WRITE_KEY, assert_error, both_modes, json, nats_url,
    sphere, test_config,
};

const TOKEN: &str = "/v3/auth/token";
const ZONES: &str = "/v3/modules/zones";

/// Sends `method path` to `base` with `Authorization: <authorization>` (none when `None`) and a
/// JSON body; answers the status and the body (JSON, or the text as a JSON string).
async fn send(
    http: &reqwest::Client,
    base: &str,
    method: Method,
    path: &str,
    authorization: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = http.request(method, format!("{base}{path}"));
    if let Some(value) = authorization {
        request = request.header(AUTHORIZATION, value);
    }
    if let Some(body) = body {
        request = request.header(CONTENT_TYPE, "application/json").body(serde_json::to_vec(&body).unwrap());
    }
    let response = request.send().await.expect("the server answers");
    let status = response.status();
    let bytes = response.bytes().await.unwrap();
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

/// As [`send`] with `Authorization: Bearer <token>`.
async fn with_token(
    server: &Server,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    send(&server.http, &server.base, method, path, Some(&format!("Bearer {token}")), body).await
}

fn credentials() -> Value {
    json!({"grant_type": "client_credentials", "auth_id": CLIENT_ID, "auth_secret": CLIENT_SECRET})
}

/// `POST /v3/auth/token` at `base` with JSON `body`.
async fn token_answer(http: &reqwest::Client, base: &str, body: Value) -> (StatusCode, Value) {
    send(http, base, Method::POST, TOKEN, None, Some(body)).await
}

/// A token for the test client from the server at `base`.
async fn token_from(http: &reqwest::Client, base: &str) -> String {
    let (status, body) = token_answer(http, base, credentials()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["access_token"].as_str().expect("access_token").to_owned()
}

async fn token(server: &Server) -> String {
    token_from(&server.http, &server.base).await
}

/// An OAuth2 form body; everything but unreserved characters percent-encoded.
fn form(pairs: &[(&str, &str)]) -> String {
    let encode = |s: &str| -> String {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}

/// The answer of a token request: exactly access_token, token_type Bearer and expires_in.
#[track_caller]
fn assert_token_answer(answer: &(StatusCode, Value), expires_in: u64) -> String {
    let (status, body) = answer;
    assert_eq!(*status, StatusCode::OK, "{body}");
    let mut keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["access_token", "expires_in", "token_type"], "{body}");
    assert_eq!(body["token_type"], json!("Bearer"), "{body}");
    assert_eq!(body["expires_in"], json!(expires_in), "{body}");
    let token = body["access_token"].as_str().expect("access_token is a string");
    assert!(!token.is_empty() && !token.contains(CLIENT_SECRET), "{body}");
    token.to_owned()
}

/// A request that must be refused with `status`/`kind` and change nothing; returns the message.
async fn refused(
    server: &Server,
    request: impl Future<Output = (StatusCode, Value)>,
    status: u16,
    kind: &str,
) -> String {
    let before = server.snapshot().await;
    let answer = request.await;
    let message = assert_error(&answer, status, kind);
    assert_eq!(server.snapshot().await, before, "a request refused with {status} ({message}) changed something");
    message
}

async fn a_client_gets_a_bearer_token_for_json_credentials(mode: Mode) {
    let server = Server::start(mode).await;
    let answer = token_answer(&server.http, &server.base, credentials()).await;
    assert_token_answer(&answer, 3600);
    server.stop().await;
}

async fn a_client_gets_a_bearer_token_for_form_credentials(mode: Mode) {
    let server = Server::start(mode).await;
    let body = form(&[("grant_type", "client_credentials"), ("auth_id", CLIENT_ID), ("auth_secret", CLIENT_SECRET)]);
    let response = server
        .http
        .post(format!("{}{TOKEN}", server.base))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    let answer = (response.status(), response.json::<Value>().await.unwrap());
    let token = assert_token_answer(&answer, 3600);
    let (status, zones) = with_token(&server, Method::GET, ZONES, &token, None).await;
    assert_eq!(status, StatusCode::OK, "{zones}");
    server.stop().await;
}

async fn a_token_has_the_write_authority_of_its_client(mode: Mode) {
    let server = Server::start(mode).await;
    let token = token(&server).await;
    let (status, zone) =
        with_token(&server, Method::POST, ZONES, &token, Some(sphere("by token", [1.0, 2.0, 3.0], 2.0))).await;
    assert_eq!(status, StatusCode::OK, "{zone}");
    let id = zone["ZoneID"].as_str().unwrap();
    let (status, read) = with_token(&server, Method::GET, &format!("{ZONES}/{id}"), &token, None).await;
    assert_eq!((status, read), (StatusCode::OK, zone));
    server.stop().await;
}

/// Admin-only requests with valid bodies, against a profile and connection that exist.
async fn admin_requests(server: &Server) -> Vec<(Method, String, Option<Value>)> {
    let profile = server.ok(Method::POST, "/v3/modules/mqtt/certificates", Some(pki().profile("admin's"))).await;
    let profile = profile["ID"].as_str().unwrap().to_owned();
    let connection = json!({"host": "broker.example", "TLS": false, "topics": []});
    let created = server.ok(Method::POST, "/v3/modules/mqtt/connections", Some(connection.clone())).await;
    let connection_id = created["ConnectionID"].as_str().unwrap().to_owned();
    vec![
        (Method::POST, "/v3/modules/mqtt/connections".into(), Some(connection.clone())),
        (Method::PUT, format!("/v3/modules/mqtt/connections/{connection_id}"), Some(connection)),
        (Method::DELETE, format!("/v3/modules/mqtt/connections/{connection_id}"), None),
        (Method::POST, "/v3/modules/mqtt/certificates".into(), Some(pki().profile("mine"))),
        (Method::PUT, format!("/v3/modules/mqtt/certificates/{profile}"), Some(pki().profile("renamed"))),
        (Method::DELETE, format!("/v3/modules/mqtt/certificates/{profile}"), None),
    ]
}

async fn a_token_is_forbidden_admin_operations(mode: Mode) {
    let server = Server::start(mode).await;
    let token = token(&server).await;
    for (method, path, body) in admin_requests(&server).await {
        let message =
            refused(&server, with_token(&server, method.clone(), &path, &token, body), 403, "forbidden").await;
        assert!(message.contains("admin"), "{method} {path}: {message}");
    }
    server.stop().await;
}

async fn the_write_key_is_forbidden_admin_operations(mode: Mode) {
    let server = Server::start(mode).await;
    for (method, path, body) in admin_requests(&server).await {
        let message =
            refused(&server, server.call(method.clone(), &path, Some(WRITE_KEY), body), 403, "forbidden").await;
        assert!(message.contains("admin"), "{method} {path}: {message}");
    }
    server.stop().await;
}

async fn wrong_client_credentials_are_unauthorized_without_saying_which_part_is_wrong(mode: Mode) {
    let server = Server::start(mode).await;
    let mut wrong_secret = credentials();
    wrong_secret["auth_secret"] = json!("not-the-secret");
    let mut unknown_id = credentials();
    unknown_id["auth_id"] = json!("nobody");
    let a = assert_error(&token_answer(&server.http, &server.base, wrong_secret).await, 401, "unauthorized");
    let b = assert_error(&token_answer(&server.http, &server.base, unknown_id).await, 401, "unauthorized");
    assert_eq!(a, b, "the two refusals should not tell an attacker which part was wrong");
    assert!(!a.contains("not-the-secret"), "{a}");
    server.stop().await;
}

async fn a_grant_type_other_than_client_credentials_is_invalid_data(mode: Mode) {
    let server = Server::start(mode).await;
    let mut body = credentials();
    body["grant_type"] = json!("password");
    let message = assert_error(&token_answer(&server.http, &server.base, body).await, 422, "invalid_data");
    assert!(message.contains("grant_type"), "{message}");
    server.stop().await;
}

async fn a_token_request_missing_a_field_is_invalid_data_naming_it(mode: Mode) {
    let server = Server::start(mode).await;
    for field in ["grant_type", "auth_id", "auth_secret"] {
        let mut body = credentials();
        body.as_object_mut().unwrap().remove(field);
        let message = assert_error(&token_answer(&server.http, &server.base, body).await, 422, "invalid_data");
        assert!(message.contains(field), "{message}");
    }
    server.stop().await;
}

async fn a_token_with_a_tampered_signature_is_unauthorized(mode: Mode) {
    let server = Server::start(mode).await;
    let token = token(&server).await;
    let (body, signature) = token.rsplit_once('.').expect("a signed token");
    let mut signature = signature.to_owned();
    let first = if signature.starts_with('A') { "B" } else { "A" };
    signature.replace_range(0..1, first);
    let tampered = format!("{body}.{signature}");
    assert_ne!(tampered, token);
    let zone = sphere("never", [0.0, 0.0, 0.0], 1.0);
    refused(&server, with_token(&server, Method::POST, ZONES, &tampered, Some(zone)), 401, "unauthorized").await;
    server.stop().await;
}

async fn a_token_whose_claims_were_raised_to_admin_is_unauthorized(mode: Mode) {
    let server = Server::start(mode).await;
    let token = token(&server).await;
    let (body, signature) = token.rsplit_once('.').expect("a signed token");
    let (prefix, payload) = body.split_once('.').expect("a prefixed payload");
    let mut claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims["auth"], json!("write"), "{claims}");
    claims["auth"] = json!("admin");
    let forged = format!("{prefix}.{}.{signature}", URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap()));
    let request =
        with_token(&server, Method::POST, "/v3/modules/mqtt/certificates", &forged, Some(pki().profile("forged")));
    refused(&server, request, 401, "unauthorized").await;
    server.stop().await;
}

async fn a_token_from_a_server_with_another_secret_key_is_unauthorized(mode: Mode) {
    let server = Server::start(mode).await;
    let stranger = Server::start(mode).await;
    let foreign = token(&stranger).await;
    let zone = sphere("never", [0.0, 0.0, 0.0], 1.0);
    refused(&server, with_token(&server, Method::POST, ZONES, &foreign, Some(zone)), 401, "unauthorized").await;
    stranger.stop().await;
    server.stop().await;
}

async fn an_expired_token_is_unauthorized(mode: Mode) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.auth.token_ttl_seconds = 0;
    let server = Server::start_with(mode, config, dir).await;
    let token = assert_token_answer(&token_answer(&server.http, &server.base, credentials()).await, 0);
    let zone = sphere("never", [0.0, 0.0, 0.0], 1.0);
    let message =
        refused(&server, with_token(&server, Method::POST, ZONES, &token, Some(zone)), 401, "unauthorized").await;
    assert!(message.contains("expired"), "{message}");
    server.stop().await;
}

async fn basic_authorization_is_unauthorized(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = sphere("never", [0.0, 0.0, 0.0], 1.0);
    for user_password in [format!("{CLIENT_ID}:{CLIENT_SECRET}"), format!("api:{ADMIN_KEY}")] {
        let basic = format!("Basic {}", STANDARD.encode(user_password));
        let request = send(&server.http, &server.base, Method::POST, ZONES, Some(&basic), Some(zone.clone()));
        refused(&server, request, 401, "unauthorized").await;
    }
    server.stop().await;
}

async fn a_request_without_or_with_unknown_credentials_is_unauthorized(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = sphere("never", [0.0, 0.0, 0.0], 1.0);
    refused(&server, server.call(Method::POST, ZONES, None, Some(zone.clone())), 401, "unauthorized").await;
    refused(&server, server.call(Method::POST, ZONES, Some("not-a-key"), Some(zone.clone())), 401, "unauthorized")
        .await;
    let request = send(&server.http, &server.base, Method::POST, ZONES, Some("Bearer not-a-token"), Some(zone));
    refused(&server, request, 401, "unauthorized").await;
    assert_error(&server.call(Method::GET, ZONES, None, None).await, 401, "unauthorized");
    server.stop().await;
}

async fn the_read_key_can_read_everything_readable(mode: Mode) {
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

async fn the_read_key_is_forbidden_to_write(mode: Mode) {
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

async fn liveness_and_readiness_need_no_credentials_and_readiness_reports_store_and_bus(mode: Mode) {
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

async fn the_operations_listener_serves_metrics_and_probes_without_credentials(mode: Mode) {
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

async fn metrics_need_read_authority_and_count_api_requests(mode: Mode) {
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

both_modes!(
    a_client_gets_a_bearer_token_for_json_credentials,
    a_client_gets_a_bearer_token_for_form_credentials,
    a_token_has_the_write_authority_of_its_client,
    a_token_is_forbidden_admin_operations,
    the_write_key_is_forbidden_admin_operations,
    wrong_client_credentials_are_unauthorized_without_saying_which_part_is_wrong,
    a_grant_type_other_than_client_credentials_is_invalid_data,
    a_token_request_missing_a_field_is_invalid_data_naming_it,
    a_token_with_a_tampered_signature_is_unauthorized,
    a_token_whose_claims_were_raised_to_admin_is_unauthorized,
    a_token_from_a_server_with_another_secret_key_is_unauthorized,
    an_expired_token_is_unauthorized,
    basic_authorization_is_unauthorized,
    a_request_without_or_with_unknown_credentials_is_unauthorized,
    the_read_key_can_read_everything_readable,
    the_read_key_is_forbidden_to_write,
    liveness_and_readiness_need_no_credentials_and_readiness_reports_store_and_bus,
    the_operations_listener_serves_metrics_and_probes_without_credentials,
    metrics_need_read_authority_and_count_api_requests,
);

/// A second `zonecast-api` on the first one's database, NATS and secret key.
struct Replica {
    base: String,
    shutdown: Shutdown,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Replica {
    async fn beside(first: &Server, mut config: Config) -> Self {
        config.store.database_url = Some(Secret::new(first.database_url.clone().expect("a distributed server")));
        config.bus.nats_url = Some(Secret::new(nats_url()));
        let shutdown = Shutdown::new();
        let running = zonecast_api::launch(config.api(), shutdown.clone()).await.expect("a second API replica starts");
        let addr: SocketAddr = running.addr.expect("the API listens");
        Self { base: format!("http://{addr}"), shutdown, task: Some(running.task) }
    }

    async fn stop(mut self) {
        self.shutdown.cancel();
        self.task.take().unwrap().await.unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

mod distributed_replicas {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_token_issued_by_one_api_replica_is_accepted_by_another() {
        let dir = tempfile::tempdir().unwrap();
        let config = test_config(dir.path());
        let first = Server::start_with(Mode::Distributed, config.clone(), dir).await;
        let second = Replica::beside(&first, config).await;
        assert_ne!(first.base, second.base);
        let from_first = token(&first).await;
        let (status, body) =
            send(&first.http, &second.base, Method::GET, ZONES, Some(&format!("Bearer {from_first}")), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let from_second = token_from(&first.http, &second.base).await;
        let (status, body) = with_token(&first, Method::GET, ZONES, &from_second, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        second.stop().await;
        first.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_zone_created_through_one_api_replica_reads_back_through_another() {
        let dir = tempfile::tempdir().unwrap();
        let config = test_config(dir.path());
        let first = Server::start_with(Mode::Distributed, config.clone(), dir).await;
        let second = Replica::beside(&first, config).await;
        let zone = first.create_zone(sphere("shared", [4.0, 5.0, 6.0], 1.5)).await;
        let id = zone["ZoneID"].as_str().unwrap();
        let token = token_from(&first.http, &second.base).await;
        let (status, read) = send(
            &first.http,
            &second.base,
            Method::GET,
            &format!("{ZONES}/{id}"),
            Some(&format!("Bearer {token}")),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{read}");
        assert_eq!(read, zone);
        second.stop().await;
        first.stop().await;
    }
}
