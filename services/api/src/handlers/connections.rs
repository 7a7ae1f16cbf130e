//! MQTT connections: list, read, create, update, delete, and the forwarding status.

use bytes::Bytes;
use schemars::JsonSchema;
use serde::Serialize;
use uuid::Uuid;
use warp::reply::Response;
use zonecast_bus::journal::{Kind, connection_consumer};
use zonecast_model::{ConfigKind, ConnectionInput, format_id, format_timestamp};
use zonecast_store::StoredConnection;

use crate::body;
use crate::context::Context;
use crate::error::ApiError;
use crate::reply;

/// `GET /v3/modules/mqtt/connections`: every connection.
pub async fn list(ctx: &Context) -> Result<Response, ApiError> {
    let out: Vec<_> = ctx.store.list_connections().await?.iter().map(|c| c.connection.to_json()).collect();
    Ok(reply::ok(&out))
}

/// `GET /v3/modules/mqtt/connections/{ConnectionID}`: one connection, as a list.
pub async fn get(ctx: &Context, id: Uuid) -> Result<Response, ApiError> {
    let c = ctx.store.get_connection(id).await?;
    Ok(reply::ok(&[c.connection.to_json()]))
}

/// The connection to store from `input`, its password sealed; no password when none was sent
/// or it was null or "" (an update that left it out keeps the stored one, see [`update`]).
fn stored(ctx: &Context, input: ConnectionInput, id: Uuid) -> Result<StoredConnection, ApiError> {
    let password_sealed = match &input.password {
        None | Some(None) => None,
        Some(Some(p)) => Some(ctx.keys.seal(p.expose().as_bytes()).map_err(|e| ApiError::Internal(e.to_string()))?),
    };
    let connection = input.into_connection(id, password_sealed.is_some());
    Ok(StoredConnection { connection, password_sealed })
}

/// A connection body, validated within the context's limits on a blocking thread: compiling its
/// regexes may take up to the regex compile budget, which no async worker should wait out.
async fn input(ctx: &Context, body: &Bytes) -> Result<ConnectionInput, ApiError> {
    let value = body::object(body, &ctx.limits)?;
    let limits = ctx.limits;
    let parsed = tokio::task::spawn_blocking(move || ConnectionInput::parse(&value, &limits))
        .await
        .map_err(|e| ApiError::Internal(format!("connection validation failed: {e}")))?;
    Ok(parsed?)
}

/// `POST /v3/modules/mqtt/connections`: creates a connection.
pub async fn create(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let input = input(ctx, body).await?;
    let c = stored(ctx, input, Uuid::new_v4())?;
    ctx.store.insert_connection(&c, ctx.max_connections).await?;
    let applied = ctx.announce(ConfigKind::Connections, vec![format_id(&c.connection.id)], None).await;
    Ok(applied.stamp(reply::ok(&c.connection.to_json())))
}

/// `PUT /v3/modules/mqtt/connections/{ConnectionID}`: the whole connection is replaced, except an
/// omitted password is kept: the store keeps the password it holds at the moment of the write, so a
/// concurrent password change is not undone by an update that left the password out.
pub async fn update(ctx: &Context, id: Uuid, body: &Bytes) -> Result<Response, ApiError> {
    let input = input(ctx, body).await?;
    let keep_password = input.password.is_none();
    let c = stored(ctx, input, id)?;
    let written = ctx.store.update_connection(&c, keep_password).await?;
    let applied = ctx.announce(ConfigKind::Connections, vec![format_id(&id)], None).await;
    Ok(applied.stamp(reply::ok(&written.connection.to_json())))
}

/// Deletes a connection.
pub async fn delete(ctx: &Context, id: Uuid) -> Result<Response, ApiError> {
    ctx.store.delete_connection(id).await?;
    let applied = ctx.announce(ConfigKind::Connections, vec![format_id(&id)], None).await;
    Ok(applied.stamp(reply::ack()))
}

