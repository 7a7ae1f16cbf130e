//! Setting up a JetStream stream on as many servers as `ZONECAST_NATS_REPLICAS` asks, and saying
//! so plainly when JetStream cannot: a single server asked for more than one replica, a cluster
//! with too few servers, or an existing stream whose count the server would not change.

use std::time::Duration;

use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::context::{CreateStreamError, CreateStreamErrorKind};
use async_nats::jetstream::{self, kv, stream};
use futures::StreamExt;

use crate::BusError;

/// Makes stream `config.name` or brings it in line with `config`, its `num_replicas` included.
/// A server that refuses while the replicas are in question, or that keeps another count than
/// asked, is a [`BusError::Replicas`] naming the stream and the setting; anything else (NATS or
/// JetStream away, a timeout) is a [`BusError::Journal`], to be tried again.
///
/// A stream of one replica is made first and changed only when it exists with other settings.
/// The client's own create-or-update asks for a change first, and a single nats-server 2.9 can
/// crash (a nil dereference in its stream update) when that change races the same stream being
/// made by another client: every replica of a site makes the same streams as it starts. A
/// replicated stream's changes go through the cluster's meta leader instead, as the client does
/// them.
pub(crate) async fn create_or_update(context: &jetstream::Context, config: stream::Config) -> Result<(), BusError> {
    let name = config.name.clone();
    let wanted = config.num_replicas.max(1);
    let made = match wanted {
        1 => match context.create_stream(config.clone()).await {
            Ok(stream) => Ok(stream.cached_info().clone()),
            Err(e) if exists_otherwise(&e) => context.update_stream(&config).await,
            Err(e) => Err(e),
        },
        _ => context.create_or_update_stream(config).await,
    };
    match made {
        Ok(info) => match info.config.num_replicas.max(1) {
            kept if kept == wanted => Ok(()),
            kept => Err(BusError::Replicas(format!(
                "JetStream stream {name} is kept on {kept} replicas, not the {wanted} ZONECAST_NATS_REPLICAS \
                 asks for: the NATS server did not apply the change"
            ))),
        },
        Err(e) if matches!(e.kind(), CreateStreamErrorKind::JetStream(_)) => {
            // The kind alone: the error's own text repeats it after its source.
            let refusal = e.kind();
            let existing = match context.get_stream(&name).await {
                Ok(stream) => Some(stream.cached_info().config.num_replicas.max(1)),
                Err(_) => None,
            };
            match existing {
                Some(has) if has != wanted => Err(BusError::Replicas(format!(
                    "JetStream stream {name} has {has} replicas and ZONECAST_NATS_REPLICAS asks for {wanted}; \
                     the NATS server refused the change ({refusal}): change the stream's replicas with the NATS \
                     tools, or set ZONECAST_NATS_REPLICAS={has}"
                ))),
                None if wanted > 1 => Err(BusError::Replicas(format!(
                    "cannot make JetStream stream {name} with {wanted} replicas (ZONECAST_NATS_REPLICAS={wanted}): \
                     {refusal}; a stream with more than one replica needs a NATS cluster with JetStream on at least \
                     that many servers"
                ))),
                _ => Err(BusError::Journal(format!("cannot set up JetStream stream {name}: {e}"))),
            }
        }
        Err(e) => Err(BusError::Journal(format!("cannot set up JetStream stream {name}: {e}"))),
    }
}

/// Whether making a stream failed because it exists with other settings.
fn exists_otherwise(e: &CreateStreamError) -> bool {
    match e.kind() {
        CreateStreamErrorKind::JetStream(e) => e.error_code() == ErrorCode::STREAM_NAME_EXIST,
        _ => false,
    }
}

/// Opens key-value bucket `bucket` (one value per key), making its stream `KV_<bucket>` on
/// `replicas` servers first, with keys not written for `max_age` removed (zero: kept). The
/// stream is made as the client would make it, directly: the client's own way first asks for the
/// account's limits, which it cannot read from a 2.9 server.
pub(crate) async fn key_value(
    context: &jetstream::Context,
    bucket: &str,
    replicas: usize,
    max_age: Duration,
) -> Result<kv::Store, BusError> {
    let config = stream::Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: 1,
        max_age,
        storage: stream::StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: stream::DiscardPolicy::New,
        num_replicas: replicas.max(1),
        ..stream::Config::default()
    };
    create_or_update(context, config).await?;
    context
        .get_key_value(bucket)
        .await
        .map_err(|e| BusError::Journal(format!("cannot open key-value bucket {bucket}: {e}")))
}

/// How long one listing of a bucket's entries may take. The client's listing ends once it has
/// delivered as many keys as the server had pending when it began; keys that age out meanwhile
/// never come, and the listing can then wait for ever.
const LISTING: Duration = Duration::from_secs(2);

/// Every entry of `store`, each listing bounded by [`LISTING`] and begun again, at most three
/// times, when it does not end in time or fails.
pub(crate) async fn entries(store: &kv::Store) -> Result<Vec<kv::Entry>, String> {
    let mut failure = String::new();
    for _ in 0..3 {
        match tokio::time::timeout(LISTING, list(store)).await {
            Ok(Ok(entries)) => return Ok(entries),
            Ok(Err(e)) => failure = e,
            Err(_) => failure = format!("no complete listing within {LISTING:?}"),
        }
    }
    Err(failure)
}

async fn list(store: &kv::Store) -> Result<Vec<kv::Entry>, String> {
    let mut keys = store.keys().await.map_err(|e| e.to_string())?;
    let mut entries = Vec::new();
    while let Some(key) = keys.next().await {
        let key = key.map_err(|e| e.to_string())?;
        if let Some(entry) = store.entry(key).await.map_err(|e| e.to_string())? {
            entries.push(entry);
        }
    }
    Ok(entries)
}
