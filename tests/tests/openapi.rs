//! `GET /v3/openapi.json` is true: it has the shape of an OpenAPI 3 document, the server answers
//! every route it documents, and answers no route it does not.
#![allow(clippy::unwrap_used)]

use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast_tests::{ADMIN_KEY, Mode, READ_KEY, Server, both_modes};

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "DELETE", "PATCH"];

async fn document(server: &Server) -> Value {
    let (status, doc) = server.call(Method::GET, "/v3/openapi.json", Some(READ_KEY), None).await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    doc
}

/// `(path template, METHOD, operation)` for every documented operation.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let paths = doc["paths"].as_object().expect("paths is an object");
    let mut out = Vec::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().expect("a path item is an object") {
            out.push((path.clone(), method.to_ascii_uppercase(), op.clone()));
        }
    }
    out
}

/// The path with every `{parameter}` replaced by a fresh UUID.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(
            |seg| {
                if seg.starts_with('{') && seg.ends_with('}') {
                    uuid::Uuid::new_v4().to_string()
                } else {
                    seg.to_owned()
                }
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

/// Follows a local `$ref` (`#/a/b`), or `None` when it does not resolve.
fn resolve<'a>(doc: &'a Value, reference: &str) -> Option<&'a Value> {
    doc.pointer(reference.strip_prefix('#')?)
}

/// Every `$ref` anywhere under `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// A body of the right top-level JSON type for `op`, or none when it takes no body.
fn minimal_body(doc: &Value, op: &Value) -> Option<Vec<u8>> {
    let schema = op.pointer("/requestBody/content/application~1json/schema")?;
    let schema = match schema["$ref"].as_str() {
        Some(r) => resolve(doc, r).expect("the request schema resolves"),
        None => schema,
    };
    Some(if schema["type"] == "array" { b"[]".to_vec() } else { b"{}".to_vec() })
}

/// The answers the server gives when no route matches: 404 "no route …", or 405.
fn is_route_miss(status: StatusCode, body: &Value) -> bool {
    status == StatusCode::METHOD_NOT_ALLOWED
        || (status == StatusCode::NOT_FOUND && body["message"].as_str().is_some_and(|m| m.starts_with("no route")))
}

async fn the_document_has_the_shape_of_openapi_3(mode: Mode) {
    let server = Server::start(mode).await;
    let doc = document(&server).await;
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")), "openapi: {}", doc["openapi"]);
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string(), "info: {}", doc["info"]);
    let ops = operations(&doc);
    assert!(ops.len() >= 22, "at least the 22 configuration operations: {}", ops.len());
    let mut ids = Vec::new();
    for (path, method, op) in &ops {
        assert!(path.starts_with('/'), "{path}");
        assert!(METHODS.contains(&method.as_str()), "{method} {path}: not an HTTP method this API uses");
        let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no operationId"));
        assert!(!ids.contains(&id.to_owned()), "operationId {id} repeats");
        ids.push(id.to_owned());
        assert!(op["responses"].as_object().is_some_and(|r| !r.is_empty()), "{method} {path} has no responses");
        let in_path: Vec<&Value> =
            op["parameters"].as_array().into_iter().flatten().filter(|p| p["in"] == "path").collect();
        for param in &in_path {
            let name = param["name"].as_str().unwrap();
            assert!(path.contains(&format!("{{{name}}}")), "{method} {path}: parameter {name} is not in the path");
        }
        let placeholders = path.matches('{').count();
        assert_eq!(in_path.len(), placeholders, "{method} {path}: every path parameter is described");
        for param in op["parameters"].as_array().into_iter().flatten().filter(|p| p["in"] != "path") {
            assert!(param["in"] == "header" || param["in"] == "query", "{method} {path}: {param}");
            if param["name"] == "If-Match" {
                assert!(op["responses"]["412"].is_object(), "{method} {path}: a precondition header can fail with 412");
            }
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for reference in all {
        assert!(resolve(&doc, &reference).is_some(), "$ref {reference} does not resolve");
    }
    for (name, scheme) in doc["components"]["securitySchemes"].as_object().expect("security schemes") {
        assert!(scheme["type"].is_string(), "security scheme {name}");
    }
    server.stop().await;
}

async fn the_server_answers_every_documented_route(mode: Mode) {
    let server = Server::start(mode).await;
    let doc = document(&server).await;
    for (template, method, op) in operations(&doc) {
        let path = concrete(&template);
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let body = minimal_body(&doc, &op);
        if op.pointer("/responses/200/content/text~1event-stream").is_some() {
            // A stream stays open: its answer's head is all there is to check.
            let response =
                server.http.get(format!("{}{path}", server.base)).header("X-API-Key", ADMIN_KEY).send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{method} {template}");
            assert_eq!(response.headers()["content-type"], "text/event-stream", "{method} {template}");
            continue;
        }
        let (status, answer) = server.raw(method.clone(), &path, Some(ADMIN_KEY), body).await;
        assert!(!is_route_miss(status, &answer), "documented {method} {template} ({path}) answered {status} {answer}");
        assert!(
            op["responses"].get(status.as_str()).is_some(),
            "{method} {template} answered {status}, which its entry does not list: {answer}"
        );
    }
    server.stop().await;
}

async fn every_method_a_documented_path_does_not_list_is_not_allowed(mode: Mode) {
    let server = Server::start(mode).await;
    let doc = document(&server).await;
    for (template, item) in doc["paths"].as_object().unwrap() {
        let path = concrete(template);
        for method in METHODS {
            if item.get(method.to_ascii_lowercase()).is_some() {
                continue;
            }
            let method = Method::from_bytes(method.as_bytes()).unwrap();
            let answer = server.call(method.clone(), &path, Some(ADMIN_KEY), None).await;
            assert_eq!(
                answer.0,
                StatusCode::METHOD_NOT_ALLOWED,
                "undocumented {method} {template} answered {} {}",
                answer.0,
                answer.1
            );
        }
    }
    server.stop().await;
}

async fn paths_the_document_does_not_list_are_not_found(mode: Mode) {
    let server = Server::start(mode).await;
    let doc = document(&server).await;
    let documented = |path: &str| doc["paths"].get(path).is_some();
    // Position input shares the API's listener only in the all-in-one; the
    // distributed API leaves it to the ingestor.
    assert_eq!(documented("/v3/positions"), mode == Mode::AllInOne, "POST /v3/positions in {mode:?}");
    let mut undocumented =
        vec!["/v3/modules", "/v3/modules/zones/x/y/z", "/v2/modules/zones", "/v3", "/v3/modules/mqtt"];
    if mode == Mode::Distributed {
        undocumented.push("/v3/positions");
    }
    for path in undocumented {
        assert!(!documented(path), "{path} is documented");
        for method in [Method::GET, Method::POST] {
            let answer = server.call(method.clone(), path, Some(ADMIN_KEY), None).await;
            let message = zonecast_tests::assert_error(&answer, 404, "not_found");
            assert!(message.starts_with("no route"), "{method} {path}: {message}");
        }
    }
    server.stop().await;
}

both_modes!(
    the_document_has_the_shape_of_openapi_3,
    the_server_answers_every_documented_route,
    every_method_a_documented_path_does_not_list_is_not_allowed,
    paths_the_document_does_not_list_are_not_found,
);