/// A forwarder replica whose row is older than this is taken as gone: replicas write their rows
/// every second (and at once on every connect and disconnect), so one that stopped or died is
/// shown as such at most this long after its last row.
const STALE_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(3);

/// Forwarding status of a connection: what waits for it in the event journal, and the
/// forwarder replicas reporting on it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ConnectionStatus {
    /// The connection.
    #[serde(rename = "ConnectionID")]
    #[schemars(with = "zonecast_model::schema::UpperUuid")]
    connection_id: String,
    /// Whether a live replica reports it and every live replica is connected to the broker
    /// (false with none).
    connected: bool,
    /// The latest error a live replica reported.
    last_error: Option<String>,
    /// Messages the broker acknowledged, by every replica ever reporting (a copy sent again
    /// after a replica died may count twice; none is missing).
    forwarded: u64,
    /// Messages given up on, by every replica ever reporting.
    dropped: u64,
    /// Messages waiting for the broker: the events the connection's journal consumer has not
    /// acknowledged (waiting in the journal, or held by a replica, alive or not), plus the
    /// positions live replicas hold.
    queued: u64,
    /// Each replica's row.
    replicas: Vec<ReplicaStatus>,
}

/// One forwarder replica's report on a connection.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ReplicaStatus {
    /// The replica's name.
    replica: String,
    /// Whether it is connected to the broker (as it last reported).
    connected: bool,
    /// Its latest error.
    last_error: Option<String>,
    /// Messages it forwarded.
    forwarded: u64,
    /// Messages it dropped.
    dropped: u64,
    /// Positions waiting in its queue (its events are counted in the connection's `queued`).
    queued: u64,
    /// When it last reported.
    updated_at: String,
    /// Whether it stopped reporting: no row for more than 3 s (its counters stay in the sums).
    stale: bool,
}

/// Forwarding status over forwarder replicas, with each replica's row. `queued` is read from
/// the journal here (the connection's consumer's backlog), so it holds with no replica alive;
/// the live replicas add the positions they hold. Counters are summed over every row. Rows of
/// replicas that stopped reporting are listed as stale and do not count towards `connected`,
/// `lastError` or `queued`.
pub async fn status(ctx: &Context, id: Uuid) -> Result<Response, ApiError> {
    ctx.store.get_connection(id).await?;
    let rows = ctx.store.connection_status(id).await?;
    let backlog = ctx
        .journal
        .state(Kind::Events, &connection_consumer(id))
        .await
        .map_err(|e| ApiError::Unavailable(format!("event journal: {e}")))?
        .map_or(0, |state| state.backlog);
    let now = chrono::Utc::now();
    let is_live = |r: &zonecast_store::ConnectionStatus| now - r.updated_at <= STALE_AFTER;
    let live: Vec<_> = rows.iter().filter(|r| is_live(r)).collect();
    let latest_error = live.iter().filter(|r| r.last_error.is_some()).max_by_key(|r| r.updated_at);
    let replicas = rows
        .iter()
        .map(|r| ReplicaStatus {
            replica: r.replica.clone(),
            connected: r.connected,
            last_error: r.last_error.clone(),
            forwarded: r.forwarded,
            dropped: r.dropped,
            queued: r.queued,
            updated_at: format_timestamp(&r.updated_at),
            stale: !is_live(r),
        })
        .collect();
    Ok(reply::ok(&ConnectionStatus {
        connection_id: format_id(&id),
        connected: !live.is_empty() && live.iter().all(|r| r.connected),
        last_error: latest_error.and_then(|r| r.last_error.clone()),
        forwarded: rows.iter().map(|r| r.forwarded).fold(0, u64::saturating_add),
        dropped: rows.iter().map(|r| r.dropped).fold(0, u64::saturating_add),
        queued: live.iter().map(|r| r.queued).fold(backlog, u64::saturating_add),
        replicas,
    }))
}
