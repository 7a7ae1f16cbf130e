//! HTTP plumbing shared by the listeners (config API, ingestor): size-limited body reads, JSON
//! responses, and the one mapping from failures to HTTP ([`HttpError`]): status, error kind
//! and a message that names what and where, in the body `{"status", "success": false,
//! "error", "message"}`. 5xx bodies are opaque; their cause is logged once, here.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use serde::Serialize;
use warp::Buf;
use warp::http::{HeaderValue, StatusCode, header};
use warp::reply::Response;
use zonecast_model::Invalid;
use zonecast_runtime::ratelog::RateLimited;
use zonecast_store::StoreError;

use crate::AuthError;

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
/// that has not arrived within `timeout` (a client that sent its head and stalls). A body whose
/// announced `length` (its `Content-Length`) is within the limit is read into a buffer of that
/// size: growing one by doubling would hold up to three times the body while it copies.
pub async fn read_body<S, B>(
    body: S,
    length: Option<u64>,
    limit: u64,
    timeout: std::time::Duration,
) -> Result<Bytes, BodyError>
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    // A longer one is still read up to the limit: refused unread, its client would see the
    // connection close while it sends, not the 413.
    let capacity = length.filter(|&n| n <= limit).and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
    tokio::time::timeout(timeout, read_all(body, capacity, limit)).await.map_err(|_| BodyError::TimedOut(timeout))?
}

async fn read_all<S, B>(body: S, capacity: usize, limit: u64) -> Result<Bytes, BodyError>
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let mut body = std::pin::pin!(body);
    // The server holds the body to the length it announced, so no more than this is read.
    let mut out = BytesMut::with_capacity(capacity);
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

/// The body every failed request gets.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(rename = "Error", deny_unknown_fields)]
pub struct ErrorBody<'a> {
    /// The HTTP status, repeated.
    #[schemars(range(min = 400, max = 599))]
    pub status: u16,
    /// Always false.
    #[schemars(extend("const" = false))]
    pub success: bool,
    /// The kind of failure.
    #[schemars(schema_with = "error_kinds")]
    pub error: &'a str,
    /// What is wrong and where, e.g. `GeometryData[1]: radius must be > 0`.
    pub message: &'a str,
}

/// Every `error` kind [`HttpError::status_and_kind`] gives.
fn error_kinds(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": HttpError::KINDS})
}

/// The error body every failed request gets: `{"status", "success": false, "error", "message"}`.
pub fn error_response(status: StatusCode, kind: &str, message: &str) -> Response {
    json_response(status, &ErrorBody { status: status.as_u16(), success: false, error: kind, message })
}

/// Every way a request can fail, as the client sees it.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// 400: the body is not JSON, or not the JSON type the operation takes.
    #[error("{0}")]
    Malformed(String),
    /// 413: the body is larger than the configured limit (error kind `malformed`).
    #[error("request body exceeds {0} bytes")]
    TooLarge(u64),
    /// 413: the body holds longer lists, more values or deeper nesting than any operation takes
    /// (error kind `malformed`); the message names the list.
    #[error("request body too large: {0}")]
    TooComplex(String),
    /// 408: the body did not arrive within the body timeout (error kind `malformed`).
    #[error("{0}")]
    TimedOut(String),
    /// 401: missing or bad credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: valid credentials with too little authority.
    #[error("{0}")]
    Forbidden(String),
    /// 404: unknown ID or route.
    #[error("{0}")]
    NotFound(String),
    /// 405: known path, other method (error kind `not_found`, with an `Allow` header).
    #[error("method {method} is not allowed here (allowed: {allow})")]
    MethodNotAllowed {
        /// The method used.
        method: String,
        /// The methods the path takes.
        allow: String,
    },
    /// 409: the item is in a state the operation cannot start from (an alarm acknowledged
    /// twice); nothing changed.
    #[error("{0}")]
    Conflict(String),
    /// 412: an `If-Match` header names another version than the zone is at now.
    #[error("{0}")]
    PreconditionFailed(String),
    /// 422: types, ranges, references, geometry.
    #[error("{0}")]
    Invalid(String),
    /// 503: the store or bus cannot be reached; the cause is logged.
    #[error("service unavailable")]
    Unavailable(String),
    /// 503 with `Retry-After`: the pipeline is further behind than it may be; nothing was
    /// taken, and the same request is welcome again shortly.
    #[error("{0}")]
    Overloaded(String),
    /// 500: anything else; the cause is logged.
    #[error("internal error")]
    Internal(String),
}

