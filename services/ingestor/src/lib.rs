//! zonecast ingestor: positions from NATS (`<prefix>.ingest`, queue group `ingestors`), from an
//! RTLS broker over MQTT and from `POST /v3/positions`, all through one normalisation path
//! ([`zonecast_ingest`]), published on `<prefix>.positions.<P>.<MAC>`.

mod buffer;
mod config;
mod http;
mod mqtt;
mod nats;

use std::sync::Arc;
use std::time::Duration;

use zonecast_bus::coverage::Coverage;
use zonecast_bus::{Bus, Channels, Subjects};
use zonecast_http::Auth;
use zonecast_http::ops::{Health, UNOWNED_GRACE};
use zonecast_ingest::Publisher;
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::service::{self, Needs};
use zonecast_runtime::{HttpConfig, Keys, Running, Shutdown, StartError};

pub use crate::config::{IngestorCli, IngestorConfig, MqttArgs, MqttInputConfig};
pub use crate::mqtt::{MqttInput, MqttInputError};

/// Handles one raw payload from a stream input (NATS or MQTT): normalised, published, the
/// rejected elements counted and logged at a limited rate. Never fails the loop.
async fn ingest(publisher: &Publisher, payload: &[u8], input: &'static str, log: &mut RateLimited) {
    report(publisher.accept_when_caught_up(payload, input).await, input, log);
}

