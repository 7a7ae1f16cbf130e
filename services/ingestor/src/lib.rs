//! zonecast ingestor: positions from NATS (`<prefix>.ingest`, queue group `ingestors`), from an
//! RTLS broker over MQTT and from `POST /v3/positions`, all through one normalisation path
//! ([`zonecast_ingest`]), published on `<prefix>.positions.<P>.<MAC>`.

mod http;
mod mqtt;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use zonecast_bus::{Bus, INGESTORS, Subjects};
use zonecast_ingest::Publisher;
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Auth, Config, HttpLimits, Keys, Shutdown, StartError};

pub use crate::http::serve as serve_http;
pub use crate::mqtt::{MqttInput, MqttInputError};

/// Handles one raw payload from a stream input (NATS or MQTT): normalised, published, the
/// rejected elements counted and logged at a limited rate. Never fails the loop.
async fn take(publisher: &Publisher, payload: &[u8], input: &'static str, log: &mut RateLimited) {
    match publisher.accept(payload, input).await {
        Ok(outcome) => {
            if let Some((index, reason)) = outcome.rejected.first()
                && let Some(held_back) = log.allow()
            {
                tracing::warn!(input, index, %reason, held_back, "position rejected");
            }
        }
        Err(e) => {
            if let zonecast_ingest::AcceptError::Publish(_) = e {
                metrics::counter!("zonecast_ingest_publish_failures_total", "input" => input).increment(1);
            }
            if let Some(held_back) = log.allow() {
                tracing::warn!(input, error = %e, held_back, "positions not taken");
            }
        }
    }
}

/// Consumes `<prefix>.ingest` in the `ingestors` queue group until `shutdown`.
pub async fn start_nats_input(
    bus: Arc<dyn Bus>,
    subjects: &Subjects,
    publisher: Publisher,
    shutdown: Shutdown,
) -> Result<tokio::task::JoinHandle<()>, zonecast_bus::BusError> {
    let mut sub = bus.queue_subscribe(&subjects.ingest(), INGESTORS).await?;
    Ok(tokio::spawn(async move {
        let mut log = RateLimited::new(Duration::from_secs(10));
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                msg = sub.next() => match msg {
                    Some(msg) => take(&publisher, &msg.payload, "nats", &mut log).await,
                    None => break,
                },
            }
        }
    }))
}

/// Starts the distributed `zonecast-ingestor`: NATS (required), the HTTP listener on
/// `ZONECAST_INGEST_HTTP_ADDR` (credentials as the API's: `ZONECAST_API_KEYS`,
/// `ZONECAST_CLIENTS`, `ZONECAST_SECRET_KEY`), and the MQTT input when configured.
pub async fn run(config: Config, shutdown: Shutdown) -> Result<(), StartError> {
    let nats_url = config
        .nats_url
        .as_ref()
        .ok_or_else(|| StartError::new("config", "ZONECAST_NATS_URL is required for zonecast-ingestor"))?;
    let secret = config.secret_key.as_ref().ok_or_else(|| {
        StartError::new("config", "ZONECAST_SECRET_KEY is required (the same as the API's, to accept its tokens)")
    })?;
    let keys = Arc::new(Keys::from_secret(secret).map_err(|e| StartError::new("keys", e))?);
    let bus_err = |e: zonecast_bus::BusError| StartError::new("bus", e);
    let bus = zonecast_bus::connect(Some(nats_url.expose()), "zonecast-ingestor").await.map_err(bus_err)?;
    let subjects = Subjects::new(config.subject_prefix.clone());
    let publisher = Publisher::new(bus.clone(), subjects.clone(), config.partitions, config.site_id);
    let auth = Arc::new(Auth::new(keys, &config.api_keys, &config.clients, config.token_ttl_seconds));
    http::serve(config.ingest_http_addr, auth, publisher.clone(), HttpLimits::of(&config), shutdown.clone())
        .await
        .map_err(|e| StartError::new("listener", format!("{}: {e}", config.ingest_http_addr)))?;
    let nats = start_nats_input(bus.clone(), &subjects, publisher.clone(), shutdown.clone()).await.map_err(bus_err)?;
    let mqtt = MqttInput::from_config(&config)
        .map_err(|e| StartError::new("config", e))?
        .map(|i| i.start(publisher, shutdown));
    nats.await.map_err(|e| StartError::new("NATS input task", e))?;
    if let Some(task) = mqtt {
        task.await.map_err(|e| StartError::new("MQTT input task", e))?;
    }
    bus.drain().await.map_err(bus_err)
}
