//! Tokens, the OpenAPI document, health and metrics.

use bytes::Bytes;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use warp::http::{HeaderMap, header};
use warp::reply::Response;
use zonecast_ingest::AcceptError;

use crate::context::Context;
use crate::error::ApiError;
use crate::{body, reply};

/// The body of `POST /v3/auth/token` (as JSON; an OAuth2 form with the same fields is taken
/// too). Unknown fields are ignored.
#[derive(JsonSchema)]
pub struct TokenRequest {
    /// Always `client_credentials`.
    #[schemars(with = "String", extend("const" = "client_credentials"))]
    grant_type: GrantType,
    /// The client's id.
    #[schemars(length(min = 1))]
    auth_id: String,
    /// The client's secret.
    #[schemars(length(min = 1), extend("writeOnly" = true))]
    auth_secret: String,
}

/// The OAuth2 grant types a token is issued for.
enum GrantType {
    /// A client's id and secret.
    ClientCredentials,
}

impl TokenRequest {
    /// Reads the fields in order, `grant_type` checked before the credentials: each must be a
    /// non-empty string.
    fn read(request: &Value) -> Result<Self, ApiError> {
        let field = |name: &str| -> Result<String, ApiError> {
            match request.get(name) {
                Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                Some(Value::String(_)) | None | Some(Value::Null) => {
                    Err(ApiError::Invalid(format!("{name}: is required")))
                }
                Some(_) => Err(ApiError::Invalid(format!("{name}: must be a string"))),
            }
        };
        let grant_type = match field("grant_type")?.as_str() {
            "client_credentials" => GrantType::ClientCredentials,
            other => {
                return Err(ApiError::Invalid(format!("grant_type: must be client_credentials, got '{other}'")));
            }
        };
        Ok(Self { grant_type, auth_id: field("auth_id")?, auth_secret: field("auth_secret")? })
    }
}

/// A bearer token.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "Token", deny_unknown_fields)]
pub struct TokenAnswer {
    /// Send it as `Authorization: Bearer <token>`.
    access_token: String,
    /// Always `Bearer`.
    #[schemars(extend("const" = "Bearer"))]
    token_type: &'static str,
    /// Seconds until it expires.
    expires_in: u64,
}

/// The OpenAPI 3.1 document of this listener.
#[derive(JsonSchema)]
#[schemars(rename = "OpenApi", transform = openapi_document)]
pub struct OpenApiDocument {}

fn openapi_document(schema: &mut schemars::Schema) {
    schema.insert("required".into(), serde_json::json!(["openapi", "info", "paths"]));
}

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
        body::object(body, &ctx.limits)?
    };
    let TokenRequest { grant_type, auth_id, auth_secret } = TokenRequest::read(&request)?;
    let (token, expires_in) = match grant_type {
        GrantType::ClientCredentials => ctx.auth.issue_token(&auth_id, &auth_secret)?,
    };
    Ok(reply::ok(&TokenAnswer { access_token: token, token_type: "Bearer", expires_in }))
}

/// `POST /v3/positions` (all-in-one): answered per element; 503 when the bus cannot take them.
pub async fn positions(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let Some(publisher) = &ctx.positions else {
        return Err(ApiError::NotFound("no route /v3/positions".into()));
    };
    let outcome = publisher.accept(body, "http").await.map_err(refused)?;
    Ok(reply::ok(&outcome.answer()))
}

/// `GET /readyz` (and `/healthz`): the store and the bus, as every listener answers it.
pub async fn health(ctx: &Context) -> Response {
    ctx.health.ready().await
}

/// How the position input answers a payload it did not take: 400 when it is no JSON payload,
/// 503 with `Retry-After` when the pipeline is too far behind or the positions could not be
/// stored.
fn refused(e: AcceptError) -> ApiError {
    match e {
        AcceptError::Malformed(_) => ApiError::Malformed(e.to_string()),
        AcceptError::Publish(p) => ApiError::Unavailable(p.to_string()),
        AcceptError::Busy(behind) => ApiError::Overloaded(behind.to_string()),
    }
}
