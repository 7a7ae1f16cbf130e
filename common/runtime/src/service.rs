//! The service skeleton: what every service is once started ([`Running`]), and the sequence
//! every distributed binary runs around its service ([`launch`]): open the bus, the store and
//! the keys it needs, start the service on what was opened, and once it has stopped, drain the
//! bus (`zonecast_http::launch` adds the operations listener). The all-in-one opens one
//! bus and one store for all its parts and starts each part the same way.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::task::JoinHandle;
use zonecast_bus::Channels;
use zonecast_model::Secret;
use zonecast_store::Store;

use crate::config::{BusConfig, StoreConfig};
use crate::{Keys, Shutdown, StartError};

/// A started service: the addresses it bound and the task that ends once it has drained after
/// shutdown.
#[derive(Debug)]
pub struct Running {
    /// Where its HTTP listener listens, if it has one (the API's, the ingestor's).
    pub addr: Option<SocketAddr>,
    /// Where its operations listener listens, if it has one.
    pub ops_addr: Option<SocketAddr>,
    /// Ends after shutdown, once in-flight work is done and pending writes are flushed.
    pub task: JoinHandle<()>,
}

impl Running {
    /// A service whose work is `task`, with no listener of its own.
    pub fn new(task: JoinHandle<()>) -> Self {
        Self { addr: None, ops_addr: None, task }
    }

    /// This service, listening on `addr`.
    pub fn listening(self, addr: SocketAddr) -> Self {
        Self { addr: Some(addr), ..self }
    }

    /// Waits until the service has stopped and drained.
    pub async fn stopped(self) -> Result<(), StartError> {
        self.task.await.map_err(|e| StartError::new("service task", e))
    }
}

/// Opens the bus `config` names (NATS when it has a URL, in-process otherwise) with the event
/// journal and the position log on it; without NATS, the journal keeps its events in
/// `journal_file` when one is given. `client` names this connection on the server.
pub async fn open_bus(config: &BusConfig, client: &str, journal_file: Option<&Path>) -> Result<Channels, StartError> {
    let url = config.nats_url.as_ref().map(Secret::expose);
    let site = zonecast_bus::Site {
        prefix: &config.subject_prefix,
        partitions: config.partitions,
        journal: config.journal,
        positions: config.positions,
        journal_file,
    };
    zonecast_bus::open(url, client, site).await.map_err(|e| StartError::new("bus", e))
}

/// Makes the event journal's streams of `config` before service `name` starts, when they are to
/// be kept on more than one server (`ZONECAST_NATS_REPLICAS`): a NATS that cannot keep them so
/// (a single server, too few servers in its cluster) stops the start with its reason, rather
/// than failing every write later. A JetStream not ready yet only leaves them to be made on
/// first use.
pub async fn prepare_journal(channels: &Channels, config: &BusConfig, name: &str) -> Result<(), StartError> {
    if config.journal.replicas <= 1 {
        return Ok(());
    }
    match channels.journal.prepare().await {
        Ok(()) => Ok(()),
        Err(e @ zonecast_bus::BusError::Replicas(_)) => Err(StartError::new("bus", e)),
        Err(e) => {
            tracing::warn!(service = name, error = %e, "journal streams not made at start; they are made on first use");
            Ok(())
        }
    }
}

/// Opens the store `config` names: PostgreSQL when it has a URL (`ZONECAST_DATABASE_POOL`
/// connections at most), else the SQLite file `sqlite`.
pub async fn open_store(config: &StoreConfig, sqlite: &Path) -> Result<Arc<dyn Store>, StartError> {
    let url = config.database_url.as_ref().map(Secret::expose);
    zonecast_store::open(url, config.pool, sqlite).await.map_err(|e| StartError::new("store", e.detail()))
}

/// The keys derived from the configured master secret.
pub fn open_keys(secret: &Secret) -> Result<Arc<Keys>, StartError> {
    Keys::from_secret(secret).map(Arc::new).map_err(|e| StartError::new("keys", e))
}

/// What a distributed service needs opened before it starts. Every URL here is required (the
/// configuration's loading has already refused a binary without them).
#[derive(Debug, Clone, Copy)]
pub struct Needs<'a> {
    /// The binary, as it names its connections and its errors.
    pub name: &'static str,
    /// NATS.
    pub bus: &'a BusConfig,
    /// PostgreSQL, if the service uses a store.
    pub store: Option<&'a StoreConfig>,
    /// `ZONECAST_SECRET_KEY`, if the service uses keys (the outer `Option`), as configured.
    pub secret_key: Option<&'a Option<Secret>>,
}

/// What the skeleton opened for a service.
#[derive(Clone)]
pub struct Opened {
    /// The bus, the event journal and the position log.
    pub channels: Channels,
    /// The store, when the service needs one.
    pub store: Option<Arc<dyn Store>>,
    /// The keys, when the service needs them.
    pub keys: Option<Arc<Keys>>,
}

impl Opened {
    /// The store; an error for a service that did not ask for one.
    pub fn store(&self) -> Result<Arc<dyn Store>, StartError> {
        self.store.clone().ok_or_else(|| StartError::new("store", "not opened"))
    }

    /// The keys; an error for a service that did not ask for them.
    pub fn keys(&self) -> Result<Arc<Keys>, StartError> {
        self.keys.clone().ok_or_else(|| StartError::new("keys", "not opened"))
    }
}

fn required<'a>(value: Option<&'a Secret>, variable: &str, name: &str) -> Result<&'a Secret, StartError> {
    value.ok_or_else(|| StartError::new("config", format!("{variable} is required by {name}")))
}

/// Opens what `needs` names and starts the service with `start`. The returned task ends once
/// the service has stopped (after `shutdown`) and the bus is drained.
pub async fn launch<F, Fut>(needs: Needs<'_>, shutdown: Shutdown, start: F) -> Result<Running, StartError>
where
    F: FnOnce(Opened, Shutdown) -> Fut,
    Fut: Future<Output = Result<Running, StartError>>,
{
    let name = needs.name;
    let keys = match needs.secret_key {
        Some(secret) => Some(open_keys(required(secret.as_ref(), "ZONECAST_SECRET_KEY", name)?)?),
        None => None,
    };
    required(needs.bus.nats_url.as_ref(), "ZONECAST_NATS_URL", name)?;
    let store = match needs.store {
        Some(config) => {
            required(config.database_url.as_ref(), "ZONECAST_DATABASE_URL", name)?;
            Some(open_store(config, Path::new("")).await?)
        }
        None => None,
    };
    let channels = open_bus(needs.bus, name, None).await?;
    let bus = channels.bus.clone();
    // Listed in the cluster status while it runs (by the service's name without `zonecast-`).
    let replica_of = name.strip_prefix("zonecast-").unwrap_or(name);
    let prefix = needs.bus.subject_prefix.clone();
    let replicas = needs.bus.positions.replicas;
    let presence = crate::presence::spawn(bus.clone(), prefix, replicas, replica_of, shutdown.clone());
    let running = start(Opened { channels, store, keys }, shutdown).await?;
    let service = running.task;
    let task = tokio::spawn(async move {
        if let Err(e) = service.await {
            tracing::error!(service = name, error = %e, "service task failed");
        }
        let _ = presence.await;
        if let Err(e) = bus.drain().await {
            tracing::warn!(service = name, error = %e, "bus drain failed");
        }
    });
    Ok(Running { task, ..running })
}
