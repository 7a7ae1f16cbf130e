//! MQTT connections: list, read, create, update, delete, and the forwarding status.

use bytes::Bytes;
use schemars::JsonSchema;
use serde::Serialize;
use uuid::Uuid;
use warp::reply::Response;
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

/// A replica whose row is older than this has stopped (rows are written every second).
const STALE_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(15);

/// Forwarding status of a connection, summed over forwarder replicas.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ConnectionStatus {
    /// The connection.
    #[serde(rename = "ConnectionID")]
    #[schemars(with = "zonecast_model::schema::UpperUuid")]
    connection_id: String,
    /// Whether every live replica is connected to the broker (false with none).
    connected: bool,
    /// The latest error a live replica reported.
    last_error: Option<String>,
    /// Events forwarded, by every replica ever reporting.
    forwarded: u64,
    /// Events dropped (queue overflow), by every replica ever reporting.
    dropped: u64,
    /// Events waiting in live replicas' queues.
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
    /// Whether it is connected to the broker.
    connected: bool,
    /// Its latest error.
    last_error: Option<String>,
    /// Events it forwarded.
    forwarded: u64,
    /// Events it dropped.
    dropped: u64,
    /// Events in its queue.
    queued: u64,
    /// When it last reported.
    updated_at: String,
    /// Whether it stopped reporting (its counters stay in the sums).
    stale: bool,
}

/// Forwarding status over forwarder replicas, with each replica's row. Counters are summed;
/// `queued` is the largest a live replica reports, as every replica reports the same journal
/// backlog of the connection (plus the few positions it holds itself). Rows of replicas that
/// stopped reporting are listed as stale and do not count towards `connected` or `queued`;
/// their counters stay in the sums.
pub async fn status(ctx: &Context, id: Uuid) -> Result<Response, ApiError> {
    ctx.store.get_connection(id).await?;
    let rows = ctx.store.connection_status(id).await?;
    let now = chrono::Utc::now();
    let live: Vec<_> = rows.iter().filter(|r| now - r.updated_at <= STALE_AFTER).collect();
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
            stale: now - r.updated_at > STALE_AFTER,
        })
        .collect();
    Ok(reply::ok(&ConnectionStatus {
        connection_id: format_id(&id),
        connected: !live.is_empty() && live.iter().all(|r| r.connected),
        last_error: latest_error.and_then(|r| r.last_error.clone()),
        forwarded: rows.iter().map(|r| r.forwarded).sum(),
        dropped: rows.iter().map(|r| r.dropped).sum(),
        queued: live.iter().map(|r| r.queued).max().unwrap_or(0),
        replicas,
    }))
}
