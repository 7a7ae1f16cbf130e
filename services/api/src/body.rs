//! Request bodies (read within the limits by the HTTP edge) parsed as JSON of the type an
//! operation takes.

use bytes::Bytes;
use serde_json::Value;
use zonecast_model::Limits;

use crate::error::ApiError;
use crate::json_bounds::Bounds;

/// The body as JSON; 400 when it is empty or not JSON, 413 when it holds more than the API
/// `limits` let through (see [`crate::json_bounds`]), found before anything is built from it.
pub fn json(body: &Bytes, limits: &Limits) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::Malformed("request body is empty; this operation takes JSON".into()));
    }
    crate::json_bounds::check(body, Bounds::of(limits)).map_err(|e| ApiError::TooComplex(e.to_string()))?;
    serde_json::from_slice(body).map_err(|e| ApiError::Malformed(format!("request body is not valid JSON: {e}")))
}

/// The body as a JSON object; 400 otherwise.
pub fn object(body: &Bytes, limits: &Limits) -> Result<Value, ApiError> {
    let v = json(body, limits)?;
    if v.is_object() { Ok(v) } else { Err(ApiError::Malformed("request body must be a JSON object".into())) }
}

/// The body as a JSON array; 400 otherwise.
pub fn array(body: &Bytes, limits: &Limits) -> Result<Vec<Value>, ApiError> {
    match json(body, limits)? {
        Value::Array(items) => Ok(items),
        _ => Err(ApiError::Malformed("request body must be a JSON array".into())),
    }
}
