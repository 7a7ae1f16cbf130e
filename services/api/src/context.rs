//! The one API context every handler receives.

use std::sync::Arc;

use zonecast_bus::{Bus, Subjects};
use zonecast_model::{ConfigChanged, ConfigKind, ConfigOperation};
use zonecast_runtime::ops::Health;
use zonecast_runtime::{ApiConfig, Auth, Keys};
use zonecast_store::ApiStore;

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
    routes: Vec<crate::routes::Route>,
}

impl Context {
    /// A context from configuration and the opened store, bus and keys.
    pub fn new(config: &ApiConfig, store: Arc<dyn ApiStore>, bus: Arc<dyn Bus>, keys: Arc<Keys>) -> Self {
        let auth = &config.auth;
        Self {
            auth: Auth::new(keys.clone(), &auth.api_keys, &auth.clients, auth.token_ttl_seconds),
            health: Health::new(Some(store.clone()), bus.clone()),
            store,
            bus,
            subjects: Subjects::new(config.bus.subject_prefix.clone()),
            keys,
            site_id: config.site_id,
            http_limits: config.http.limits,
            limits: config.limits,
            max_connections: config.api.max_connections,
            positions: None,
            routes: crate::routes::ROUTES.iter().filter(|r| r.op != crate::routes::Op::Positions).cloned().collect(),
        }
    }

    /// This context with position input on its listener.
    pub fn with_positions(mut self, publisher: zonecast_ingest::Publisher) -> Self {
        self.positions = Some(publisher);
        self.routes = crate::routes::ROUTES.to_vec();
        self
    }

    /// The routes this listener answers.
    pub fn routes(&self) -> &[crate::routes::Route] {
        &self.routes
    }

    /// Publishes `<prefix>.config.changed`. The write it announces is already committed, so a
    /// bus failure does not fail the request: it is logged and counted, and services also
    /// reload on reconnect.
    pub async fn announce(&self, kind: ConfigKind, ids: Vec<String>, operation: Option<ConfigOperation>) {
        let change = ConfigChanged { kind, ids, operation };
        let payload = match serde_json::to_vec(&change) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "cannot encode config change");
                return;
            }
        };
        // Flushed, so that a 200 means every subscriber can already see the change.
        let published = match self.bus.publish(self.subjects.config_changed(), payload.into()).await {
            Ok(()) => self.bus.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = published {
            metrics::counter!("zonecast_api_announce_failures_total").increment(1);
            tracing::warn!(error = %e, kind = ?kind, "config change saved but not announced");
        }
    }
}
