//! Bad input to every operation that takes a body or an ID, and requests the server must refuse
//! before looking at them (credentials, routes, methods): each is answered with the documented
//! status and error body, names what is wrong, and changes nothing a client can read back.
//!
//! Case tables keep one case per line (`#[rustfmt::skip]`) so that they read as tables.
#![allow(clippy::unwrap_used)]

use reqwest::Method;
use serde_json::Value;
use zonecast_runtime::Authority;
use zonecast_tests::pki::{b64, pki};
use zonecast_tests::{ADMIN_KEY, Mode, READ_KEY, Server, WRITE_KEY, both_modes, json, sphere};

const MAC: &str = "00:00:00:00:00:01";
/// `max_body_bytes` of the test configuration.
const LIMIT: usize = 256 * 1024;

/// A server holding one of everything an ID can name: an active zone with a device list, an
/// inactive locked zone, a plain connection, a certificate profile.
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

/// Every operation that takes a body (position input only where the API serves it).
#[rustfmt::skip]
fn body_operations(w: &World) -> Vec<(Method, String, Takes)> {
    let (z, c, p) = (&w.zone, &w.connection, &w.profile);
    let mut ops = vec![
        (Method::POST, "/v3/modules/zones".into(), Takes::Object),
        (Method::PUT, format!("/v3/modules/zones/{z}"), Takes::Object),
        (Method::POST, "/v3/modules/zones/batch".into(), Takes::Array),
        (Method::PUT, "/v3/modules/zones/batch".into(), Takes::Array),
        (Method::DELETE, "/v3/modules/zones".into(), Takes::Array),
        (Method::POST, "/v3/modules/zones/activate".into(), Takes::Array),
        (Method::POST, "/v3/modules/zones/deactivate".into(), Takes::Array),
        (Method::POST, format!("/v3/modules/zones/{z}/devices"), Takes::Array),
        (Method::DELETE, format!("/v3/modules/zones/{z}/devices"), Takes::Array),
        (Method::PUT, "/v3/modules/zones/settings".into(), Takes::Object),
        (Method::PUT, "/v3/modules/zones/devices/radius".into(), Takes::Object),
        (Method::POST, "/v3/modules/mqtt/connections".into(), Takes::Object),
        (Method::PUT, format!("/v3/modules/mqtt/connections/{c}"), Takes::Object),
        (Method::POST, "/v3/modules/mqtt/certificates".into(), Takes::Object),
        (Method::PUT, format!("/v3/modules/mqtt/certificates/{p}"), Takes::Object),
        (Method::POST, "/v3/auth/token".into(), Takes::Object),
    ];
    if w.mode == Mode::AllInOne {
        ops.push((Method::POST, "/v3/positions".into(), Takes::Either));
    }
    ops
}

/// Every route that needs credentials, with a body it would accept and the authority it needs.
/// Bodies are valid so that a request let through would change something the snapshot shows.
#[rustfmt::skip]
fn protected_operations(w: &World) -> Vec<(Method, String, Option<Value>, Authority)> {
    use Authority::{Admin, Read, Write};
    let (z, y, c, p) = (&w.zone, &w.parked, &w.connection, &w.profile);
    let mut ops = vec![
        (Method::GET, "/v3/modules/zones".into(), None, Read),
        (Method::POST, "/v3/modules/zones".into(), Some(sphere("new", [0.0, 0.0, 0.0], 1.0)), Write),
        (Method::DELETE, "/v3/modules/zones".into(), Some(json!([z])), Write),
        (Method::POST, "/v3/modules/zones/batch".into(), Some(json!([sphere("new", [0.0, 0.0, 0.0], 1.0)])), Write),
        (Method::PUT, "/v3/modules/zones/batch".into(), Some(json!([{"ZoneID": z, "Name": "changed"}])), Write),
        (Method::POST, "/v3/modules/zones/activate".into(), Some(json!([y])), Write),
        (Method::POST, "/v3/modules/zones/deactivate".into(), Some(json!([z])), Write),
        (Method::GET, "/v3/modules/zones/settings".into(), None, Read),
        (Method::PUT, "/v3/modules/zones/settings".into(), Some(setting("ExitDelayMs", json!(5))), Write),
        (Method::PUT, "/v3/modules/zones/devices/radius".into(), Some(json!({MAC: 1.0})), Write),
        (Method::GET, format!("/v3/modules/zones/{z}"), None, Read),
        (Method::PUT, format!("/v3/modules/zones/{z}"), Some(json!({"Name": "changed"})), Write),
        (Method::DELETE, format!("/v3/modules/zones/{z}"), None, Write),
        (Method::POST, format!("/v3/modules/zones/{z}/devices"), Some(json!(["00:00:00:00:00:02"])), Write),
        (Method::DELETE, format!("/v3/modules/zones/{z}/devices"), Some(json!([MAC])), Write),
        (Method::POST, format!("/v3/modules/zones/{z}/reset"), None, Write),
        (Method::POST, format!("/v3/modules/zones/{z}/lock"), None, Write),
        (Method::POST, format!("/v3/modules/zones/{y}/unlock"), None, Write),
        (Method::GET, "/v3/modules/mqtt/connections".into(), None, Read),
        (Method::POST, "/v3/modules/mqtt/connections".into(), Some(connection()), Admin),
        (Method::GET, format!("/v3/modules/mqtt/connections/{c}"), None, Read),
        (Method::PUT, format!("/v3/modules/mqtt/connections/{c}"), Some(connection_with("port", json!(1884))), Admin),
        (Method::DELETE, format!("/v3/modules/mqtt/connections/{c}"), None, Admin),
        (Method::GET, format!("/v3/modules/mqtt/connections/{c}/status"), None, Read),
        (Method::GET, "/v3/modules/mqtt/certificates".into(), None, Read),
        (Method::POST, "/v3/modules/mqtt/certificates".into(), Some(pki().profile("new")), Admin),
        (Method::PUT, format!("/v3/modules/mqtt/certificates/{p}"), Some(pki().profile("renamed")), Admin),
        (Method::DELETE, format!("/v3/modules/mqtt/certificates/{p}"), None, Admin),
        (Method::GET, "/v3/openapi.json".into(), None, Read),
        (Method::GET, "/metrics".into(), None, Read),
    ];
    if w.mode == Mode::AllInOne {
        ops.push((Method::POST, "/v3/positions".into(), Some(json!({"MAC": MAC, "Position": [0, 0, 0]})), Write));
    }
    ops
}

