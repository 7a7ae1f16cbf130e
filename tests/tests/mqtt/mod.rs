//! MQTT connections and certificate profiles through the API, in both deployment modes: real
//! PKI material from the `openssl` CLI is accepted in every documented form and refused when it
//! is unusable, secrets go in and never come out (neither in answers nor in clear in the store),
//! and every write is announced on `config.changed`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod connections;
mod profiles;
mod stored;

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;
use zonecast_bus::Subscription;
use zonecast_tests::pki::{BUNDLE_PASSWORD, pki};
use zonecast_tests::{ADMIN_KEY, Server, assert_error, both_modes, json, next_json};

use connections::{
    a_connection_defaults_to_tls_on_port_8883, a_connection_password_is_accepted_but_never_returned,
    a_connection_to_an_unreachable_broker_reports_that_it_is_down_and_forwarded_nothing,
    a_connection_without_tls_defaults_to_port_1883, a_connection_without_tls_needs_no_profile,
    a_profile_in_use_cannot_be_deleted_until_its_connection_is,
    a_tls_connection_naming_an_unknown_profile_is_invalid_data, a_tls_connection_needs_a_certificate_profile,
    a_tls_connection_with_a_profile_is_created_and_announced, an_unknown_connection_is_not_found,
    retrieving_a_connection_answers_a_one_element_list, updating_a_connection_replaces_it_and_is_announced,
    updating_a_connection_without_a_password_keeps_the_stored_one,
};
use profiles::{
    a_bundle_with_a_wrong_password_is_invalid_data_naming_client,
    a_ca_that_is_not_a_certificate_is_invalid_data_naming_ca,
    a_pem_certificate_given_as_the_client_bundle_is_invalid_data, a_profile_accepts_a_bundle_with_legacy_encryption,
    a_profile_accepts_its_ca_in_der_form, a_profile_of_a_pem_ca_and_a_default_bundle_answers_only_its_id_and_name,
    a_refused_profile_update_keeps_the_stored_profile, an_unknown_profile_cannot_be_updated_or_deleted,
    text_that_is_not_base64_is_invalid_data_naming_the_field, the_profile_list_shows_each_profile_by_id_and_name_only,
    updating_a_profile_renames_it_and_is_announced,
};
use stored::no_password_or_private_key_is_stored_in_the_clear;

const PROFILES: &str = "/v3/modules/mqtt/certificates";
const CONNECTIONS: &str = "/v3/modules/mqtt/connections";
/// The MQTT password the tests give connections; it must never come back or be stored in clear.
const PASSWORD: &str = "broker-pass-correct-horse-7c1e";

fn profile_path(id: &str) -> String {
    format!("{PROFILES}/{id}")
}

fn connection_path(id: &str) -> String {
    format!("{CONNECTIONS}/{id}")
}

/// A connection without TLS to `host`, with a password.
fn plain_connection(host: &str) -> Value {
    json!({
        "host": host, "port": 1883, "TLS": false, "username": "zonecast", "password": PASSWORD,
        "topics": [{"topic": "site/zone-events", "FilterChain": [{"FilterTemplate": "zone_events"}]}],
    })
}

/// A TLS connection to `host` using certificate profile `profile`, with a password.
fn tls_connection(host: &str, profile: &str) -> Value {
    json!({
        "host": host, "port": 8883, "TLS": true, "CertificateProfileID": profile, "username": "zonecast",
        "password": PASSWORD, "topics": [{"topic": "site/all", "FilterChain": []}],
    })
}

/// What the API answers for `input` stored under `id`: the input without its password.
fn as_answered(id: &str, input: &Value) -> Value {
    let mut expected = input.clone();
    let object = expected.as_object_mut().unwrap();
    object.remove("password");
    object.insert("ConnectionID".into(), json!(id));
    if object.get("TLS") == Some(&json!(false)) {
        object.insert("CertificateProfileID".into(), Value::Null);
    }
    expected
}

/// Equal JSON, both shown when not.
#[track_caller]
fn assert_same(actual: &Value, expected: &Value) {
    assert_eq!(actual, expected, "\nactual:   {actual}\nexpected: {expected}");
}

/// An upper-case UUID, as every ID in answers.
#[track_caller]
fn assert_upper_uuid(id: &Value) -> String {
    let text = id.as_str().unwrap_or_else(|| panic!("an ID string, got {id}"));
    assert!(Uuid::parse_str(text).is_ok(), "{text} is not a UUID");
    assert_eq!(text, text.to_uppercase(), "IDs are upper-case");
    text.to_owned()
}

