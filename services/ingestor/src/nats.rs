//! Positions from NATS: `<prefix>.ingest`, consumed in the `ingestors` queue group so that
//! replicas share the input.
//!
//! A thread of its own reads the subscription as fast as messages come and puts each payload
//! in a buffer of at most `ZONECAST_INGEST_NATS_BUFFER_BYTES` (64 MiB by default). The input's
//! task takes them out one at a time, in the order they came, and hands their positions on to
//! be stored, up to [`IN_FLIGHT`] payloads waiting for their store at once: the positions of
//! one publisher are stored in the order it published them. Core NATS cannot slow a publisher
//! down: while the pipeline is behind (the input holds) or slower than the publishers, the
//! buffer fills, and each payload that finds it full is dropped and counted in
//! `zonecast_ingest_dropped_total{input="nats"}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesOrdered;
use zonecast_bus::{Bus, INGESTORS, Input, Subjects};
use zonecast_ingest::Publisher;
use zonecast_runtime::Shutdown;
use zonecast_runtime::ratelog::RateLimited;

use crate::buffer::Buffer;

/// Payloads handed on and waiting for their store at most: the next ones are normalised and
/// queued behind them meanwhile.
const IN_FLIGHT: usize = 64;

/// Bytes of payloads waiting for their store at most (a few large payloads fill it before
/// [`IN_FLIGHT`] do).
const IN_FLIGHT_BYTES: usize = 8 << 20;

/// How often the reader looks for drops the NATS client reported while no message came.
const CLIENT_DROPS_EVERY: Duration = Duration::from_millis(250);

/// Subscribes, then takes what arrives until `shutdown`, holding at most `buffer_bytes` of
/// payloads not taken yet.
pub(crate) async fn start(
    bus: Arc<dyn Bus>,
    subjects: &Subjects,
    publisher: Publisher,
    buffer_bytes: usize,
    shutdown: Shutdown,
) -> Result<tokio::task::JoinHandle<()>, zonecast_bus::BusError> {
    let input = bus.input_subscribe(&subjects.ingest(), INGESTORS).await?;
    let buffer = Arc::new(Buffer::new(buffer_bytes));
    let reader = {
        let (buffer, shutdown) = (buffer.clone(), shutdown.clone());
        std::thread::Builder::new()
            .name("nats-input".into())
            .spawn(move || read(input, &buffer, shutdown))
            .map_err(|e| zonecast_bus::BusError::Subscribe(format!("cannot start the NATS input's reader: {e}")))?
    };
    Ok(tokio::spawn(async move {
        hand_on(&buffer, &publisher, &shutdown).await;
        // Anything the reader still puts in is refused and counted.
        let held = buffer.close_and_clear();
        if held > 0 {
            metrics::counter!("zonecast_ingest_dropped_total", "input" => "nats").increment(held as u64);
            tracing::warn!(payloads = held, "NATS input stopped with payloads not taken; counted as dropped");
        }
        if !matches!(tokio::task::spawn_blocking(move || reader.join()).await, Ok(Ok(()))) {
            tracing::error!("the NATS input's reader failed");
        }
    }))
}

/// The reader's thread: moves payloads from the subscription into `buffer` until `shutdown`
/// (or the subscription ends), on a runtime of its own so that a busy process never keeps it
/// from emptying the client's queue.
fn read(input: Input, buffer: &Buffer, shutdown: Shutdown) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "the NATS input's reader has no runtime; the input takes nothing");
            buffer.close();
            return;
        }
    };
    runtime.block_on(async move {
        let Input { messages, lossy, dropped: client_dropped } = input;
        let mut messages = std::pin::pin!(messages.take_until(shutdown.cancelled_owned()));
        let mut drops = Drops { log: RateLimited::new(crate::LOG_EVERY), client_dropped, client_seen: 0 };
        let mut tick = tokio::time::interval(CLIENT_DROPS_EVERY);
        loop {
            let message = tokio::select! {
                message = messages.next() => message,
                _ = tick.tick() => {
                    drops.client();
                    continue;
                }
            };
            let Some(message) = message else { break };
            drops.client();
            // A payload of its own: the one the client hands over shares its read buffer with
            // the messages around it, and would keep all of that in memory.
            let payload = bytes::Bytes::copy_from_slice(&message.payload);
            if lossy {
                if !buffer.offer(payload) {
                    drops.full();
                }
            } else if !buffer.put(payload).await {
                break;
            }
        }
        drops.client();
        buffer.close();
    });
}

/// Counts and logs (at a limited rate) what the input drops.
struct Drops {
    log: RateLimited,
    /// Messages the NATS client dropped for the subscription, as it reported them.
    client_dropped: Arc<AtomicU64>,
    client_seen: u64,
}

impl Drops {
    /// A payload that found the buffer full.
    fn full(&mut self) {
        metrics::counter!("zonecast_ingest_dropped_total", "input" => "nats").increment(1);
        if let Some(held_back) = self.log.allow() {
            tracing::warn!(
                held_back,
                "NATS input behind its publishers: its buffer is full, payloads are dropped (counted in zonecast_ingest_dropped_total)"
            );
        }
    }

    /// Counts the drops the NATS client reported since the last look.
    fn client(&mut self) {
        let now = self.client_dropped.load(Ordering::Relaxed);
        let new = now.saturating_sub(self.client_seen);
        if new == 0 {
            return;
        }
        self.client_seen = now;
        metrics::counter!("zonecast_ingest_dropped_total", "input" => "nats").increment(new);
        if let Some(held_back) = self.log.allow() {
            tracing::warn!(
                dropped = new,
                held_back,
                "NATS input's reader behind the NATS client: the client's queue was full, payloads were dropped (counted in zonecast_ingest_dropped_total)"
            );
        }
    }
}

/// Takes payloads out of `buffer` in order and hands them on, until the buffer is closed and
/// empty or `shutdown`; then waits for what was handed on.
async fn hand_on(buffer: &Buffer, publisher: &Publisher, shutdown: &Shutdown) {
    let mut log = RateLimited::new(crate::LOG_EVERY);
    let mut in_flight = FuturesOrdered::new();
    let mut in_flight_bytes = 0;
    loop {
        let payload = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            Some((len, result)) = in_flight.next(), if !in_flight.is_empty() => {
                in_flight_bytes -= len;
                crate::report(result, "nats", &mut log);
                continue;
            }
            payload = buffer.take() => match payload {
                Some(payload) => payload,
                None => break,
            },
        };
        while in_flight.len() >= IN_FLIGHT || (in_flight_bytes >= IN_FLIGHT_BYTES && !in_flight.is_empty()) {
            if let Some((len, result)) = in_flight.next().await {
                in_flight_bytes -= len;
                crate::report(result, "nats", &mut log);
            }
        }
        // While the pipeline is behind, the input takes nothing (and its buffer fills).
        tokio::select! {
            biased;
            () = shutdown.cancelled() => {
                metrics::counter!("zonecast_ingest_dropped_total", "input" => "nats").increment(1);
                break;
            }
            () = publisher.caught_up("nats") => {}
        }
        match publisher.hand_over(&payload, "nats").await {
            Ok(taken) => {
                let len = payload.len();
                in_flight_bytes += len;
                in_flight.push_back(async move { (len, taken.stored().await) });
            }
            Err(e) => crate::report(Err(e), "nats", &mut log),
        }
    }
    while let Some((_, result)) = in_flight.next().await {
        crate::report(result, "nats", &mut log);
    }
}
