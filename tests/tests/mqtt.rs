//! MQTT connections and certificate profiles through the API, in both deployment modes: real
//! PKI material from the `openssl` CLI is accepted in every documented form and refused when it
//! is unusable, secrets go in and never come out (neither in answers nor in clear in the store),
//! and every write is announced on `config.changed`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;
use zonecast_bus::Subscription;
use zonecast_runtime::Keys;
use zonecast_tests::pki::{BUNDLE_PASSWORD, b64, pki};
use zonecast_tests::{ADMIN_KEY, Mode, Server, assert_error, both_modes, json, next_json, test_config};

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

// ---------------------------------------------------------------------------------------------
// Certificate profiles

async fn a_profile_of_a_pem_ca_and_a_default_bundle_answers_only_its_id_and_name(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let created = server.ok(Method::POST, PROFILES, Some(pki().profile("plant broker"))).await;
    assert_reveals_nothing(&created);
    let id = assert_profile_summary(&created, "plant broker");
    expect_change(&mut changes, "certificates", &id).await;
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([created]));
    server.stop().await;
}

async fn a_profile_accepts_its_ca_in_der_form(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = pki().profile("der ca");
    input["ca"] = json!(pki().ca_der());
    let id = create_profile(&server, input).await;
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([{"ID": id, "name": "der ca"}]));
    server.stop().await;
}

async fn a_profile_accepts_a_bundle_with_legacy_encryption(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = pki().profile("legacy bundle");
    input["client"] = json!(pki().client_legacy());
    let id = create_profile(&server, input).await;
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([{"ID": id, "name": "legacy bundle"}]));
    server.stop().await;
}

async fn the_profile_list_shows_each_profile_by_id_and_name_only(mode: Mode) {
    let server = Server::start(mode).await;
    let first = create_profile(&server, pki().profile("first")).await;
    let mut legacy = pki().profile("second");
    legacy["client"] = json!(pki().client_legacy());
    legacy["ca"] = json!(pki().ca_der());
    let second = create_profile(&server, legacy).await;
    let list = server.ok(Method::GET, PROFILES, None).await;
    assert_reveals_nothing(&list);
    assert_eq!(list, json!([{"ID": first, "name": "first"}, {"ID": second, "name": "second"}]));
    server.stop().await;
}

async fn updating_a_profile_renames_it_and_is_announced(mode: Mode) {
    let server = Server::start(mode).await;
    let id = create_profile(&server, pki().profile("before")).await;
    let mut changes = server.config_changes().await;
    let mut input = pki().profile("after");
    input["ca"] = json!(pki().other_ca());
    input["client"] = json!(pki().client_legacy());
    let updated = server.ok(Method::PUT, &profile_path(&id.to_lowercase()), Some(input)).await;
    assert_reveals_nothing(&updated);
    assert_eq!(updated, json!({"ID": id, "name": "after"}));
    expect_change(&mut changes, "certificates", &id).await;
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([{"ID": id, "name": "after"}]));
    server.stop().await;
}

async fn a_bundle_with_a_wrong_password_is_invalid_data_naming_client(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = pki().profile("wrong password");
    input["password"] = json!("not-the-bundle-password");
    let message = refused(&server, Method::POST, PROFILES, Some(input), 422, "invalid_data").await;
    assert_eq!(message, "client: cannot be opened: wrong password");
    server.stop().await;
}

async fn a_refused_profile_update_keeps_the_stored_profile(mode: Mode) {
    let server = Server::start(mode).await;
    let id = create_profile(&server, pki().profile("kept")).await;
    let mut input = pki().profile("renamed");
    input["password"] = json!("not-the-bundle-password");
    let message = refused(&server, Method::PUT, &profile_path(&id), Some(input), 422, "invalid_data").await;
    assert!(message.contains("client"), "{message}");
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([{"ID": id, "name": "kept"}]));
    server.stop().await;
}

async fn text_that_is_not_base64_is_invalid_data_naming_the_field(mode: Mode) {
    let server = Server::start(mode).await;
    for field in ["ca", "client"] {
        let mut input = pki().profile("garbage");
        input[field] = json!("%%% this is not base64 %%%");
        let message = refused(&server, Method::POST, PROFILES, Some(input), 422, "invalid_data").await;
        assert!(message.starts_with(field), "the message should name {field}: {message}");
        assert!(message.contains("base64"), "{message}");
    }
    server.stop().await;
}

