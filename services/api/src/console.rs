//! The console: the browser page at `/` and its files under `/console/`, compiled into the
//! binary (`services/api/console/`, with three.js vendored), and its icon, also at
//! `/favicon.ico` for the clients that ask there. They are static and open to
//! everyone; the page signs in and sends the credential with every API request it makes. They
//! are not API operations, so they are served beside the route table (and left out of the
//! OpenAPI document).

use std::sync::LazyLock;

use warp::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use warp::reply::Response;
use warp::{Filter, Rejection};
use zonecast_http::http::HttpError;

/// Where the console's files are served from.
pub const PREFIX: &str = "/console/";

/// Where browsers look for a site's icon when its page names none: answered with the console's
/// icon (the page names `/console/favicon.svg`, so a browser showing it never asks here).
pub const FAVICON: &str = "/favicon.ico";

/// One file of the console.
struct Asset {
    /// Path below [`PREFIX`].
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset { path: $path, content_type: $type, body: include_bytes!(concat!("../console/", $path)) }
    };
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
const SVG: &str = "image/svg+xml";

static ASSETS: &[Asset] = &[
    asset!("index.html", HTML),
    asset!("console.css", CSS),
    asset!("favicon.svg", SVG),
    asset!("js/alarms.js", JS),
    asset!("js/api.js", JS),
    asset!("js/connections.js", JS),
    asset!("js/device-labels.js", JS),
    asset!("js/device-layer.js", JS),
    asset!("js/devices.js", JS),
    asset!("js/dispose.js", JS),
    asset!("js/draw.js", JS),
    asset!("js/editor.js", JS),
    asset!("js/floor.js", JS),
    asset!("js/frame-stats.js", JS),
    asset!("js/inspector.js", JS),
    asset!("js/labels.js", JS),
    asset!("js/main.js", JS),
    asset!("js/navigation.js", JS),
    asset!("js/panels.js", JS),
    asset!("js/picking.js", JS),
    asset!("js/preview.js", JS),
    asset!("js/scene.js", JS),
    asset!("js/search.js", JS),
    asset!("js/shape-cache.js", JS),
    asset!("js/shapes.js", JS),
    asset!("js/sse.js", JS),
    asset!("js/trails.js", JS),
    asset!("js/visits.js", JS),
    asset!("js/webgl.js", JS),
    asset!("js/zone-layer.js", JS),
    asset!("js/zone-look.js", JS),
    asset!("vendor/three/build/three.core.js", JS),
    asset!("vendor/three/build/three.module.js", JS),
    asset!("vendor/three/examples/jsm/controls/OrbitControls.js", JS),
    asset!("vendor/three/LICENSE", TEXT),
];

/// What the page may load and where it may connect: only this origin, plus the one inline
/// script (the import map that names three.js), by its hash. A test recomputes the hash.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'sha256-aBpc42+Ws6KP/suwR3ohgDaz4L4JRW0lcqrkcCiRKJw='; \
     style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     frame-ancestors 'none'; form-action 'none'";

/// The entity tag of each asset, in the order of [`ASSETS`]: a hash of its bytes, so a browser
/// revalidates cheaply and a new build's files are never taken for the old ones.
static ETAGS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|a| {
            // FNV-1a: the same in every build and process (the std hasher's keys are not).
            let hash = a
                .body
                .iter()
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
            HeaderValue::from_str(&format!("\"{hash:016x}\"")).unwrap_or_else(|_| HeaderValue::from_static("\"0\""))
        })
        .collect()
});

/// Whether `path` is the console's: `/` (the page), [`FAVICON`] or anything under `/console/`.
pub fn owns(path: &str) -> bool {
    path == "/" || path == FAVICON || path.starts_with(PREFIX)
}

/// The index in [`ASSETS`] of the file a console path names, if any.
fn find(path: &str) -> Option<usize> {
    let wanted = match path {
        "/" => "index.html",
        FAVICON => "favicon.svg",
        _ => path.strip_prefix(PREFIX)?,
    };
    ASSETS.iter().position(|a| a.path == wanted)
}

/// The answer to `method` on a console path ([`owns`]): the file, 304 when the browser holds
/// it already, 404 for a path that names no file, 405 for a method other than GET and HEAD.
pub fn answer(method: &Method, path: &str, headers: &HeaderMap) -> Response {
    let Some(index) = find(path) else {
        return HttpError::NotFound(format!("no route {path}")).into_response();
    };
    if method != Method::GET && method != Method::HEAD {
        return HttpError::MethodNotAllowed { method: method.to_string(), allow: "GET, HEAD".into() }.into_response();
    }
    let asset = &ASSETS[index];
    let etag = ETAGS[index].clone();
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').map(str::trim).any(|t| t.as_bytes() == etag.as_bytes() || t == "*"));
    let mut response = Response::new(if fresh { Default::default() } else { asset.body.into() });
    if fresh {
        *response.status_mut() = StatusCode::NOT_MODIFIED;
    }
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    // Always revalidated (the ETag makes that cheap): an upgraded server's page and scripts
    // are never mixed with an older one's.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::ETAG, etag);
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if asset.content_type == HTML {
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
        h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    }
    response
}

