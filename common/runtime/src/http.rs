//! HTTP plumbing shared by the listeners (config API, ingestor): size-limited body reads and
//! JSON responses, including the error body `{"status", "success": false, "error", "message"}`.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use serde::Serialize;
use warp::Buf;
use warp::http::{HeaderValue, StatusCode, header};
use warp::reply::Response;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Larger than the limit (413).
    #[error("request body exceeds {0} bytes")]
    TooLarge(u64),
    /// The body did not arrive within the time allowed (408).
    #[error("request body did not arrive within {0:?}")]
    TimedOut(std::time::Duration),
    /// The connection failed mid-body (400).
    #[error("request body could not be read: {0}")]
    Broken(String),
}

/// Reads the whole body, refusing more than `limit` bytes without reading further, and a body
/// that has not arrived within `timeout` (a client that sent its head and stalls).
pub async fn read_body<S, B>(body: S, limit: u64, timeout: std::time::Duration) -> Result<Bytes, BodyError>
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    tokio::time::timeout(timeout, read_all(body, limit)).await.map_err(|_| BodyError::TimedOut(timeout))?
}

async fn read_all<S, B>(body: S, limit: u64) -> Result<Bytes, BodyError>
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let mut body = std::pin::pin!(body);
    let mut out = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(|e| BodyError::Broken(e.to_string()))?;
        if (out.len() + chunk.remaining()) as u64 > limit {
            return Err(BodyError::TooLarge(limit));
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            let n = part.len();
            out.extend_from_slice(part);
            chunk.advance(n);
        }
    }
    Ok(out.freeze())
}

/// `value` as a JSON response with `status`.
pub fn json_response<T: Serialize>(status: StatusCode, value: &T) -> Response {
    // Our response types serialise without fail (no maps with non-string keys).
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The error body every failed request gets: `{"status", "success": false, "error", "message"}`.
pub fn error_response(status: StatusCode, kind: &str, message: &str) -> Response {
    json_response(
        status,
        &serde_json::json!({"status": status.as_u16(), "success": false, "error": kind, "message": message}),
    )
}
