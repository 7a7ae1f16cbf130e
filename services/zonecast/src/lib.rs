//! The all-in-one zonecast: the four services in one process over an in-process bus and an
//! embedded SQLite store (or NATS and PostgreSQL when their URLs are configured), each started
//! through its own `start(deps, shutdown)` like in the distributed deployment. With nothing
//! configured it generates its secret key and an admin API key in the data directory. With
//! `demo` on it also runs the simulated warehouse of [`demo`].

mod config;
pub mod demo;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use zonecast_api::Context;
use zonecast_bus::Channels;
use zonecast_http::ops::Health;
use zonecast_runtime::keys::{random_base64, write_private};
use zonecast_runtime::service::{open_bus, open_store};
use zonecast_runtime::{ApiKey, Authority, Keys, Running, Secret, Shutdown, StartError};

pub use crate::config::{AllInOneCli, Config};

/// File name of the SQLite database inside the data directory.
pub const DATABASE_FILE: &str = "zonecast.sqlite";
/// File name of the event journal inside the data directory (without NATS).
pub const JOURNAL_FILE: &str = "journal.sqlite";
/// File name of the generated admin API key inside the data directory.
pub const ADMIN_KEY_FILE: &str = "admin.key";

/// A started all-in-one process.
pub struct AllInOne {
    /// Where the API (and later `POST /v3/positions`) listens.
    pub http_addr: SocketAddr,
    /// Where the operations listener listens, when `ZONECAST_OPS_ADDR` is set.
    pub ops_addr: Option<SocketAddr>,
    /// The generated admin key file, when no credentials were configured.
    pub admin_key_file: Option<PathBuf>,
    /// The bus the services share (in-process unless a NATS URL is configured), with the event
    /// journal the evaluators append to and the forwarder consumes (JetStream with NATS,
    /// otherwise the file `journal.sqlite` in the data directory) and the position log.
    pub channels: Channels,
    /// Ends after shutdown, once everything is drained.
    pub task: tokio::task::JoinHandle<()>,
}

fn key_error(e: impl std::fmt::Display) -> StartError {
    StartError::new("setup", e)
}

