//! The operations listener of services without an API of their own (evaluator, forwarder,
//! ingestor): `GET /healthz` and `GET /metrics`.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use warp::http::StatusCode;
use warp::{Filter, Reply};

use crate::Shutdown;

/// Health of a service: healthy or not, and the parts as JSON.
pub type HealthCheck = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = (bool, Value)> + Send>> + Send + Sync>;

/// Binds `addr` and serves `/healthz` from `health` and `/metrics` from the process recorder
/// until `shutdown`. Returns the bound address.
pub async fn serve(addr: SocketAddr, health: HealthCheck, shutdown: Shutdown) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let handle = crate::metrics::handle();
    let healthz = warp::path!("healthz").and(warp::get()).then(move || {
        let health = health.clone();
        async move {
            let (ok, body) = health().await;
            let status = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
            warp::reply::with_status(warp::reply::json(&body), status).into_response()
        }
    });
    let metrics = warp::path!("metrics").and(warp::get()).map(move || {
        warp::reply::with_header(handle.render(), "content-type", "text/plain; version=0.0.4").into_response()
    });
    let routes = healthz.or(metrics).unify().boxed();
    tokio::spawn(async move {
        warp::serve(routes).incoming(listener).graceful(async move { shutdown.cancelled().await }).run().await;
    });
    tracing::info!(addr = %bound, "health and metrics listening");
    Ok(bound)
}
