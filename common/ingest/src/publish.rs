//! Publishing normalised positions in batches per partition to the position log.

use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use chrono::{DateTime, Utc};
use zonecast_bus::positions::{self, PositionSettings, Stored};
use zonecast_bus::{BusError, Channels, Decoded, Encode, PositionLog, Subjects};
use zonecast_model::{EventId, PositionFix, PositionUpdate};

/// Why positions were not published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The bus is not connected: nothing was accepted.
    #[error("the message bus is not connected")]
    Disconnected,
    /// Publishing failed part-way.
    #[error("publishing failed: {0}")]
    Bus(#[from] BusError),
}

/// Why a payload was not taken.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// Not JSON, or not an object or array (HTTP 400).
    #[error("request body is {0}")]
    Malformed(crate::Malformed),
    /// The positions could not be published (HTTP 503).
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// The pipeline is further behind than the bound: nothing was taken (HTTP 503 with
    /// `Retry-After`).
    #[error("{0}")]
    Busy(crate::Behind),
}

/// Publishes positions in batches per partition to the position log, which the evaluators
/// follow.
#[derive(Clone)]
pub struct Publisher {
    bus: Arc<dyn zonecast_bus::Bus>,
    log: Arc<dyn PositionLog>,
    subjects: Subjects,
    site_id: i64,
    /// Whether every position is published on its own subject too.
    per_position_subjects: bool,
    /// How far behind the evaluators and forwarders are.
    pressure: Arc<crate::Pressure>,
    /// How long [`Publisher::accept`] holds a payload while the pipeline is behind.
    hold: std::time::Duration,
}

impl Publisher {
    /// A publisher to the position log of `channels`, stamping `site_id`, pushing back as
    /// `settings` say.
    pub fn new(channels: &Channels, subjects: Subjects, site_id: i64, settings: PositionSettings) -> Self {
        let bus = channels.bus.clone();
        // Where positions wait in this process's queues, ingest counts them too.
        let root = subjects.position_batches_root();
        let queues = bus.waiting(&root).map(|_| crate::pressure::Queues { bus: bus.clone(), root });
        Self {
            bus,
            log: channels.positions.clone(),
            subjects,
            site_id,
            per_position_subjects: settings.per_position_subjects,
            pressure: crate::Pressure::new(settings.max_lag, queues),
            hold: settings.hold,
        }
    }

    /// Follows the lag the evaluators and forwarders report, to push back on (see
    /// [`crate::Pressure`]); until called, nothing is pushed back on.
    pub async fn follow_pressure(&self) -> Result<(), BusError> {
        self.pressure.follow(self.bus.as_ref(), &self.subjects).await
    }

    /// Returns once the pipeline is within its lag bound: the NATS and MQTT inputs wait here
    /// before they take the next payload (the MQTT broker holds what is not taken yet, the
    /// NATS input's buffer what fits in it).
    pub async fn caught_up(&self, input: &'static str) {
        self.pressure.caught_up(input).await;
    }

    /// Makes what the partitions need before the first positions come (see
    /// [`PositionLog::prepare`]).
    pub async fn prepare(&self) -> Result<(), BusError> {
        self.log.prepare().await
    }

    /// Whether publishing can work now (the HTTP input answers 503 otherwise).
    pub fn ready(&self) -> bool {
        self.bus.is_connected()
    }

    /// Normalises `payload` (raw bytes) received on `input` (`http`), publishes what is valid
    /// and counts both outcomes. While the pipeline is further behind than its bound it holds
    /// `payload`, for at most `ZONECAST_INGEST_HOLD_MS`, and takes it the moment the pipeline
    /// has caught up; it refuses it whole when the pipeline is still behind then.
    pub async fn accept(&self, payload: &[u8], input: &'static str) -> Result<crate::Outcome, AcceptError> {
        if let Err(behind) = self.pressure.caught_up_within(input, self.hold).await {
            metrics::counter!("zonecast_ingest_refused_total", "input" => input).increment(1);
            return Err(AcceptError::Busy(behind));
        }
        self.store(payload, input).await
    }

    /// Like [`Publisher::accept`] for an input that can be held (`nats`, `mqtt`): waits while
    /// the pipeline is further behind than its bound, then takes `payload`.
    pub async fn accept_when_caught_up(
        &self,
        payload: &[u8],
        input: &'static str,
    ) -> Result<crate::Outcome, AcceptError> {
        self.caught_up(input).await;
        self.store(payload, input).await
    }

    /// Normalises, publishes and counts.
    async fn store(&self, payload: &[u8], input: &'static str) -> Result<crate::Outcome, AcceptError> {
        self.hand_over(payload, input).await?.stored().await
    }

