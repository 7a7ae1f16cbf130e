//! The positions behind `GET /v3/positions/stream`.
//!
//! One [`PositionFeed`] per API process reads every position once (over NATS the partitions'
//! stored batches, in one process each position as ingest published it) while at least one
//! stream is open. It keeps the newest position of each device (by Timestamp: one that arrives
//! late never moves a device back) and, at every tick
//! (`1 / hz`), writes them as one frame, `data: [{"MAC", "Position", "Timestamp"}, ...]`, that
//! every open stream shares: a device appears at most once per tick, and its newest position
//! always goes out at the next one. A stream narrowed to some MACs writes its own frame from the
//! tick's positions.
//!
//! Positions are not kept: a stream starts with the next tick and does not resume. A client that
//! cannot take a tick when it comes does not hold the feed up: its stream keeps the newest
//! position of each device from the ticks that came meanwhile and sends them as one frame once
//! the client has room, after `event: lagged` with the number of positions passed over. So a
//! slow client gets every device's newest position, less often. The feed never waits for a
//! stream, so no stream slows the pipeline.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use tokio::sync::broadcast;
use zonecast_bus::{BusError, Message, PositionLog, Subscription};
use zonecast_model::{Mac, PositionFix};
use zonecast_runtime::Shutdown;

/// Messages the feed takes in one turn once one has woken it.
const DRAIN: usize = 1024;

/// Ticks the feed keeps for streams that have not taken them yet.
const TICKS_KEPT: usize = 16;

/// One tick of the feed: the newest position of each device that moved since the last.
pub(crate) struct Tick {
    /// Positions the feed sent before this tick, since it started: a stream that misses ticks
    /// knows how many positions it skipped.
    pub(crate) before: u64,
    pub(crate) positions: Vec<PositionFix>,
    /// Every position of the tick as one SSE frame, shared by every stream that is not narrowed.
    pub(crate) frame: Bytes,
}

/// The positions of this API process for its position streams, read while a stream is open.
pub struct PositionFeed {
    log: Arc<dyn PositionLog>,
    period: Duration,
    /// The running feed's ticks; `None` while no stream is open.
    ticks: Mutex<Option<broadcast::Sender<Arc<Tick>>>>,
}

impl PositionFeed {
    /// A feed of the positions in `log`, ticking `hz` times a second once a stream opens.
    pub fn new(log: Arc<dyn PositionLog>, hz: u32) -> Arc<Self> {
        Arc::new(Self { log, period: Duration::from_secs(1) / hz.max(1), ticks: Mutex::new(None) })
    }

    /// The ticks from now on, starting the feed if no stream has it running.
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        shutdown: &Shutdown,
    ) -> Result<broadcast::Receiver<Arc<Tick>>, BusError> {
        if let Some(ticks) = self.lock().as_ref() {
            return Ok(ticks.subscribe());
        }
        // In one process a batch comes as ingest published it, without being encoded.
        let positions = self.log.tap(None, None).await?;
        let mut slot = self.lock();
        if let Some(ticks) = slot.as_ref() {
            // Another stream started the feed meanwhile.
            return Ok(ticks.subscribe());
        }
        let (ticks, receiver) = broadcast::channel(TICKS_KEPT);
        *slot = Some(ticks.clone());
        tokio::spawn(self.clone().run(positions, ticks, shutdown.clone()));
        Ok(receiver)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<broadcast::Sender<Arc<Tick>>>> {
        self.ticks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads positions and sends a tick every period until no stream is left, the bus ends or
    /// the API stops.
    async fn run(
        self: Arc<Self>,
        mut positions: Subscription,
        ticks: broadcast::Sender<Arc<Tick>>,
        shutdown: Shutdown,
    ) {
        let mut newest = Newest::default();
        let mut sent = 0u64;
        let mut clock = tokio::time::interval(self.period);
        clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tracing::debug!("position feed started");
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                message = positions.next() => match message {
                    Some(message) => {
                        newest.take_message(&message);
                        zonecast_bus::take_ready(&mut positions, DRAIN, |message| newest.take_message(&message));
                    }
                    None => break,
                },
                _ = clock.tick() => {
                    {
                        // Under the lock, so that a stream opening now either finds this feed
                        // with itself counted or starts a new one.
                        let mut slot = self.lock();
                        if ticks.receiver_count() == 0 {
                            *slot = None;
                            break;
                        }
                    }
                    let positions = newest.drain();
                    if positions.is_empty() {
                        continue;
                    }
                    let tick = Tick { before: sent, frame: frame(positions.iter()), positions };
                    sent += tick.positions.len() as u64;
                    let _ = ticks.send(Arc::new(tick));
                }
            }
        }
        let mut slot = self.lock();
        if slot.as_ref().is_some_and(|running| running.same_channel(&ticks)) {
            *slot = None;
        }
        tracing::debug!("position feed stopped");
    }
}

