//! Writes current collisions to the store in batches, so `CollidingDevices` is right from any
//! API replica without a store round trip per event. Nothing is dropped: a failed batch is
//! retried with backoff, and pending changes are flushed on shutdown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use uuid::Uuid;
use zonecast_model::{Collision, Mac};
use zonecast_store::CollisionWriter;

/// One change of the current collisions.
#[derive(Debug)]
pub enum Change {
    /// Now inside.
    Entered(Collision),
    /// No longer inside.
    Exited(Uuid, Mac),
}

/// Most changes written in one transaction.
const BATCH: usize = 5_000;

/// The writer's inputs and outputs.
pub struct Writer {
    /// Changes to write, in the order they happened.
    pub changes: mpsc::UnboundedSender<Change>,
    /// How many of the changes sent are written.
    pub written: watch::Receiver<u64>,
    /// Ends when every sender is dropped and the last batch is written.
    pub task: tokio::task::JoinHandle<()>,
}

/// Starts the writer.
pub fn spawn(store: Arc<dyn CollisionWriter>) -> Writer {
    let (tx, mut rx) = mpsc::unbounded_channel::<Change>();
    let (written_tx, written) = watch::channel(0u64);
    let task = tokio::spawn(async move {
        let mut pending: HashMap<(Uuid, Mac), Option<Collision>> = HashMap::new();
        // Changes taken from the channel: once a batch is written, all of them are.
        let mut taken = 0u64;
        loop {
            if pending.is_empty() {
                match rx.recv().await {
                    Some(change) => {
                        taken += 1;
                        apply(&mut pending, change);
                    }
                    None => break,
                }
            }
            while pending.len() < BATCH {
                match rx.try_recv() {
                    Ok(change) => {
                        taken += 1;
                        apply(&mut pending, change);
                    }
                    Err(_) => break,
                }
            }
            let mut backoff = Duration::from_millis(100);
            loop {
                let entered: Vec<Collision> = pending.values().flatten().cloned().collect();
                let exited: Vec<(Uuid, Mac)> =
                    pending.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k.clone()).collect();
                match store.write_collisions(&entered, &exited).await {
                    Ok(()) => {
                        pending.clear();
                        written_tx.send_replace(taken);
                        break;
                    }
                    Err(e) => {
                        metrics::counter!("zonecast_evaluator_collision_write_failures_total").increment(1);
                        tracing::warn!(error = %e, pending = pending.len(), "collision batch not written; retrying");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        // Keep absorbing changes so the latest state wins when the store is back.
                        while let Ok(change) = rx.try_recv() {
                            taken += 1;
                            apply(&mut pending, change);
                        }
                    }
                }
            }
        }
    });
    Writer { changes: tx, written, task }
}

fn apply(pending: &mut HashMap<(Uuid, Mac), Option<Collision>>, change: Change) {
    match change {
        Change::Entered(c) => {
            pending.insert((c.zone_id, c.mac.clone()), Some(c));
        }
        Change::Exited(zone, mac) => {
            pending.insert((zone, mac), None);
        }
    }
}
