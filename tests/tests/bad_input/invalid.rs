//! Bodies and IDs refused as malformed, invalid, not found or too large.

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::pki::pki;
use zonecast_tests::{ADMIN_KEY, Mode, Server, WRITE_KEY, json, sphere};

use super::cases::{
    body_operations, broken_rule_cases, filter_chain_cases, geometry_cases, out_of_range_cases, wrong_type_cases,
};
use super::{Case, LIMIT, MAC, Takes, bytes, case, connection, connection_with, world};

/// Sends each case as admin and expects 422 with a message starting with the case's one.
async fn expect_invalid(server: &Server, cases: Vec<Case>) {
    for (method, path, body, expected) in cases {
        let message = server.refused(method.clone(), &path, Some(ADMIN_KEY), bytes(&body), 422, "invalid_data").await;
        assert!(message.starts_with(&expected), "{method} {path} {body}\n  message: {message}\n expected: {expected}…");
    }
}

pub(crate) async fn malformed_json_is_refused_as_malformed_by_every_operation_that_takes_a_body(mode: Mode) {
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

pub(crate) async fn a_body_of_the_wrong_json_type_is_refused_as_malformed(mode: Mode) {
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

pub(crate) async fn fields_of_the_wrong_type_are_invalid_and_the_message_names_the_field(mode: Mode) {
    let w = world(mode).await;
    expect_invalid(&w.server, wrong_type_cases(&w)).await;
    w.server.stop().await;
}

pub(crate) async fn numbers_out_of_range_are_invalid_and_the_message_names_the_field(mode: Mode) {
    let w = world(mode).await;
    expect_invalid(&w.server, out_of_range_cases(&w)).await;
    w.server.stop().await;
}

pub(crate) async fn values_that_break_a_rule_are_invalid_and_the_message_names_the_field(mode: Mode) {
    let w = world(mode).await;
    expect_invalid(&w.server, broken_rule_cases(&w)).await;
    w.server.stop().await;
}

pub(crate) async fn a_certificate_profile_a_connection_uses_cannot_be_deleted(mode: Mode) {
    let w = world(mode).await;
    let tls = json!({"host": "127.0.0.1", "port": 8883, "TLS": true, "CertificateProfileID": w.profile, "topics": []});
    w.server.ok(Method::POST, "/v3/modules/mqtt/connections", Some(tls)).await;
    let path = format!("/v3/modules/mqtt/certificates/{}", w.profile.to_lowercase());
    let message = w.server.refused(Method::DELETE, &path, Some(ADMIN_KEY), None, 422, "invalid_data").await;
    assert!(message.contains(&w.profile) && message.contains("used by"), "{message}");
    w.server.stop().await;
}

pub(crate) async fn every_geometry_rule_is_enforced_with_a_message_naming_the_row(mode: Mode) {
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

pub(crate) async fn bad_filter_chains_are_invalid_and_the_message_names_the_filter(mode: Mode) {
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

pub(crate) async fn unknown_ids_are_not_found_on_every_operation_that_takes_one(mode: Mode) {
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
            (Method::GET, format!("/v3/devices/{x}"), None),
            (Method::DELETE, format!("/v3/devices/{x}"), None),
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

pub(crate) async fn a_body_over_the_size_limit_is_refused_as_too_large(mode: Mode) {
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