impl From<Invalid> for HttpError {
    fn from(e: Invalid) -> Self {
        Self::Invalid(e.to_string())
    }
}

impl From<AuthError> for HttpError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Unauthorized(m) => Self::Unauthorized(m),
            AuthError::Forbidden(m) => Self::Forbidden(m),
            AuthError::Internal => Self::Internal("token could not be issued".into()),
        }
    }
}

impl From<BodyError> for HttpError {
    fn from(e: BodyError) -> Self {
        match e {
            BodyError::TooLarge(n) => Self::TooLarge(n),
            BodyError::TimedOut(_) => Self::TimedOut(e.to_string()),
            BodyError::Broken(_) => Self::Malformed(e.to_string()),
        }
    }
}

impl From<StoreError> for HttpError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { .. } => Self::NotFound(e.to_string()),
            StoreError::InUse { .. } | StoreError::Reference { .. } | StoreError::Full { .. } => {
                Self::Invalid(e.to_string())
            }
            // Reached only when a write kept losing to concurrent ones for its whole retry time.
            StoreError::Conflict { .. } => Self::Unavailable(e.to_string()),
            StoreError::Unavailable(cause) => Self::Unavailable(cause),
            StoreError::Backend(cause) => Self::Internal(cause),
            // Collision writes only: no request answers with it.
            StoreError::Fenced { .. } => Self::Internal(e.to_string()),
        }
    }
}

/// How often a request failing on an unavailable dependency is logged.
const UNAVAILABLE_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// What a 503 (overloaded, or a dependency away) asks a client to wait, in seconds (`Retry-After`).
pub const RETRY_AFTER_SECS: &str = "1";

impl HttpError {
    /// Every `error` kind of the body, in the order of [`HttpError::status_and_kind`].
    pub const KINDS: [&'static str; 9] = [
        "malformed",
        "unauthorized",
        "forbidden",
        "not_found",
        "conflict",
        "precondition_failed",
        "invalid_data",
        "unavailable",
        "internal",
    ];

    /// HTTP status and the `error` kind of the body.
    pub fn status_and_kind(&self) -> (StatusCode, &'static str) {
        match self {
            Self::Malformed(_) => (StatusCode::BAD_REQUEST, "malformed"),
            Self::TooLarge(_) | Self::TooComplex(_) => (StatusCode::PAYLOAD_TOO_LARGE, "malformed"),
            Self::TimedOut(_) => (StatusCode::REQUEST_TIMEOUT, "malformed"),
            Self::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Self::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Self::MethodNotAllowed { .. } => (StatusCode::METHOD_NOT_ALLOWED, "not_found"),
            Self::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            Self::PreconditionFailed(_) => (StatusCode::PRECONDITION_FAILED, "precondition_failed"),
            Self::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_data"),
            Self::Unavailable(_) | Self::Overloaded(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }

    /// The response: `{"status", "success": false, "error", "message"}`, with `Allow` on 405,
    /// `WWW-Authenticate: Bearer` on 401 and `Retry-After` on every 503.
    pub fn into_response(self) -> Response {
        let (status, kind) = self.status_and_kind();
        // While a dependency is away every request fails the same way: one line per interval,
        // with the count held back, rather than one per request.
        static UNAVAILABLE_LOG: std::sync::Mutex<RateLimited> =
            std::sync::Mutex::new(RateLimited::new(UNAVAILABLE_LOG_EVERY));
        match &self {
            Self::Unavailable(cause) => {
                let mut log = UNAVAILABLE_LOG.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(held_back) = log.allow() {
                    tracing::warn!(%cause, held_back, "request failed: dependency unavailable");
                }
            }
            Self::Internal(cause) => tracing::error!(%cause, "request failed"),
            _ => {}
        }
        let mut response = error_response(status, kind, &self.to_string());
        if let Self::MethodNotAllowed { allow, .. } = &self
            && let Ok(value) = allow.parse()
        {
            response.headers_mut().insert(header::ALLOW, value);
        }
        if let Self::Unauthorized(_) = &self {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        // Overloaded or a dependency away: either way the client may try again shortly.
        if let Self::Overloaded(_) | Self::Unavailable(_) = &self {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        response
    }
}
