//! Request bodies: read with a size limit, then parsed as JSON of the type an operation takes.

use bytes::Bytes;
use futures::Stream;
use serde_json::Value;
use warp::Buf;
use zonecast_runtime::HttpLimits;
use zonecast_runtime::http::BodyError;

use crate::error::ApiError;

/// Reads the whole body within `limits`: more bytes than the limit is 413 (without reading
/// further), a body that does not arrive in time 408.
pub async fn read<S, B>(body: S, limits: &HttpLimits) -> Result<Bytes, ApiError>
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    zonecast_runtime::http::read_body(body, limits.max_body_bytes, limits.body_timeout).await.map_err(|e| match e {
        BodyError::TooLarge(n) => ApiError::TooLarge(n),
        BodyError::TimedOut(_) => ApiError::TimedOut(e.to_string()),
        BodyError::Broken(_) => ApiError::Malformed(e.to_string()),
    })
}

/// The body as JSON; 400 when it is empty or not JSON, 413 when it holds more than the API
/// ever takes (see [`crate::json_bounds`]), found before anything is built from it.
pub fn json(body: &Bytes) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::Malformed("request body is empty; this operation takes JSON".into()));
    }
    crate::json_bounds::check(body).map_err(|e| ApiError::TooComplex(e.to_string()))?;
    serde_json::from_slice(body).map_err(|e| ApiError::Malformed(format!("request body is not valid JSON: {e}")))
}

/// The body as a JSON object; 400 otherwise.
pub fn object(body: &Bytes) -> Result<Value, ApiError> {
    let v = json(body)?;
    if v.is_object() { Ok(v) } else { Err(ApiError::Malformed("request body must be a JSON object".into())) }
}

/// The body as a JSON array; 400 otherwise.
pub fn array(body: &Bytes) -> Result<Vec<Value>, ApiError> {
    match json(body)? {
        Value::Array(items) => Ok(items),
        _ => Err(ApiError::Malformed("request body must be a JSON array".into())),
    }
}