#[rustfmt::skip]
fn wrong_type_cases(w: &World) -> Vec<Case> {
    let (z, c, p) = (&w.zone, &w.connection, &w.profile);
    let zones = "/v3/modules/zones";
    let zone = format!("/v3/modules/zones/{z}");
    let connections = "/v3/modules/mqtt/connections";
    let certificates = "/v3/modules/mqtt/certificates";
    let post = Method::POST;
    let put = Method::PUT;
    vec![
        case(post.clone(), zones, zone_with("Name", json!(5)), "Name: must be a string, got a number"),
        case(post.clone(), zones, zone_with("GeometryType", json!(5)), "GeometryType: must be a string, got a number"),
        case(post.clone(), zones, zone_with("GeometryData", json!({"x": 1})), "GeometryData: must be an array, got an object"),
        case(post.clone(), zones, zone_with("GeometryData", json!([[0, 0, "0"], [1, 0, 0]])), "GeometryData[0]: must be an array of three finite numbers"),
        case(post.clone(), zones, zone_with("AlertLevel", json!("3")), "AlertLevel: must be an integer, got a string"),
        case(post.clone(), zones, zone_with("Active", json!("yes")), "Active: must be a boolean, got a string"),
        case(post.clone(), zones, zone_with("InclusionPolicy", json!(1)), "InclusionPolicy: must be a string, got a number"),
        case(post.clone(), zones, zone_with("DeviceList", json!(MAC)), "DeviceList: must be an array, got a string"),
        case(post.clone(), zones, zone_with("DeviceList", json!([MAC, 5])), "DeviceList[1]: must be a string, got a number"),
        case(post.clone(), zones, zone_with("ZoneActions", json!({})), "ZoneActions: must be an array, got an object"),
        case(post.clone(), zones, action(json!("info-event")), "ZoneActions[0]: must be an object, got a string"),
        case(post.clone(), zones, action(json!({"type": 5})), "ZoneActions[0].type: must be a string, got a number"),
        case(post.clone(), zones, action(json!({"type": "info-event", "message": 5})), "ZoneActions[0].message: must be a string, got a number"),
        case(post.clone(), zones, action(json!({"type": "http-request", "uri": "http://h/", "headers": {"X": 5}})), "ZoneActions[0].headers.X: must be a string, got a number"),
        case(post.clone(), zones, zone_with("IsTimed", json!("true")), "IsTimed: must be a boolean, got a string"),
        case(post.clone(), zones, zone_with("StartTime", json!(5)), "StartTime: must be a string, got a number"),
        case(post.clone(), zones, zone_with("StopTime", json!([])), "StopTime: must be a string, got an array"),
        case(post.clone(), zones, zone_with("MobileOriginSource", json!(5)), "MobileOriginSource: must be a string, got a number"),
        case(put.clone(), &zone, json!({"Name": 5}), "Name: must be a string, got a number"),
        case(put.clone(), &zone, json!({"Active": 1}), "Active: must be a boolean, got a number"),
        case(post.clone(), format!("{zones}/batch"), json!([sphere("a", [0.0; 3], 1.0), zone_with("Name", json!([]))]), "[1].Name: must be a string, got an array"),
        case(post.clone(), format!("{zones}/batch"), json!([5]), "[0]: must be an object, got a number"),
        case(put.clone(), format!("{zones}/batch"), json!([{"ZoneID": z, "AlertLevel": "high"}]), "[0].AlertLevel: must be an integer, got a string"),
        case(put.clone(), format!("{zones}/batch"), json!([{"ZoneID": 5, "Name": "zone"}]), "[0].ZoneID: must be a zone ID string"),
        case(put.clone(), format!("{zones}/batch"), json!(["zone"]), "[0]: must be an object, got a string"),
        case(Method::DELETE, zones, json!([z, 5]), "[1]: must be a zone ID string"),
        case(post.clone(), format!("{zones}/activate"), json!([true]), "[0]: must be a zone ID string"),
        case(post.clone(), format!("{zones}/deactivate"), json!([z, {"ZoneID": z}]), "[1]: must be a zone ID string"),
        case(post.clone(), format!("{zone}/devices"), json!(["00:00:00:00:00:02", 5]), "[1]: must be a string, got a number"),
        case(Method::DELETE, format!("{zone}/devices"), json!([{}]), "[0]: must be a string, got an object"),
        case(put.clone(), format!("{zones}/settings"), json!({"SettingName": 5, "SettingValue": 1}), "SettingName: must be a string, got a number"),
        case(put.clone(), format!("{zones}/settings"), setting("ExitDelayMs", json!(true)), "SettingValue: must be a number, got a boolean"),
        case(put.clone(), format!("{zones}/settings"), json!({"SettingName": "ExitDelayMs", "SettingValue": 1, "IsActive": "no"}), "IsActive: must be a boolean, got a string"),
        case(put.clone(), format!("{zones}/devices/radius"), json!({"AA:BB:CC:DD:EE:FF": "far"}), "AA:BB:CC:DD:EE:FF: must be a number, got a string"),
        case(put.clone(), format!("{zones}/devices/radius"), json!({"AA:BB:CC:DD:EE:FF": 1, "AA:BB:CC:DD:EE:01": [1]}), "AA:BB:CC:DD:EE:01: must be a number, got an array"),
        case(post.clone(), connections, connection_with("host", json!(5)), "host: must be a string, got a number"),
        case(post.clone(), connections, connection_with("port", json!("1883")), "port: must be an integer, got a string"),
        case(post.clone(), connections, connection_with("TLS", json!("no")), "TLS: must be a boolean, got a string"),
        case(post.clone(), connections, connection_with("CertificateProfileID", json!(5)), "CertificateProfileID: must be a string, got a number"),
        case(post.clone(), connections, connection_with("username", json!(5)), "username: must be a string, got a number"),
        case(post.clone(), connections, connection_with("password", json!(5)), "password: must be a string, got a number"),
        case(post.clone(), connections, connection_with("topics", json!({})), "topics: must be an array, got an object"),
        case(post.clone(), connections, connection_with("topics", json!(["a/b"])), "topics[0]: must be an object, got a string"),
        case(post.clone(), connections, connection_with("topics", json!([{"topic": 5}])), "topics[0].topic: must be a string, got a number"),
        case(post.clone(), connections, connection_with("topics", json!([{"topic": "a/b", "FilterChain": {}}])), "topics[0].FilterChain: must be an array, got an object"),
        case(put.clone(), format!("{connections}/{c}"), connection_with("port", json!("x")), "port: must be an integer, got a string"),
        case(put.clone(), format!("{connections}/{c}"), connection_with("topics", json!([{"topic": "a/b"}, {"topic": []}])), "topics[1].topic: must be a string, got an array"),
        case(post.clone(), certificates, profile_with("name", json!(5)), "name: must be a string, got a number"),
        case(post.clone(), certificates, profile_with("ca", json!(5)), "ca: must be a string, got a number"),
        case(post.clone(), certificates, profile_with("client", json!([])), "client: must be a string, got an array"),
        case(post.clone(), certificates, profile_with("password", json!(5)), "password: must be a string, got a number"),
        case(put.clone(), format!("{certificates}/{p}"), profile_with("name", json!(5)), "name: must be a string, got a number"),
        case(post.clone(), "/v3/auth/token", token_with("grant_type", json!(true)), "grant_type: must be a string"),
        case(post.clone(), "/v3/auth/token", token_with("auth_id", json!(5)), "auth_id: must be a string"),
        case(post, "/v3/auth/token", token_with("auth_secret", json!({})), "auth_secret: must be a string"),
    ]
}