/// The newest position of every device seen while the feed runs, and those not sent yet.
#[derive(Default)]
struct Newest {
    devices: HashMap<Mac, (PositionFix, bool)>,
    /// The devices whose newest position is not sent yet, in the order they moved.
    pending: Vec<Mac>,
}

impl Newest {
    /// Keeps `fix` unless the device already has a newer one (by Timestamp, as the evaluators
    /// apply them): a position that arrives late never moves a device back.
    fn keep(&mut self, fix: PositionFix) {
        match self.devices.get_mut(&fix.mac) {
            Some((held, _)) if held.timestamp > fix.timestamp => {}
            Some((held, pending)) => {
                if !*pending {
                    *pending = true;
                    self.pending.push(fix.mac.clone());
                }
                *held = fix;
            }
            None => {
                self.pending.push(fix.mac.clone());
                self.devices.insert(fix.mac.clone(), (fix, true));
            }
        }
    }

    /// The positions not sent yet, each device once.
    fn drain(&mut self) -> Vec<PositionFix> {
        let devices = &mut self.devices;
        self.pending
            .drain(..)
            .filter_map(|mac| {
                let (fix, pending) = devices.get_mut(&mac)?;
                *pending = false;
                Some(fix.clone())
            })
            .collect()
    }

    /// Keeps the positions of a batch: decoded when ingest published it in this process, else
    /// one event per line.
    fn take_message(&mut self, message: &Message) {
        if let Some(fixes) = message.decoded::<Vec<PositionFix>>() {
            fixes.iter().for_each(|fix| self.keep(fix.clone()));
        } else {
            zonecast_bus::positions::lines(&message.bytes())
                .filter_map(|line| PositionFix::from_event_bytes(&line).ok())
                .for_each(|fix| self.keep(fix));
        }
    }
}

/// The positions of a tick as one SSE frame: `data: <JSON array>`.
pub(crate) fn frame<'a>(positions: impl Iterator<Item = &'a PositionFix>) -> Bytes {
    #[derive(serde::Serialize)]
    struct Wire<'a> {
        #[serde(rename = "MAC")]
        mac: &'a str,
        #[serde(rename = "Position")]
        position: [f64; 3],
        #[serde(rename = "Timestamp")]
        timestamp: String,
    }
    let mut out = BytesMut::from(&b"data: ["[..]);
    for (i, fix) in positions.enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        let wire = Wire {
            mac: fix.mac.as_str(),
            position: fix.position.map(to_millimetres),
            timestamp: zonecast_model::format_timestamp(&fix.timestamp),
        };
        // Strings and finite numbers always serialise.
        let _ = serde_json::to_writer((&mut out).writer(), &wire);
    }
    out.put_slice(b"]\n\n");
    out.freeze()
}

