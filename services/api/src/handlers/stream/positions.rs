//! `GET /v3/positions/stream`: device positions as Server-Sent Events, thinned to at most
//! `ZONECAST_STREAM_POSITION_HZ` per device so that a browser can follow a whole site.
//! The positions come from the API process's [`crate::position_feed::PositionFeed`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{broadcast, mpsc};
use warp::http::HeaderMap;
use warp::reply::Response;
use zonecast_model::{Mac, PositionFix};
use zonecast_runtime::Shutdown;

use super::{KEEP_ALIVE, Open, narrowing};
use crate::context::Context;
use crate::error::ApiError;
use crate::position_feed::{Tick, frame};

stream_answer!(
    /// What `GET /v3/positions/stream` answers.
    StreamedPositions,
    "Server-Sent Events: per tick, `data: [{\"MAC\", \"Position\": [x, y, z] (metres, to the millimetre), \"Timestamp\"}, ...]` with the newest position of each device that moved since the last tick; `event: lagged` with `data: {\"skipped\": n}` when the client fell behind: n positions were passed over for newer ones of the same devices, which follow in the next frame; `: keep-alive` comments while idle."
);

/// Ticks a stream hands its response ahead of the client: a tick of a large site is large, and
/// a client that cannot take them should skip to newer ones rather than queue old ones.
const TICKS_IN_HAND: usize = 4;

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
