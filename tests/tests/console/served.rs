//! The page and its files: served without credentials, with their content types, ETags and
//! 404/405 answers, and its icon.

use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast_tests::{Mode, READ_KEY, Server, assert_error, both_modes};

async fn the_console_is_served_without_credentials_with_its_content_types(mode: Mode) {
    let server = Server::start(mode).await;
    let get = |path: &str| server.http.get(format!("{}{path}", server.base)).send();
    let page = get("/").await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert!(page.headers()["content-security-policy"].to_str().unwrap().contains("default-src 'self'"));
    let html = page.text().await.unwrap();
    assert!(html.contains("<script type=\"importmap\">"), "{html}");
    assert!(html.contains(r#"<link rel="icon" href="/console/favicon.svg" type="image/svg+xml">"#), "{html}");
    for (path, kind) in [
        ("/console/js/main.js", "text/javascript; charset=utf-8"),
        ("/console/js/scene.js", "text/javascript; charset=utf-8"),
        ("/console/console.css", "text/css; charset=utf-8"),
        ("/console/vendor/three/build/three.module.js", "text/javascript; charset=utf-8"),
        ("/console/vendor/three/examples/jsm/controls/OrbitControls.js", "text/javascript; charset=utf-8"),
        ("/console/vendor/three/LICENSE", "text/plain; charset=utf-8"),
        // The icon the page names, also where browsers look when a page names none.
        ("/console/favicon.svg", "image/svg+xml"),
        ("/favicon.ico", "image/svg+xml"),
    ] {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], kind, "{path}");
        // Revalidation with the ETag answers 304 without the body.
        let etag = response.headers()["etag"].clone();
        let again =
            server.http.get(format!("{}{path}", server.base)).header("If-None-Match", etag).send().await.unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
    }
    let license = get("/console/vendor/three/LICENSE").await.unwrap().text().await.unwrap();
    assert!(license.contains("three.js authors"), "three.js keeps its licence: {license}");
    for path in ["/console/nope.js", "/console/", "/console/js/", "/console/js", "/console/index.htm"] {
        let response = get(path).await.unwrap();
        let answer = (response.status(), response.json::<Value>().await.unwrap());
        let message = assert_error(&answer, 404, "not_found");
        assert!(message.starts_with("no route"), "{path}: {message}");
    }
    let post = server.http.post(format!("{}/", server.base)).send().await.unwrap();
    assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.headers()["allow"], "GET, HEAD");
    // The page is open to all; the data it shows is not.
    server.refused(Method::GET, "/v3/modules/zones", None, None, 401, "unauthorized").await;
    // Its answers are counted with the API's (the recorder is process-wide: look for ours).
    let metrics = server.http.get(format!("{}/metrics", server.base)).header("X-API-Key", READ_KEY).send().await;
    let text = metrics.unwrap().text().await.unwrap();
    for status in ["200", "304", "404", "405"] {
        let counted = text.lines().any(|l| {
            l.starts_with("zonecast_api_requests_total{")
                && l.contains("operation=\"console\"")
                && l.contains(&format!("status=\"{status}\""))
        });
        assert!(counted, "no console answer with status {status} counted in:\n{text}");
    }
    server.stop().await;
}

both_modes!(the_console_is_served_without_credentials_with_its_content_types);
