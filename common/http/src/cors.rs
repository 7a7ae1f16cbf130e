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
    pub fn allowed<'a>(&self, headers: &'a HeaderMap) -> Option<&'a HeaderValue> {
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

    /// Lets the browser hand `response` to a page of `origin`, an allowed one
    /// ([`Cors::allowed`]); without one, it only says the answer depends on the origin.
    pub fn decorate(response: &mut Response, origin: Option<HeaderValue>) {
        response.headers_mut().insert(header::VARY, HeaderValue::from_static("Origin"));
        if let Some(origin) = origin {
            response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn from(origin: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        headers
    }

    #[test]
    fn only_listed_origins_are_allowed_in_any_case_and_without_a_trailing_slash() {
        let cors = Cors::new(["https://Dash.example/".to_owned(), " ".to_owned()]);
        assert!(cors.allowed(&from("https://dash.example")).is_some());
        assert!(cors.allowed(&from("https://dash.example:8443")).is_none());
        assert!(cors.allowed(&from("http://dash.example")).is_none());
        assert!(cors.allowed(&HeaderMap::new()).is_none());
        assert!(Cors::default().allowed(&from("https://dash.example")).is_none(), "none by default");
        assert!(Cors::new(["*".to_owned()]).allowed(&from("https://any.example")).is_some());
    }

    #[test]
    fn a_preflight_carries_the_cors_headers_for_an_allowed_origin_only() {
        let cors = Cors::new(["https://dash.example".to_owned()]);
        let allowed = cors.preflight(&from("https://dash.example"));
        assert_eq!(allowed.status(), StatusCode::NO_CONTENT);
        assert_eq!(allowed.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "https://dash.example");
        let refused = cors.preflight(&from("https://evil.example"));
        assert_eq!(refused.status(), StatusCode::NO_CONTENT);
        assert!(refused.headers().get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
        assert_eq!(refused.headers()[header::VARY], "Origin");
    }
}
