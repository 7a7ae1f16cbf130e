//! Connection status: every `status_every` (and at once when a connection comes up or goes
//! down) each connection's figures are written to the store as this replica's status row (the
//! API's status endpoint reads them) and set as metrics. The backlog is the journal
//! consumer's (every replica sees the same), and events that left the journal before the
//! connection had them count as dropped.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use uuid::Uuid;
use zonecast_model::format_id;
use zonecast_runtime::Shutdown;
use zonecast_runtime::ratelog::RateLimited;
use zonecast_store::{ConnectionStatus, StatusWriter};

use crate::consumer::consumer_name;
use crate::link::Shared;
use zonecast_bus::Journal;
use zonecast_bus::journal::Kind;

/// The connections being reported, replaced whenever the configuration is reloaded.
pub type Table = Arc<Vec<(Uuid, Arc<Shared>)>>;

/// Writes one status row per connection and updates the metrics.
pub struct Reporter {
    store: Arc<dyn StatusWriter>,
    journal: Arc<dyn Journal>,
    replica: String,
    log: RateLimited,
}

impl Reporter {
    /// Reports as `replica` into `store`.
    pub fn new(store: Arc<dyn StatusWriter>, journal: Arc<dyn Journal>, replica: String) -> Self {
        Self { store, journal, replica, log: RateLimited::new(Duration::from_secs(30)) }
    }

    /// One round over `table`. Store failures are logged at a limited rate; the next round
    /// writes the figures again.
    pub async fn report(&mut self, table: &[(Uuid, Arc<Shared>)]) {
        for (id, shared) in table {
            let mut snapshot = shared.snapshot();
            match self.journal.state(Kind::Events, &consumer_name(*id)).await {
                Ok(Some(state)) => {
                    snapshot.queued = state.backlog + snapshot.positions_queued;
                    snapshot.dropped += state.lost;
                }
                Ok(None) => {}
                Err(e) => {
                    if let Some(held_back) = self.log.allow() {
                        tracing::warn!(error = %e, held_back, "journal consumer state not read");
                    }
                }
            }
            let label = format_id(id);
            metrics::counter!("zonecast_forwarder_forwarded_total", "connection" => label.clone())
                .absolute(snapshot.forwarded);
            metrics::counter!("zonecast_forwarder_dropped_total", "connection" => label.clone())
                .absolute(snapshot.dropped);
            metrics::gauge!("zonecast_forwarder_queued", "connection" => label.clone()).set(snapshot.queued as f64);
            metrics::gauge!("zonecast_forwarder_connected", "connection" => label).set(if snapshot.connected {
                1.0
            } else {
                0.0
            });
            let row = ConnectionStatus {
                connection_id: *id,
                replica: self.replica.clone(),
                connected: snapshot.connected,
                last_error: snapshot.last_error,
                forwarded: snapshot.forwarded,
                dropped: snapshot.dropped,
                queued: snapshot.queued,
                updated_at: chrono::Utc::now(),
            };
            if let Err(e) = self.store.put_connection_status(&row).await {
                metrics::counter!("zonecast_forwarder_status_failures_total").increment(1);
                if let Some(held_back) = self.log.allow() {
                    tracing::warn!(error = %e, held_back, "forwarder status not written");
                }
            }
        }
    }

    /// Reports the current table every `every`, when poked, and when the table changes, until
    /// `shutdown`. The caller writes the final round after the clients have stopped.
    pub fn spawn(
        mut self,
        mut table: watch::Receiver<Table>,
        poke: Arc<Notify>,
        every: Duration,
        shutdown: Shutdown,
    ) -> tokio::task::JoinHandle<Self> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    () = poke.notified() => {}
                    _ = tick.tick() => {}
                    changed = table.changed() => if changed.is_err() { break },
                }
                let current = table.borrow_and_update().clone();
                self.report(&current).await;
            }
            self
        })
    }
}
