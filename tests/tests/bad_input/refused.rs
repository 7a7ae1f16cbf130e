//! Requests refused before the server looks at them: credentials, authority, routes and methods.

use reqwest::Method;
use serde_json::Value;
use zonecast_runtime::Authority;
use zonecast_tests::{ADMIN_KEY, Mode, READ_KEY, WRITE_KEY};

use super::cases::protected_operations;
use super::{bytes, world};

pub(crate) async fn a_request_without_credentials_is_unauthorized_on_every_protected_route(mode: Mode) {
    let w = world(mode).await;
    for (method, path, body, _) in protected_operations(&w) {
        w.server.refused(method, &path, None, body.as_ref().and_then(bytes), 401, "unauthorized").await;
    }
    w.server.stop().await;
}

pub(crate) async fn a_wrong_key_is_unauthorized_on_every_protected_route(mode: Mode) {
    let w = world(mode).await;
    for (method, path, body, _) in protected_operations(&w) {
        for key in ["not-a-key", "test-admin-key-but-longer", ""] {
            let body = body.as_ref().and_then(bytes);
            w.server.refused(method.clone(), &path, Some(key), body, 401, "unauthorized").await;
        }
    }
    w.server.stop().await;
}

pub(crate) async fn a_read_key_is_forbidden_to_write_anything(mode: Mode) {
    let w = world(mode).await;
    let writes: Vec<_> = protected_operations(&w).into_iter().filter(|(.., needs)| *needs != Authority::Read).collect();
    let expected = if mode == Mode::AllInOne { 25 } else { 24 };
    assert_eq!(writes.len(), expected, "every write and admin route");
    for (method, path, body, needs) in writes {
        let body = body.as_ref().and_then(bytes);
        let message = w.server.refused(method, &path, Some(READ_KEY), body, 403, "forbidden").await;
        assert!(message.contains(needs.as_str()), "the message names the authority needed: {message}");
    }
    w.server.stop().await;
}

pub(crate) async fn a_write_key_is_forbidden_to_change_mqtt_connections_and_certificates(mode: Mode) {
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

pub(crate) async fn an_unknown_route_is_not_found_with_the_error_body(mode: Mode) {
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

pub(crate) async fn a_wrong_method_is_not_allowed_and_the_allow_header_lists_the_right_ones(mode: Mode) {
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
