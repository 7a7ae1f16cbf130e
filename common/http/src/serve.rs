//! The one HTTP serve loop every listener runs (config API, ingestor, operations listener):
//! warp's filters on hyper, with the limits that keep a listener answering under hostile
//! clients: a cap on open connections, and a deadline for each request's head, so idle and
//! half-sent connections are closed instead of piling up until file descriptors run out.

use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use warp::{Filter, Reply};

use zonecast_runtime::{HttpLimits, Shutdown};

/// Serves `filter` on `listener` within `limits` until `shutdown`, then lets the open
/// requests finish.
pub async fn run<F, R>(listener: TcpListener, filter: F, limits: HttpLimits, shutdown: Shutdown)
where
    F: Filter<Extract = (R,), Error = warp::Rejection> + Clone + Send + Sync + 'static,
    F::Future: Send,
    R: Reply,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    loop {
        // A free slot first: at the cap, connections wait in the backlog rather than be
        // accepted and held open without being served.
        let slot = tokio::select! {
            () = shutdown.cancelled() => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors or similar: pause rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(warp::service(filter.clone()));
        // HTTP/1.1 only: a listener that sniffs for HTTP/2 waits for the first bytes without
        // any deadline, so an idle client would never be closed.
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection closed with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
