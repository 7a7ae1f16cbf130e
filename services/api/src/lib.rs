//! zonecast config API: the 22 zone and MQTT operations of the specification plus lock/unlock, deletes,
//! connection status, tokens, OpenAPI, health and metrics, over warp. Stateless: it writes the
//! store and announces every change on `<prefix>.config.changed`.

mod body;
mod context;
pub mod error;
mod handlers;
mod json_bounds;
pub mod openapi;
mod reply;
pub mod routes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use futures::Stream;
use warp::http::{HeaderMap, Method};
use warp::{Buf, Filter};
use zonecast_runtime::{Config, Keys, Shutdown, StartError};

pub use context::Context;
pub use error::ApiError;

use crate::routes::{Lookup, Route, lookup};

/// The warp filter answering every request through the route table.
/// Its only rejection is a body already taken, which cannot happen here.
pub fn filter(ctx: Arc<Context>) -> impl Filter<Extract = (warp::reply::Response,), Error = warp::Rejection> + Clone {
    warp::method().and(warp::path::full()).and(warp::header::headers_cloned()).and(warp::body::stream()).then(
        move |method: Method, path: warp::path::FullPath, headers: HeaderMap, body| {
            let ctx = ctx.clone();
            async move { respond(ctx, method, path.as_str().to_owned(), headers, body).await }
        },
    )
}

async fn respond<S, B>(
    ctx: Arc<Context>,
    method: Method,
    path: String,
    headers: HeaderMap,
    body: S,
) -> warp::reply::Response
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let started = Instant::now();
    let (operation, result) = match find(&ctx, &method, &path) {
        Err(e) => ("unmatched", Err(e)),
        Ok((route, params)) => {
            let outcome = async {
                authorize(&ctx, route, &headers)?;
                let body = body::read(body, &ctx.limits).await?;
                handlers::dispatch(&ctx, route.op, &params, &headers, body).await
            }
            .await;
            (route.id, outcome)
        }
    };
    let response = result.unwrap_or_else(ApiError::into_response);
    let status = response.status().as_u16().to_string();
    metrics::counter!("zonecast_api_requests_total", "operation" => operation, "status" => status).increment(1);
    metrics::histogram!("zonecast_api_request_seconds", "operation" => operation)
        .record(started.elapsed().as_secs_f64());
    response
}

fn find<'a>(ctx: &'a Context, method: &Method, path: &str) -> Result<(&'a Route, Vec<String>), ApiError> {
    match lookup(ctx.routes(), method, path) {
        Lookup::Found(route, params) => Ok((route, params)),
        Lookup::WrongMethod(allowed) => Err(ApiError::MethodNotAllowed {
            method: method.to_string(),
            allow: allowed.iter().map(Method::as_str).collect::<Vec<_>>().join(", "),
        }),
        Lookup::Missing => Err(ApiError::NotFound(format!("no route {path}"))),
    }
}

fn authorize(ctx: &Context, route: &Route, headers: &HeaderMap) -> Result<(), ApiError> {
    if let Some(needed) = route.authority {
        ctx.auth.require(headers, needed)?;
    }
    Ok(())
}

/// Serves `ctx` on `listener` until `shutdown`; in-flight requests finish first.
pub async fn serve(ctx: Arc<Context>, listener: tokio::net::TcpListener, shutdown: Shutdown) {
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    tracing::info!(%addr, "config API listening");
    let limits = ctx.limits;
    zonecast_runtime::serve::run(listener, filter(ctx), limits, shutdown).await;
    tracing::info!("config API stopped");
}

/// Binds `addr`, reporting a clear error instead of warp's panic.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, StartError> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| StartError::new("listener", format!("{addr}: {e}")))
}

