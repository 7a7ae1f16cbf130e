//! Health and metrics, one implementation for every listener: `GET /livez`, `GET /readyz`
//! (and its former name `GET /healthz`) and `GET /metrics`. The operations listener serves
//! them alone and without credentials: the evaluator and forwarder on their only address, the
//! API and the all-in-one on `ZONECAST_OPS_ADDR` when set. The API's and the ingestor's own
//! listeners answer the same routes through the same functions.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use schemars::JsonSchema;
use serde::Serialize;
use warp::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use warp::reply::Response;
use zonecast_bus::Bus;
use zonecast_bus::coverage::{Coverage, Unowned};
use zonecast_store::Health as StoreHealth;

use zonecast_runtime::service::{self, Needs, Opened};
use zonecast_runtime::{HttpConfig, HttpLimits, Running, Shutdown, StartError};

use crate::edge::Listener;
use crate::http::{HttpError, json_response};
use crate::routes::{Route, schema_of};

/// What a service's readiness depends on: its bus, its store if it has one, and for an
/// ingestor over NATS the evaluators following every partition.
#[derive(Clone)]
pub struct Health {
    store: Option<Arc<dyn StoreHealth>>,
    bus: Arc<dyn Bus>,
    /// Set once the service has started, when readiness waits for it.
    started: Option<Arc<AtomicBool>>,
    /// The partitions no evaluator follows, when readiness waits for them to be followed.
    coverage: Option<Coverage>,
}

/// How long partitions may go unfollowed, once every partition has been followed, before an
/// ingestor stops being ready: an evaluator's failover or hand-over takes less, and must not
/// take every ingestor out of rotation at once.
pub const UNOWNED_GRACE: Duration = Duration::from_secs(3);

impl Health {
    /// Readiness of a service on `bus` and, if it has one, `store`.
    pub fn new(store: Option<Arc<dyn StoreHealth>>, bus: Arc<dyn Bus>) -> Self {
        Self { store, bus, started: None, coverage: None }
    }

    /// The same readiness, also waiting for every partition to be followed: not ready until
    /// every partition has been, and not once some have not been for [`UNOWNED_GRACE`].
    pub fn with_coverage(self, coverage: Coverage) -> Self {
        Self { coverage: Some(coverage), ..self }
    }

    /// The same readiness, reported `starting` (503) until the returned flag is set: for an
    /// operations listener served while its service is still starting (loading its
    /// configuration, subscribing), so that nothing takes it for ready before it listens.
    pub fn until_started(self) -> (Self, Arc<AtomicBool>) {
        let started = Arc::new(AtomicBool::new(false));
        (Self { started: Some(started.clone()), ..self }, started)
    }

    /// `GET /livez`: 200 whenever the process serves HTTP; it looks at no dependency, so a
    /// database or bus outage never gets healthy replicas restarted.
    pub fn live() -> Response {
        json_response(StatusCode::OK, &Readiness { status: Status::Ok, store: None, bus: None, partitions: None })
    }

    /// `GET /readyz` (and `/healthz`): 200 when the store answers and the bus is connected,
    /// else 503 (take the replica out of rotation, do not restart it). The body names each
    /// dependency; a service without a store reports its bus alone.
    pub async fn ready(&self) -> Response {
        if self.started.as_ref().is_some_and(|s| !s.load(Ordering::Acquire)) {
            let body = Readiness { status: Status::Starting, store: None, bus: None, partitions: None };
            return json_response(StatusCode::SERVICE_UNAVAILABLE, &body);
        }
        let bus_ok = self.bus.is_connected();
        let bus_status = if bus_ok { DependencyStatus::Ok } else { DependencyStatus::Disconnected };
        let partitions = self.coverage.as_ref().map(|c| Partitions::of(&c.unowned()));
        let partitions_ok = partitions.as_ref().is_none_or(|p| matches!(p.status, PartitionStatus::Ok));
        let Some(store) = &self.store else {
            let healthy = bus_ok && partitions_ok;
            let status = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
            let body = Readiness {
                status: Status::of(healthy),
                store: None,
                bus: Some(BusReadiness::Alone(bus_status)),
                partitions,
            };
            return json_response(status, &body);
        };
        let store_ok = match store.ping().await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "health: store unavailable");
                false
            }
        };
        let healthy = store_ok && bus_ok && partitions_ok;
        let store_status = if store_ok { DependencyStatus::Ok } else { DependencyStatus::Unavailable };
        json_response(
            if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE },
            &Readiness {
                status: Status::of(healthy),
                store: Some(Dependency { kind: store.kind(), status: store_status }),
                bus: Some(BusReadiness::Named(Dependency { kind: self.bus.kind(), status: bus_status })),
                partitions,
            },
        )
    }

    /// `GET /metrics`: the process recorder in Prometheus's text exposition format.
    pub fn metrics() -> Response {
        let mut response = Response::new(zonecast_runtime::metrics::render().into());
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
        response
    }
}

