//! The operations listener: `GET /livez`, `GET /readyz` (and its alias `GET /healthz`) and
//! `GET /metrics`, without credentials. The evaluator and forwarder serve it on their only
//! address; the API and the all-in-one on `ZONECAST_OPS_ADDR` when set.

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

/// Binds `addr` and serves until `shutdown`: `/livez` answers 200 whenever the process serves
/// HTTP (a restart is the only cure for a process that does not); `/readyz` and `/healthz`
/// answer from `health` (200, or 503 while a dependency is away: take it out of rotation, do
/// not restart it); `/metrics` renders the process recorder. Returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    health: HealthCheck,
    limits: crate::HttpLimits,
    shutdown: Shutdown,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let handle = crate::metrics::handle();
    let livez = warp::path!("livez")
        .and(warp::get())
        .map(|| warp::reply::json(&serde_json::json!({"status": "ok"})).into_response());
    let readyz = warp::path!("readyz").or(warp::path!("healthz")).unify().and(warp::get()).then(move || {
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
    let routes = livez.or(readyz).unify().or(metrics).unify().boxed();
    tokio::spawn(crate::serve::run(listener, routes, limits, shutdown));
    tracing::info!(addr = %bound, "operations listener (livez, readyz, metrics) listening");
    Ok(bound)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Status code of `GET path` on `addr`, over a bare HTTP/1.0 exchange.
    async fn status(addr: SocketAddr, path: &str) -> u16 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: ops\r\n\r\n").as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("no status: {answer}"))
    }

    #[tokio::test]
    async fn liveness_holds_while_readiness_fails_on_an_unhealthy_dependency() {
        let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = ready.clone();
        let health: HealthCheck = Arc::new(move || {
            let ok = flag.load(std::sync::atomic::Ordering::SeqCst);
            Box::pin(async move { (ok, serde_json::json!({"bus": ok})) })
        });
        let shutdown = Shutdown::new();
        let addr = serve("127.0.0.1:0".parse().unwrap(), health, crate::HttpLimits::default(), shutdown.clone())
            .await
            .unwrap();
        assert_eq!(status(addr, "/livez").await, 200);
        assert_eq!(status(addr, "/readyz").await, 503);
        assert_eq!(status(addr, "/healthz").await, 503);
        ready.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(status(addr, "/readyz").await, 200);
        assert_eq!(status(addr, "/healthz").await, 200);
        assert_eq!(status(addr, "/metrics").await, 200);
        assert_eq!(status(addr, "/nothing").await, 404);
        shutdown.cancel();
    }
}
