//! `GET /v3/events/stream`: the zone events and alarms of the event journal as Server-Sent
//! Events, one JSON envelope per event with its place in the journal as `id`, narrowed by the
//! query ([`Narrowing`]) and resumed from `Last-Event-ID`.
//!
//! Each stream reads the journal itself ([`zonecast_bus::Journal::read`]: no consumer, so
//! nothing it does holds up the forwarders or the appends) in a task of its own, at the pace
//! its client reads, and hands frames to the response through a small bounded buffer: a stream
//! holds a few frames, never a backlog. Once it has caught up with the newest event, a stream
//! whose client falls more than `ZONECAST_STREAM_BUFFER` events behind the newest gets
//! `event: lagged` with the number of events skipped and ends, and so does one whose next
//! events have left the journal before it read them.

mod narrowing;

use std::convert::Infallible;
use std::fmt::Write as _;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc;
use warp::Reply;
use warp::http::{HeaderMap, HeaderValue, header};
use warp::reply::Response;
use zonecast_bus::journal::{Kind, Read, Reads};
use zonecast_runtime::Shutdown;

pub use narrowing::Narrowing;

use crate::context::Context;
use crate::error::ApiError;

/// A stream's answer for the OpenAPI document: a `text/event-stream` body, described in words
/// (JSON Schema cannot describe the frames).
macro_rules! stream_answer {
    ($(#[$doc:meta])* $name:ident, $description:literal) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "description": $description})
            }
        }
    };
}

stream_answer!(
    /// What `GET /v3/events/stream` answers: one frame per event (`id: <place in the journal>`,
    /// `data: <the event's JSON envelope>`), an `event: lagged` frame (`data: {"skipped": n}`)
    /// before a stream that fell behind ends, and `: keep-alive` comments while nothing happens.
    StreamedEvent,
    "Server-Sent Events: `id: <place in the event journal>` and `data: <event envelope as JSON>` per event; `event: lagged` with `data: {\"skipped\": n}` before a stream that fell behind ends; `: keep-alive` comments while idle."
);

// After `stream_answer!`, which it uses.
pub(crate) mod positions;

/// Chunks of frames a stream hands its response ahead of the client: the socket's buffers hold
/// more.
const FRAMES_IN_HAND: usize = 64;

/// Most bytes of events a stream gathers into one chunk of its answer.
const CHUNK_BYTES: usize = 64 * 1024;

/// How long a stream waits, after an event, for more to write with it: a write per event and
/// stream would cost the process more than the events.
const GATHER: Duration = Duration::from_millis(25);

/// How long a lagged client has to take the `lagged` message before the stream ends without it.
const LAGGED_WAIT: Duration = Duration::from_secs(30);

/// The comment that keeps an idle stream open through proxies.
const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// Opens a stream: the narrowing and `Last-Event-ID` are checked before anything is sent.
pub async fn open(ctx: &Context, query: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let narrowing = Narrowing::parse(query, &ctx.limits)?;
    let from = last_event_id(headers)?.map(|last| last.saturating_add(1));
    let (start, reads) =
        ctx.journal.read(Kind::Events, from).await.map_err(|e| ApiError::Unavailable(format!("event journal: {e}")))?;
    let (frames, body) = mpsc::channel(FRAMES_IN_HAND);
    let stream = Stream {
        reads,
        narrowing,
        frames,
        lag_after: ctx.streams.buffer as u64,
        next: start,
        caught_up: from.is_none(),
        heartbeat: ctx.streams.heartbeat,
        shutdown: ctx.shutdown.clone(),
    };
    tokio::spawn(stream.run());
    Ok(response(body))
}

/// The answer of a stream whose frames come from `body`.
fn response(body: mpsc::Receiver<Bytes>) -> Response {
    let mut response = warp::reply::stream(Frames(body)).into_response();
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies that buffer answers (nginx) would hold the events back.
    out.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The `Last-Event-ID` header: the id of the last event the client has.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else { return Ok(None) };
    let text = value.to_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>().map(Some).map_err(|_| {
        ApiError::Malformed(format!("Last-Event-ID: must be the id of an event of this stream, got '{text}'"))
    })
}

/// The frames of one response, as its body takes them.
struct Frames(mpsc::Receiver<Bytes>);

impl futures::Stream for Frames {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|frame| frame.map(Ok))
    }
}

/// Appends one event as an SSE frame to `out`: `id: <sequence>` and its JSON as `data:` (a
/// line each, should the JSON ever hold line breaks).
fn push_frame(out: &mut BytesMut, read: &Read) {
    out.reserve(read.payload.len() + 32);
    let _ = writeln!(out, "id: {}", read.sequence);
    if memchr::memchr(b'\n', &read.payload).is_none() {
        out.put_slice(b"data: ");
        out.put_slice(&read.payload);
        out.put_u8(b'\n');
    } else {
        for line in read.payload.split(|&b| b == b'\n') {
            out.put_slice(b"data: ");
            out.put_slice(line);
            out.put_u8(b'\n');
        }
    }
    out.put_u8(b'\n');
}