/// The body of `/livez` (status alone) and `/readyz` (with each dependency).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "Health", deny_unknown_fields)]
pub struct Readiness {
    /// `ok`, or `degraded` when a dependency is not.
    pub status: Status,
    /// The store, for a service that has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<Dependency>,
    /// The bus (readiness only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bus: Option<BusReadiness>,
    /// Whether the evaluators follow every position partition (readiness of an ingestor over
    /// NATS only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<Partitions>,
}

/// Whether the evaluators follow every position partition.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Partitions {
    /// `ok`, or `unowned` when partitions have not been followed since the start, or for
    /// longer than the grace of a failover.
    pub status: PartitionStatus,
    /// The partitions no live evaluator follows now, ascending.
    pub unowned: Vec<u32>,
}

/// Whether the partitions count as followed.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PartitionStatus {
    /// Every partition is followed, or some have not been for less than the grace.
    Ok,
    /// Partitions no evaluator follows: their positions wait in the stream.
    Unowned,
}

impl Partitions {
    fn of(unowned: &Unowned) -> Self {
        let waited = unowned.since.is_some_and(|since| since.elapsed() >= UNOWNED_GRACE);
        let ok = unowned.partitions.is_empty() || (unowned.ever_covered && !waited);
        Self {
            status: if ok { PartitionStatus::Ok } else { PartitionStatus::Unowned },
            unowned: unowned.partitions.clone(),
        }
    }
}

/// Overall state.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Serving.
    Ok,
    /// A dependency is not ready.
    Degraded,
    /// The service has not finished starting (readiness only).
    Starting,
}

impl Status {
    fn of(healthy: bool) -> Self {
        if healthy { Self::Ok } else { Self::Degraded }
    }
}

/// State of one dependency.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DependencyStatus {
    /// Answers.
    Ok,
    /// The store does not answer.
    Unavailable,
    /// The bus is not connected.
    Disconnected,
}

/// A dependency: its kind (`postgres`, `sqlite`, `nats`, `in-process`) and state.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Dependency {
    /// Which implementation.
    pub kind: &'static str,
    /// Its state.
    pub status: DependencyStatus,
}

/// The bus: its state alone for a service without a store, else with its kind.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum BusReadiness {
    /// A service without a store.
    Alone(DependencyStatus),
    /// Beside a store.
    Named(Dependency),
}

/// The body of `/metrics`: Prometheus's text exposition format.
#[derive(JsonSchema)]
#[schemars(rename = "Metrics")]
pub struct MetricsText(#[allow(dead_code)] String);

/// The operations of the operations listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `/livez`.
    Live,
    /// `/readyz`, `/healthz`.
    Ready,
    /// `/metrics`.
    Metrics,
}

macro_rules! open_route {
    ($path:literal $op:ident, $id:literal, $summary:literal, $response:ty) => {
        Route {
            method: Method::GET,
            path: $path,
            op: Op::$op,
            authority: None,
            id: $id,
            summary: $summary,
            body: None,
            response: schema_of::<$response>,
        }
    };
}

