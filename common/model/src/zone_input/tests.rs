//! Unit tests of `ZoneInput`: field checks, create and update merge.
use serde_json::json;

use super::*;

fn sphere() -> Value {
    json!({"GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]]})
}

#[test]
fn create_fills_defaults() {
    let z = ZoneInput::parse(&sphere(), &Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap();
    assert_eq!(z.name, "");
    assert!(z.active);
    assert_eq!(z.inclusion_policy, InclusionPolicy::All);
    assert_eq!(z.alert_level, 0);
}

#[test]
fn alert_level_has_no_upper_bound() {
    let level = |v: Value| {
        let mut input = sphere();
        input["AlertLevel"] = v;
        ZoneInput::parse(&input, &Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap().alert_level
    };
    assert_eq!(level(json!(11)), 11);
    assert_eq!(level(json!(3.0)), 3);
    assert_eq!(level(json!(u64::MAX)), u64::MAX);
    // Past u64::MAX JSON integers arrive as doubles; they rank as the highest level there is.
    assert_eq!(level(json!(1e30)), u64::MAX);
}

#[test]
fn create_requires_geometry() {
    let e = ZoneInput::parse(&json!({"Name": "x"}), &Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap_err();
    assert_eq!(e.to_string(), "GeometryType: is required");
}

#[test]
fn wrong_types_and_ranges_name_the_field() {
    let cases = [
        (json!({"Name": 5}), "Name: must be a string, got a number"),
        (json!({"AlertLevel": -1}), "AlertLevel: must be 0 or more, got -1"),
        (json!({"AlertLevel": 2.5}), "AlertLevel: must be an integer, got 2.5"),
        (json!({"AlertLevel": "3"}), "AlertLevel: must be an integer, got a string"),
        (json!({"Active": "yes"}), "Active: must be a boolean, got a string"),
        (json!({"InclusionPolicy": "some"}), "InclusionPolicy: must be 'all' or 'none', got 'some'"),
        (
            json!({"DeviceList": ["00:11:22:33:44:55", "nope"]}),
            "DeviceList[1]: 'nope' is not a MAC address (six hex octets separated by ':' or '-')",
        ),
        (json!({"GeometryData": [[0, 0]]}), "GeometryData[0]: must be an array of three finite numbers"),
        (
            json!({"StartTime": "yesterday"}),
            "StartTime: 'yesterday' is not an ISO 8601 time (e.g. 2026-11-21T10:00:00.000Z)",
        ),
        (
            json!({"ZoneActions": [{"type": "teleport"}]}),
            "ZoneActions[0].type: unknown action type 'teleport' (expected info-event, device-alarm or http-request)",
        ),
        (
            json!({"ZoneActions": [{"type": "http-request", "uri": "ftp://x"}]}),
            "ZoneActions[0].uri: must be an http:// or https:// URI with a host",
        ),
        (
            json!({"ZoneActions": [{"type": "info-event", "on": "stay"}]}),
            "ZoneActions[0].on: must be enter, exit, both or dwell, got 'stay'",
        ),
        (json!({"MaxDwellSeconds": -5}), "MaxDwellSeconds: must be between 0 and 2592000, got -5"),
        (json!({"MaxDwellSeconds": 2_592_001}), "MaxDwellSeconds: must be between 0 and 2592000, got 2592001"),
        (json!({"MaxDwellSeconds": "900"}), "MaxDwellSeconds: must be a number, got a string"),
    ];
    for (input, message) in cases {
        assert_eq!(ZoneInput::parse(&input, &Limits::DEFAULT).unwrap_err().to_string(), message);
    }
}

#[test]
fn a_dwell_limit_is_set_in_seconds_and_cleared_by_null_or_zero() {
    let mut input = sphere();
    assert_eq!(stored(input.clone(), None).max_dwell_seconds, None, "off by default");
    input["MaxDwellSeconds"] = json!(900.5);
    let limited = stored(input, None);
    assert_eq!(limited.max_dwell_seconds, Some(900.5));
    assert_eq!(stored(json!({"Name": "kept"}), Some(&limited)).max_dwell_seconds, Some(900.5), "absent keeps it");
    assert_eq!(stored(json!({"MaxDwellSeconds": null}), Some(&limited)).max_dwell_seconds, None);
    assert_eq!(stored(json!({"MaxDwellSeconds": 0}), Some(&limited)).max_dwell_seconds, None);
}

#[test]
fn timed_zones_need_an_ordered_window() {
    let mut v = sphere();
    v["IsTimed"] = json!(true);
    v["StartTime"] = json!("2026-11-21T10:00:00Z");
    let e = ZoneInput::parse(&v, &Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap_err();
    assert_eq!(e.to_string(), "StopTime: is required when IsTimed is true");
    v["StopTime"] = json!("2026-11-21T09:00:00Z");
    let e = ZoneInput::parse(&v, &Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap_err();
    assert_eq!(e.to_string(), "StopTime: must be after StartTime");
}

#[test]
fn locked_geometry_cannot_change_but_other_fields_can() {
    let mut z = ZoneInput::parse(&sphere(), &Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap();
    z.is_geometry_locked = true;
    let e = ZoneInput::parse(&json!({"GeometryData": [[0, 0, 0], [2, 0, 0]]}), &Limits::DEFAULT)
        .unwrap()
        .update(&z)
        .unwrap_err();
    assert_eq!(e.field, "GeometryData");
    let same = ZoneInput::parse(&json!({"GeometryData": [[0, 0, 0], [1, 0, 0]], "Name": "n"}), &Limits::DEFAULT)
        .unwrap()
        .update(&z)
        .unwrap();
    assert_eq!(same.name, "n");
}

/// `zone` as stored: every secret sealed (here as `sealed:<secret>`), then written back
/// through JSON as the store does.
fn stored(input: Value, base: Option<&ZoneSpec>) -> ZoneSpec {
    let mut parsed = ZoneInput::parse(&input, &Limits::DEFAULT).unwrap();
    parsed.seal_secrets(|s| Ok::<_, ()>(format!("sealed:{}", s.expose()))).unwrap();
    let zone = match base {
        None => parsed.create(Uuid::new_v4()).unwrap(),
        Some(base) => parsed.update(base).unwrap(),
    };
    serde_json::from_str(&serde_json::to_string(&zone).unwrap()).unwrap()
}

fn secrets(zone: &ZoneSpec) -> Vec<(bool, Option<String>)> {
    zone.zone_actions
        .iter()
        .filter_map(|a| match a {
            ZoneAction::HttpRequest { has_secret, secret, .. } => Some((
                *has_secret,
                secret.as_ref().map(|s| match s {
                    crate::ActionSecret::Sealed(t) => t.clone(),
                    other => panic!("{other:?} stored"),
                }),
            )),
            _ => None,
        })
        .collect()
}

fn with_actions(actions: Value) -> Value {
    let mut v = sphere();
    v["ZoneActions"] = actions;
    v
}

#[test]
fn http_request_secrets_are_stored_sealed_and_kept_for_the_same_uri_only() {
    let a = "http://a.example/hook";
    let b = "http://b.example/hook";
    let z = stored(
        with_actions(json!([
            {"type": "http-request", "uri": a, "secret": "0123456789abcdef"},
            {"type": "http-request", "uri": b},
        ])),
        None,
    );
    assert_eq!(secrets(&z), [(true, Some("sealed:0123456789abcdef".into())), (false, None)]);
    let text = serde_json::to_string(&z).unwrap();
    assert!(!text.contains("\"0123456789abcdef"), "{text}");

    // Sent again without a secret (as a GET returns it), in another order: each action keeps
    // the secret of the stored action to its URI.
    let again = stored(
        with_actions(json!([
            {"type": "http-request", "uri": b, "has_secret": false},
            {"type": "http-request", "uri": a, "has_secret": true},
        ])),
        Some(&z),
    );
    assert_eq!(secrets(&again), [(false, None), (true, Some("sealed:0123456789abcdef".into()))]);

    // A new URI does not inherit a secret; null removes one; a new one replaces it.
    let moved = stored(with_actions(json!([{"type": "http-request", "uri": "http://c.example/"}])), Some(&z));
    assert_eq!(secrets(&moved), [(false, None)]);
    let removed = stored(with_actions(json!([{"type": "http-request", "uri": a, "secret": null}])), Some(&z));
    assert_eq!(secrets(&removed), [(false, None)]);
    let replaced =
        stored(with_actions(json!([{"type": "http-request", "uri": a, "secret": "fedcba9876543210"}])), Some(&z));
    assert_eq!(secrets(&replaced), [(true, Some("sealed:fedcba9876543210".into()))]);

    // An update that leaves ZoneActions out keeps them whole.
    let renamed = stored(json!({"Name": "renamed"}), Some(&z));
    assert_eq!(secrets(&renamed), secrets(&z));
}

#[test]
fn the_api_view_of_a_zone_never_shows_its_secrets() {
    let z = stored(with_actions(json!([{"type": "http-request", "uri": "http://a/", "secret": "s".repeat(16)}])), None);
    let shown = serde_json::to_value(crate::Zone::new(z, 1, Vec::new())).unwrap();
    let action = &shown["ZoneActions"][0];
    assert_eq!(action["has_secret"], json!(true));
    assert!(action.get("secret").is_none() && action.get("secret_sealed").is_none(), "{action}");
}

#[test]
fn a_secret_in_clear_cannot_be_serialized() {
    let input = ZoneInput::parse(
        &with_actions(json!([{"type": "http-request", "uri": "http://a/", "secret": "s".repeat(16)}])),
        &Limits::DEFAULT,
    )
    .unwrap();
    let zone = input.create(Uuid::new_v4()).unwrap();
    let e = serde_json::to_string(&zone).unwrap_err();
    assert!(e.to_string().contains("must be sealed"), "{e}");
    assert!(!format!("{zone:?}").contains("ssssssssssssssss"));
}

#[test]
fn bad_secrets_are_refused_with_the_rule() {
    let parse = |secret: Value| {
        ZoneInput::parse(
            &with_actions(json!([{"type": "http-request", "uri": "http://a/", "secret": secret}])),
            &Limits::DEFAULT,
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    let length = "ZoneActions[0].secret: must be 16 to 256 characters long";
    assert_eq!(parse(json!("short")).unwrap_err(), length);
    assert_eq!(parse(json!("x".repeat(15))).unwrap_err(), length);
    assert_eq!(parse(json!("x".repeat(257))).unwrap_err(), length);
    assert_eq!(
        parse(json!(1234567890123456_u64)).unwrap_err(),
        "ZoneActions[0].secret: must be a string, got a number"
    );
    assert_eq!(parse(json!({"a": 1})).unwrap_err(), "ZoneActions[0].secret: must be a string, got an object");
    parse(json!("x".repeat(16))).unwrap();
    parse(json!("é".repeat(256))).unwrap();
    parse(json!(null)).unwrap();
}

#[test]
fn inclusion_policy_admits_by_default_and_list() {
    let a: Mac = "00:00:00:00:00:01".parse().unwrap();
    let b: Mac = "00:00:00:00:00:02".parse().unwrap();
    assert!(InclusionPolicy::All.admits(std::slice::from_ref(&a), &b));
    assert!(!InclusionPolicy::All.admits(std::slice::from_ref(&a), &a));
    assert!(InclusionPolicy::None.admits(std::slice::from_ref(&a), &a));
    assert!(!InclusionPolicy::None.admits(&[a], &b));
}