    /// Normalises `payload` received now on `input` and hands its valid positions on to be
    /// stored, returning once they are on their way: the positions of payloads handed over one
    /// after the other are stored in that order. [`Taken::stored`] waits for their store and
    /// counts the outcome. Sequential inputs (NATS) take their next payload meanwhile.
    pub async fn hand_over(&self, payload: &[u8], input: &'static str) -> Result<Taken, AcceptError> {
        let now = Utc::now();
        let results = match crate::normalize_bytes(payload, now) {
            Ok(r) => r,
            Err(reason) => {
                metrics::counter!("zonecast_ingest_rejected_total", "input" => input).increment(1);
                return Err(AcceptError::Malformed(reason));
            }
        };
        let mut valid = Vec::with_capacity(results.len());
        let mut outcome = crate::Outcome::default();
        for element in results {
            match element.result {
                Ok(update) => valid.push(update),
                Err(reason) => outcome.rejected.push((element.index, reason)),
            }
        }
        let on_the_way = self.send(valid, now).await?;
        Ok(Taken { outcome, on_the_way, input })
    }

    /// Publishes `updates`, produced at `now`, returning how many once they are stored (over
    /// NATS) or handed to the bus (in one process). Refuses everything when the bus is not
    /// connected; over NATS an error may leave some of them stored.
    pub async fn publish(&self, updates: Vec<PositionUpdate>, now: DateTime<Utc>) -> Result<usize, PublishError> {
        self.send(updates, now).await?.stored().await
    }

    /// [`Publisher::publish`] up to handing the batches on: they are stored after those of
    /// earlier calls, and [`OnTheWay::stored`] waits for them.
    async fn send(&self, updates: Vec<PositionUpdate>, now: DateTime<Utc>) -> Result<OnTheWay, PublishError> {
        if !self.ready() {
            return Err(PublishError::Disconnected);
        }
        let local: Arc<str> = zonecast_model::format_timestamp(&now).into();
        // Positions of one batch mostly share their timestamp: format it once.
        let mut last: Option<(DateTime<Utc>, Arc<str>)> = None;
        let count = updates.len();
        let partitions = self.log.partitions();
        let mut batches: Vec<Vec<Published>> = Vec::new();
        for update in updates {
            let partition = update.mac.partition(partitions);
            let timestamp = match &last {
                Some((t, text)) if *t == update.timestamp => text.clone(),
                _ => last
                    .insert((update.timestamp, zonecast_model::format_timestamp(&update.timestamp).into()))
                    .1
                    .clone(),
            };
            let event_id = EventId::generate(now);
            let event = Published { event_id, site_id: self.site_id, timestamp, local: local.clone(), update };
            if self.per_position_subjects {
                let subject = self.subjects.positions(partition, event.update.mac.as_str());
                self.bus.publish(subject, event.encode()).await?;
            }
            let index = partition as usize;
            if batches.len() <= index {
                batches.resize_with(index + 1, Vec::new);
            }
            batches[index].push(event);
        }
        let batches: Vec<(u32, Decoded)> = batches
            .into_iter()
            .enumerate()
            .filter(|(_, positions)| !positions.is_empty())
            .map(|(p, positions)| (p as u32, Arc::new(Batch::new(positions)) as Decoded))
            .collect();
        let stored = match batches.is_empty() {
            true => Stored::done(),
            false => self.log.publish(batches).await?,
        };
        Ok(OnTheWay { count, stored })
    }
}

/// Positions handed on to be stored ([`Publisher::hand_over`]).
#[must_use = "the positions count as taken once stored"]
pub struct Taken {
    outcome: crate::Outcome,
    on_the_way: OnTheWay,
    input: &'static str,
}

impl Taken {
    /// Waits until the positions are stored (over NATS; in one process they already reached the
    /// bus), counts them and the rejected elements, and tells what became of the payload.
    pub async fn stored(self) -> Result<crate::Outcome, AcceptError> {
        let Self { mut outcome, on_the_way, input } = self;
        outcome.accepted = on_the_way.stored().await?;
        metrics::counter!("zonecast_ingest_accepted_total", "input" => input).increment(outcome.accepted as u64);
        metrics::counter!("zonecast_ingest_rejected_total", "input" => input).increment(outcome.rejected.len() as u64);
        Ok(outcome)
    }
}

/// Positions on their way to the log: how many, and what confirms their store.
struct OnTheWay {
    count: usize,
    stored: Stored,
}

impl OnTheWay {
    async fn stored(self) -> Result<usize, PublishError> {
        self.stored.confirmed().await?;
        Ok(self.count)
    }
}

/// A position as published: what its event bytes are written from.
#[derive(Debug)]
struct Published {
    update: PositionUpdate,
    /// Drawn when the position is published, so every copy of its event carries the same.
    event_id: EventId,
    site_id: i64,
    /// The update's Timestamp and the LocalTimestamp, formatted (shared across a batch).
    timestamp: Arc<str>,
    local: Arc<str>,
}

impl Published {
    fn encode(&self) -> Bytes {
        self.update.event_bytes(self.site_id, self.event_id, &self.timestamp, &self.local).into()
    }
}

/// The positions of one partition from one payload: decoded (in one process), they are the
/// `Vec<PositionFix>` the evaluators take as it is, made when first asked for; encoded, one
/// event per line.
#[derive(Debug)]
struct Batch {
    fixes: OnceLock<Vec<PositionFix>>,
    positions: Vec<Published>,
}

