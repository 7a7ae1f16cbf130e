//! Bearer tokens: issued for credentials, their authority, and every way one is refused.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast_tests::pki::pki;
use zonecast_tests::{
    ADMIN_KEY, CLIENT_ID, CLIENT_SECRET, Mode, Server, WRITE_KEY, assert_error, json, sphere, test_config,
};

use super::{TOKEN, ZONES, assert_token_answer, credentials, form, refused, send, token, token_answer, with_token};

pub(crate) async fn a_client_gets_a_bearer_token_for_json_credentials(mode: Mode) {
    let server = Server::start(mode).await;
    let answer = token_answer(&server.http, &server.base, credentials()).await;
    assert_token_answer(&answer, 3600);
    server.stop().await;
}

pub(crate) async fn a_client_gets_a_bearer_token_for_form_credentials(mode: Mode) {
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

pub(crate) async fn a_token_has_the_write_authority_of_its_client(mode: Mode) {
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
pub(crate) async fn admin_requests(server: &Server) -> Vec<(Method, String, Option<Value>)> {
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

pub(crate) async fn a_token_is_forbidden_admin_operations(mode: Mode) {
    let server = Server::start(mode).await;
    let token = token(&server).await;
    for (method, path, body) in admin_requests(&server).await {
        let message =
            refused(&server, with_token(&server, method.clone(), &path, &token, body), 403, "forbidden").await;
        assert!(message.contains("admin"), "{method} {path}: {message}");
    }
    server.stop().await;
}

pub(crate) async fn the_write_key_is_forbidden_admin_operations(mode: Mode) {
    let server = Server::start(mode).await;
    for (method, path, body) in admin_requests(&server).await {
        let message =
            refused(&server, server.call(method.clone(), &path, Some(WRITE_KEY), body), 403, "forbidden").await;
        assert!(message.contains("admin"), "{method} {path}: {message}");
    }
    server.stop().await;
}

pub(crate) async fn wrong_client_credentials_are_unauthorized_without_saying_which_part_is_wrong(mode: Mode) {
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

pub(crate) async fn a_grant_type_other_than_client_credentials_is_invalid_data(mode: Mode) {
    let server = Server::start(mode).await;
    let mut body = credentials();
    body["grant_type"] = json!("password");
    let message = assert_error(&token_answer(&server.http, &server.base, body).await, 422, "invalid_data");
    assert!(message.contains("grant_type"), "{message}");
    server.stop().await;
}

pub(crate) async fn a_token_request_missing_a_field_is_invalid_data_naming_it(mode: Mode) {
    let server = Server::start(mode).await;
    for field in ["grant_type", "auth_id", "auth_secret"] {
        let mut body = credentials();
        body.as_object_mut().unwrap().remove(field);
        let message = assert_error(&token_answer(&server.http, &server.base, body).await, 422, "invalid_data");
        assert!(message.contains(field), "{message}");
    }
    server.stop().await;
}

pub(crate) async fn a_token_with_a_tampered_signature_is_unauthorized(mode: Mode) {
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

pub(crate) async fn a_token_whose_claims_were_raised_to_admin_is_unauthorized(mode: Mode) {
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

pub(crate) async fn a_token_from_a_server_with_another_secret_key_is_unauthorized(mode: Mode) {
    let server = Server::start(mode).await;
    let stranger = Server::start(mode).await;
    let foreign = token(&stranger).await;
    let zone = sphere("never", [0.0, 0.0, 0.0], 1.0);
    refused(&server, with_token(&server, Method::POST, ZONES, &foreign, Some(zone)), 401, "unauthorized").await;
    stranger.stop().await;
    server.stop().await;
}

pub(crate) async fn an_expired_token_is_unauthorized(mode: Mode) {
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

pub(crate) async fn basic_authorization_is_unauthorized(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = sphere("never", [0.0, 0.0, 0.0], 1.0);
    for user_password in [format!("{CLIENT_ID}:{CLIENT_SECRET}"), format!("api:{ADMIN_KEY}")] {
        let basic = format!("Basic {}", STANDARD.encode(user_password));
        let request = send(&server.http, &server.base, Method::POST, ZONES, Some(&basic), Some(zone.clone()));
        refused(&server, request, 401, "unauthorized").await;
    }
    server.stop().await;
}

pub(crate) async fn a_request_without_or_with_unknown_credentials_is_unauthorized(mode: Mode) {
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