/// A profile answer: exactly `{ID, name}`.
#[track_caller]
fn assert_profile_summary(body: &Value, name: &str) -> String {
    let keys: Vec<&str> =
        body.as_object().unwrap_or_else(|| panic!("an object, got {body}")).keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 2, "a profile answer holds ID and name only: {body}");
    assert_eq!(body["name"], json!(name), "{body}");
    assert_upper_uuid(&body["ID"])
}

/// No `ca`, `client` or `password` key at any depth, and none of the uploaded secrets as text.
#[track_caller]
fn assert_reveals_nothing(body: &Value) {
    fn keys(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    out.push(k.to_ascii_lowercase());
                    keys(v, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    keys(body, &mut found);
    for forbidden in ["ca", "client", "password"] {
        assert!(!found.iter().any(|k| k == forbidden), "an answer carries `{forbidden}`: {body}");
    }
    let text = body.to_string();
    let p = pki();
    for (what, secret) in [
        ("connection password", PASSWORD.to_owned()),
        ("bundle password", BUNDLE_PASSWORD.to_owned()),
        ("client bundle", p.client()),
        ("legacy client bundle", p.client_legacy()),
        ("CA", p.ca()),
        ("CA (DER)", p.ca_der()),
    ] {
        assert!(!text.contains(&secret), "an answer carries the {what}: {body}");
    }
}

/// Creates a profile from `input` as admin, returning its ID.
async fn create_profile(server: &Server, input: Value) -> String {
    let name = input["name"].as_str().unwrap().to_owned();
    let created = server.ok(Method::POST, PROFILES, Some(input)).await;
    assert_reveals_nothing(&created);
    assert_profile_summary(&created, &name)
}

/// Creates a connection from `input` as admin, returning its ID.
async fn create_connection(server: &Server, input: Value) -> String {
    let created = server.ok(Method::POST, CONNECTIONS, Some(input)).await;
    assert_reveals_nothing(&created);
    assert_upper_uuid(&created["ConnectionID"])
}

/// The next `config.changed` is `{Kind: kind, IDs: [id]}` with the write's revision.
async fn expect_change(changes: &mut Subscription, kind: &str, id: &str) {
    let mut change = next_json(changes, Duration::from_secs(10)).await;
    let revision = change.as_object_mut().and_then(|c| c.remove("Revision"));
    assert!(revision.as_ref().and_then(Value::as_u64).is_some_and(|r| r > 0), "a revision: {revision:?}");
    assert_eq!(change, json!({"Kind": kind, "IDs": [id]}));
}

/// Sends a request the server must refuse with `status`/`kind`, and proves that it changed
/// nothing a client can read. Returns the error message.
async fn refused(server: &Server, method: Method, path: &str, body: Option<Value>, status: u16, kind: &str) -> String {
    let before = server.snapshot().await;
    let answer = server.call(method.clone(), path, Some(ADMIN_KEY), body).await;
    let message = assert_error(&answer, status, kind);
    assert_eq!(server.snapshot().await, before, "{method} {path} was refused ({message}) but changed something");
    message
}

both_modes!(
    a_profile_of_a_pem_ca_and_a_default_bundle_answers_only_its_id_and_name,
    a_profile_accepts_its_ca_in_der_form,
    a_profile_accepts_a_bundle_with_legacy_encryption,
    the_profile_list_shows_each_profile_by_id_and_name_only,
    updating_a_profile_renames_it_and_is_announced,
    a_bundle_with_a_wrong_password_is_invalid_data_naming_client,
    a_refused_profile_update_keeps_the_stored_profile,
    text_that_is_not_base64_is_invalid_data_naming_the_field,
    a_ca_that_is_not_a_certificate_is_invalid_data_naming_ca,
    a_pem_certificate_given_as_the_client_bundle_is_invalid_data,
    an_unknown_profile_cannot_be_updated_or_deleted,
    a_tls_connection_needs_a_certificate_profile,
    a_tls_connection_naming_an_unknown_profile_is_invalid_data,
    a_tls_connection_with_a_profile_is_created_and_announced,
    a_connection_defaults_to_tls_on_port_8883,
    a_connection_without_tls_defaults_to_port_1883,
    a_connection_without_tls_needs_no_profile,
    a_connection_password_is_accepted_but_never_returned,
    retrieving_a_connection_answers_a_one_element_list,
    updating_a_connection_replaces_it_and_is_announced,
    updating_a_connection_without_a_password_keeps_the_stored_one,
    no_password_or_private_key_is_stored_in_the_clear,
    a_profile_in_use_cannot_be_deleted_until_its_connection_is,
    a_connection_to_an_unreachable_broker_reports_that_it_is_down_and_forwarded_nothing,
    an_unknown_connection_is_not_found,
);