#[rustfmt::skip]
fn out_of_range_cases(w: &World) -> Vec<Case> {
    let z = &w.zone;
    let zones = "/v3/modules/zones";
    let settings = "/v3/modules/zones/settings";
    let radius = "/v3/modules/zones/devices/radius";
    let connections = "/v3/modules/mqtt/connections";
    let (post, put) = (Method::POST, Method::PUT);
    vec![
        case(post.clone(), zones, zone_with("AlertLevel", json!(-1)), "AlertLevel: must be 0 or more, got -1"),
        case(post.clone(), zones, zone_with("AlertLevel", json!(2.5)), "AlertLevel: must be an integer, got 2.5"),
        case(post.clone(), zones, zone_with("Name", json!("n".repeat(257))), "Name: must be at most 256 characters"),
        case(put.clone(), format!("{zones}/{z}"), json!({"AlertLevel": -3}), "AlertLevel: must be 0 or more, got -3"),
        case(post.clone(), format!("{zones}/batch"), json!([sphere("a", [0.0; 3], 1.0), zone_with("AlertLevel", json!(0.5))]), "[1].AlertLevel: must be an integer, got 0.5"),
        case(put.clone(), format!("{zones}/batch"), json!([{"ZoneID": z, "AlertLevel": -1}]), "[0].AlertLevel: must be 0 or more, got -1"),
        case(post.clone(), connections, connection_with("port", json!(70000)), "port: must be between 1 and 65535, got 70000"),
        case(post.clone(), connections, connection_with("port", json!(0)), "port: must be between 1 and 65535, got 0"),
        case(put.clone(), format!("{connections}/{}", w.connection), connection_with("port", json!(70000)), "port: must be between 1 and 65535, got 70000"),
        case(put.clone(), radius, json!({"AA:BB:CC:DD:EE:FF": -1}), "AA:BB:CC:DD:EE:FF: must be between 0 and 100, got -1"),
        case(put.clone(), radius, json!({"AA:BB:CC:DD:EE:FF": 101}), "AA:BB:CC:DD:EE:FF: must be between 0 and 100, got 101"),
        case(put.clone(), settings, setting("ExitDelayMs", json!(1.5)), "SettingValue: must be a whole number, got 1.5"),
        case(put.clone(), settings, setting("ExitDelayMs", json!(-1)), "SettingValue: must be between 0 and 3600000, got -1"),
        case(put.clone(), settings, setting("SiteAlarmMinLevel", json!(-2)), "SettingValue: must be 0 or more, got -2"),
        case(put.clone(), settings, setting("DeviceTimeoutSeconds", json!("1e9")), "SettingValue: must be between 0 and 604800"),
        case(put.clone(), settings, setting("ExitToleranceMeters", json!("-0.5")), "SettingValue: must be between 0 and 1000, got -0.5"),
        case(put, settings, setting("DefaultDeviceRadiusMeters", json!(100.5)), "SettingValue: must be between 0 and 100, got 100.5"),
    ]
}

