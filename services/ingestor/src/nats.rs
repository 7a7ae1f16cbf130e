//! Positions from NATS: `<prefix>.ingest`, consumed in the `ingestors` queue group so that
//! replicas share the input.

use std::sync::Arc;

use futures::StreamExt;
use zonecast_bus::{Bus, INGESTORS, Subjects};
use zonecast_ingest::Publisher;
use zonecast_runtime::Shutdown;
use zonecast_runtime::ratelog::RateLimited;

/// Payloads taken at once: each waits for its positions to be stored while the next ones are
/// read and sent to be stored behind them (in the order they came).
const IN_FLIGHT: usize = 64;

/// Subscribes, then takes what arrives until `shutdown`.
pub(crate) async fn start(
    bus: Arc<dyn Bus>,
    subjects: &Subjects,
    publisher: Publisher,
    shutdown: Shutdown,
) -> Result<tokio::task::JoinHandle<()>, zonecast_bus::BusError> {
    let sub = bus.queue_subscribe(&subjects.ingest(), INGESTORS).await?;
    Ok(tokio::spawn(async move {
        let mut log = RateLimited::new(crate::LOG_EVERY);
        let taken = sub
            .take_until(shutdown.clone().cancelled_owned())
            // While the pipeline is behind, the next payload waits (and NATS holds the rest).
            .then(|msg| {
                let publisher = publisher.clone();
                async move {
                    publisher.caught_up("nats").await;
                    msg
                }
            })
            .map(|msg| {
                let publisher = publisher.clone();
                async move { publisher.accept_when_caught_up(&msg.payload, "nats").await }
            })
            .buffered(IN_FLIGHT);
        let mut taken = std::pin::pin!(taken);
        while let Some(result) = taken.next().await {
            crate::report(result, "nats", &mut log);
        }
    }))
}
