//! The one API context every handler receives.

use std::sync::Arc;

use zonecast_bus::{Bus, Channels, Journal, Subjects};
use zonecast_model::{ConfigChanged, ConfigKind, ConfigOperation};

use zonecast_http::Auth;
use zonecast_http::cors::Cors;
use zonecast_http::ops::Health;
use zonecast_runtime::{Keys, Shutdown, StartError};
use zonecast_store::ApiStore;

use crate::ApiConfig;
use crate::applied::{Applied, Appliers};

/// Shared state of the API: store, bus, keys and credentials.
pub struct Context {
    /// Where configuration lives.
    pub store: Arc<dyn ApiStore>,
    /// Where changes are announced.
    pub bus: Arc<dyn Bus>,
    /// Subject names.
    pub subjects: Subjects,
    /// Seals stored secrets.
    pub keys: Arc<Keys>,
    /// Credential checks.
    pub auth: Auth,
    /// SiteID returned in zones.
    pub site_id: i64,
    /// Largest accepted body, connections and timeouts of the listener.
    pub http_limits: zonecast_runtime::HttpLimits,
    /// What one request may ask; validation reads it.
    pub limits: zonecast_model::Limits,
    /// Most MQTT connections that may exist.
    pub max_connections: usize,
    /// Readiness of the store and the bus.
    pub health: Health,
    /// Position input on this listener (the all-in-one); `None` leaves `POST /v3/positions` out.
    pub positions: Option<zonecast_ingest::Publisher>,
    /// The event journal the live streams read.
    pub journal: Arc<dyn Journal>,
    /// How live streams behave.
    pub streams: StreamSettings,
    /// The positions the position streams follow, read while one is open.
    pub position_feed: Arc<crate::position_feed::PositionFeed>,
    /// The evaluators, as the cluster status reads them.
    pub evaluators: crate::evaluators::Evaluators,
    /// Cancelled when the API stops: open streams end then.
    pub shutdown: Shutdown,
    /// The evaluator and forwarder replicas and the revision each has in force.
    appliers: Arc<Appliers>,
    /// How long a write waits, at most, for every replica to have it in force.
    apply_wait: std::time::Duration,
}

/// How live streams behave (from [`crate::ApiSettings`]).
#[derive(Debug, Clone)]
pub struct StreamSettings {
    /// How many events a client may fall behind the newest before it lags.
    pub buffer: usize,
    /// Longest silence before a keep-alive comment.
    pub heartbeat: std::time::Duration,
    /// Other origins whose pages may open a stream.
    pub cors: Cors,
}

impl Context {
    /// Where the events of alarm changes go.
    pub fn change_events(&self) -> crate::alarm_changes::ChangeEvents {
        crate::alarm_changes::ChangeEvents {
            journal: self.journal.clone(),
            subjects: self.subjects.clone(),
            site_id: self.site_id,
        }
    }

    /// A context from configuration and the opened store, channels and keys; it follows the
    /// `config.applied` reports of evaluators and forwarders from now on. `appliers`: how many
    /// replicas apply configuration, when the composition knows (the all-in-one); otherwise
    /// those alive are learnt from their reports.
    pub async fn new(
        config: &ApiConfig,
        store: Arc<dyn ApiStore>,
        channels: &Channels,
        keys: Arc<Keys>,
        appliers: Option<usize>,
    ) -> Result<Self, StartError> {
        let bus = channels.bus.clone();
        let auth = &config.auth;
        let subjects = Subjects::new(config.bus.subject_prefix.clone());
        let appliers =
            Appliers::follow(bus.as_ref(), &subjects, appliers).await.map_err(|e| StartError::new("bus", e))?;
        let position_feed =
            crate::position_feed::PositionFeed::new(channels.positions.clone(), config.api.stream_position_hz);
        Ok(Self {
            auth: Auth::new(keys.clone(), &auth.api_keys, &auth.clients, auth.token_ttl_seconds),
            health: Health::new(Some(store.clone()), bus.clone()),
            journal: channels.journal.clone(),
            store,
            bus,
            subjects,
            keys,
            site_id: config.site_id,
            http_limits: config.http.limits,
            limits: config.limits,
            max_connections: config.api.max_connections,
            positions: None,
            position_feed,
            streams: StreamSettings {
                buffer: config.api.stream_buffer,
                heartbeat: config.api.stream_heartbeat,
                cors: Cors::new(config.api.cors_origins.iter().cloned()),
            },
            evaluators: crate::evaluators::Evaluators::claimed(config.bus.partitions, config.bus.positions.replicas),
            shutdown: Shutdown::new(),
            appliers,
            apply_wait: config.api.apply_wait,
        })
    }

    /// This context with position input on its listener.
    pub fn with_positions(mut self, publisher: zonecast_ingest::Publisher) -> Self {
        self.positions = Some(publisher);
        self
    }

    /// This context reporting the evaluators of its process, each given the partitions of its
    /// entry (the all-in-one, whose evaluators claim nothing).
    pub fn with_evaluators(mut self, evaluators: Vec<Vec<u32>>) -> Self {
        self.evaluators = crate::evaluators::Evaluators::given(self.evaluators.partitions(), evaluators);
        self
    }

    /// Logs a committed write in the change log, announces it on `<prefix>.config.changed`
    /// with its revision, and waits (at most the configured time) until every live evaluator
    /// and forwarder has it in force. The write is committed already, so a failure here does
    /// not fail the request: it is logged and counted, and the answer tells how many replicas
    /// applied the change. An unlogged write is still announced (without a revision); services
    /// then look at the log and read again what it names at the next logged change.
    pub async fn announce(&self, kind: ConfigKind, ids: Vec<String>, operation: Option<ConfigOperation>) -> Applied {
        let mut change = ConfigChanged { kind, ids, operation, revision: 0 };
        match self.store.log_change(&change).await {
            Ok(revision) => change.revision = revision,
            Err(e) => {
                metrics::counter!("zonecast_api_announce_failures_total").increment(1);
                tracing::warn!(error = %e, kind = ?kind, "config change saved but not logged");
            }
        }
        let published = match serde_json::to_vec(&change) {
            Ok(payload) => match self.bus.publish(self.subjects.config_changed(), payload.into()).await {
                Ok(()) => self.bus.flush().await,
                Err(e) => Err(e),
            },
            Err(e) => Err(zonecast_bus::BusError::Publish(e.to_string())),
        };
        if let Err(e) = published {
            metrics::counter!("zonecast_api_announce_failures_total").increment(1);
            tracing::warn!(error = %e, kind = ?kind, "config change saved but not announced");
        }
        self.appliers.wait(change.revision, self.apply_wait).await
    }
}
