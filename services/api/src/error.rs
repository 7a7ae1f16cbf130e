//! The one mapping from failures to HTTP: status, error kind and a message that names what
//! and where. 5xx bodies are opaque; their cause is logged once, here.

use warp::http::StatusCode;
use zonecast_model::Invalid;
use zonecast_store::StoreError;

/// Every way an API request can fail.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
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
    /// 412: an `If-Match` header names another version than the zone is at now.
    #[error("{0}")]
    PreconditionFailed(String),
    /// 422: types, ranges, references, geometry.
    #[error("{0}")]
    Invalid(String),
    /// 503: the store or bus cannot be reached; the cause is logged.
    #[error("service unavailable")]
    Unavailable(String),
    /// 500: anything else; the cause is logged.
    #[error("internal error")]
    Internal(String),
}

impl From<Invalid> for ApiError {
    fn from(e: Invalid) -> Self {
        Self::Invalid(e.to_string())
    }
}

impl From<zonecast_runtime::AuthError> for ApiError {
    fn from(e: zonecast_runtime::AuthError) -> Self {
        match e {
            zonecast_runtime::AuthError::Unauthorized(m) => Self::Unauthorized(m),
            zonecast_runtime::AuthError::Forbidden(m) => Self::Forbidden(m),
            zonecast_runtime::AuthError::Internal => Self::Internal("token could not be issued".into()),
        }
    }
}

impl From<StoreError> for ApiError {
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
        }
    }
}

impl ApiError {
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
            Self::PreconditionFailed(_) => (StatusCode::PRECONDITION_FAILED, "precondition_failed"),
            Self::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_data"),
            Self::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }

    /// The response: `{"status", "success": false, "error", "message"}`.
    pub fn into_response(self) -> warp::reply::Response {
        let (status, kind) = self.status_and_kind();
        match &self {
            Self::Unavailable(cause) => tracing::warn!(%cause, "request failed: dependency unavailable"),
            Self::Internal(cause) => tracing::error!(%cause, "request failed"),
            _ => {}
        }
        let mut response = zonecast_runtime::http::error_response(status, kind, &self.to_string());
        if let Self::MethodNotAllowed { allow, .. } = &self
            && let Ok(value) = allow.parse()
        {
            response.headers_mut().insert(warp::http::header::ALLOW, value);
        }
        if let Self::Unauthorized(_) = &self {
            response
                .headers_mut()
                .insert(warp::http::header::WWW_AUTHENTICATE, warp::http::HeaderValue::from_static("Bearer"));
        }
        response
    }
}
