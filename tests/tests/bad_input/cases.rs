//! The case tables: every operation that takes a body or needs authority, and the bad values for
//! each field. One case per line (`#[rustfmt::skip]`) so that they read as tables.

use reqwest::Method;
use serde_json::Value;
use zonecast_runtime::Authority;
use zonecast_tests::pki::{b64, pki};
use zonecast_tests::{Mode, json, sphere};

use super::{
    Case, MAC, Takes, World, action, case, connection, connection_with, device_with, profile_with, setting, token_with,
    zone_with,
};

/// Every operation that takes a body (position input only where the API serves it).
#[rustfmt::skip]
pub(crate) fn body_operations(w: &World) -> Vec<(Method, String, Takes)> {
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
        (Method::PUT, format!("/v3/devices/{MAC}"), Takes::Object),
        (Method::POST, "/v3/devices/import".into(), Takes::Array),
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
pub(crate) fn protected_operations(w: &World) -> Vec<(Method, String, Option<Value>, Authority)> {
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
        (Method::GET, "/v3/devices".into(), None, Read),
        (Method::GET, format!("/v3/devices/{MAC}"), None, Read),
        (Method::PUT, format!("/v3/devices/{MAC}"), Some(json!({"Name": "renamed"})), Write),
        (Method::DELETE, format!("/v3/devices/{MAC}"), None, Write),
        (Method::POST, "/v3/devices/import".into(), Some(json!([{"MAC": "00:00:00:00:00:02", "Name": "new"}])), Write),
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
        (Method::GET, "/v3/system/cluster".into(), None, Read),
        (Method::GET, "/v3/openapi.json".into(), None, Read),
        (Method::GET, "/metrics".into(), None, Read),
    ];
    if w.mode == Mode::AllInOne {
        ops.push((Method::POST, "/v3/positions".into(), Some(json!({"MAC": MAC, "Position": [0, 0, 0]})), Write));
    }
    ops
}

#[rustfmt::skip]
pub(crate) fn wrong_type_cases(w: &World) -> Vec<Case> {
    let (z, c, p) = (&w.zone, &w.connection, &w.profile);
    let zones = "/v3/modules/zones";
    let zone = format!("/v3/modules/zones/{z}");
    let device = format!("/v3/devices/{MAC}");
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
        case(put.clone(), &device, device_with("Name", json!(5)), "Name: must be a string, got a number"),
        case(put.clone(), &device, device_with("Group", json!([])), "Group: must be a string, got an array"),
        case(put.clone(), &device, device_with("Kind", json!({})), "Kind: must be a string, got an object"),
        case(put.clone(), &device, device_with("Properties", json!([1])), "Properties: must be an object, got an array"),
        case(post.clone(), "/v3/devices/import", json!([{"MAC": 5, "Name": "a"}]), "[0].MAC: must be a string, got a number"),
        case(post.clone(), "/v3/devices/import", json!([{"MAC": MAC, "Name": "a"}, 5]), "[1]: must be an object, got a number"),
        case(post.clone(), "/v3/devices/import", json!([{"MAC": MAC, "Name": true}]), "[0].Name: must be a string, got a boolean"),
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
pub(crate) fn out_of_range_cases(w: &World) -> Vec<Case> {
    let z = &w.zone;
    let zones = "/v3/modules/zones";
    let settings = "/v3/modules/zones/settings";
    let radius = "/v3/modules/zones/devices/radius";
    let connections = "/v3/modules/mqtt/connections";
    let device = format!("/v3/devices/{MAC}");
    let (post, put) = (Method::POST, Method::PUT);
    let many: serde_json::Map<String, Value> = (0..101).map(|i| (format!("p{i}"), json!(i))).collect();
    vec![
        case(put.clone(), &device, device_with("Name", json!("n".repeat(257))), "Name: must be 1 to 256 characters"),
        case(put.clone(), &device, device_with("Group", json!("g".repeat(257))), "Group: must be 1 to 256 characters"),
        case(put.clone(), &device, device_with("Kind", json!("k".repeat(257))), "Kind: must be 1 to 256 characters"),
        case(put.clone(), &device, device_with("Properties", json!(many)), "Properties: must have at most 100 members, got 101"),
        case(put.clone(), &device, device_with("Properties", json!({"note": "x".repeat(16 * 1024)})), "Properties: must take at most 16384 bytes as JSON"),
        case(post.clone(), "/v3/devices/import", json!([{"MAC": MAC, "Name": "a"}, {"MAC": "00:00:00:00:00:02", "Name": "n".repeat(257)}]), "[1].Name: must be 1 to 256 characters"),
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
pub(crate) fn broken_rule_cases(w: &World) -> Vec<Case> {
    let zones = "/v3/modules/zones";
    let zone = format!("/v3/modules/zones/{}", w.zone);
    let connection = format!("/v3/modules/mqtt/connections/{}", w.connection);
    let connections = "/v3/modules/mqtt/connections";
    let certificates = "/v3/modules/mqtt/certificates";
    let pem_garbage = b64(b"-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n");
    let unknown_profile = uuid::Uuid::new_v4().to_string();
    let tls_to = |profile: &str| json!({"host": "h", "TLS": true, "CertificateProfileID": profile});
    let (post, put) = (Method::POST, Method::PUT);
    let device = format!("/v3/devices/{MAC}");
    let import = "/v3/devices/import";
    vec![
        case(put.clone(), &device, json!({"Group": "g"}), "Name: is required"),
        case(put.clone(), &device, device_with("Name", json!("   ")), "Name: is required"),
        case(put.clone(), &device, device_with("Name", Value::Null), "Name: is required"),
        case(put.clone(), &device, device_with("Name", json!("tab\there")), "Name: must not contain control characters"),
        case(put.clone(), "/v3/devices/forklift-1", device_with("Name", json!("a")), "MAC: 'forklift-1' is not a MAC address"),
        case(put.clone(), "/v3/devices/00:00:00:00:00:0G", device_with("Name", json!("a")), "MAC: '00:00:00:00:00:0G' is not a MAC address"),
        case(post.clone(), import, json!([{"MAC": MAC, "Name": "a"}, {"MAC": "nope", "Name": "b"}]), "[1].MAC: 'nope' is not a MAC address"),
        case(post.clone(), import, json!([{"MAC": MAC, "Name": "a"}, {"Name": "b"}]), "[1].MAC: is required"),
        case(post.clone(), import, json!([{"MAC": MAC}]), "[0].Name: is required"),
        case(post.clone(), import, json!([{"MAC": MAC, "Name": "a"}, {"MAC": "00-00-00-00-00-01", "Name": "b"}]), "[1].MAC: 00:00:00:00:00:01 is also at [0]"),
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
        case(post.clone(), zones, action(json!({"type": "device-alarm", "on": "sometimes"})), "ZoneActions[0].on: must be enter, exit, both or dwell"),
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
pub(crate) fn geometry_cases() -> Vec<(&'static str, Value, &'static str)> {
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
pub(crate) fn filter_chain_cases() -> Vec<(Value, &'static str)> {
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