async fn a_ca_that_is_not_a_certificate_is_invalid_data_naming_ca(mode: Mode) {
    let server = Server::start(mode).await;
    let not_certificates = [
        b64(b"this is plain text, not a certificate"),
        b64(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        b64(&pki().server_key_pem),
        pki().client(),
    ];
    for ca in not_certificates {
        let mut input = pki().profile("bad ca");
        input["ca"] = json!(ca);
        let message = refused(&server, Method::POST, PROFILES, Some(input), 422, "invalid_data").await;
        assert!(message.starts_with("ca"), "the message should name ca: {message}");
    }
    server.stop().await;
}

async fn a_pem_certificate_given_as_the_client_bundle_is_invalid_data(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = pki().profile("pem as bundle");
    input["client"] = json!(b64(&pki().client_cert_pem));
    let message = refused(&server, Method::POST, PROFILES, Some(input), 422, "invalid_data").await;
    assert_eq!(message, "client: is not a PKCS#12 bundle");
    server.stop().await;
}

async fn an_unknown_profile_cannot_be_updated_or_deleted(mode: Mode) {
    let server = Server::start(mode).await;
    create_profile(&server, pki().profile("bystander")).await;
    let unknown = Uuid::new_v4().to_string();
    let message =
        refused(&server, Method::PUT, &profile_path(&unknown), Some(pki().profile("ghost")), 404, "not_found").await;
    assert!(message.contains(&unknown.to_uppercase()), "{message}");
    refused(&server, Method::DELETE, &profile_path(&unknown), None, 404, "not_found").await;
    server.stop().await;
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

// ---------------------------------------------------------------------------------------------
// Connections

async fn a_tls_connection_needs_a_certificate_profile(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = tls_connection("broker.example", "");
    input.as_object_mut().unwrap().remove("CertificateProfileID");
    let message = refused(&server, Method::POST, CONNECTIONS, Some(input.clone()), 422, "invalid_data").await;
    assert!(message.contains("CertificateProfileID"), "{message}");
    input.as_object_mut().unwrap().remove("TLS");
    let message = refused(&server, Method::POST, CONNECTIONS, Some(input), 422, "invalid_data").await;
    assert!(message.contains("CertificateProfileID"), "TLS is on by default, so the profile is required: {message}");
    server.stop().await;
}

async fn a_tls_connection_naming_an_unknown_profile_is_invalid_data(mode: Mode) {
    let server = Server::start(mode).await;
    create_profile(&server, pki().profile("existing")).await;
    let unknown = Uuid::new_v4().to_string().to_uppercase();
    let input = tls_connection("broker.example", &unknown);
    let message = refused(&server, Method::POST, CONNECTIONS, Some(input.clone()), 422, "invalid_data").await;
    assert!(message.contains("CertificateProfileID"), "{message}");
    assert!(message.contains(&unknown), "{message}");
    assert!(message.contains("does not exist"), "{message}");
    let existing = create_connection(&server, plain_connection("broker.example")).await;
    let message = refused(&server, Method::PUT, &connection_path(&existing), Some(input), 422, "invalid_data").await;
    assert!(message.contains(&unknown) && message.contains("does not exist"), "{message}");
    server.stop().await;
}

async fn a_tls_connection_with_a_profile_is_created_and_announced(mode: Mode) {
    let server = Server::start(mode).await;
    let profile = create_profile(&server, pki().profile("tls")).await;
    let mut changes = server.config_changes().await;
    let input = tls_connection("broker.example", &profile.to_lowercase());
    let created = server.ok(Method::POST, CONNECTIONS, Some(input.clone())).await;
    assert_reveals_nothing(&created);
    let id = assert_upper_uuid(&created["ConnectionID"]);
    let mut expected = as_answered(&id, &input);
    expected["CertificateProfileID"] = json!(profile);
    assert_same(&created, &expected);
    expect_change(&mut changes, "connections", &id).await;
    assert_eq!(server.ok(Method::GET, CONNECTIONS, None).await, json!([created]));
    server.stop().await;
}

async fn a_connection_defaults_to_tls_on_port_8883(mode: Mode) {
    let server = Server::start(mode).await;
    let profile = create_profile(&server, pki().profile("defaults")).await;
    let created = server
        .ok(Method::POST, CONNECTIONS, Some(json!({"host": "broker.example", "CertificateProfileID": profile})))
        .await;
    assert_eq!(created["TLS"], json!(true), "{created}");
    assert_eq!(created["port"], json!(8883), "{created}");
    assert_eq!(created["CertificateProfileID"], json!(profile), "{created}");
    server.stop().await;
}

async fn a_connection_without_tls_defaults_to_port_1883(mode: Mode) {
    let server = Server::start(mode).await;
    let created =
        server.ok(Method::POST, CONNECTIONS, Some(json!({"host": "broker.example", "TLS": false, "topics": []}))).await;
    assert_eq!(created["port"], json!(1883), "{created}");
    let id = created["ConnectionID"].as_str().unwrap();
    let updated = server
        .ok(Method::PUT, &connection_path(id), Some(json!({"host": "broker.example", "TLS": false, "topics": []})))
        .await;
    assert_eq!(updated["port"], json!(1883), "an update without a port follows its TLS setting too: {updated}");
    let explicit = server
        .ok(Method::PUT, &connection_path(id), Some(json!({"host": "broker.example", "port": 8883, "TLS": false})))
        .await;
    assert_eq!(explicit["port"], json!(8883), "a port that is given is kept: {explicit}");
    server.stop().await;
}

async fn a_connection_without_tls_needs_no_profile(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let input = plain_connection("mosquitto.local");
    let created = server.ok(Method::POST, CONNECTIONS, Some(input.clone())).await;
    let id = assert_upper_uuid(&created["ConnectionID"]);
    assert_same(&created, &as_answered(&id, &input));
    assert_eq!(created["CertificateProfileID"], Value::Null);
    expect_change(&mut changes, "connections", &id).await;
    server.stop().await;
}

async fn a_connection_password_is_accepted_but_never_returned(mode: Mode) {
    let server = Server::start(mode).await;
    let profile = create_profile(&server, pki().profile("secret keeper")).await;
    let created = server.ok(Method::POST, CONNECTIONS, Some(tls_connection("broker.example", &profile))).await;
    assert_reveals_nothing(&created);
    let id = assert_upper_uuid(&created["ConnectionID"]);
    assert_reveals_nothing(&server.ok(Method::GET, CONNECTIONS, None).await);
    assert_reveals_nothing(&server.ok(Method::GET, &connection_path(&id), None).await);
    let updated =
        server.ok(Method::PUT, &connection_path(&id), Some(tls_connection("broker2.example", &profile))).await;
    assert_reveals_nothing(&updated);
    let mut without_password = plain_connection("broker3.example");
    without_password.as_object_mut().unwrap().remove("password");
    assert_reveals_nothing(&server.ok(Method::PUT, &connection_path(&id), Some(without_password)).await);
    assert_reveals_nothing(&server.ok(Method::GET, &connection_path(&id), None).await);
    assert_reveals_nothing(&server.snapshot().await);
    server.stop().await;
}

async fn retrieving_a_connection_answers_a_one_element_list(mode: Mode) {
    let server = Server::start(mode).await;
    let created = server.ok(Method::POST, CONNECTIONS, Some(plain_connection("one.example"))).await;
    server.ok(Method::POST, CONNECTIONS, Some(plain_connection("two.example"))).await;
    let id = created["ConnectionID"].as_str().unwrap();
    let read = server.ok(Method::GET, &connection_path(&id.to_lowercase()), None).await;
    assert_eq!(read, json!([created]));
    server.stop().await;
}

async fn updating_a_connection_replaces_it_and_is_announced(mode: Mode) {
    let server = Server::start(mode).await;
    let id = create_connection(&server, plain_connection("old.example")).await;
    let profile = create_profile(&server, pki().profile("for the update")).await;
    let mut changes = server.config_changes().await;
    let input = tls_connection("new.example", &profile);
    let updated = server.ok(Method::PUT, &connection_path(&id), Some(input.clone())).await;
    assert_same(&updated, &as_answered(&id, &input));
    expect_change(&mut changes, "connections", &id).await;
    assert_eq!(server.ok(Method::GET, &connection_path(&id), None).await, json!([updated]));
    assert_eq!(server.ok(Method::GET, CONNECTIONS, None).await, json!([updated]));
    server.stop().await;
}

/// A server whose secret key the test knows, so it can open what the server sealed.
async fn start_with_known_key(mode: Mode) -> (Server, Keys) {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path());
    let keys = Keys::from_secret(config.secret_key.as_ref().unwrap()).unwrap();
    (Server::start_with(mode, config, dir).await, keys)
}

/// The password stored for connection `id`, unsealed with the server's key.
async fn stored_password(server: &Server, keys: &Keys, id: &str) -> Option<String> {
    let sqlite = server.data_dir.path().join(zonecast::DATABASE_FILE);
    let store = zonecast_store::open(server.database_url.as_deref(), zonecast_store::DEFAULT_POOL_SIZE, &sqlite)
        .await
        .expect("the store opens");
    let stored = store.get_connection(id.parse().unwrap()).await.expect("the connection is stored");
    stored
        .password_sealed
        .map(|sealed| String::from_utf8(keys.open(&sealed).expect("sealed with the server key")).unwrap())
}

async fn updating_a_connection_without_a_password_keeps_the_stored_one(mode: Mode) {
    let (server, keys) = start_with_known_key(mode).await;
    let id = create_connection(&server, plain_connection("broker.example")).await;
    assert_eq!(stored_password(&server, &keys, &id).await.as_deref(), Some(PASSWORD));

    let mut without_password = plain_connection("moved.example");
    without_password.as_object_mut().unwrap().remove("password");
    let updated = server.ok(Method::PUT, &connection_path(&id), Some(without_password)).await;
    assert_eq!(updated["host"], json!("moved.example"));
    assert_eq!(stored_password(&server, &keys, &id).await.as_deref(), Some(PASSWORD), "the password was lost");

    let mut new_password = plain_connection("moved.example");
    new_password["password"] = json!("a-brand-new-password");
    server.ok(Method::PUT, &connection_path(&id), Some(new_password)).await;
    assert_eq!(stored_password(&server, &keys, &id).await.as_deref(), Some("a-brand-new-password"));
    server.stop().await;
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every non-null value of every column of every table of the database, with where it is.
/// Binary columns come as their bytes, everything else as its text form. The schema is read
/// from `information_schema`, so this sees tables the test does not know of.
async fn every_stored_value(database_url: &str) -> Vec<(String, Vec<u8>)> {
    let (client, connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls).await.expect("PostgreSQL");
    let connection = tokio::spawn(connection);
    let columns = client
        .query(
            "SELECT table_schema::text, table_name::text, column_name::text, data_type::text
             FROM information_schema.columns c
             WHERE table_schema NOT IN ('pg_catalog', 'information_schema')
               AND EXISTS (SELECT 1 FROM information_schema.tables t WHERE t.table_schema = c.table_schema
                           AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE')",
            &[],
        )
        .await
        .unwrap();
    assert!(!columns.is_empty(), "the database has no tables");
    let mut values = Vec::new();
    for column in columns {
        let (schema, table, name, kind): (String, String, String, String) =
            (column.get(0), column.get(1), column.get(2), column.get(3));
        let place = format!("{schema}.{table}.{name}");
        let from = format!("\"{schema}\".\"{table}\"");
        if kind == "bytea" {
            let sql = format!("SELECT \"{name}\" FROM {from} WHERE \"{name}\" IS NOT NULL");
            for row in client.query(&sql, &[]).await.unwrap() {
                values.push((place.clone(), row.get::<_, Vec<u8>>(0)));
            }
        } else {
            let sql = format!("SELECT \"{name}\"::text FROM {from} WHERE \"{name}\" IS NOT NULL");
            for row in client.query(&sql, &[]).await.unwrap() {
                values.push((place.clone(), row.get::<_, String>(0).into_bytes()));
            }
        }
    }
    drop(client);
    connection.await.unwrap().unwrap();
    values
}

async fn no_password_or_private_key_is_stored_in_the_clear(mode: Mode) {
    let server = Server::start(mode).await;
    let p = pki();
    let profile = create_profile(&server, pki().profile("vault-check-profile")).await;
    let mut legacy = pki().profile("vault-check-legacy");
    legacy["client"] = json!(p.client_legacy());
    create_profile(&server, legacy).await;
    let connection = create_connection(&server, tls_connection("vault-check.example", &profile)).await;

    let secrets: Vec<(&str, Vec<u8>)> = vec![
        ("connection password", PASSWORD.into()),
        ("bundle password", BUNDLE_PASSWORD.into()),
        ("PKCS#12 bundle", p.client_p12.clone()),
        ("PKCS#12 bundle, base64", p.client().into_bytes()),
        ("PKCS#12 bundle, hex", hex(&p.client_p12).into_bytes()),
        ("legacy PKCS#12 bundle", p.client_p12_legacy.clone()),
        ("legacy PKCS#12 bundle, base64", p.client_legacy().into_bytes()),
        ("client private key", p.client_key_der.clone()),
        ("client private key, base64", b64(&p.client_key_der).into_bytes()),
        ("client private key, hex", hex(&p.client_key_der).into_bytes()),
    ];
    let lower_id = connection.to_lowercase();
    match mode {
        Mode::Distributed => {
            let values = every_stored_value(server.database_url.as_deref().unwrap()).await;
            // The scan must have seen what was written, or it proves nothing.
            assert!(values.iter().any(|(_, v)| contains(v, lower_id.as_bytes())), "the connection row was not seen");
            assert!(values.iter().any(|(_, v)| contains(v, b"vault-check-profile")), "the profile row was not seen");
            for (place, value) in &values {
                for (what, secret) in &secrets {
                    assert!(!contains(value, secret), "the {what} is stored in the clear in {place}");
                }
            }
        }
        Mode::AllInOne => {
            let file = server.data_dir.path().join(zonecast::DATABASE_FILE);
            let mut bytes = std::fs::read(&file).expect("the SQLite file exists");
            let wal = file.with_file_name(format!("{}-wal", zonecast::DATABASE_FILE));
            if wal.exists() {
                bytes.extend(std::fs::read(&wal).unwrap());
            }
            assert!(contains(&bytes, lower_id.as_bytes()), "the connection was not found in the SQLite files");
            assert!(contains(&bytes, b"vault-check-profile"), "the profile was not found in the SQLite files");
            for (what, secret) in &secrets {
                assert!(!contains(&bytes, secret), "the {what} is stored in the clear in the SQLite files");
            }
        }
    }
    server.stop().await;
}

async fn a_profile_in_use_cannot_be_deleted_until_its_connection_is(mode: Mode) {
    let server = Server::start(mode).await;
    let profile = create_profile(&server, pki().profile("in use")).await;
    let connection = create_connection(&server, tls_connection("broker.example", &profile)).await;

    let message = refused(&server, Method::DELETE, &profile_path(&profile), None, 422, "invalid_data").await;
    assert!(message.contains(&connection), "the message should name the connection that uses it: {message}");
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([{"ID": profile, "name": "in use"}]));

    let mut changes = server.config_changes().await;
    let ack = server.ok(Method::DELETE, &connection_path(&connection), None).await;
    assert_eq!(ack, json!({"status": 200, "success": true}));
    expect_change(&mut changes, "connections", &connection).await;
    assert_eq!(server.ok(Method::GET, CONNECTIONS, None).await, json!([]));

    let ack = server.ok(Method::DELETE, &profile_path(&profile.to_lowercase()), None).await;
    assert_eq!(ack, json!({"status": 200, "success": true}));
    expect_change(&mut changes, "certificates", &profile).await;
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([]));
    server.stop().await;
}

async fn a_connection_to_an_unreachable_broker_reports_that_it_is_down_and_forwarded_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let id = create_connection(&server, plain_connection("idle.example")).await;
    let path = format!("{}/status", connection_path(&id.to_lowercase()));
    // The forwarder tries the broker and writes its status row within seconds.
    let status = zonecast_tests::eventually(std::time::Duration::from_secs(20), || async {
        let status = server.ok(Method::GET, &path, None).await;
        (status["lastError"].is_string()).then_some(status)
    })
    .await;
    assert_eq!(status["ConnectionID"], json!(id), "{status}");
    assert_eq!(status["connected"], json!(false), "{status}");
    assert_eq!(status["forwarded"], json!(0), "{status}");
    assert_eq!(status["dropped"], json!(0), "{status}");
    assert_eq!(status["queued"], json!(0), "{status}");
    let replicas = status["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 1, "one forwarder replica runs: {status}");
    assert_eq!(replicas[0]["connected"], json!(false));
    assert_eq!(replicas[0]["stale"], json!(false));
    server.stop().await;
}

async fn an_unknown_connection_is_not_found(mode: Mode) {
    let server = Server::start(mode).await;
    create_connection(&server, plain_connection("bystander.example")).await;
    let unknown = Uuid::new_v4().to_string();
    let path = connection_path(&unknown);
    for (method, path) in [(Method::GET, path.clone()), (Method::GET, format!("{path}/status"))] {
        let message = assert_error(&server.call(method, &path, Some(ADMIN_KEY), None).await, 404, "not_found");
        assert!(message.contains(&unknown.to_uppercase()), "{message}");
    }
    refused(&server, Method::PUT, &path, Some(plain_connection("ghost.example")), 404, "not_found").await;
    refused(&server, Method::DELETE, &path, None, 404, "not_found").await;
    server.stop().await;
}
