//! `GET /v3/positions/stream`: device positions as Server-Sent Events, thinned to at most
//! `ZONECAST_STREAM_POSITION_HZ` per device so that a browser can follow a whole site.
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

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use tokio::sync::{broadcast, mpsc};
use warp::http::HeaderMap;
use warp::reply::Response;
use zonecast_bus::{BusError, Message, PositionLog, Subscription};
use zonecast_model::{Mac, PositionFix};
use zonecast_runtime::Shutdown;

use super::{KEEP_ALIVE, Open, narrowing};
use crate::context::Context;
use crate::error::ApiError;

stream_answer!(
    /// What `GET /v3/positions/stream` answers.
    StreamedPositions,
    "Server-Sent Events: per tick, `data: [{\"MAC\", \"Position\": [x, y, z] (metres, to the millimetre), \"Timestamp\"}, ...]` with the newest position of each device that moved since the last tick; `event: lagged` with `data: {\"skipped\": n}` when the client fell behind: n positions were passed over for newer ones of the same devices, which follow in the next frame; `: keep-alive` comments while idle."
);

/// Ticks a stream hands its response ahead of the client: a tick of a large site is large, and
/// a client that cannot take them should skip to newer ones rather than queue old ones.
const TICKS_IN_HAND: usize = 4;

/// Messages the feed takes in one turn once one has woken it.
const DRAIN: usize = 1024;

/// Ticks the feed keeps for streams that have not taken them yet.
const TICKS_KEPT: usize = 16;

/// One tick of the feed: the newest position of each device that moved since the last.
pub(crate) struct Tick {
    /// Positions the feed sent before this tick, since it started: a stream that misses ticks
    /// knows how many positions it skipped.
    before: u64,
    positions: Vec<PositionFix>,
    /// Every position of the tick as one SSE frame, shared by every stream that is not narrowed.
    frame: Bytes,
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
    async fn subscribe(self: &Arc<Self>, shutdown: &Shutdown) -> Result<broadcast::Receiver<Arc<Tick>>, BusError> {
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
fn frame<'a>(positions: impl Iterator<Item = &'a PositionFix>) -> Bytes {
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

/// The message telling a client it fell behind and `skipped` positions were not sent.
fn lagged(skipped: u64) -> Bytes {
    Bytes::from(format!("event: lagged\ndata: {{\"skipped\": {skipped}}}\n\n"))
}

/// The MACs a stream is narrowed to (`mac`, repeated or comma-separated); none: every device.
fn narrowing(query: &str) -> Result<HashSet<Mac>, ApiError> {
    let mut macs = HashSet::new();
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "mac" => macs.extend(narrowing::macs(&value)?),
            "access_token" => {}
            other => {
                return Err(ApiError::Invalid(format!(
                    "{other}: unknown query parameter (expected mac or access_token)"
                )));
            }
        }
    }
    Ok(macs)
}

/// Opens a position stream; the narrowing is checked before anything is sent.
pub async fn open(ctx: &Context, query: &str, _headers: &HeaderMap) -> Result<Response, ApiError> {
    let macs = narrowing(query)?;
    let ticks = ctx
        .position_feed
        .subscribe(&ctx.shutdown)
        .await
        .map_err(|e| ApiError::Unavailable(format!("positions: {e}")))?;
    let (frames, body) = mpsc::channel(TICKS_IN_HAND);
    let stream = Stream { ticks, macs, frames, heartbeat: ctx.streams.heartbeat, shutdown: ctx.shutdown.clone() };
    tokio::spawn(stream.run());
    Ok(super::response(body))
}

/// One stream's task: ticks from the feed to the client's frames.
struct Stream {
    ticks: broadcast::Receiver<Arc<Tick>>,
    /// The devices it follows; empty: every one.
    macs: HashSet<Mac>,
    frames: mpsc::Sender<Bytes>,
    heartbeat: Duration,
    shutdown: Shutdown,
}

impl Stream {
    async fn run(mut self) {
        let _open = Open::new();
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + self.heartbeat, self.heartbeat);
        // The feed's count of positions sent when the next tick was due to start.
        let mut next: Option<u64> = None;
        // While the client cannot take more: the newest position of each device since, to go
        // out as one frame when it can, and the positions passed over meanwhile.
        let mut held: HashMap<Mac, PositionFix> = HashMap::new();
        let mut skipped = 0u64;
        loop {
            tokio::select! {
                biased;
                () = self.shutdown.cancelled() => return,
                () = self.frames.closed() => return,
                permit = self.frames.reserve(), if !held.is_empty() => {
                    let Ok(permit) = permit else { return };
                    let mut out = BytesMut::new();
                    if skipped > 0 {
                        metrics::counter!("zonecast_api_position_streams_lagged_total").increment(1);
                        out.put_slice(&lagged(skipped));
                        skipped = 0;
                    }
                    out.put_slice(&frame(held.values()));
                    held.clear();
                    permit.send(out.freeze());
                    heartbeat.reset();
                }
                _ = heartbeat.tick() => {
                    if let Err(mpsc::error::TrySendError::Closed(_)) = self.frames.try_send(Bytes::from_static(KEEP_ALIVE)) {
                        return;
                    }
                }
                tick = self.ticks.recv() => {
                    let tick = match tick {
                        Ok(tick) => tick,
                        // The ticks missed show in the next one's count.
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return,
                    };
                    if let Some(expected) = next {
                        skipped += tick.before.saturating_sub(expected);
                    }
                    next = Some(tick.before + tick.positions.len() as u64);
                    let mine = tick.positions.iter().filter(|p| self.macs.is_empty() || self.macs.contains(&p.mac));
                    // A narrowed stream is told nothing of a tick that moved none of its devices.
                    if !self.macs.is_empty() && mine.clone().next().is_none() {
                        continue;
                    }
                    if held.is_empty() && skipped == 0 {
                        let frame = if self.macs.is_empty() { tick.frame.clone() } else { frame(mine.clone()) };
                        match self.frames.try_send(frame) {
                            Ok(()) => {
                                heartbeat.reset();
                                continue;
                            }
                            Err(mpsc::error::TrySendError::Closed(_)) => return,
                            Err(mpsc::error::TrySendError::Full(_)) => {}
                        }
                    }
                    for position in mine {
                        if held.insert(position.mac.clone(), position.clone()).is_some() {
                            skipped += 1;
                        }
                    }
                }
            }
        }
    }
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

    #[test]
    fn a_stream_is_narrowed_to_macs_and_refuses_other_parameters() {
        let macs = narrowing("mac=00-aa-bb-cc-dd-01,00:AA:BB:CC:DD:02&mac=00:AA:BB:CC:DD:03&access_token=x").unwrap();
        assert_eq!(macs.len(), 3);
        assert!(macs.contains(&"00:AA:BB:CC:DD:01".parse::<Mac>().unwrap()));
        assert!(narrowing("").unwrap().is_empty());
        assert!(narrowing("mac=00:AA").unwrap_err().to_string().starts_with("mac: '00:AA' is not a MAC address"));
        assert!(narrowing("zone=x").unwrap_err().to_string().starts_with("zone: unknown query parameter"));
    }
}
