//! Writes current collisions to the store in batches, so `CollidingDevices` is right from any
//! API replica without a store round trip per event. Nothing is dropped: a failed batch is
//! retried with backoff, and pending changes are flushed on shutdown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
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

/// Starts the writer; it ends when every sender is dropped and the last batch is written.
pub fn spawn(store: Arc<dyn CollisionWriter>) -> (mpsc::UnboundedSender<Change>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Change>();
    let task = tokio::spawn(async move {
        let mut pending: HashMap<(Uuid, Mac), Option<Collision>> = HashMap::new();
        loop {
            if pending.is_empty() {
                match rx.recv().await {
                    Some(change) => apply(&mut pending, change),
                    None => break,
                }
            }
            while pending.len() < BATCH {
                match rx.try_recv() {
                    Ok(change) => apply(&mut pending, change),
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
                        break;
                    }
                    Err(e) => {
                        metrics::counter!("zonecast_evaluator_collision_write_failures_total").increment(1);
                        tracing::warn!(error = %e, pending = pending.len(), "collision batch not written; retrying");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        // Keep absorbing changes so the latest state wins when the store is back.
                        while let Ok(change) = rx.try_recv() {
                            apply(&mut pending, change);
                        }
                    }
                }
            }
        }
    });
    (tx, task)
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
