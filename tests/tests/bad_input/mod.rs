//! Bad input to every operation that takes a body or an ID, and requests the server must refuse
//! before looking at them (credentials, routes, methods): each is answered with the documented
//! status and error body, names what is wrong, and changes nothing a client can read back.
//!
//! Case tables keep one case per line (`#[rustfmt::skip]`) so that they read as tables.
#![allow(clippy::unwrap_used)]

mod cases;
mod invalid;
mod refused;

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::pki::pki;
use zonecast_tests::{Mode, Server, both_modes, json, sphere};

use invalid::{
    a_body_of_the_wrong_json_type_is_refused_as_malformed, a_body_over_the_size_limit_is_refused_as_too_large,
    a_certificate_profile_a_connection_uses_cannot_be_deleted,
    bad_filter_chains_are_invalid_and_the_message_names_the_filter,
    every_geometry_rule_is_enforced_with_a_message_naming_the_row,
    fields_of_the_wrong_type_are_invalid_and_the_message_names_the_field,
    malformed_json_is_refused_as_malformed_by_every_operation_that_takes_a_body,
    numbers_out_of_range_are_invalid_and_the_message_names_the_field,
    unknown_ids_are_not_found_on_every_operation_that_takes_one,
    values_that_break_a_rule_are_invalid_and_the_message_names_the_field,
};
use refused::{
    a_read_key_is_forbidden_to_write_anything, a_request_without_credentials_is_unauthorized_on_every_protected_route,
    a_write_key_is_forbidden_to_change_mqtt_connections_and_certificates,
    a_wrong_key_is_unauthorized_on_every_protected_route,
    a_wrong_method_is_not_allowed_and_the_allow_header_lists_the_right_ones,
    an_unknown_route_is_not_found_with_the_error_body,
};

const MAC: &str = "00:00:00:00:00:01";
/// `max_body_bytes` of the test configuration.
const LIMIT: usize = 256 * 1024;

/// A server holding one of everything an ID can name: an active zone with a device list, an
/// inactive locked zone, a plain connection, a certificate profile, a named device ([`MAC`]).
struct World {
    mode: Mode,
    server: Server,
    zone: String,
    parked: String,
    connection: String,
    profile: String,
}

/// `(method, path, body, what the error message starts with)`.
type Case = (Method, String, Value, String);

fn case(method: Method, path: impl Into<String>, body: Value, message: impl Into<String>) -> Case {
    (method, path.into(), body, message.into())
}

fn connection() -> Value {
    json!({"host": "127.0.0.1", "port": 1883, "TLS": false, "topics": [{"topic": "a/b", "FilterChain": []}]})
}

fn connection_with(field: &str, value: Value) -> Value {
    let mut c = connection();
    c[field] = value;
    c
}

fn zone_with(field: &str, value: Value) -> Value {
    let mut z = sphere("zone", [0.0, 0.0, 0.0], 1.0);
    z[field] = value;
    z
}

fn action(a: Value) -> Value {
    zone_with("ZoneActions", json!([a]))
}

fn profile_with(field: &str, value: Value) -> Value {
    let mut p = pki().profile("profile");
    p[field] = value;
    p
}

fn token_with(field: &str, value: Value) -> Value {
    let mut t = json!({"grant_type": "client_credentials", "auth_id": zonecast_tests::CLIENT_ID,
                       "auth_secret": zonecast_tests::CLIENT_SECRET});
    t[field] = value;
    t
}

fn setting(name: &str, value: Value) -> Value {
    json!({"SettingName": name, "SettingValue": value})
}

fn device_with(field: &str, value: Value) -> Value {
    let mut d = json!({"Name": "device", "Group": "g", "Kind": "asset"});
    d[field] = value;
    d
}

fn bytes(v: &Value) -> Option<Vec<u8>> {
    Some(v.to_string().into_bytes())
}

async fn world(mode: Mode) -> World {
    let server = Server::start(mode).await;
    let mut zone = sphere("zone", [0.0, 0.0, 0.0], 1.0);
    zone["DeviceList"] = json!([MAC]);
    let zone = server.create_zone(zone).await["ZoneID"].as_str().unwrap().to_owned();
    let mut parked = sphere("parked", [10.0, 0.0, 0.0], 1.0);
    parked["Active"] = json!(false);
    let parked = server.create_zone(parked).await["ZoneID"].as_str().unwrap().to_owned();
    server.ok(Method::POST, &format!("/v3/modules/zones/{parked}/lock"), None).await;
    let connection = server.ok(Method::POST, "/v3/modules/mqtt/connections", Some(connection())).await;
    let connection = connection["ConnectionID"].as_str().unwrap().to_owned();
    let profile = server.ok(Method::POST, "/v3/modules/mqtt/certificates", Some(pki().profile("profile"))).await;
    let profile = profile["ID"].as_str().unwrap().to_owned();
    server.ok(Method::PUT, &format!("/v3/devices/{MAC}"), Some(json!({"Name": "device"}))).await;
    World { mode, server, zone, parked, connection, profile }
}

/// What an operation takes at the top level.
#[derive(Clone, Copy, PartialEq)]
enum Takes {
    Object,
    Array,
    /// Position input: an event, an array of them, or compact objects.
    Either,
}

both_modes!(
    malformed_json_is_refused_as_malformed_by_every_operation_that_takes_a_body,
    a_body_of_the_wrong_json_type_is_refused_as_malformed,
    fields_of_the_wrong_type_are_invalid_and_the_message_names_the_field,
    numbers_out_of_range_are_invalid_and_the_message_names_the_field,
    values_that_break_a_rule_are_invalid_and_the_message_names_the_field,
    a_certificate_profile_a_connection_uses_cannot_be_deleted,
    every_geometry_rule_is_enforced_with_a_message_naming_the_row,
    bad_filter_chains_are_invalid_and_the_message_names_the_filter,
    unknown_ids_are_not_found_on_every_operation_that_takes_one,
    a_body_over_the_size_limit_is_refused_as_too_large,
    a_request_without_credentials_is_unauthorized_on_every_protected_route,
    a_wrong_key_is_unauthorized_on_every_protected_route,
    a_read_key_is_forbidden_to_write_anything,
    a_write_key_is_forbidden_to_change_mqtt_connections_and_certificates,
    an_unknown_route_is_not_found_with_the_error_body,
    a_wrong_method_is_not_allowed_and_the_allow_header_lists_the_right_ones,
);