#[rustfmt::skip]
fn broken_rule_cases(w: &World) -> Vec<Case> {
    let zones = "/v3/modules/zones";
    let zone = format!("/v3/modules/zones/{}", w.zone);
    let connection = format!("/v3/modules/mqtt/connections/{}", w.connection);
    let connections = "/v3/modules/mqtt/connections";
    let certificates = "/v3/modules/mqtt/certificates";
    let pem_garbage = b64(b"-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n");
    let unknown_profile = uuid::Uuid::new_v4().to_string();
    let tls_to = |profile: &str| json!({"host": "h", "TLS": true, "CertificateProfileID": profile});
    let (post, put) = (Method::POST, Method::PUT);
    vec![
        case(post.clone(), zones, json!({"Name": "no geometry"}), "GeometryType: is required"),
        case(post.clone(), zones, json!({"GeometryType": "sphere"}), "GeometryData: is required"),
        case(post.clone(), zones, zone_with("InclusionPolicy", json!("some")), "InclusionPolicy: must be 'all' or 'none', got 'some'"),
        case(post.clone(), zones, zone_with("DeviceList", json!([MAC, "nope"])), "DeviceList[1]: 'nope' is not a MAC address"),
        case(post.clone(), zones, zone_with("DeviceList", json!(["00:00:00:00:00:0G"])), "DeviceList[0]: '00:00:00:00:00:0G' is not a MAC address"),
        case(post.clone(), zones, zone_with("MobileOriginSource", json!("nope")), "MobileOriginSource: 'nope' is not a MAC address"),
        case(post.clone(), zones, zone_with("StartTime", json!("yesterday")), "StartTime: 'yesterday' is not an ISO 8601 time"),
        case(post.clone(), zones, action(json!({"type": "teleport"})), "ZoneActions[0].type: unknown action type 'teleport'"),
        case(post.clone(), zones, action(json!({"on": "enter"})), "ZoneActions[0].type: is required"),
        case(post.clone(), zones, action(json!({"type": "http-request", "uri": "ftp://example.test/x"})), "ZoneActions[0].uri: must be an http:// or https:// URI with a host"),
        case(post.clone(), zones, action(json!({"type": "http-request", "uri": "not a uri"})), "ZoneActions[0].uri: is not a valid URI"),
        case(post.clone(), zones, action(json!({"type": "http-request"})), "ZoneActions[0].uri: is required"),
        case(post.clone(), zones, action(json!({"type": "http-request", "uri": "http://h/", "method": "BREW"})), "ZoneActions[0].method: must be one of"),
        case(post.clone(), zones, action(json!({"type": "device-alarm", "on": "sometimes"})), "ZoneActions[0].on: must be enter, exit or both"),
        case(put.clone(), &zone, json!({"InclusionPolicy": "everyone"}), "InclusionPolicy: must be 'all' or 'none'"),
        case(put.clone(), &zone, json!({"ZoneActions": [{"type": "info-event"}, {"type": "siren"}]}), "ZoneActions[1].type: unknown action type 'siren'"),
        case(put.clone(), format!("{zones}/batch"), json!([{"AlertLevel": 1}]), "[0]: ZoneID or Name is required"),
        case(put.clone(), format!("{zones}/batch"), json!([{"ZoneID": w.zone, "DeviceList": ["x"]}]), "[0].DeviceList[0]: 'x' is not a MAC address"),
        case(post.clone(), format!("{zone}/devices"), json!(["00:00:00:00:00:02", "nope"]), "[1]: 'nope' is not a MAC address"),
        case(Method::DELETE, format!("{zone}/devices"), json!(["nope"]), "[0]: 'nope' is not a MAC address"),
        case(put.clone(), format!("{zones}/settings"), json!({"SettingValue": 1}), "SettingName: is required"),
        case(put.clone(), format!("{zones}/devices/radius"), json!({"AA:BB:CC:DD:EE:FF": 1, "nope": 1}), "nope: 'nope' is not a MAC address"),
        case(post.clone(), connections, json!({"port": 1883, "TLS": false}), "host: is required"),
        case(post.clone(), connections, connection_with("host", json!("")), "host: must be a host name or IP address"),
        case(post.clone(), connections, connection_with("host", json!("broker/path")), "host: must be a host name or IP address"),
        case(post.clone(), connections, connection_with("TLS", json!(true)), "CertificateProfileID: is required when TLS is true"),
        case(post.clone(), connections, json!({"host": "127.0.0.1", "topics": []}), "CertificateProfileID: is required when TLS is true"),
        case(post.clone(), connections, tls_to("nope"), "CertificateProfileID: 'nope' is not a UUID"),
        case(post.clone(), connections, tls_to(&unknown_profile), format!("CertificateProfileID: certificate profile {} does not exist", unknown_profile.to_uppercase())),
        case(post.clone(), connections, connection_with("topics", json!([{"topic": "a/#"}])), "topics[0].topic: must be a topic name without wildcards"),
        case(post.clone(), connections, connection_with("topics", json!([{"topic": "a/b"}, {"topic": "a/+/c"}])), "topics[1].topic: must be a topic name without wildcards"),
        case(post.clone(), connections, connection_with("topics", json!([{"topic": ""}])), "topics[0].topic: must be 1 to 65535 bytes"),
        case(post.clone(), connections, connection_with("topics", json!([{"FilterChain": []}])), "topics[0].topic: is required"),
        case(put.clone(), &connection, connection_with("TLS", json!(true)), "CertificateProfileID: is required when TLS is true"),
        case(put.clone(), &connection, tls_to(&unknown_profile), "CertificateProfileID: certificate profile "),
        case(post.clone(), certificates, json!({"ca": pki().ca(), "client": pki().client()}), "name: is required"),
        case(post.clone(), certificates, profile_with("name", json!("  ")), "name: must be 1 to 256 characters"),
        case(post.clone(), certificates, profile_with("ca", json!("!!!not base64!!!")), "ca: is not valid base64"),
        case(post.clone(), certificates, profile_with("ca", json!(b64(b"garbage"))), "ca: "),
        case(post.clone(), certificates, profile_with("ca", json!(pem_garbage)), "ca: "),
        case(post.clone(), certificates, profile_with("client", json!(b64(b"garbage"))), "client: "),
        case(post.clone(), certificates, profile_with("client", Value::Null), "client: is required"),
        case(post.clone(), certificates, profile_with("password", json!("wrong password")), "client: "),
        case(put, format!("{certificates}/{}", w.profile), profile_with("password", json!("wrong password")), "client: "),
        case(post.clone(), "/v3/auth/token", token_with("grant_type", json!("password")), "grant_type: must be client_credentials"),
        case(post, "/v3/auth/token", token_with("auth_id", Value::Null), "auth_id: is required"),
    ]
}

