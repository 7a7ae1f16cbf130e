//! The position log of one process: batches go from ingest to the evaluators through the
//! bus's queues as their publisher held them, and are not kept.

use std::sync::Arc;

use futures::StreamExt;

use super::{Batch, Batches, PositionLog, Stored};
use crate::journal::Ack;
use crate::{Bus, BusError, Decoded, Subscription};

/// Position batches handed over decoded through an in-process bus.
pub struct InProcessPositions {
    bus: Arc<dyn Bus>,
    prefix: String,
    partitions: u32,
}

impl InProcessPositions {
    /// The batches of `partitions` partitions under `prefix` on `bus`.
    pub fn new(bus: Arc<dyn Bus>, prefix: &str, partitions: u32) -> Self {
        Self { bus, prefix: prefix.to_owned(), partitions }
    }
}

#[async_trait::async_trait]
impl PositionLog for InProcessPositions {
    fn partitions(&self) -> u32 {
        self.partitions
    }

    fn keeps(&self) -> bool {
        false
    }

    async fn publish(&self, batches: Vec<(u32, Decoded)>) -> Result<Stored, BusError> {
        for (partition, batch) in batches {
            // The followers take the batch as it is; its lines are written only for a
            // subscriber that reads bytes.
            self.bus.publish_decoded(super::subject(&self.prefix, Some(partition)), batch).await?;
        }
        Ok(Stored::done())
    }

    async fn follow(&self, partition: u32, _in_hand: usize, _had: Option<u64>) -> Result<Batches, BusError> {
        let messages = self.bus.subscribe_decoded(&super::subject(&self.prefix, Some(partition))).await?;
        Ok(Box::pin(messages.map(move |message| Batch {
            partition,
            sequence: None,
            payload: message.payload,
            decoded: message.decoded,
            skipped: 0,
            ack: Ack::new(|| {}),
        })))
    }

    async fn tap(&self, partitions: Option<&[u32]>, group: Option<&str>) -> Result<Subscription, BusError> {
        super::tap(self.bus.as_ref(), &self.prefix, partitions, group).await
    }

    async fn backlog(&self) -> Result<Option<u64>, BusError> {
        Ok(None)
    }
}
