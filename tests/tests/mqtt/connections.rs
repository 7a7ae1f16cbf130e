//! MQTT connections: their defaults, their passwords and profiles, updates and status.

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;
use zonecast_runtime::Keys;
use zonecast_tests::pki::pki;
use zonecast_tests::{ADMIN_KEY, Mode, Server, assert_error, json, test_config};

use super::{
    CONNECTIONS, PASSWORD, PROFILES, as_answered, assert_reveals_nothing, assert_same, assert_upper_uuid,
    connection_path, create_connection, create_profile, expect_change, plain_connection, profile_path, refused,
    tls_connection,
};

// ---------------------------------------------------------------------------------------------
// Connections

pub(crate) async fn a_tls_connection_needs_a_certificate_profile(mode: Mode) {
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

pub(crate) async fn a_tls_connection_naming_an_unknown_profile_is_invalid_data(mode: Mode) {
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

pub(crate) async fn a_tls_connection_with_a_profile_is_created_and_announced(mode: Mode) {
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

pub(crate) async fn a_connection_defaults_to_tls_on_port_8883(mode: Mode) {
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

pub(crate) async fn a_connection_without_tls_defaults_to_port_1883(mode: Mode) {
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

pub(crate) async fn a_connection_without_tls_needs_no_profile(mode: Mode) {
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

pub(crate) async fn a_connection_password_is_accepted_but_never_returned(mode: Mode) {
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

pub(crate) async fn retrieving_a_connection_answers_a_one_element_list(mode: Mode) {
    let server = Server::start(mode).await;
    let created = server.ok(Method::POST, CONNECTIONS, Some(plain_connection("one.example"))).await;
    server.ok(Method::POST, CONNECTIONS, Some(plain_connection("two.example"))).await;
    let id = created["ConnectionID"].as_str().unwrap();
    let read = server.ok(Method::GET, &connection_path(&id.to_lowercase()), None).await;
    assert_eq!(read, json!([created]));
    server.stop().await;
}

pub(crate) async fn updating_a_connection_replaces_it_and_is_announced(mode: Mode) {
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

pub(crate) async fn updating_a_connection_without_a_password_keeps_the_stored_one(mode: Mode) {
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

pub(crate) async fn a_profile_in_use_cannot_be_deleted_until_its_connection_is(mode: Mode) {
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

pub(crate) async fn a_connection_to_an_unreachable_broker_reports_that_it_is_down_and_forwarded_nothing(mode: Mode) {
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

pub(crate) async fn an_unknown_connection_is_not_found(mode: Mode) {
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
