//! Tokens, the OpenAPI document, health and metrics.

use bytes::Bytes;
use serde_json::{Value, json};
use warp::http::{HeaderMap, HeaderValue, StatusCode, header};
use warp::reply::Response;

use crate::context::Context;
use crate::error::ApiError;
use crate::{body, reply};

/// `POST /v3/auth/token`: client credentials as JSON or as an OAuth2 form body.
pub fn token(ctx: &Context, headers: &HeaderMap, body: &Bytes) -> Result<Response, ApiError> {
    // OAuth2 clients send a form; others JSON. Go by the body itself, since tools such as
    // `curl -d` label JSON as a form.
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
        && !body.trim_ascii_start().starts_with(b"{");
    let request: Value = if is_form {
        Value::Object(
            url::form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect(),
        )
    } else {
        body::object(body)?
    };
    let field = |name: &str| -> Result<String, ApiError> {
        match request.get(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            Some(Value::String(_)) | None | Some(Value::Null) => Err(ApiError::Invalid(format!("{name}: is required"))),
            Some(_) => Err(ApiError::Invalid(format!("{name}: must be a string"))),
        }
    };
    let grant = field("grant_type")?;
    if grant != "client_credentials" {
        return Err(ApiError::Invalid(format!("grant_type: must be client_credentials, got '{grant}'")));
    }
    let (token, expires_in) = ctx.auth.issue_token(&field("auth_id")?, &field("auth_secret")?)?;
    Ok(reply::ok(&json!({"access_token": token, "token_type": "Bearer", "expires_in": expires_in})))
}

/// `GET /v3/openapi.json`: the routes this listener answers.
pub fn openapi(ctx: &Context) -> Response {
    reply::ok(&crate::openapi::document(ctx.routes()))
}

/// `POST /v3/positions` (all-in-one): answered per element; 503 when the bus cannot take them.
pub async fn positions(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let Some(publisher) = &ctx.positions else {
        return Err(ApiError::NotFound("no route /v3/positions".into()));
    };
    let outcome = publisher.accept(body, "http").await.map_err(|e| match e {
        zonecast_ingest::AcceptError::Malformed(_) => ApiError::Malformed(e.to_string()),
        zonecast_ingest::AcceptError::Publish(p) => ApiError::Unavailable(p.to_string()),
    })?;
    Ok(reply::ok(&outcome.answer()))
}

/// `GET /livez`: 200 whenever the process serves HTTP; it looks at no dependency, so a
/// database or bus outage never gets healthy replicas restarted.
pub fn live() -> Response {
    reply::json(StatusCode::OK, &json!({"status": "ok"}))
}

/// `GET /readyz` (and `/healthz`): 200 when the store answers and the bus is connected, else 503.
pub async fn health(ctx: &Context) -> Response {
    let store = match ctx.store.ping().await {
        Ok(()) => "ok".to_owned(),
        Err(e) => {
            tracing::warn!(error = %e, "health: store unavailable");
            "unavailable".to_owned()
        }
    };
    let bus = if ctx.bus.is_connected() { "ok" } else { "disconnected" };
    let healthy = store == "ok" && bus == "ok";
    let status = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    reply::json(
        status,
        &json!({
            "status": if healthy { "ok" } else { "degraded" },
            "store": {"kind": ctx.store.kind(), "status": store},
            "bus": {"kind": ctx.bus.kind(), "status": bus},
        }),
    )
}

/// `GET /metrics`: Prometheus text exposition.
pub fn metrics(ctx: &Context) -> Response {
    let mut response = Response::new(ctx.metrics.render().into());
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
    response
}