/// The warp filter answering the console's paths; it rejects every other path (before looking
/// at anything else), so that the API's filter after it answers those. Its answers are counted
/// in `zonecast_api_requests_total` with `operation="console"`.
pub fn filter() -> impl Filter<Extract = (Response,), Error = Rejection> + Clone + Send + Sync + 'static {
    warp::path::full()
        .and_then(|path: warp::path::FullPath| async move {
            if owns(path.as_str()) { Ok(path) } else { Err(warp::reject::not_found()) }
        })
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .map(|path: warp::path::FullPath, method: Method, headers: HeaderMap| {
            let response = answer(&method, path.as_str(), &headers);
            let status = response.status().as_u16().to_string();
            metrics::counter!("zonecast_api_requests_total", "operation" => "console", "status" => status).increment(1);
            response
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn get(path: &str) -> Response {
        assert!(owns(path), "{path}");
        answer(&Method::GET, path, &HeaderMap::new())
    }

    #[test]
    fn the_page_is_at_the_root_and_its_files_under_console() {
        let page = get("/");
        assert_eq!(page.status(), StatusCode::OK);
        assert_eq!(page.headers()[header::CONTENT_TYPE], HTML);
        assert!(page.headers().contains_key(header::CONTENT_SECURITY_POLICY));
        assert_eq!(get("/console/js/main.js").headers()[header::CONTENT_TYPE], JS);
        assert_eq!(get("/console/console.css").headers()[header::CONTENT_TYPE], CSS);
        assert_eq!(get("/console/vendor/three/build/three.module.js").status(), StatusCode::OK);
    }

    #[test]
    fn the_icon_is_served_where_the_page_names_it_and_at_favicon_ico() {
        for path in ["/console/favicon.svg", "/favicon.ico"] {
            let icon = get(path);
            assert_eq!(icon.status(), StatusCode::OK, "{path}");
            assert_eq!(icon.headers()[header::CONTENT_TYPE], SVG, "{path}");
        }
        let page = std::str::from_utf8(ASSETS[0].body).unwrap();
        assert!(page.contains(r#"<link rel="icon" href="/console/favicon.svg" type="image/svg+xml">"#));
        assert!(!owns("/favicon.svg"));
    }

    #[test]
    fn other_paths_are_left_to_the_api_and_unknown_console_files_are_not_found() {
        assert!(!owns("/v3/modules/zones"));
        assert!(!owns("/consolex"));
        assert!(!owns("/console"));
        assert_eq!(get("/console/nope.js").status(), StatusCode::NOT_FOUND);
        assert_eq!(get("/console/").status(), StatusCode::NOT_FOUND);
        assert_eq!(get("/console/../Cargo.toml").status(), StatusCode::NOT_FOUND);
        let post = answer(&Method::POST, "/", &HeaderMap::new());
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(post.headers()[header::ALLOW], "GET, HEAD");
    }

    #[test]
    fn a_file_the_browser_holds_is_not_sent_again() {
        let etag = get("/console/js/scene.js").headers()[header::ETAG].clone();
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_NONE_MATCH, etag);
        let again = answer(&Method::GET, "/console/js/scene.js", &headers);
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        let other = answer(&Method::GET, "/console/js/sse.js", &headers);
        assert_eq!(other.status(), StatusCode::OK);
    }

    #[test]
    fn the_content_security_policy_admits_the_import_map() {
        use base64::Engine as _;
        let page = std::str::from_utf8(ASSETS[0].body).unwrap();
        let (_, rest) = page.split_once("<script type=\"importmap\">").unwrap();
        let (import_map, _) = rest.split_once("</script>").unwrap();
        let digest = ring::digest::digest(&ring::digest::SHA256, import_map.as_bytes());
        let hash = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
        assert!(CONTENT_SECURITY_POLICY.contains(&format!("'sha256-{hash}'")), "the import map's hash is {hash}");
    }

    #[test]
    fn every_module_the_page_imports_is_served() {
        for asset in ASSETS.iter().filter(|a| a.content_type == JS || a.content_type == HTML) {
            let text = std::str::from_utf8(asset.body).unwrap();
            for part in
                text.split(" from \"").skip(1).chain(text.split("src=\"").skip(1)).chain(text.split("href=\"").skip(1))
            {
                let target = &part[..part.find('"').unwrap()];
                let path = if let Some(relative) = target.strip_prefix("./") {
                    let dir = asset.path.rsplit_once('/').map_or("", |(d, _)| d);
                    format!("{PREFIX}{dir}/{relative}")
                } else {
                    target.to_owned()
                };
                if path.starts_with('/') {
                    assert_eq!(get(&path).status(), StatusCode::OK, "{} names {target}", asset.path);
                }
            }
        }
    }
}
