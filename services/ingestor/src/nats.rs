//! Positions from NATS: `<prefix>.ingest`, consumed in the `ingestors` queue group so that
//! replicas share the input.

use std::sync::Arc;

use futures::StreamExt;
use zonecast_bus::{Bus, INGESTORS, Subjects};
use zonecast_ingest::Publisher;
use zonecast_runtime::Shutdown;
use zonecast_runtime::ratelog::RateLimited;

/// Subscribes, then takes what arrives until `shutdown`.
pub(crate) async fn start(
    bus: Arc<dyn Bus>,
    subjects: &Subjects,
    publisher: Publisher,
    shutdown: Shutdown,
) -> Result<tokio::task::JoinHandle<()>, zonecast_bus::BusError> {
    let mut sub = bus.queue_subscribe(&subjects.ingest(), INGESTORS).await?;
    Ok(tokio::spawn(async move {
        let mut log = RateLimited::new(crate::LOG_EVERY);
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                msg = sub.next() => match msg {
                    Some(msg) => crate::take(&publisher, &msg.payload, "nats", &mut log).await,
                    None => break,
                },
            }
        }
    }))
}
