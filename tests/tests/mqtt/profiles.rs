//! Certificate profiles: what each form of CA and client bundle answers, and what is refused.

use reqwest::Method;
use uuid::Uuid;
use zonecast_tests::pki::{b64, pki};
use zonecast_tests::{Mode, Server, json};

use super::{
    PROFILES, assert_profile_summary, assert_reveals_nothing, create_profile, expect_change, profile_path, refused,
};

pub(crate) async fn a_profile_of_a_pem_ca_and_a_default_bundle_answers_only_its_id_and_name(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let created = server.ok(Method::POST, PROFILES, Some(pki().profile("plant broker"))).await;
    assert_reveals_nothing(&created);
    let id = assert_profile_summary(&created, "plant broker");
    expect_change(&mut changes, "certificates", &id).await;
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([created]));
    server.stop().await;
}

pub(crate) async fn a_profile_accepts_its_ca_in_der_form(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = pki().profile("der ca");
    input["ca"] = json!(pki().ca_der());
    let id = create_profile(&server, input).await;
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([{"ID": id, "name": "der ca"}]));
    server.stop().await;
}

pub(crate) async fn a_profile_accepts_a_bundle_with_legacy_encryption(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = pki().profile("legacy bundle");
    input["client"] = json!(pki().client_legacy());
    let id = create_profile(&server, input).await;
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([{"ID": id, "name": "legacy bundle"}]));
    server.stop().await;
}

pub(crate) async fn the_profile_list_shows_each_profile_by_id_and_name_only(mode: Mode) {
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

pub(crate) async fn updating_a_profile_renames_it_and_is_announced(mode: Mode) {
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

pub(crate) async fn a_bundle_with_a_wrong_password_is_invalid_data_naming_client(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = pki().profile("wrong password");
    input["password"] = json!("not-the-bundle-password");
    let message = refused(&server, Method::POST, PROFILES, Some(input), 422, "invalid_data").await;
    assert_eq!(message, "client: cannot be opened: wrong password");
    server.stop().await;
}

pub(crate) async fn a_refused_profile_update_keeps_the_stored_profile(mode: Mode) {
    let server = Server::start(mode).await;
    let id = create_profile(&server, pki().profile("kept")).await;
    let mut input = pki().profile("renamed");
    input["password"] = json!("not-the-bundle-password");
    let message = refused(&server, Method::PUT, &profile_path(&id), Some(input), 422, "invalid_data").await;
    assert!(message.contains("client"), "{message}");
    assert_eq!(server.ok(Method::GET, PROFILES, None).await, json!([{"ID": id, "name": "kept"}]));
    server.stop().await;
}

pub(crate) async fn text_that_is_not_base64_is_invalid_data_naming_the_field(mode: Mode) {
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

pub(crate) async fn a_ca_that_is_not_a_certificate_is_invalid_data_naming_ca(mode: Mode) {
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

pub(crate) async fn a_pem_certificate_given_as_the_client_bundle_is_invalid_data(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = pki().profile("pem as bundle");
    input["client"] = json!(b64(&pki().client_cert_pem));
    let message = refused(&server, Method::POST, PROFILES, Some(input), 422, "invalid_data").await;
    assert_eq!(message, "client: is not a PKCS#12 bundle");
    server.stop().await;
}

pub(crate) async fn an_unknown_profile_cannot_be_updated_or_deleted(mode: Mode) {
    let server = Server::start(mode).await;
    create_profile(&server, pki().profile("bystander")).await;
    let unknown = Uuid::new_v4().to_string();
    let message =
        refused(&server, Method::PUT, &profile_path(&unknown), Some(pki().profile("ghost")), 404, "not_found").await;
    assert!(message.contains(&unknown.to_uppercase()), "{message}");
    refused(&server, Method::DELETE, &profile_path(&unknown), None, 404, "not_found").await;
    server.stop().await;
}