/// The admin key of `<data_dir>/admin.key`, generated (mode 0600) on first start.
fn admin_key(data_dir: &Path) -> Result<(PathBuf, Secret), StartError> {
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
    let path = dir.join(ADMIN_KEY_FILE);
    match std::fs::read_to_string(&path) {
        // An empty key would let an empty X-API-Key in as admin (the file can be left empty by
        // a crash between creating and writing it, or by an operator truncating it).
        Ok(text) if text.trim().is_empty() => {
            Err(key_error(format!("admin key file {} is empty; delete it to have a new key generated", path.display())))
        }
        Ok(text) => Ok((path, Secret::new(text.trim()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = random_base64(24).map_err(key_error)?.replace(['+', '/'], "x");
            write_private(&path, &key).map_err(key_error)?;
            Ok((path, Secret::new(key)))
        }
        Err(e) => Err(key_error(format!("{}: {e}", path.display()))),
    }
}

/// The partition ranges of the all-in-one's evaluators: the partitions split evenly over the
/// available cores.
fn evaluator_ranges(config: &Config) -> Vec<zonecast_evaluator::Ownership> {
    let count = config.bus.partitions;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, count as usize) as u32;
    (0..workers)
        .map(|w| zonecast_evaluator::Ownership::range(count, w * count / workers, (w + 1) * count / workers - 1))
        .collect()
}

/// Starts the all-in-one on `config`.
pub async fn start(mut config: Config, shutdown: Shutdown) -> Result<AllInOne, StartError> {
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| key_error(format!("data directory {}: {e}", config.data_dir.display())))?;
    let keys = match &config.secret_key {
        Some(secret) => Keys::from_secret(secret).map_err(key_error)?,
        None => Keys::load_or_generate(&config.data_dir).map_err(key_error)?.0,
    };
    let mut admin_key_file = None;
    if config.auth.api_keys.is_empty() && config.auth.clients.is_empty() {
        let (path, key) = admin_key(&config.data_dir)?;
        tracing::info!(file = %path.display(), "no credentials configured: admin API key (X-API-Key) is in this file");
        config.auth.api_keys.push(ApiKey { key, authority: Authority::Admin });
        admin_key_file = Some(path);
    }
    let store = open_store(&config.store, &config.data_dir.join(DATABASE_FILE)).await?;
    // Without NATS, events awaiting delivery are kept in a file of the data directory, so that
    // a restart or a crash loses none.
    let channels = open_bus(&config.bus, "zonecast", Some(&config.data_dir.join(JOURNAL_FILE))).await?;
    let bus = channels.bus.clone();
    tracing::info!(store = store.kind(), bus = bus.kind(), "all-in-one starting");
    let keys = Arc::new(keys);
    let ops_addr = match config.ops_addr {
        Some(addr) => {
            let health = Health::new(Some(store.clone()), bus.clone());
            Some(zonecast_http::ops::serve(addr, health, config.http.limits, shutdown.clone()).await?)
        }
        None => None,
    };
    let ranges = evaluator_ranges(&config);
    // The ingestor's NATS and MQTT inputs; its HTTP input is the API listener's positions route.
    let mut ingestor = zonecast_ingestor::Deps::from_config(&config.ingestor(), &channels, None)?;
    // Its evaluators are given their partitions: there are no claims to watch.
    ingestor.claimed = false;
    let demo_positions = ingestor.publisher.clone();
    // Before the evaluators and the forwarder start, so that it hears their first reports: a
    // write is answered once all of them (one forwarder, one evaluator per range) have it.
    let context = Context::new(&config.api(), store.clone(), &channels, keys.clone(), Some(ranges.len() + 1))
        .await?
        .with_positions(ingestor.publisher.clone());
    // One evaluator per core, each given a partition range: evaluation then uses every core.
    // They claim nothing, over NATS too: one process holds them all, and fails as one.
    let context = context.with_evaluators(ranges.iter().map(|o| o.partitions().collect()).collect());
    let mut evaluators = Vec::new();
    for ownership in ranges {
        let mut deps = zonecast_evaluator::Deps::from_config(&config.evaluator(), store.clone(), &channels);
        deps.ownership = ownership;
        deps.claims = false;
        evaluators.push(zonecast_evaluator::start(deps, shutdown.clone()).await?);
    }
    let ingestor = zonecast_ingestor::start(ingestor, shutdown.clone()).await?;
    let forwarder = zonecast_forwarder::start(
        zonecast_forwarder::Deps::from_config(&config.forwarder(), store, &channels, keys),
        shutdown.clone(),
    )
    .await?;
    // The demo's zones before the API answers, so that its first zone list has them.
    if config.demo {
        let created = demo::create_zones(&context).await?;
        let named = demo::name_devices(&context).await?;
        tracing::info!(created, named, "demo site: zones and device names in place");
        zonecast_ingestor::register_inputs(&["demo"]);
    }
    let demo = config.demo.then(|| demo::start(demo_positions, shutdown.clone()));
    // The API last: once it answers, every part is running.
    let api = zonecast_api::start(zonecast_api::Deps { context, addr: config.http.addr }, shutdown).await?;
    let http_addr = api.addr.ok_or_else(|| StartError::new("listener", "the API did not say where it listens"))?;
    let drain = bus.clone();
    let task = tokio::spawn(async move {
        let parts: Vec<(&str, Running)> = demo
            .map(|d| ("demo", d))
            .into_iter()
            .chain([("API", api), ("ingestor", ingestor)])
            .chain(evaluators.into_iter().map(|e| ("evaluator", e)))
            .chain([("forwarder", forwarder)])
            .collect();
        for (part, running) in parts {
            if let Err(e) = running.stopped().await {
                tracing::error!(part, error = %e, "task failed");
            }
        }
        if let Err(e) = drain.drain().await {
            tracing::warn!(error = %e, "bus drain failed");
        }
    });
    Ok(AllInOne { http_addr, ops_addr, admin_key_file, channels, task })
}
