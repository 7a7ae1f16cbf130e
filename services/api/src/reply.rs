//! JSON responses.

use serde::Serialize;
use serde_json::json;
use warp::http::StatusCode;
use warp::reply::Response;

pub use zonecast_runtime::http::json_response as json;

/// 200 with `value`.
pub fn ok<T: Serialize>(value: &T) -> Response {
    json(StatusCode::OK, value)
}

/// 200 Ack: `{"status": 200, "success": true}`.
pub fn ack() -> Response {
    ok(&json!({"status": 200, "success": true}))
}