/// The operations listener's routes, all open.
pub static ROUTES: &[Route<Op>] = &[
    open_route!("/livez" Live, "liveness", "Liveness: 200 whenever the process serves HTTP", Readiness),
    open_route!("/readyz" Ready, "readiness", "Readiness: 200 when the store and the bus answer, else 503", Readiness),
    open_route!("/healthz" Ready, "health", "Readiness under its former name", Readiness),
    open_route!("/metrics" Metrics, "metrics", "Prometheus metrics (text exposition format)", MetricsText),
];

struct Operations {
    health: Health,
    limits: HttpLimits,
}

impl Listener for Operations {
    type Op = Op;

    fn routes(&self) -> &[Route<Op>] {
        ROUTES
    }

    fn auth(&self) -> Option<&crate::Auth> {
        None
    }

    fn limits(&self) -> &HttpLimits {
        &self.limits
    }

    async fn dispatch(&self, op: Op, _: Vec<String>, _: String, _: HeaderMap, _: Bytes) -> Result<Response, HttpError> {
        Ok(match op {
            Op::Live => Health::live(),
            Op::Ready => self.health.ready().await,
            Op::Metrics => Health::metrics(),
        })
    }
}

/// Binds `addr` and serves the operations listener until `shutdown`. Returns the bound
/// address.
pub async fn serve(
    addr: SocketAddr,
    health: Health,
    limits: HttpLimits,
    shutdown: Shutdown,
) -> Result<SocketAddr, StartError> {
    let socket = crate::edge::bind(addr).await?;
    let bound = socket.local_addr().map_err(|e| StartError::new("listener", format!("{addr}: {e}")))?;
    tokio::spawn(crate::edge::serve(socket, Arc::new(Operations { health, limits }), shutdown));
    tracing::info!(addr = %bound, "operations listener (livez, readyz, metrics) listening");
    Ok(bound)
}

/// [`service::launch`] with the operations listener on `ops`, when set: served (alive) while
/// the service starts, ready once it has started.
pub async fn launch<F, Fut>(
    needs: Needs<'_>,
    ops: Option<HttpConfig>,
    shutdown: Shutdown,
    start: F,
) -> Result<Running, StartError>
where
    F: FnOnce(Opened, Shutdown) -> Fut,
    Fut: Future<Output = Result<Running, StartError>>,
{
    service::launch(needs, shutdown, move |opened, shutdown| async move {
        let Some(ops) = ops else { return start(opened, shutdown).await };
        let store = opened.store.clone().map(|s| s as Arc<dyn StoreHealth>);
        let (health, started) = Health::new(store, opened.channels.bus.clone()).until_started();
        let ops_addr = serve(ops.addr, health, ops.limits, shutdown.clone()).await?;
        let running = start(opened, shutdown).await?;
        started.store(true, Ordering::Release);
        Ok(Running { ops_addr: Some(ops_addr), ..running })
    })
    .await
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
    async fn probes_and_metrics_are_answered_without_credentials() {
        let bus: Arc<dyn Bus> = Arc::new(zonecast_bus::InProcessBus::new());
        let shutdown = Shutdown::new();
        let addr =
            serve("127.0.0.1:0".parse().unwrap(), Health::new(None, bus), HttpLimits::default(), shutdown.clone())
                .await
                .unwrap();
        for path in ["/livez", "/readyz", "/healthz", "/metrics"] {
            assert_eq!(status(addr, path).await, 200, "{path}");
        }
        assert_eq!(status(addr, "/nothing").await, 404);
        shutdown.cancel();
    }

    #[tokio::test]
    async fn readiness_waits_for_the_service_to_have_started_and_liveness_does_not() {
        let bus: Arc<dyn Bus> = Arc::new(zonecast_bus::InProcessBus::new());
        let (health, started) = Health::new(None, bus).until_started();
        let shutdown = Shutdown::new();
        let addr =
            serve("127.0.0.1:0".parse().unwrap(), health, HttpLimits::default(), shutdown.clone()).await.unwrap();
        assert_eq!((status(addr, "/livez").await, status(addr, "/readyz").await), (200, 503));
        started.store(true, Ordering::Release);
        assert_eq!((status(addr, "/livez").await, status(addr, "/readyz").await), (200, 200));
        shutdown.cancel();
    }
}
