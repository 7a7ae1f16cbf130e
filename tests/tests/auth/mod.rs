//! Credentials and authorities, in both deployment modes: bearer tokens for client
//! credentials (JSON and form bodies), what they and the API keys may do, and every way a
//! credential is refused. Refused requests change nothing. Distributed only: tokens and data
//! are shared by API replicas on the same database, NATS and secret key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod keys;
mod tokens;

use std::net::SocketAddr;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast::Config;
use zonecast_runtime::{Secret, Shutdown};
use zonecast_tests::{
    CLIENT_ID, CLIENT_SECRET, Mode, Server, assert_error, both_modes, json, nats_url, sphere, test_config,
};

use keys::{
    liveness_and_readiness_need_no_credentials_and_readiness_reports_store_and_bus,
    metrics_need_read_authority_and_count_api_requests,
    the_operations_listener_serves_metrics_and_probes_without_credentials, the_read_key_can_read_everything_readable,
    the_read_key_is_forbidden_to_write,
};
use tokens::{
    a_client_gets_a_bearer_token_for_form_credentials, a_client_gets_a_bearer_token_for_json_credentials,
    a_grant_type_other_than_client_credentials_is_invalid_data,
    a_request_without_or_with_unknown_credentials_is_unauthorized,
    a_token_from_a_server_with_another_secret_key_is_unauthorized, a_token_has_the_write_authority_of_its_client,
    a_token_is_forbidden_admin_operations, a_token_request_missing_a_field_is_invalid_data_naming_it,
    a_token_whose_claims_were_raised_to_admin_is_unauthorized, a_token_with_a_tampered_signature_is_unauthorized,
    an_expired_token_is_unauthorized, basic_authorization_is_unauthorized, the_write_key_is_forbidden_admin_operations,
    wrong_client_credentials_are_unauthorized_without_saying_which_part_is_wrong,
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
