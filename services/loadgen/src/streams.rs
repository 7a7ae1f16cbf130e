//! Live stream clients for measuring what streams cost: they read `GET /v3/events/stream`,
//! `GET /v3/positions/stream` or half of each, as fast as the server sends, counting bytes,
//! frames and `event: lagged` messages.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which streams are opened.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Kind {
    /// Event streams only.
    Events,
    /// Position streams only.
    Positions,
    /// Half of each.
    Both,
}

/// What the streams received, summed over all of them.
#[derive(Default)]
pub struct Received {
    bytes: AtomicU64,
    frames: AtomicU64,
    lagged: AtomicU64,
    /// Streams the server ended (an event stream ends after `lagged`).
    ended: AtomicU64,
}

impl Received {
    /// One line for the report.
    pub fn summary(&self, streams: usize) -> String {
        format!(
            "{streams} open: {} frames, {:.1} MB, {} lagged, {} ended by the server",
            self.frames.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed) as f64 / 1e6,
            self.lagged.load(Ordering::Relaxed),
            self.ended.load(Ordering::Relaxed),
        )
    }
}

/// Opens `count` streams of `kind` on the API at `api` (with both, even ones events, odd ones
/// positions) and reads
/// them in tasks of their own until the process ends. A frame split across two reads may be
/// counted twice or not at all: the counts are for a report, not exact.
pub async fn open(
    http: &reqwest::Client,
    api: &str,
    key: &str,
    count: usize,
    kind: Kind,
) -> anyhow::Result<Arc<Received>> {
    let received = Arc::new(Received::default());
    for i in 0..count {
        let events = match kind {
            Kind::Events => true,
            Kind::Positions => false,
            Kind::Both => i % 2 == 0,
        };
        let path = if events { "/v3/events/stream" } else { "/v3/positions/stream" };
        let mut response =
            http.get(format!("{api}{path}")).header("X-API-Key", key).send().await?.error_for_status()?;
        let received = received.clone();
        tokio::spawn(async move {
            let (frames, lagged) =
                (memchr::memmem::Finder::new(b"\n\n"), memchr::memmem::Finder::new(b"event: lagged"));
            while let Ok(Some(chunk)) = response.chunk().await {
                received.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                received.frames.fetch_add(frames.find_iter(&chunk).count() as u64, Ordering::Relaxed);
                received.lagged.fetch_add(lagged.find_iter(&chunk).count() as u64, Ordering::Relaxed);
            }
            received.ended.fetch_add(1, Ordering::Relaxed);
        });
    }
    Ok(received)
}