/// `(GeometryType, GeometryData, message)`: every geometry rule, each naming the row (or
/// the list, for rules about the list as a whole).
#[rustfmt::skip]
fn geometry_cases() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("sphere", json!([[0, 0, 0], [1, 0, 0], [2, 0, 0]]), "GeometryData: sphere takes 2 rows, got 3"),
        ("sphere", json!([[0, 0, 0], [0, 0, 0]]), "GeometryData[1]: radius must be > 0"),
        ("sphere", json!([[0, 0, 0], [-1, 0, 0]]), "GeometryData[1]: radius must be > 0"),
        ("sphere", json!([[0, 0], [1, 0, 0]]), "GeometryData[0]: must be an array of three finite numbers"),
        ("sphere", json!([[0, 0, 0], [1, 0, 0, 0]]), "GeometryData[1]: must be an array of three finite numbers"),
        ("sphere", json!([[0, 0, 0], 1]), "GeometryData[1]: must be an array of three finite numbers"),
        ("circle", json!([[0, 0, 0]]), "GeometryData: circle takes 2 rows, got 1"),
        ("circle", json!([[0, 0, 0], [0, 0, 0]]), "GeometryData[1]: radius must be > 0"),
        ("cuboid", json!([[0, 0, 0], [1, 1, 1], [1, 0, 0], [0, 1, 0]]), "GeometryData: cuboid takes 5 rows, got 4"),
        ("cuboid", json!([[0, 0, 0], [0, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]), "GeometryData[1]: length must be > 0"),
        ("cuboid", json!([[0, 0, 0], [1, 1, -2], [1, 0, 0], [0, 1, 0], [0, 0, 1]]), "GeometryData[1]: height must be > 0"),
        ("cuboid", json!([[0, 0, 0], [1, 1, 1], [1, 0, 0], [0, 0, 0], [0, 0, 1]]), "GeometryData[3]: axis must not be zero"),
        ("cuboid", json!([[0, 0, 0], [1, 1, 1], [1, 0, 0], [2, 0, 0], [0, 0, 1]]), "GeometryData[3]: axes l and w are (nearly) parallel"),
        ("cuboid", json!([[0, 0, 0], [1, 1, 1], [1, 0, 0], [0, 1, 0], [-3, 0, 0]]), "GeometryData[4]: axes l and h are (nearly) parallel"),
        ("cuboid", json!([[0, 0, 0], [1, 1, 1], [1, 0, 0], [0, 1, 0], [1, 1, 0]]), "GeometryData[4]: axes l, w and h are (nearly) coplanar"),
        ("square", json!([[0, 0, 0], [1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]), "GeometryData: square takes 4 rows, got 5"),
        ("square", json!([[0, 0, 0], [1, 0, 0], [1, 0, 0], [0, 1, 0]]), "GeometryData[1]: width must be > 0"),
        ("square", json!([[0, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 0]]), "GeometryData[2]: axis must not be zero"),
        ("square", json!([[0, 0, 0], [1, 1, 0], [1, 1, 0], [-2, -2, 0]]), "GeometryData[3]: axes l and w are (nearly) parallel"),
        ("cylinder", json!([[0, 0, 0], [0, 0, 1]]), "GeometryData: cylinder takes 3 rows, got 2"),
        ("cylinder", json!([[0, 0, 0], [0, 0, 0], [1, 1, 0]]), "GeometryData[1]: axis must not be zero"),
        ("cylinder", json!([[0, 0, 0], [0, 0, 1], [0, 1, 0]]), "GeometryData[2]: height must be > 0"),
        ("cylinder", json!([[0, 0, 0], [0, 0, 1], [1, -1, 0]]), "GeometryData[2]: radius must be > 0"),
        ("polygon", json!([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0]]), "GeometryData: polygon takes at least 5 rows"),
        // Vertex 2 is 0.5 m above the plane of the others.
        ("polygon", json!([[0, 0, 0], [4, 0, 0], [4, 4, 0.5], [0, 4, 0], [1, 0, 0], [0, 0, 1]]), "GeometryData["),
        // A bow tie: edges 0 and 2 cross.
        ("polygon", json!([[0, 0, 0], [4, 4, 0], [4, 0, 0], [0, 4, 0], [1, 0, 0], [0, 0, 1]]), "GeometryData: polygon edges "),
        ("polygon", json!([[0, 0, 0], [1, 0, 0], [2, 0, 0], [1, 0, 0], [0, 0, 1]]), "GeometryData: polygon has zero area"),
        ("polygon", json!([[0, 0, 0], [4, 0, 0], [0, 4, 0], [0, 0, 0], [0, 0, 1]]), "GeometryData[3]: height must be > 0"),
        ("polygon", json!([[0, 0, 0], [4, 0, 0], [0, 4, 0], [1, 0, 0], [0, 0, 0]]), "GeometryData[4]: axis must not be zero"),
        ("polygon", json!([[0, 0, 0], [4, 0, 0], [0, 4, 0], [1, 0, 0], [1, 1, 0]]), "GeometryData[4]: axis lies in the polygon's plane"),
        ("blob", json!([[0, 0, 0], [1, 0, 0]]), "GeometryType: unknown type 'blob'"),
    ]
}

