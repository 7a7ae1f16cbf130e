//! The HTTP edge every listener shares (config API, ingestor, operations listener): a request
//! is looked up in the listener's route table (404, or 405 with `Allow`), its credentials are
//! checked against the route's authority (401/403), its body is read within the limits
//! (413/408), and only then does the listener's own dispatch run; every failure becomes its
//! answer through the one mapping of [`HttpError`].

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::Stream;
use warp::http::{HeaderMap, Method};
use warp::reply::Response;
use warp::{Buf, Filter};

use crate::cors::Cors;
use crate::http::{HttpError, read_body};
use crate::routes::{Lookup, Route, lookup};
use zonecast_runtime::{HttpLimits, Shutdown, StartError};

use crate::Auth;

/// A listener: its routes, its credentials and limits, and what its operations do.
pub trait Listener: Send + Sync + 'static {
    /// The listener's operations.
    type Op: Copy + Send + Sync + 'static;

    /// The routes it answers.
    fn routes(&self) -> &[Route<Self::Op>];

    /// Credential checks; `None` for a listener whose routes are all open.
    fn auth(&self) -> Option<&Auth>;

    /// Body size and time limits.
    fn limits(&self) -> &HttpLimits;

    /// Runs `op` with its path parameters, query string (empty when none), headers and body
    /// (already read).
    fn dispatch(
        &self,
        op: Self::Op,
        params: Vec<String>,
        query: String,
        headers: HeaderMap,
        body: Bytes,
    ) -> impl Future<Output = Result<Response, HttpError>> + Send;

    /// Whether `op` takes a token in the `access_token` query parameter when no credential
    /// header is sent ([`crate::Auth::require_query_token`]). No route does by default.
    fn takes_query_token(&self, _op: Self::Op) -> bool {
        false
    }

    /// The cross-origin rules of `op`, when a browser page of another origin may call it (its
    /// preflight `OPTIONS` is then answered too). None by default.
    fn cors(&self, _op: Self::Op) -> Option<&Cors> {
        None
    }

    /// Told of every answer: the operation id (`unmatched` without a route), the response and
    /// when the request came in. Nothing by default.
    fn answered(&self, _operation: &'static str, _response: &Response, _started: Instant) {}
}

fn find<'a, Op>(
    routes: &'a [Route<Op>],
    method: &Method,
    path: &str,
) -> Result<(&'a Route<Op>, Vec<String>), HttpError> {
    match lookup(routes, method, path) {
        Lookup::Found(route, params) => Ok((route, params)),
        Lookup::WrongMethod(allowed) => Err(HttpError::MethodNotAllowed {
            method: method.to_string(),
            allow: allowed.iter().map(Method::as_str).collect::<Vec<_>>().join(", "),
        }),
        Lookup::Missing => Err(HttpError::NotFound(format!("no route {path}"))),
    }
}

/// The `access_token` query parameter, when there is one.
fn query_token(query: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "access_token").map(|(_, v)| v.into_owned())
}

/// Answers one request on `listener`.
pub async fn answer<L, S, B>(
    listener: &L,
    method: Method,
    path: &str,
    query: String,
    headers: HeaderMap,
    body: S,
) -> Response
where
    L: Listener,
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let started = Instant::now();
    // A browser's preflight for a route open to other origins; any other OPTIONS is a method
    // the path does not take.
    if method == Method::OPTIONS
        && let Lookup::Found(route, _) = lookup(listener.routes(), &Method::GET, path)
        && let Some(cors) = listener.cors(route.op)
    {
        let response = cors.preflight(&headers);
        listener.answered(route.id, &response, started);
        return response;
    }
    // For a route open to other origins: whether this request's origin is one of them.
    let mut cors: Option<Option<warp::http::HeaderValue>> = None;
    let (operation, result) = match find(listener.routes(), &method, path) {
        Err(e) => ("unmatched", Err(e)),
        Ok((route, params)) => {
            cors = listener.cors(route.op).map(|c| c.allowed(&headers).cloned());
            let outcome = async {
                if let (Some(needed), Some(auth)) = (route.authority, listener.auth()) {
                    match query_token(&query) {
                        Some(token)
                            if listener.takes_query_token(route.op) && !Auth::has_credential_header(&headers) =>
                        {
                            auth.require_query_token(&token, needed)?
                        }
                        _ => auth.require(&headers, needed)?,
                    };
                }
                let limits = listener.limits();
                let length = headers
                    .get(warp::http::header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok());
                let body = read_body(body, length, limits.max_body_bytes, limits.body_timeout).await?;
                listener.dispatch(route.op, params, query, headers, body).await
            }
            .await;
            (route.id, outcome)
        }
    };
    let mut response = result.unwrap_or_else(HttpError::into_response);
    if let Some(origin) = cors {
        Cors::decorate(&mut response, origin);
    }
    listener.answered(operation, &response, started);
    response
}

/// The warp filter answering every request through `listener`. Its only rejection is a body
/// already taken, which cannot happen here.
pub fn filter<L: Listener>(
    listener: Arc<L>,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone + Send + Sync + 'static {
    let query = warp::query::raw().or(warp::any().map(String::new)).unify();
    warp::method()
        .and(warp::path::full())
        .and(query)
        .and(warp::header::headers_cloned())
        .and(warp::body::stream())
        .then(move |method: Method, path: warp::path::FullPath, query: String, headers: HeaderMap, body| {
            let listener = listener.clone();
            async move { answer(listener.as_ref(), method, path.as_str(), query, headers, body).await }
        })
}

/// Binds `addr`, reporting the address in the error.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, StartError> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| StartError::new("listener", format!("{addr}: {e}")))
}

/// Serves `listener` on `socket` until `shutdown`, then lets open requests finish.
pub async fn serve<L: Listener>(socket: tokio::net::TcpListener, listener: Arc<L>, shutdown: Shutdown) {
    let limits = *listener.limits();
    crate::serve::run(socket, filter(listener), limits, shutdown).await;
}
