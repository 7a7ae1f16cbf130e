//! The ingestor's own listener, on the shared HTTP edge: `POST /v3/positions` (write
//! authority); `/livez`, `/readyz` (alias `/healthz`) and `/metrics` without credentials.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use warp::http::HeaderMap;
use warp::reply::Response;
use zonecast_http::Auth;
use zonecast_http::edge::{self, Listener};
use zonecast_http::http::{HttpError, json_response};
use zonecast_http::ops::Health;
use zonecast_http::ops::{MetricsText, Readiness};
use zonecast_http::routes::{Route, schema_of};
use zonecast_ingest::{AcceptError, Publisher};
use zonecast_ingest::{PositionAnswer, PositionInput};
use zonecast_runtime::{Authority, HttpLimits, Shutdown, StartError};

use crate::HttpInput;

/// The listener's operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Positions,
    Live,
    Ready,
    Metrics,
}

use zonecast_http::route;

static ROUTES: &[Route<Op>] = &[
    route!(POST "/v3/positions" Positions Some(Authority::Write), "postPositions", "Position input: an event, an array, a batch or compact objects", Some(schema_of::<PositionInput>), schema_of::<PositionAnswer>),
    route!(GET "/livez" Live None, "liveness", "Liveness: 200 whenever the process serves HTTP", None, schema_of::<Readiness>),
    route!(GET "/readyz" Ready None, "readiness", "Readiness: 200 when the bus is connected and the evaluators follow every partition, else 503", None, schema_of::<Readiness>),
    route!(GET "/healthz" Ready None, "health", "Readiness under its former name", None, schema_of::<Readiness>),
    route!(GET "/metrics" Metrics None, "metrics", "Prometheus metrics (text exposition format)", None, schema_of::<MetricsText>),
];

struct Positions {
    auth: Arc<Auth>,
    publisher: Publisher,
    health: Health,
    limits: HttpLimits,
}

impl Listener for Positions {
    type Op = Op;

    fn routes(&self) -> &[Route<Op>] {
        ROUTES
    }

    fn auth(&self) -> Option<&Auth> {
        Some(&self.auth)
    }

    fn limits(&self) -> &HttpLimits {
        &self.limits
    }

    async fn dispatch(
        &self,
        op: Op,
        _: Vec<String>,
        _: String,
        _: HeaderMap,
        body: Bytes,
    ) -> Result<Response, HttpError> {
        Ok(match op {
            Op::Positions => {
                let outcome = self.publisher.accept(&body, "http").await.map_err(refused)?;
                json_response(warp::http::StatusCode::OK, &outcome.answer())
            }
            Op::Live => Health::live(),
            Op::Ready => self.health.ready().await,
            Op::Metrics => Health::metrics(),
        })
    }
}

/// Binds the input's address and serves until `shutdown`; returns the bound address and the
/// task that ends once open requests are done.
pub(crate) async fn serve(
    input: HttpInput,
    publisher: Publisher,
    health: Health,
    shutdown: Shutdown,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), StartError> {
    let socket = edge::bind(input.config.addr).await?;
    let bound = socket.local_addr().map_err(|e| StartError::new("listener", format!("{}: {e}", input.config.addr)))?;
    let listener = Positions { auth: input.auth, publisher, health, limits: input.config.limits };
    let task = tokio::spawn(edge::serve(socket, Arc::new(listener), shutdown));
    tracing::info!(addr = %bound, "ingestor HTTP listening");
    Ok((bound, task))
}

/// How the position input answers a payload it did not take: 400 when it is no JSON payload,
/// 503 with `Retry-After` when the pipeline is too far behind or the positions could not be
/// stored.
fn refused(e: AcceptError) -> HttpError {
    match e {
        AcceptError::Malformed(_) => HttpError::Malformed(e.to_string()),
        AcceptError::Publish(p) => HttpError::Unavailable(p.to_string()),
        AcceptError::Busy(behind) => HttpError::Overloaded(behind.to_string()),
    }
}