/// Starts the operations listener on `ZONECAST_OPS_ADDR` when configured: `/livez`,
/// `/readyz` (store and bus), `/healthz` and `/metrics` without credentials, so probes and
/// Prometheus need no API key while `/metrics` on the API listener keeps needing read
/// authority. Returns its bound address.
pub async fn serve_ops(
    config: &Config,
    store: Arc<dyn zonecast_store::Store>,
    bus: Arc<dyn zonecast_bus::Bus>,
    shutdown: Shutdown,
) -> Result<Option<SocketAddr>, StartError> {
    let Some(addr) = config.ops_addr else { return Ok(None) };
    let health: zonecast_runtime::ops::HealthCheck = Arc::new(move || {
        let (store, bus) = (store.clone(), bus.clone());
        Box::pin(async move {
            let store_ok = store.ping().await.is_ok();
            let bus_ok = bus.is_connected();
            let status = |ok: bool, bad: &str| if ok { "ok".to_owned() } else { bad.to_owned() };
            let body = serde_json::json!({
                "status": status(store_ok && bus_ok, "degraded"),
                "store": {"kind": store.kind(), "status": status(store_ok, "unavailable")},
                "bus": {"kind": bus.kind(), "status": status(bus_ok, "disconnected")},
            });
            (store_ok && bus_ok, body)
        })
    });
    let bound = zonecast_runtime::ops::serve(addr, health, zonecast_runtime::HttpLimits::of(config), shutdown)
        .await
        .map_err(|e| StartError::new("operations listener", format!("{addr}: {e}")))?;
    Ok(Some(bound))
}

/// A started API: where it listens and the task serving it.
pub struct Running {
    /// Bound address (useful with port 0).
    pub addr: SocketAddr,
    /// Bound address of the operations listener, when `ZONECAST_OPS_ADDR` is set.
    pub ops_addr: Option<SocketAddr>,
    /// Ends after shutdown, when in-flight requests are done and the bus is drained.
    pub task: tokio::task::JoinHandle<()>,
}

/// Starts the distributed `zonecast-api`: PostgreSQL (`ZONECAST_DATABASE_URL`, required),
/// NATS (`ZONECAST_NATS_URL`, required) and the shared `ZONECAST_SECRET_KEY`.
pub async fn start(config: Config, shutdown: Shutdown) -> Result<Running, StartError> {
    let required = |value: &Option<zonecast_runtime::Secret>, name: &str| {
        value.clone().ok_or_else(|| StartError::new("config", format!("{name} is required for zonecast-api")))
    };
    let database_url = required(&config.database_url, "ZONECAST_DATABASE_URL")?;
    let nats_url = required(&config.nats_url, "ZONECAST_NATS_URL")?;
    let secret =
        required(&config.secret_key, "ZONECAST_SECRET_KEY (base64 of 32 random bytes, the same for every replica)")?;
    let keys = Arc::new(Keys::from_secret(&secret).map_err(|e| StartError::new("keys", e))?);
    if config.api_keys.is_empty() && config.clients.is_empty() {
        tracing::warn!("no ZONECAST_API_KEYS or ZONECAST_CLIENTS configured: every request will be refused");
    }
    let store = zonecast_store::open(Some(database_url.expose()), &config.data_dir)
        .await
        .map_err(|e| StartError::new("store", e.detail()))?;
    let bus =
        zonecast_bus::connect(Some(nats_url.expose()), "zonecast-api").await.map_err(|e| StartError::new("bus", e))?;
    let listener = bind(config.http_addr).await?;
    let addr = listener.local_addr().map_err(|e| StartError::new("listener", e))?;
    let ops_addr = serve_ops(&config, store.clone(), bus.clone(), shutdown.clone()).await?;
    let ctx = Arc::new(Context::new(&config, store, bus.clone(), keys));
    let task = tokio::spawn(async move {
        serve(ctx, listener, shutdown).await;
        if let Err(e) = bus.drain().await {
            tracing::warn!(error = %e, "bus drain failed");
        }
    });
    Ok(Running { addr, ops_addr, task })
}

/// Runs `zonecast-api` until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> Result<(), StartError> {
    let running = start(config, shutdown).await?;
    running.task.await.map_err(|e| StartError::new("api task", e))
}