/// `(filter chain of topics[0], message)`.
#[rustfmt::skip]
fn filter_chain_cases() -> Vec<(Value, &'static str)> {
    vec![
        (json!([{"Selector": "Source.MAC", "Type": "nope", "Match": "x"}]), "topics[0].FilterChain[0].Type: "),
        (json!([{"Selector": "Source.MAC", "Type": "regex", "Match": "("}]), "topics[0].FilterChain[0].Match: "),
        (json!([{"Selector": "Content.Position.2", "Type": "gt", "Match": "high"}]), "topics[0].FilterChain[0].Match: "),
        (json!([{"Selector": "a..b", "Type": "exists"}]), "topics[0].FilterChain[0].Selector: "),
        (json!([{"FilterTemplate": "everything"}]), "topics[0].FilterChain[0].FilterTemplate: "),
        (json!([{"FilterTemplate": "all"}, {"Selector": "Source.MAC", "Type": "lt", "Match": "5"}, "x"]), "topics[0].FilterChain[2]: "),
        (json!([{"FilterTemplate": "all", "Children": {"all": [{"Selector": "Source.MAC", "Type": "bogus"}]}}]), "topics[0].FilterChain[0].Children.all[0].Type: "),
        (json!([{"FilterTemplate": "all", "Children": {"any": []}}]), "topics[0].FilterChain[0].Children.any: "),
    ]
}

/// Sends each case as admin and expects 422 with a message starting with the case's one.
async fn expect_invalid(server: &Server, cases: Vec<Case>) {
    for (method, path, body, expected) in cases {
        let message = server.refused(method.clone(), &path, Some(ADMIN_KEY), bytes(&body), 422, "invalid_data").await;
        assert!(message.starts_with(&expected), "{method} {path} {body}\n  message: {message}\n expected: {expected}…");
    }
}

async fn malformed_json_is_refused_as_malformed_by_every_operation_that_takes_a_body(mode: Mode) {
    let w = world(mode).await;
    for (method, path, _) in body_operations(&w) {
        for body in [&b"{\"Name\":"[..], b"", b"not json", b"{\"Name\": \"a\"} trailing"] {
            let key = Some(ADMIN_KEY);
            let message = w.server.refused(method.clone(), &path, key, Some(body.to_vec()), 400, "malformed").await;
            assert!(message.contains("JSON"), "{method} {path}: the message says the body is not JSON: {message}");
        }
    }
    w.server.stop().await;
}

async fn a_body_of_the_wrong_json_type_is_refused_as_malformed(mode: Mode) {
    let w = world(mode).await;
    for (method, path, takes) in body_operations(&w) {
        let (wrong, expected): (&[Value], &str) = match takes {
            Takes::Object => (&[json!([]), json!([{"Name": "a"}]), json!("text"), json!(5), json!(null)], "object"),
            Takes::Array => (&[json!({}), json!({"0": w.zone}), json!("text"), json!(true), json!(null)], "array"),
            Takes::Either => (&[json!("text"), json!(5), json!(true), json!(null)], "object or array"),
        };
        for body in wrong {
            let message = w.server.refused(method.clone(), &path, Some(ADMIN_KEY), bytes(body), 400, "malformed").await;
            assert!(message.contains(expected), "{method} {path} {body}: the message names the type: {message}");
        }
    }
    w.server.stop().await;
}

async fn fields_of_the_wrong_type_are_invalid_and_the_message_names_the_field(mode: Mode) {
    let w = world(mode).await;
    expect_invalid(&w.server, wrong_type_cases(&w)).await;
    w.server.stop().await;
}

async fn numbers_out_of_range_are_invalid_and_the_message_names_the_field(mode: Mode) {
    let w = world(mode).await;
    expect_invalid(&w.server, out_of_range_cases(&w)).await;
    w.server.stop().await;
}

async fn values_that_break_a_rule_are_invalid_and_the_message_names_the_field(mode: Mode) {
    let w = world(mode).await;
    expect_invalid(&w.server, broken_rule_cases(&w)).await;
    w.server.stop().await;
}

async fn a_certificate_profile_a_connection_uses_cannot_be_deleted(mode: Mode) {
    let w = world(mode).await;
    let tls = json!({"host": "127.0.0.1", "port": 8883, "TLS": true, "CertificateProfileID": w.profile, "topics": []});
    w.server.ok(Method::POST, "/v3/modules/mqtt/connections", Some(tls)).await;
    let path = format!("/v3/modules/mqtt/certificates/{}", w.profile.to_lowercase());
    let message = w.server.refused(Method::DELETE, &path, Some(ADMIN_KEY), None, 422, "invalid_data").await;
    assert!(message.contains(&w.profile) && message.contains("used by"), "{message}");
    w.server.stop().await;
}

