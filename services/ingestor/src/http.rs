//! The ingestor's own listener: `POST /v3/positions` (write authority); `/livez`, `/readyz`
//! (alias `/healthz`) and `/metrics` without credentials.

use std::net::SocketAddr;
use std::sync::Arc;

use futures::Stream;
use warp::http::{HeaderMap, Method, StatusCode};
use warp::reply::Response;
use warp::{Buf, Filter};
use zonecast_ingest::{AcceptError, Publisher};
use zonecast_runtime::http::{BodyError, error_response, json_response, read_body};
use zonecast_runtime::{Auth, AuthError, Authority, HttpLimits, Shutdown};

struct Listener {
    auth: Arc<Auth>,
    publisher: Publisher,
    limits: HttpLimits,
}

async fn positions<S, B>(l: &Listener, headers: &HeaderMap, body: S) -> Response
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    if let Err(e) = l.auth.require(headers, Authority::Write) {
        return match e {
            AuthError::Forbidden(m) => error_response(StatusCode::FORBIDDEN, "forbidden", &m),
            other => error_response(StatusCode::UNAUTHORIZED, "unauthorized", &other.to_string()),
        };
    }
    let body = match read_body(body, l.limits.max_body_bytes, l.limits.body_timeout).await {
        Ok(b) => b,
        Err(e @ BodyError::TooLarge(_)) => {
            return error_response(StatusCode::PAYLOAD_TOO_LARGE, "malformed", &e.to_string());
        }
        Err(e @ BodyError::TimedOut(_)) => {
            return error_response(StatusCode::REQUEST_TIMEOUT, "malformed", &e.to_string());
        }
        Err(e) => return error_response(StatusCode::BAD_REQUEST, "malformed", &e.to_string()),
    };
    match l.publisher.accept(&body, "http").await {
        Ok(outcome) => json_response(StatusCode::OK, &outcome.answer()),
        Err(e @ AcceptError::Malformed(_)) => error_response(StatusCode::BAD_REQUEST, "malformed", &e.to_string()),
        Err(AcceptError::Publish(e)) => {
            tracing::warn!(error = %e, "positions refused: bus unavailable");
            error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the message bus is not connected; nothing was accepted",
            )
        }
    }
}

async fn respond<S, B>(l: Arc<Listener>, method: Method, path: String, headers: HeaderMap, body: S) -> Response
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let path = path.trim_end_matches('/');
    match (path, &method) {
        ("/v3/positions", &Method::POST) => positions(&l, &headers, body).await,
        // Liveness looks at nothing but the process: a bus outage is for readiness to report.
        ("/livez", &Method::GET) => json_response(StatusCode::OK, &serde_json::json!({"status": "ok"})),
        ("/readyz" | "/healthz", &Method::GET) => {
            let ok = l.publisher.ready();
            let status = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
            json_response(
                status,
                &serde_json::json!({"status": if ok { "ok" } else { "degraded" }, "bus": if ok { "ok" } else { "disconnected" }}),
            )
        }
        ("/metrics", &Method::GET) => {
            let mut r = Response::new(zonecast_runtime::metrics::handle().render().into());
            r.headers_mut().insert("content-type", warp::http::HeaderValue::from_static("text/plain; version=0.0.4"));
            r
        }
        ("/v3/positions" | "/livez" | "/readyz" | "/healthz" | "/metrics", _) => {
            error_response(StatusCode::METHOD_NOT_ALLOWED, "not_found", &format!("method {method} is not allowed here"))
        }
        _ => error_response(StatusCode::NOT_FOUND, "not_found", &format!("no route {path}")),
    }
}

/// Binds `addr` and serves until `shutdown`; returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    auth: Arc<Auth>,
    publisher: Publisher,
    limits: HttpLimits,
    shutdown: Shutdown,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let state = Arc::new(Listener { auth, publisher, limits });
    let routes =
        warp::method().and(warp::path::full()).and(warp::header::headers_cloned()).and(warp::body::stream()).then(
            move |method: Method, path: warp::path::FullPath, headers: HeaderMap, body| {
                let state = state.clone();
                async move { respond(state, method, path.as_str().to_owned(), headers, body).await }
            },
        );
    tokio::spawn(zonecast_runtime::serve::run(listener, routes, limits, shutdown));
    tracing::info!(addr = %bound, "ingestor HTTP listening");
    Ok(bound)
}