/// The message of a lagged stream: the events it skips end at `last`, whose id it carries, so
/// an `EventSource` that reconnects resumes after them.
fn lagged(last: u64, skipped: u64) -> Bytes {
    Bytes::from(format!("event: lagged\nid: {last}\ndata: {{\"skipped\": {skipped}}}\n\n"))
}

/// Counts a stream open while it lives.
struct Open;

impl Open {
    fn new() -> Self {
        metrics::gauge!("zonecast_api_streams_open").increment(1.0);
        Self
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        metrics::gauge!("zonecast_api_streams_open").decrement(1.0);
    }
}

/// Why a stream stops reading.
enum End {
    /// The client went away, the server stops, or the journal's reading ended.
    Closed,
    /// It fell behind: the events up to `last`, `skipped` of them, are passed over.
    Lagged { last: u64, skipped: u64 },
}

/// One stream's reading task.
struct Stream {
    reads: Reads,
    narrowing: Narrowing,
    frames: mpsc::Sender<Bytes>,
    /// How far behind the newest event a stream that has caught up may fall.
    lag_after: u64,
    /// The sequence of the next event expected.
    next: u64,
    /// Whether it has read up to the newest event once (a stream without `Last-Event-ID` starts
    /// there); before, it reads at the client's pace.
    caught_up: bool,
    heartbeat: Duration,
    shutdown: Shutdown,
}

impl Stream {
    async fn run(mut self) {
        let _open = Open::new();
        let end = self.follow().await;
        if let End::Lagged { last, skipped } = end {
            metrics::counter!("zonecast_api_streams_lagged_total").increment(1);
            tracing::debug!(last, skipped, "event stream lagged");
            drop(self.reads);
            tokio::select! {
                () = self.shutdown.cancelled() => {}
                _ = tokio::time::timeout(LAGGED_WAIT, self.frames.send(lagged(last, skipped))) => {}
            }
        }
    }

    async fn follow(&mut self) -> End {
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + self.heartbeat, self.heartbeat);
        loop {
            let read = tokio::select! {
                biased;
                () = self.shutdown.cancelled() => return End::Closed,
                () = self.frames.closed() => return End::Closed,
                _ = heartbeat.tick() => {
                    // A full buffer needs no keep-alive: the client has events to read.
                    if let Err(mpsc::error::TrySendError::Closed(_)) = self.frames.try_send(Bytes::from_static(KEEP_ALIVE)) {
                        return End::Closed;
                    }
                    continue;
                }
                read = self.reads.next() => match read {
                    Some(read) => read,
                    None => return End::Closed,
                },
            };
            // Events go out in chunks: those already read, and those that come within
            // `GATHER` of the first, are one write instead of one each.
            let mut chunk = BytesMut::new();
            let mut end = None;
            let mut next = Some(read);
            let until = tokio::time::Instant::now() + GATHER;
            loop {
                while let Some(read) = next.take() {
                    if let Err(lagged) = self.frame(&read, &mut chunk) {
                        end = Some(lagged);
                        break;
                    }
                    if chunk.len() >= CHUNK_BYTES {
                        break;
                    }
                    next = match self.reads.next().now_or_never() {
                        Some(Some(read)) => Some(read),
                        Some(None) => {
                            end = Some(End::Closed);
                            None
                        }
                        None => None,
                    };
                }
                // A stream whose narrowing let nothing through has nothing to wait with.
                if end.is_some() || chunk.is_empty() || chunk.len() >= CHUNK_BYTES {
                    break;
                }
                tokio::select! {
                    biased;
                    () = self.shutdown.cancelled() => return End::Closed,
                    () = tokio::time::sleep_until(until) => break,
                    read = self.reads.next() => match read {
                        Some(read) => next = Some(read),
                        None => {
                            end = Some(End::Closed);
                            break;
                        }
                    },
                }
            }
            if !chunk.is_empty() {
                tokio::select! {
                    () = self.shutdown.cancelled() => return End::Closed,
                    sent = self.frames.send(chunk.freeze()) => if sent.is_err() { return End::Closed },
                }
                heartbeat.reset();
            }
            if let Some(end) = end {
                return end;
            }
        }
    }

    /// Frames the next event read: its frame goes into `chunk` when the narrowing lets it pass.
    /// Fails when the stream has fallen behind.
    fn frame(&mut self, read: &Read, chunk: &mut BytesMut) -> Result<(), End> {
        let newest = read.sequence + read.behind;
        if read.sequence > self.next {
            // Events left the journal before this stream read them.
            return Err(End::Lagged { last: newest, skipped: newest + 1 - self.next });
        }
        self.next = read.sequence + 1;
        if self.caught_up && read.behind > self.lag_after {
            return Err(End::Lagged { last: newest, skipped: read.behind + 1 });
        }
        if self.admits(read) {
            push_frame(chunk, read);
        }
        if read.behind == 0 {
            self.caught_up = true;
        }
        Ok(())
    }

    fn admits(&self, read: &Read) -> bool {
        if self.narrowing.is_open() {
            return true;
        }
        match serde_json::from_slice(&read.payload) {
            Ok(event) => self.narrowing.admits(&event),
            Err(e) => {
                tracing::debug!(sequence = read.sequence, error = %e, "journal event is not JSON; not streamed");
                false
            }
        }
    }
}
