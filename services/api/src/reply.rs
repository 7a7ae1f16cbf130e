//! JSON responses.

use schemars::JsonSchema;
use serde::Serialize;
use warp::http::StatusCode;
use warp::reply::Response;

pub use zonecast_http::http::json_response as json;

/// The answer of an operation that returns no resource: `{"status": 200, "success": true}`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Ack {
    /// Always 200.
    #[schemars(extend("const" = 200))]
    pub status: u16,
    /// Always true.
    #[schemars(extend("const" = true))]
    pub success: bool,
}

/// 200 with `value`.
pub fn ok<T: Serialize>(value: &T) -> Response {
    json(StatusCode::OK, value)
}

/// 200 Ack: `{"status": 200, "success": true}`.
pub fn ack() -> Response {
    ok(&Ack { status: 200, success: true })
}
