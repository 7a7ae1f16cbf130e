//! JSON responses.

use serde::Serialize;
use serde_json::json;
use warp::http::{HeaderValue, StatusCode, header};
use warp::reply::Response;

/// `value` as a JSON response with `status`.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    // Serialising our own response types cannot fail (no maps with non-string keys).
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// 200 with `value`.
pub fn ok<T: Serialize>(value: &T) -> Response {
    json(StatusCode::OK, value)
}

/// 200 Ack: `{"status": 200, "success": true}`.
pub fn ack() -> Response {
    ok(&json!({"status": 200, "success": true}))
}