async fn every_geometry_rule_is_enforced_with_a_message_naming_the_row(mode: Mode) {
    let w = world(mode).await;
    let zone = format!("/v3/modules/zones/{}", w.zone);
    let mut cases = Vec::new();
    for (kind, data, expected) in geometry_cases() {
        let input = json!({"GeometryType": kind, "GeometryData": data});
        cases.push(case(Method::POST, "/v3/modules/zones", input.clone(), expected));
        cases.push(case(Method::PUT, &zone, input.clone(), expected));
        let batch = json!([sphere("fine", [0.0; 3], 1.0), input]);
        cases.push(case(Method::POST, "/v3/modules/zones/batch", batch, format!("[1].{expected}")));
        let batch =
            json!([{"ZoneID": w.zone, "Name": "fine"}, {"ZoneID": w.zone, "GeometryType": kind, "GeometryData": data}]);
        cases.push(case(Method::PUT, "/v3/modules/zones/batch", batch, format!("[1].{expected}")));
    }
    // A type change alone is checked against the rows the zone already has.
    cases.push(case(Method::PUT, &zone, json!({"GeometryType": "cuboid"}), "GeometryData: cuboid takes 5 rows, got 2"));
    expect_invalid(&w.server, cases).await;

    // The rules whose row or edges depend on the algorithm still say what is wrong.
    let shapes = geometry_cases();
    let rule = |message: &str| shapes.iter().find(|(_, _, m)| *m == message).unwrap().1.clone();
    for (data, says) in [(rule("GeometryData["), "not coplanar"), (rule("GeometryData: polygon edges "), "intersect")] {
        let input = json!({"GeometryType": "polygon", "GeometryData": data});
        let message = w
            .server
            .refused(Method::POST, "/v3/modules/zones", Some(WRITE_KEY), bytes(&input), 422, "invalid_data")
            .await;
        assert!(message.contains(says), "{message}");
    }
    w.server.stop().await;
}

async fn bad_filter_chains_are_invalid_and_the_message_names_the_filter(mode: Mode) {
    let w = world(mode).await;
    let connection = format!("/v3/modules/mqtt/connections/{}", w.connection);
    let mut cases = Vec::new();
    for (chain, expected) in filter_chain_cases() {
        let body = connection_with("topics", json!([{"topic": "a/b", "FilterChain": chain}]));
        cases.push(case(Method::POST, "/v3/modules/mqtt/connections", body.clone(), expected));
        cases.push(case(Method::PUT, &connection, body, expected));
    }
    let chain = json!([{"Type": "gte", "Selector": "Content.AlertLevel", "Match": "x"}]);
    let second = connection_with("topics", json!([{"topic": "a/b"}, {"topic": "c/d", "FilterChain": chain}]));
    cases.push(case(Method::POST, "/v3/modules/mqtt/connections", second, "topics[1].FilterChain[0].Match: "));
    expect_invalid(&w.server, cases).await;
    w.server.stop().await;
}

async fn unknown_ids_are_not_found_on_every_operation_that_takes_one(mode: Mode) {
    let w = world(mode).await;
    let (z, y) = (&w.zone, &w.parked);
    for x in [uuid::Uuid::new_v4().to_string(), "not-a-uuid".to_owned()] {
        #[rustfmt::skip]
        let cases: Vec<(Method, String, Option<Value>)> = vec![
            (Method::GET, format!("/v3/modules/zones/{x}"), None),
            (Method::PUT, format!("/v3/modules/zones/{x}"), Some(json!({"Name": "changed"}))),
            (Method::DELETE, format!("/v3/modules/zones/{x}"), None),
            (Method::POST, format!("/v3/modules/zones/{x}/devices"), Some(json!(["00:00:00:00:00:02"]))),
            (Method::DELETE, format!("/v3/modules/zones/{x}/devices"), Some(json!([MAC]))),
            (Method::POST, format!("/v3/modules/zones/{x}/reset"), None),
            (Method::POST, format!("/v3/modules/zones/{x}/lock"), None),
            (Method::POST, format!("/v3/modules/zones/{x}/unlock"), None),
            (Method::DELETE, "/v3/modules/zones".into(), Some(json!([z, x]))),
            (Method::POST, "/v3/modules/zones/activate".into(), Some(json!([y, x]))),
            (Method::POST, "/v3/modules/zones/deactivate".into(), Some(json!([z, x]))),
            (Method::PUT, "/v3/modules/zones/batch".into(), Some(json!([{"ZoneID": z, "Name": "changed"}, {"ZoneID": x, "Name": "changed"}]))),
            (Method::GET, format!("/v3/modules/mqtt/connections/{x}"), None),
            (Method::PUT, format!("/v3/modules/mqtt/connections/{x}"), Some(connection())),
            (Method::DELETE, format!("/v3/modules/mqtt/connections/{x}"), None),
            (Method::GET, format!("/v3/modules/mqtt/connections/{x}/status"), None),
            (Method::PUT, format!("/v3/modules/mqtt/certificates/{x}"), Some(pki().profile("renamed"))),
            (Method::DELETE, format!("/v3/modules/mqtt/certificates/{x}"), None),
        ];
        for (method, path, body) in cases {
            let body = body.as_ref().and_then(bytes);
            let message = w.server.refused(method.clone(), &path, Some(ADMIN_KEY), body, 404, "not_found").await;
            let named = message.to_uppercase().contains(&x.to_uppercase());
            assert!(named, "{method} {path}: the message names {x}: {message}");
        }
    }
    w.server.stop().await;
}

