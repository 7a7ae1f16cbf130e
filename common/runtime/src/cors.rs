//! Cross-origin access for the routes a browser page on another origin may call (the live
//! streams): which origins may, the answer to their preflight `OPTIONS`, and the headers that
//! let the browser hand the answer to the page. Without configured origins only pages of the
//! listener's own origin can read the answers (the browser's same-origin rule).

use warp::http::{HeaderMap, HeaderValue, StatusCode, header};
use warp::reply::Response;

/// The origins allowed (`ZONECAST_CORS_ORIGINS`): exact `scheme://host[:port]` texts, or `*`
/// for any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cors {
    origins: Vec<String>,
}

/// How long a browser may keep a preflight's answer.
const MAX_AGE_SECS: &str = "600";

impl Cors {
    /// Allows `origins` (compared without a trailing `/`, case-insensitively).
    pub fn new(origins: impl IntoIterator<Item = String>) -> Self {
        Self {
            origins: origins
                .into_iter()
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|o| !o.is_empty())
                .collect(),
        }
    }

    /// The `Origin` of a request when it is allowed.
    fn allowed<'a>(&self, headers: &'a HeaderMap) -> Option<&'a HeaderValue> {
        let origin = headers.get(header::ORIGIN)?;
        let text = origin.to_str().ok()?.trim_end_matches('/').to_ascii_lowercase();
        self.origins.iter().any(|o| o == "*" || *o == text).then_some(origin)
    }

    /// The answer to a preflight `OPTIONS` for a `GET` route: 204 with `Allow`, and the CORS
    /// headers only for an allowed origin (a browser refuses the page's request otherwise).
    pub fn preflight(&self, headers: &HeaderMap) -> Response {
        let mut response = Response::new(bytes::Bytes::new().into());
        *response.status_mut() = StatusCode::NO_CONTENT;
        let out = response.headers_mut();
        out.insert(header::ALLOW, HeaderValue::from_static("GET, OPTIONS"));
        out.insert(header::VARY, HeaderValue::from_static("Origin"));
        if let Some(origin) = self.allowed(headers) {
            out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            out.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET"));
            out.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("authorization, x-api-key, last-event-id"),
            );
            out.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(MAX_AGE_SECS));
        }
        response
    }

    /// Lets the browser hand `response` to a page of an allowed origin.
    pub fn decorate(&self, headers: &HeaderMap, response: &mut Response) {
        response.headers_mut().insert(header::VARY, HeaderValue::from_static("Origin"));
        if let Some(origin) = self.allowed(headers) {
            response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        }
    }
}