/// Logs (rate-limited) and counts what became of a payload.
fn report(
    result: Result<zonecast_ingest::Outcome, zonecast_ingest::AcceptError>,
    input: &'static str,
    log: &mut RateLimited,
) {
    match result {
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

/// The HTTP input: where it listens and whose credentials it accepts.
pub struct HttpInput {
    /// Address and limits.
    pub config: HttpConfig,
    /// Credential checks (write authority is needed), the same as the API's.
    pub auth: Arc<Auth>,
}

/// What the ingestor runs on.
pub struct Deps {
    /// Where `<prefix>.ingest` is consumed.
    pub bus: Arc<dyn Bus>,
    /// Subject names.
    pub subjects: Subjects,
    /// Normalises and publishes positions.
    pub publisher: Publisher,
    /// The HTTP input; `None` in the all-in-one, whose API listener takes positions.
    pub http: Option<HttpInput>,
    /// The MQTT input, when configured.
    pub mqtt: Option<MqttInput>,
    /// Bytes of payloads the NATS input holds while it is behind its publishers.
    pub nats_buffer_bytes: usize,
    /// How many position partitions there are.
    pub partitions: u32,
    /// On how many NATS servers the evaluators' lease bucket is kept.
    pub replicas: usize,
    /// Whether the evaluators claim their partitions in the lease bucket, which readiness then
    /// watches (over NATS, unless the evaluators are the all-in-one's own).
    pub claimed: bool,
}

impl Deps {
    /// Dependencies from configuration and an opened bus; `keys` are needed when `config` has
    /// an HTTP listener.
    pub fn from_config(
        config: &IngestorConfig,
        channels: &Channels,
        keys: Option<Arc<Keys>>,
    ) -> Result<Self, StartError> {
        let subjects = Subjects::new(config.bus.subject_prefix.clone());
        let publisher = Publisher::new(channels, subjects.clone(), config.site_id, config.bus.positions);
        let bus = channels.bus.clone();
        let http = match (config.http, keys) {
            (Some(http), Some(keys)) => {
                let auth = &config.auth;
                Some(HttpInput {
                    config: http,
                    auth: Arc::new(Auth::new(keys, &auth.api_keys, &auth.clients, auth.token_ttl_seconds)),
                })
            }
            (Some(_), None) => return Err(StartError::new("keys", "the HTTP input needs ZONECAST_SECRET_KEY")),
            (None, _) => None,
        };
        let mqtt =
            config.mqtt.as_ref().map(MqttInput::from_config).transpose().map_err(|e| StartError::new("config", e))?;
        Ok(Self {
            bus,
            subjects,
            publisher,
            http,
            mqtt,
            nats_buffer_bytes: config.bus.ingest_buffer_bytes,
            partitions: config.bus.partitions,
            replicas: config.bus.positions.replicas,
            claimed: true,
        })
    }
}

/// Registers at 0 the ingest counters of `inputs` (`http`, `nats`, `mqtt`, `demo`), so that an
/// alert on any of them can fire before its first increment.
pub fn register_inputs(inputs: &[&'static str]) {
    use zonecast_runtime::metrics::{Owner, register, register_series};
    register(Owner::Ingestor);
    for &input in inputs {
        let label = [("input", input.to_owned())];
        for name in [
            "zonecast_ingest_accepted_total",
            "zonecast_ingest_rejected_total",
            "zonecast_ingest_publish_failures_total",
            "zonecast_ingest_refused_total",
        ] {
            register_series(name, &label);
        }
        if input != "demo" {
            register_series("zonecast_ingest_holds_total", &label);
        }
        if input == "nats" {
            register_series("zonecast_ingest_dropped_total", &label);
        }
    }
}

/// Starts the ingestor's inputs: the HTTP listener (if any), the NATS input and the MQTT
/// input (if any). The task ends once every input has stopped after `shutdown`.
pub async fn start(deps: Deps, shutdown: Shutdown) -> Result<Running, StartError> {
    let mut inputs = vec!["http", "nats"];
    if deps.mqtt.is_some() {
        inputs.push("mqtt");
        zonecast_runtime::metrics::register_series("zonecast_ingest_mqtt_connected", &[]);
    }
    register_inputs(&inputs);
    zonecast_runtime::metrics::register_series("zonecast_ingest_partitions_unowned", &[]);
    deps.publisher.follow_pressure().await.map_err(|e| StartError::new("bus", e))?;
    // Streams not made now (JetStream not ready yet) are made with their first batch; streams
    // JetStream cannot keep on the servers ZONECAST_NATS_REPLICAS asks for stop the start.
    match deps.publisher.prepare().await {
        Ok(()) => {}
        Err(e @ zonecast_bus::BusError::Replicas(_)) => return Err(StartError::new("bus", e)),
        Err(e) => {
            tracing::warn!(error = %e, "position streams not made at start; they are made with their first positions");
        }
    }
    let mut tasks = Vec::new();
    let mut addr = None;
    let mut health = Health::new(None, deps.bus.clone());
    // Over NATS the ingestor is ready only while the evaluators follow every partition.
    let leases = match deps.claimed {
        true => open_leases(deps.bus.as_ref(), deps.subjects.prefix(), deps.replicas, &shutdown).await?,
        false => None,
    };
    if let Some(leases) = leases {
        let coverage = Coverage::spawn(leases, deps.partitions);
        tasks.push(tokio::spawn(count_unowned(coverage.clone(), shutdown.clone())));
        health = health.with_coverage(coverage);
    }
    if let Some(input) = deps.http {
        let (bound, task) = http::serve(input, deps.publisher.clone(), health, shutdown.clone()).await?;
        addr = Some(bound);
        tasks.push(task);
    }
    tasks.push(
        nats::start(deps.bus.clone(), &deps.subjects, deps.publisher.clone(), deps.nats_buffer_bytes, shutdown.clone())
            .await
            .map_err(|e| StartError::new("bus", e))?,
    );
    if let Some(mqtt) = deps.mqtt {
        tasks.push(mqtt.start(deps.publisher, shutdown));
    }
    let task = tokio::spawn(async move {
        for task in tasks {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "position input task failed");
            }
        }
    });
    let running = Running::new(task);
    Ok(match addr {
        Some(addr) => running.listening(addr),
        None => running,
    })
}

/// Starts the distributed `zonecast-ingestor` on the service skeleton: NATS, the HTTP listener
/// on `ZONECAST_INGEST_HTTP_ADDR` (credentials as the API's: `ZONECAST_API_KEYS`,
/// `ZONECAST_CLIENTS`, `ZONECAST_SECRET_KEY`), and the MQTT input when configured.
pub async fn launch(config: IngestorConfig, shutdown: Shutdown) -> Result<Running, StartError> {
    let needs = Needs {
        name: "zonecast-ingestor",
        bus: &config.bus,
        store: None,
        secret_key: config.http.is_some().then_some(&config.secret_key),
    };
    let config = &config;
    service::launch(needs, shutdown, |opened, shutdown| async move {
        start(Deps::from_config(config, &opened.channels, opened.keys.clone())?, shutdown).await
    })
    .await
}

/// Runs `zonecast-ingestor` until `shutdown`, then drains.
pub async fn run(config: IngestorConfig, shutdown: Shutdown) -> Result<(), StartError> {
    launch(config, shutdown).await?.stopped().await
}

/// Keeps `zonecast_ingest_partitions_unowned` at the count of partitions no evaluator follows,
/// and warns when some have gone unfollowed for [`UNOWNED_GRACE`] (and says when every one is
/// followed again).
/// How long a start waits for the evaluators' lease bucket: NATS or JetStream away, or a
/// cluster electing its leader, is waited for; beyond it the start fails.
const LEASES_FOR: Duration = Duration::from_secs(30);

/// The evaluators' lease bucket, tried again with backoff (200 ms doubling to 5 s) while
/// JetStream does not answer, for at most [`LEASES_FOR`]; a refusal that retrying cannot change
/// (the replicas asked for) fails the start at once.
async fn open_leases(
    bus: &dyn zonecast_bus::Bus,
    prefix: &str,
    replicas: usize,
    shutdown: &Shutdown,
) -> Result<Option<zonecast_bus::Leases>, StartError> {
    let deadline = tokio::time::Instant::now() + LEASES_FOR;
    let mut backoff = zonecast_runtime::backoff::Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
    loop {
        match bus.leases(prefix, replicas).await {
            Ok(leases) => return Ok(leases),
            Err(e @ zonecast_bus::BusError::Replicas(_)) => return Err(StartError::new("bus", e)),
            Err(e) if tokio::time::Instant::now() >= deadline || shutdown.is_cancelled() => {
                return Err(StartError::new("bus", e));
            }
            Err(e) => {
                tracing::warn!(error = %e, "the evaluators' lease bucket not open yet; will retry");
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}

async fn count_unowned(mut coverage: Coverage, shutdown: Shutdown) {
    let gauge = metrics::gauge!("zonecast_ingest_partitions_unowned");
    let mut look = tokio::time::interval(Duration::from_secs(1));
    let mut warned = false;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            more = coverage.changed() => if !more { return },
            _ = look.tick() => {}
        }
        let unowned = coverage.unowned();
        gauge.set(unowned.partitions.len() as f64);
        let long = unowned.since.is_some_and(|since| since.elapsed() >= UNOWNED_GRACE);
        if long && !warned {
            tracing::warn!(
                partitions = ?unowned.partitions,
                "position partitions followed by no evaluator: their positions wait in the stream until an evaluator claims them; this ingestor is not ready meanwhile"
            );
            warned = true;
        } else if unowned.partitions.is_empty() && warned {
            tracing::warn!("every position partition is followed by an evaluator again");
            warned = false;
        }
    }
}

/// How often a stream input logs rejected positions at most.
const LOG_EVERY: Duration = Duration::from_secs(10);
