//! Connection status: every `status_every` (and at once when a connection comes up or goes
//! down) each connection's figures are written to the store as this replica's status row (the
//! API's status endpoint reads them) and set as metrics. The row is also this replica's sign of
//! life: the API takes a replica whose row is older than a few seconds as gone.
//!
//! `forwarded` survives the replica: an event the broker has every copy of is acknowledged to
//! the journal only after a row counting its copies is written (every [`SETTLE_EVERY`] while
//! there are some, sooner when many wait), so a replica killed before that leaves the event to
//! be handed out again and counted by whoever sends it. The row's `queued` is the positions
//! this replica holds (not journalled); the events waiting for the connection are the journal
//! consumer's backlog, which the API reads itself. Events that left the journal before the
//! connection had them count as dropped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;
use zonecast_model::format_id;
use zonecast_runtime::Shutdown;
use zonecast_runtime::ratelog::RateLimited;
use zonecast_store::{ConnectionStatus, StatusWriter};

use crate::consumer::consumer_name;
use crate::link::{LinkState, Wake};
use zonecast_bus::Journal;
use zonecast_bus::journal::Kind;

/// How often acknowledgements waiting for their count to be stored are settled: the journal
/// gets them at most this late, and sooner once a quarter of the connection's in-hand bound
/// waits (the journal hands out no more than that bound unacknowledged).
pub const SETTLE_EVERY: Duration = Duration::from_millis(200);

/// The connections being reported, replaced whenever the configuration is reloaded.
pub type Table = Arc<Vec<(Uuid, Arc<LinkState>)>>;

/// Writes one status row per connection and updates the metrics.
pub struct Reporter {
    store: Arc<dyn StatusWriter>,
    journal: Arc<dyn Journal>,
    replica: String,
    log: RateLimited,
    /// Per connection, the events that left the journal before it had them, as last read.
    lost: HashMap<Uuid, u64>,
}

impl Reporter {
    /// Reports as `replica` into `store`.
    pub fn new(store: Arc<dyn StatusWriter>, journal: Arc<dyn Journal>, replica: String) -> Self {
        Self { store, journal, replica, log: RateLimited::new(Duration::from_secs(30)), lost: HashMap::new() }
    }

    /// One round over `table`: the journal consumers' state is read, every row written and what
    /// waited to be acknowledged is. Store failures are logged at a limited rate; the next round
    /// writes the figures again.
    pub async fn report(&mut self, table: &[(Uuid, Arc<LinkState>)]) {
        self.lost.retain(|id, _| table.iter().any(|(t, _)| t == id));
        for (id, shared) in table {
            self.write(*id, shared, true).await;
        }
    }

    /// Writes the rows of the connections with acknowledgements waiting for their count to be
    /// stored, then acknowledges those events to the journal.
    pub async fn settle(&mut self, table: &[(Uuid, Arc<LinkState>)]) {
        for (id, shared) in table.iter().filter(|(_, shared)| shared.is_settling()) {
            self.write(*id, shared, false).await;
        }
    }

    /// Writes the row of connection `id` (after reading its journal consumer's state when
    /// `full`), then acknowledges the events it counts. They are acknowledged even when the
    /// row could not be written: delivery does not wait for the store; the counts stay in
    /// memory and go with the next row.
    async fn write(&mut self, id: Uuid, shared: &LinkState, full: bool) {
        let settling = shared.take_settling();
        let snapshot = shared.snapshot();
        let label = format_id(&id);
        if full {
            match self.journal.state(Kind::Events, &consumer_name(id)).await {
                Ok(Some(state)) => {
                    self.lost.insert(id, state.lost);
                    let queued = state.backlog + snapshot.positions_queued;
                    metrics::gauge!("zonecast_forwarder_queued", "connection" => label.clone()).set(queued as f64);
                }
                Ok(None) => {}
                Err(e) => {
                    if let Some(held_back) = self.log.allow() {
                        tracing::warn!(error = %e, held_back, "journal consumer state not read");
                    }
                }
            }
            metrics::gauge!("zonecast_forwarder_connected", "connection" => label.clone()).set(if snapshot.connected {
                1.0
            } else {
                0.0
            });
        }
        let dropped = snapshot.dropped + self.lost.get(&id).copied().unwrap_or(0);
        metrics::counter!("zonecast_forwarder_forwarded_total", "connection" => label.clone())
            .absolute(snapshot.forwarded);
        metrics::counter!("zonecast_forwarder_dropped_total", "connection" => label).absolute(dropped);
        let row = ConnectionStatus {
            connection_id: id,
            replica: self.replica.clone(),
            connected: snapshot.connected,
            last_error: snapshot.last_error,
            forwarded: snapshot.forwarded,
            dropped,
            queued: snapshot.positions_queued,
            updated_at: chrono::Utc::now(),
        };
        if let Err(e) = self.store.put_connection_status(&row).await {
            metrics::counter!("zonecast_forwarder_status_failures_total").increment(1);
            if let Some(held_back) = self.log.allow() {
                tracing::warn!(error = %e, held_back, "forwarder status not written");
            }
        }
        settling.into_iter().for_each(zonecast_bus::journal::Ack::ack);
    }

    /// Reports the current table every `every`, when poked, and when the table changes, until
    /// `shutdown`. The caller writes the final round after the clients have stopped.
    pub fn spawn(
        mut self,
        mut table: watch::Receiver<Table>,
        poke: Arc<Wake>,
        every: Duration,
        shutdown: Shutdown,
    ) -> tokio::task::JoinHandle<Self> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut settle = tokio::time::interval(SETTLE_EVERY);
            settle.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let full = tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    () = poke.status.notified() => true,
                    _ = tick.tick() => true,
                    changed = table.changed() => if changed.is_err() { break } else { true },
                    () = poke.settle.notified() => false,
                    _ = settle.tick() => false,
                };
                let current = table.borrow_and_update().clone();
                if full {
                    self.report(&current).await;
                } else {
                    self.settle(&current).await;
                }
            }
            self
        })
    }
}