impl Batch {
    fn new(positions: Vec<Published>) -> Self {
        Self { fixes: OnceLock::new(), positions }
    }

    fn fixes(&self) -> &Vec<PositionFix> {
        self.fixes.get_or_init(|| {
            self.positions.iter().map(|p| PositionFix { event_id: Some(p.event_id), ..p.update.fix() }).collect()
        })
    }
}

impl Encode for Batch {
    fn decoded(&self) -> &(dyn std::any::Any + Send + Sync) {
        self.fixes()
    }

    fn encode(&self) -> Bytes {
        let mut lines = BytesMut::new();
        for position in &self.positions {
            positions::push_line(&mut lines, &position.encode());
        }
        lines.freeze()
    }

    fn weight(&self) -> usize {
        self.positions.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use futures::StreamExt;
    use zonecast_bus::InProcessBus;

    use super::*;
    use crate::Behind;

    /// A body of `n` positions of distinct devices, all in partition 0 of 1.
    fn body(n: usize) -> Vec<u8> {
        let items: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"MAC": "00:00:00:00:{:02X}:{:02X}", "Position": [1, 2, 3]}}"#, i >> 8, i & 255))
            .collect();
        format!("[{}]", items.join(",")).into_bytes()
    }

    /// A bus of one partition in this process, and a reader of that partition.
    async fn one_partition() -> (Channels, zonecast_bus::Subscription) {
        let bus: Arc<dyn zonecast_bus::Bus> = Arc::new(InProcessBus::new());
        let channels = Channels {
            journal: bus.journal("pub", Default::default()),
            positions: bus.position_log("pub", 1, PositionSettings::default()),
            bus,
        };
        let evaluator = channels.positions.tap(Some(&[0]), None).await.unwrap();
        (channels, evaluator)
    }

    #[tokio::test]
    async fn in_one_process_a_body_is_refused_whole_while_too_many_positions_wait_and_taken_once_they_are_read() {
        let (channels, mut evaluator) = one_partition().await;
        let no_hold = PositionSettings { hold: std::time::Duration::ZERO, ..PositionSettings::default() };
        let publisher = Publisher::new(&channels, Subjects::new("pub"), 1, no_hold);
        let batch = body(1_000);
        let mut taken = 0;
        let refused = loop {
            match publisher.accept(&batch, "http").await {
                Ok(outcome) => taken += outcome.accepted,
                Err(AcceptError::Busy(behind)) => break behind,
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!(
            taken,
            crate::pressure::MAX_WAITING.div_ceil(1_000) * 1_000,
            "taken up to the first body past the bound"
        );
        assert_eq!(refused, Behind::Queued { positions: taken, bound: crate::pressure::MAX_WAITING });
        let read = evaluator.next().await.unwrap();
        assert_eq!(read.decoded::<Vec<PositionFix>>().map(Vec::len), Some(1_000), "a body's positions in one batch");
        assert_eq!(
            publisher.accept(&batch, "http").await.unwrap().accepted,
            1_000,
            "taken again once read below the bound"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_comes_while_too_many_positions_wait_is_held_and_taken_once_they_are_read() {
        let (channels, mut evaluator) = one_partition().await;
        let publisher = Publisher::new(&channels, Subjects::new("pub"), 1, PositionSettings::default());
        let batch = body(1_000);
        let full = crate::pressure::MAX_WAITING.div_ceil(1_000);
        for _ in 0..full {
            publisher.accept(&batch, "http").await.unwrap();
        }
        // Past the bound: the next body waits in `accept` instead of being refused.
        let held = tokio::spawn({
            let (publisher, batch) = (publisher.clone(), batch.clone());
            async move { publisher.accept(&batch, "http").await.map(|o| o.accepted) }
        });
        // The clock is paused: the held body is looked at many times meanwhile.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await; // sleep-ok: paused clock
        assert!(!held.is_finished(), "answered while the bound was passed");
        evaluator.next().await.unwrap();
        assert_eq!(held.await.unwrap().unwrap(), 1_000, "taken once a batch was read");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_held_for_the_whole_hold_is_refused_with_why() {
        let (channels, _evaluator) = one_partition().await;
        let hold = std::time::Duration::from_millis(300);
        let settings = PositionSettings { hold, ..PositionSettings::default() };
        let publisher = Publisher::new(&channels, Subjects::new("pub"), 1, settings);
        let batch = body(1_000);
        for _ in 0..crate::pressure::MAX_WAITING.div_ceil(1_000) {
            publisher.accept(&batch, "http").await.unwrap();
        }
        let start = tokio::time::Instant::now();
        let refused = publisher.accept(&batch, "http").await.unwrap_err();
        assert!(start.elapsed() >= hold, "refused after {:?}, before the hold ran out", start.elapsed());
        assert!(matches!(refused, AcceptError::Busy(Behind::Queued { .. })), "{refused}");
    }
}
