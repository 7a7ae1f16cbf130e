//! zonecast config API: zones, zone settings, device radii, named devices, alarms, MQTT
//! connections and certificate profiles, plus deletes, connection status, tokens, OpenAPI, health
//! and metrics, over warp, and the browser console at `/`. Stateless: it writes the store and
//! announces every change the other services apply on `<prefix>.config.changed`, and records
//! the alarms of the events journal through its durable consumer `alarms`.

pub mod alarm_changes;
pub mod alarm_recorder;
mod applied;
mod body;
mod config;
pub mod console;
mod context;
mod dispatch;
pub mod error;
mod evaluators;
mod handlers;
mod json_bounds;
pub mod openapi;
mod position_feed;
mod reply;
pub mod routes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use warp::Filter;
use warp::http::HeaderMap;
use warp::reply::Response;
use zonecast_http::Auth;
use zonecast_http::edge::{self, Listener};
use zonecast_http::http::HttpError;
use zonecast_runtime::service::{self, Needs};
use zonecast_runtime::{HttpConfig, HttpLimits, Running, Shutdown, StartError};

pub use config::{ApiAddr, ApiArgs, ApiCli, ApiConfig, ApiSettings};
pub use context::{Context, StreamSettings};
pub use error::ApiError;

use crate::routes::{Op, Route};

impl Listener for Context {
    type Op = Op;

    fn routes(&self) -> &[Route] {
        routes::served(self.positions.is_some())
    }

    fn auth(&self) -> Option<&Auth> {
        Some(&self.auth)
    }

    fn limits(&self) -> &HttpLimits {
        &self.http_limits
    }

    async fn dispatch(
        &self,
        op: Op,
        params: Vec<String>,
        query: String,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response, HttpError> {
        dispatch::dispatch(self, op, &params, &query, &headers, body).await
    }

    fn takes_query_token(&self, op: Op) -> bool {
        matches!(op, Op::EventStream | Op::PositionStream)
    }

    fn cors(&self, op: Op) -> Option<&zonecast_http::cors::Cors> {
        matches!(op, Op::EventStream | Op::PositionStream).then_some(&self.streams.cors)
    }

    fn answered(&self, operation: &'static str, response: &Response, started: Instant) {
        let status = response.status().as_u16().to_string();
        metrics::counter!("zonecast_api_requests_total", "operation" => operation, "status" => status).increment(1);
        metrics::histogram!("zonecast_api_request_seconds", "operation" => operation)
            .record(started.elapsed().as_secs_f64());
    }
}

/// Zone writes made inside the process, for a composition that sets up zones of its own (the
/// all-in-one's demo site): the validation, store writes and announcements of the HTTP
/// operations, without a request.
pub mod zone_writes {
    use serde_json::Value;
    use uuid::Uuid;
    use zonecast_model::ZoneSpec;

    use crate::handlers::zones::NewZones;
    use crate::{ApiError, Context};

    /// Creates `zones`, each a zone body as `POST /v3/modules/zones/batch` takes one with the
    /// ZoneID it is to get, as that operation does: every body validated (a refusal names the
    /// zone's place, `[i]`, and the field), all written in one transaction, then announced.
    pub async fn create(ctx: &Context, zones: Vec<(Uuid, Value)>) -> Result<Vec<ZoneSpec>, ApiError> {
        let (ids, bodies): (Vec<Uuid>, Vec<Value>) = zones.into_iter().unzip();
        let NewZones(zones) = NewZones::parse(&bodies, &ctx.limits)?;
        Ok(crate::handlers::zones::create_zones(ctx, ids.into_iter().zip(zones).collect()).await?.0)
    }

    /// Locks (or unlocks) the geometry of zone `id`, as `POST /v3/modules/zones/{ZoneID}/lock`
    /// does.
    pub async fn set_locked(ctx: &Context, id: Uuid, locked: bool) -> Result<(), ApiError> {
        crate::handlers::zones::write_locked(ctx, id, locked, None).await.map(|_| ())
    }
}

/// What the API runs on: its context (store, bus, keys, credentials) and where it listens.
pub struct Deps {
    /// Everything the handlers use.
    pub context: Context,
    /// The listener's address.
    pub addr: SocketAddr,
}

/// Starts the API: binds its listener and serves until `shutdown` (the console's files at `/`
/// and `/console/`, every other path through the route table), and records alarms from the
/// events journal ([`alarm_recorder`]); the task ends when in-flight requests are done and the
/// alarms being written are written or left to the journal.
pub async fn start(deps: Deps, shutdown: Shutdown) -> Result<Running, StartError> {
    zonecast_runtime::metrics::register(zonecast_runtime::metrics::Owner::Api);
    alarm_recorder::register_metrics();
    let socket = edge::bind(deps.addr).await?;
    let addr = socket.local_addr().map_err(|e| StartError::new("listener", format!("{}: {e}", deps.addr)))?;
    let mut context = deps.context;
    context.shutdown = shutdown.clone();
    let context = Arc::new(context);
    alarm_recorder::prepare(context.journal.as_ref(), &context.subjects).await;
    let alarm_store: Arc<dyn zonecast_store::AlarmWriter> = context.store.clone();
    let recorder = alarm_recorder::spawn(context.change_events(), alarm_store, shutdown.clone());
    tracing::info!(%addr, console = %format_args!("http://{addr}/"), "config API listening");
    let limits = context.http_limits;
    let task = tokio::spawn(async move {
        let routes = console::filter().or(edge::filter(context)).unify();
        zonecast_http::serve::run(socket, routes, limits, shutdown).await;
        if let Err(e) = recorder.await {
            tracing::error!(error = %e, "alarm recorder failed");
        }
        tracing::info!("config API stopped");
    });
    Ok(Running::new(task).listening(addr))
}

/// Starts the distributed `zonecast-api` on the service skeleton: PostgreSQL, NATS and the
/// shared `ZONECAST_SECRET_KEY`, and the operations listener on `ZONECAST_OPS_ADDR` when set
/// (`/livez`, `/readyz`, `/healthz` and `/metrics` without credentials, while `/metrics` on
/// the API listener keeps needing read authority).
pub async fn launch(config: ApiConfig, shutdown: Shutdown) -> Result<Running, StartError> {
    if config.auth.api_keys.is_empty() && config.auth.clients.is_empty() {
        tracing::warn!("no ZONECAST_API_KEYS or ZONECAST_CLIENTS configured: every request will be refused");
    }
    let needs = Needs {
        name: "zonecast-api",
        bus: &config.bus,
        store: Some(&config.store),
        secret_key: Some(&config.secret_key),
    };
    let config = &config;
    let ops = config.ops_addr.map(|addr| HttpConfig { addr, limits: config.http.limits });
    zonecast_http::launch(needs, ops, shutdown, |opened, shutdown| async move {
        service::prepare_journal(&opened.channels, &config.bus, "zonecast-api").await?;
        let context = Context::new(config, opened.store()?, &opened.channels, opened.keys()?, None).await?;
        start(Deps { context, addr: config.http.addr }, shutdown).await
    })
    .await
}

/// Runs `zonecast-api` until `shutdown`, then drains.
pub async fn run(config: ApiConfig, shutdown: Shutdown) -> Result<(), StartError> {
    launch(config, shutdown).await?.stopped().await
}