/// A coordinate rounded to the millimetre: what a view needs, in a third of the digits.
fn to_millimetres(metres: f64) -> f64 {
    (metres * 1000.0).round() / 1000.0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fix(mac: &str, x: f64, at: &str) -> PositionFix {
        PositionFix {
            mac: mac.parse().unwrap(),
            position: [x, 2.0, 1.5],
            timestamp: at.parse().unwrap(),
            sequence: None,
            event_id: None,
        }
    }

    #[test]
    fn a_tick_is_one_frame_of_a_json_array() {
        let positions = [
            fix("00:AA:BB:CC:DD:01", 1.0, "2026-11-24T10:00:00.250Z"),
            fix("00:AA:BB:CC:DD:02", -3.456_789_1, "2026-11-24T10:00:00Z"),
        ];
        let written = frame(positions.iter());
        let text = std::str::from_utf8(&written).unwrap();
        let data = text.strip_prefix("data: ").and_then(|t| t.strip_suffix("\n\n")).unwrap();
        let value: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            value,
            serde_json::json!([
                {"MAC": "00:AA:BB:CC:DD:01", "Position": [1.0, 2.0, 1.5], "Timestamp": "2026-11-24T10:00:00.250Z"},
                {"MAC": "00:AA:BB:CC:DD:02", "Position": [-3.457, 2.0, 1.5], "Timestamp": "2026-11-24T10:00:00.000Z"},
            ])
        );
        assert_eq!(&frame(std::iter::empty())[..], b"data: []\n\n");
    }

    #[test]
    fn a_tick_has_the_newest_position_of_each_device_that_moved_whatever_the_order_of_arrival() {
        let mut newest = Newest::default();
        let message = |fix: PositionFix| Message {
            subject: "zc.batches.0".into(),
            payload: Bytes::new(),
            decoded: Some(Arc::new(Decoded(vec![fix]))),
        };
        let xs = |positions: Vec<PositionFix>| positions.iter().map(|f| f.position[0]).collect::<Vec<_>>();
        newest.take_message(&message(fix("00:AA:BB:CC:DD:01", 1.0, "2026-11-24T10:00:01Z")));
        newest.take_message(&message(fix("00:AA:BB:CC:DD:01", 2.0, "2026-11-24T10:00:00Z")));
        newest.take_message(&message(fix("00:AA:BB:CC:DD:02", 3.0, "2026-11-24T10:00:00Z")));
        newest.take_message(&message(fix("00:AA:BB:CC:DD:02", 4.0, "2026-11-24T10:00:02Z")));
        assert_eq!(xs(newest.drain()), [1.0, 4.0]);
        assert!(newest.drain().is_empty(), "nothing moved since");
        // Older than what was sent: not sent again, nor in place of it.
        newest.keep(fix("00:AA:BB:CC:DD:01", 5.0, "2026-11-24T10:00:00.500Z"));
        newest.keep(fix("00:AA:BB:CC:DD:02", 6.0, "2026-11-24T10:00:03Z"));
        assert_eq!(xs(newest.drain()), [6.0]);
    }

    #[test]
    fn a_batch_is_read_line_by_line_and_lines_that_are_no_position_are_passed_over() {
        let update = |x: f64| zonecast_model::PositionUpdate {
            mac: "00:AA:BB:CC:DD:03".parse().unwrap(),
            position: [x, 0.0, 0.0],
            timestamp: "2026-11-24T10:00:00Z".parse().unwrap(),
            gateway_uri: None,
            extra: Default::default(),
        };
        let mut batch = BytesMut::new();
        let id = zonecast_model::EventId::generate(chrono::Utc::now());
        zonecast_bus::positions::push_line(
            &mut batch,
            &update(1.0).event_bytes(1, id, "2026-11-24T10:00:00.000Z", "x"),
        );
        zonecast_bus::positions::push_line(&mut batch, b"{not json");
        let message = Message { subject: "zc.batches.0".into(), payload: batch.freeze(), decoded: None };
        let mut newest = Newest::default();
        newest.take_message(&message);
        let taken = newest.drain();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].position, [1.0, 0.0, 0.0]);
    }

    #[derive(Debug)]
    struct Decoded(Vec<PositionFix>);

    impl zonecast_bus::Encode for Decoded {
        fn decoded(&self) -> &(dyn std::any::Any + Send + Sync) {
            &self.0
        }

        fn encode(&self) -> Bytes {
            Bytes::new()
        }
    }
}