async fn a_body_over_the_size_limit_is_refused_as_too_large(mode: Mode) {
    let w = world(mode).await;
    for (method, path, takes) in body_operations(&w) {
        // Valid JSON one byte over the limit: only its size is wrong.
        let (open, close) = if takes == Takes::Array { (r#"[""#, r#""]"#) } else { (r#"{"Pad":""#, r#""}"#) };
        let body = format!("{open}{}{close}", "x".repeat(LIMIT + 1 - open.len() - close.len()));
        assert_eq!(body.len(), LIMIT + 1);
        w.server.refused(method, &path, Some(ADMIN_KEY), Some(body.into_bytes()), 413, "malformed").await;
    }
    // A body of exactly the limit is read and handled.
    let mut zone = sphere("big", [0.0; 3], 1.0);
    zone["Pad"] = json!("");
    zone["Pad"] = json!("x".repeat(LIMIT - zone.to_string().len()));
    let body = zone.to_string().into_bytes();
    assert_eq!(body.len(), LIMIT);
    let (status, created) = w.server.raw(Method::POST, "/v3/modules/zones", Some(WRITE_KEY), Some(body)).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{created}");
    assert_eq!(created["Name"], "big");
    w.server.stop().await;
}

async fn a_request_without_credentials_is_unauthorized_on_every_protected_route(mode: Mode) {
    let w = world(mode).await;
    for (method, path, body, _) in protected_operations(&w) {
        w.server.refused(method, &path, None, body.as_ref().and_then(bytes), 401, "unauthorized").await;
    }
    w.server.stop().await;
}

async fn a_wrong_key_is_unauthorized_on_every_protected_route(mode: Mode) {
    let w = world(mode).await;
    for (method, path, body, _) in protected_operations(&w) {
        for key in ["not-a-key", "test-admin-key-but-longer", ""] {
            let body = body.as_ref().and_then(bytes);
            w.server.refused(method.clone(), &path, Some(key), body, 401, "unauthorized").await;
        }
    }
    w.server.stop().await;
}

async fn a_read_key_is_forbidden_to_write_anything(mode: Mode) {
    let w = world(mode).await;
    let writes: Vec<_> = protected_operations(&w).into_iter().filter(|(.., needs)| *needs != Authority::Read).collect();
    let expected = if mode == Mode::AllInOne { 22 } else { 21 };
    assert_eq!(writes.len(), expected, "every write and admin route");
    for (method, path, body, needs) in writes {
        let body = body.as_ref().and_then(bytes);
        let message = w.server.refused(method, &path, Some(READ_KEY), body, 403, "forbidden").await;
        assert!(message.contains(needs.as_str()), "the message names the authority needed: {message}");
    }
    w.server.stop().await;
}

async fn a_write_key_is_forbidden_to_change_mqtt_connections_and_certificates(mode: Mode) {
    let w = world(mode).await;
    let admin: Vec<_> = protected_operations(&w).into_iter().filter(|(.., needs)| *needs == Authority::Admin).collect();
    assert_eq!(admin.len(), 6, "create, update and delete of connections and certificate profiles");
    for (method, path, body, _) in admin {
        let body = body.as_ref().and_then(bytes);
        let message = w.server.refused(method, &path, Some(WRITE_KEY), body, 403, "forbidden").await;
        assert!(message.contains("admin"), "the message names the authority needed: {message}");
    }
    w.server.stop().await;
}

async fn an_unknown_route_is_not_found_with_the_error_body(mode: Mode) {
    let w = world(mode).await;
    let z = &w.zone;
    let paths = [
        (Method::GET, "/v3/modules/zonez".to_owned()),
        (Method::GET, "/v3/nothing".to_owned()),
        (Method::GET, "/index.html".to_owned()),
        (Method::GET, "/console/nope.js".to_owned()),
        (Method::POST, "/console/js/nope.js".to_owned()),
        (Method::GET, "/v2/modules/zones".to_owned()),
        (Method::POST, format!("/v3/modules/zones/{z}/explode")),
        (Method::GET, format!("/v3/modules/zones/{z}/devices/extra")),
        (Method::DELETE, "/v3/modules/mqtt".to_owned()),
    ];
    for (method, path) in paths {
        for key in [Some(ADMIN_KEY), None] {
            let message = w.server.refused(method.clone(), &path, key, None, 404, "not_found").await;
            assert!(message.starts_with("no route"), "{method} {path}: {message}");
        }
    }
    w.server.stop().await;
}

async fn a_wrong_method_is_not_allowed_and_the_allow_header_lists_the_right_ones(mode: Mode) {
    let w = world(mode).await;
    let z = &w.zone;
    let cases = [
        (Method::PATCH, "/v3/modules/zones".to_owned(), vec!["DELETE", "GET", "POST"]),
        (Method::POST, "/v3/modules/zones/settings".to_owned(), vec!["GET", "PUT"]),
        (Method::GET, "/v3/modules/zones/batch".to_owned(), vec!["POST", "PUT"]),
        (Method::POST, format!("/v3/modules/zones/{z}"), vec!["DELETE", "GET", "PUT"]),
        (Method::GET, format!("/v3/modules/zones/{z}/reset"), vec!["POST"]),
        (Method::GET, "/v3/modules/zones/devices/radius".to_owned(), vec!["PUT"]),
        (Method::GET, "/v3/auth/token".to_owned(), vec!["POST"]),
        (Method::DELETE, "/v3/openapi.json".to_owned(), vec!["GET"]),
    ];
    for (method, path, allowed) in cases {
        let before = w.server.snapshot().await;
        let request = w.server.http.request(method.clone(), format!("{}{path}", w.server.base));
        let response = request.header("X-API-Key", ADMIN_KEY).send().await.unwrap();
        let allow = response.headers().get("allow").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let answer = (response.status(), response.json::<Value>().await.unwrap());
        let message = zonecast_tests::assert_error(&answer, 405, "not_found");
        let mut listed: Vec<&str> = allow.split(',').map(str::trim).collect();
        listed.sort_unstable();
        assert_eq!(listed, allowed, "{method} {path}: Allow: {allow}");
        assert!(message.contains(method.as_str()), "{message}");
        assert_eq!(w.server.snapshot().await, before);
    }
    w.server.stop().await;
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
