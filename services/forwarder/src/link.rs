//! One connection's MQTT client: its outbox shared with the bus consumer, and the task that
//! runs the connection's sessions: it connects, reconnects with backoff, writes what the outbox
//! hands out and tells it what the broker acknowledged.
//!
//! The bus consumer never waits here: [`LinkState::push`] takes a short lock, queues the message
//! and wakes the connection's task. The task takes every message the in-flight window lets out
//! at once and writes them together ([`crate::mqtt`]). A dead, slow or refusing broker only
//! fills this connection's outbox.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use zonecast_bus::journal::Ack;
use zonecast_runtime::ratelog::RateLimited;

use crate::Settings;
use crate::mqtt::{self, Connection};
use crate::outbox::{Message, Outbox};
use crate::router::Route;
use crate::task::Stoppable;
use zonecast_runtime::backoff::Backoff;

/// What wakes the status reporter besides its clock: the links poke it.
#[derive(Debug, Default)]
pub struct Wake {
    /// A connection came up or went down: a full round at once.
    pub status: Notify,
    /// Many acknowledgements wait for their count to be stored: settle them now.
    pub settle: Notify,
}

/// A connection that stays up this long resets the reconnect backoff.
const STABLE: Duration = Duration::from_secs(1);

/// What the status reporter reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Connected now.
    pub connected: bool,
    /// Last connection error, if any.
    pub last_error: Option<String>,
    /// Acknowledged by the broker.
    pub forwarded: u64,
    /// Given up on.
    pub dropped: u64,
    /// Waiting or in flight.
    pub queued: u64,
    /// Of those, the positions (not from the journal).
    pub positions_queued: u64,
}

/// What one lock guards: the outbox, the client generation and the last error.
struct Session {
    outbox: Outbox,
    /// Bumped whenever the client is replaced, so a stopping task cannot touch its successor's
    /// state.
    generation: u64,
    last_error: Option<String>,
}

/// How long a connected broker may acknowledge nothing before its connection no longer counts
/// towards the forwarder's lag.
pub const STALLED: std::time::Duration = std::time::Duration::from_secs(2);

/// The state of one connection that outlives its clients: the outbox, counters and last error.
pub struct LinkState {
    inner: Mutex<Session>,
    /// The connection's topics with their compiled chains, replaced on reload.
    routes: Mutex<Arc<[Route]>>,
    /// Wakes the status reporter: on connect and disconnect so the status is written at once,
    /// and when many acknowledgements wait to be settled.
    status: Arc<Wake>,
    /// Poked when a message is queued while disconnected: a client waiting out a long
    /// reconnect delay tries again sooner.
    waiting: Notify,
    /// Poked when a message is queued: a connected client sends it.
    ready: Notify,
    /// Acknowledgements of events the broker has every copy of, held until a status row
    /// counting them is written ([`LinkState::take_settling`]).
    settling: Arc<Mutex<Vec<Ack>>>,
    /// How many waiting acknowledgements wake the reporter before its next round: a quarter of
    /// the events the connection holds in hand, so the journal's bound is never the limit.
    settle_at: usize,
}

impl LinkState {
    /// An empty outbox bounded by `settings`.
    pub fn new(settings: &Settings, status: Arc<Wake>) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Session {
                outbox: Outbox::new(settings.queue, usize::from(settings.window).min(MAX_IN_FLIGHT)),
                generation: 0,
                last_error: None,
            }),
            routes: Mutex::new(Arc::from(Vec::new())),
            status,
            waiting: Notify::new(),
            ready: Notify::new(),
            settling: Arc::new(Mutex::new(Vec::new())),
            settle_at: (settings.queue / 4).max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Session> {
        // Every critical section leaves the outbox consistent, so a panic elsewhere while the
        // lock was held leaves nothing to repair.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `message` and wakes the client. Never waits.
    pub fn push(&self, message: Message) {
        let connected = {
            let mut inner = self.lock();
            inner.outbox.push(message);
            inner.outbox.is_connected()
        };
        if connected {
            self.ready.notify_one();
        } else {
            self.waiting.notify_one();
        }
    }

    /// `ack` as the journal's acknowledgement of an event this connection takes: once the
    /// broker has every copy it is not sent to the journal at once but waits in this
    /// connection's settling list, until a status row whose `forwarded` counts the copies is
    /// written ([`LinkState::take_settling`]). A replica killed in between has counted nothing the
    /// journal took as done: the event is handed out again and counted by whoever sends it.
    /// Progress reports go to the journal at once.
    pub fn defer(&self, ack: Ack) -> Ack {
        let held = Arc::new(Mutex::new(Some(ack)));
        let (done, progress, settling) = (held.clone(), held, self.settling.clone());
        let (wake, settle_at) = (self.status.clone(), self.settle_at);
        Ack::new(move || {
            if let Some(ack) = done.lock().unwrap_or_else(PoisonError::into_inner).take() {
                let mut settling = settling.lock().unwrap_or_else(PoisonError::into_inner);
                settling.push(ack);
                if settling.len() == settle_at {
                    wake.settle.notify_one();
                }
            }
        })
        .with_progress(move || {
            if let Some(ack) = progress.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
                ack.progress();
            }
        })
    }

    /// The acknowledgements waiting to be sent. Take them before the [`LinkState::snapshot`] that
    /// is written: every copy they stand for is counted in it.
    pub fn take_settling(&self) -> Vec<Ack> {
        std::mem::take(&mut *self.settling.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether acknowledgements wait to be sent.
    pub fn is_settling(&self) -> bool {
        !self.settling.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// Whether messages wait for the broker.
    fn holds_any(&self) -> bool {
        self.lock().outbox.held() > 0
    }

    /// The connection's topics now.
    pub fn routes(&self) -> Arc<[Route]> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replaces the connection's topics.
    pub fn set_routes(&self, routes: Arc<[Route]>) {
        *self.routes.lock().unwrap_or_else(PoisonError::into_inner) = routes;
    }

    /// Counts a message that was never queued (too large to send).
    pub fn count_dropped(&self) {
        self.lock().outbox.count_dropped();
    }

    /// How far behind the connection is at `now_ms`: since the oldest event it holds was
    /// accepted, while its broker keeps acknowledging. A broker that is away, or connected and
    /// acknowledging nothing for [`STALLED`], is waited for (its events wait in the journal),
    /// not pushed back on: one broker must not hold up the site.
    pub fn lag_ms(&self, now_ms: u64) -> u64 {
        let inner = self.lock();
        let progressing = inner.outbox.stalled_for().is_some_and(|stalled| stalled < STALLED);
        match inner.outbox.oldest_accepted_ms() {
            Some(accepted) if progressing => now_ms.saturating_sub(accepted),
            _ => 0,
        }
    }

    /// The figures for the status row and metrics.
    pub fn snapshot(&self) -> Snapshot {
        let inner = self.lock();
        Snapshot {
            connected: inner.outbox.is_connected(),
            last_error: inner.last_error.clone(),
            forwarded: inner.outbox.forwarded(),
            dropped: inner.outbox.dropped(),
            queued: inner.outbox.held() as u64,
            positions_queued: inner.outbox.held_unjournalled() as u64,
        }
    }

    /// A new client generation takes over: the previous one no longer counts as connected.
    fn begin(&self) -> u64 {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.outbox.on_disconnected();
        inner.generation
    }

    /// Marks the connection as unusable without a client (bad profile, unreadable password).
    pub fn fail(&self, error: String) {
        let generation = self.begin();
        self.disconnected(generation, Some(error));
    }

    /// Runs `f` on the state if `generation` is still the current one.
    fn current(&self, generation: u64, f: impl FnOnce(&mut Session)) {
        let mut inner = self.lock();
        if inner.generation == generation {
            f(&mut inner);
        }
    }

    fn connected(&self, generation: u64) {
        self.current(generation, |inner| inner.outbox.on_connected());
        self.status.status.notify_one();
    }

    fn disconnected(&self, generation: u64, error: Option<String>) {
        self.current(generation, |inner| {
            inner.outbox.on_disconnected();
            if error.is_some() {
                inner.last_error = error;
            }
        });
        self.status.status.notify_one();
    }

    /// Encodes the messages the outbox hands out, while the writer has room.
    fn take(&self, generation: u64, writer: &mut mqtt::Writer) {
        self.current(generation, |inner| {
            while writer.has_room()
                && inner.outbox.send_next(|message| writer.publish(&message.topic, &message.payload))
            {}
        });
    }

    fn acked(&self, generation: u64, pkids: &[u16]) {
        self.current(generation, |inner| {
            for pkid in pkids {
                inner.outbox.on_acked(*pkid);
            }
        });
    }

    fn is_empty(&self, generation: u64) -> bool {
        let inner = self.lock();
        inner.generation != generation || inner.outbox.held() == 0
    }
}

/// Most messages in flight on a connection: one fewer than there are MQTT packet ids, so an
/// id handed out in turn is never one still in flight ([`mqtt::Writer::publish`]).
const MAX_IN_FLIGHT: usize = u16::MAX as usize - 1;

/// The running client of one connection: stop it to replace or remove it.
pub struct Link;

impl Link {
    /// Starts a client generation for `shared` with `options`. Stopping the task ends it at
    /// once; `shutdown` (the service's) first gives it `settings.drain` to deliver what it holds.
    pub fn spawn(
        shared: Arc<LinkState>,
        options: mqtt::Options,
        settings: &Settings,
        shutdown: &CancellationToken,
        log_name: String,
    ) -> Stoppable {
        let generation = shared.begin();
        let (settings, service) = (settings.clone(), shutdown.clone());
        Stoppable::spawn(shutdown, "MQTT client", move |stop| {
            run(shared, generation, options, settings, Stops { stop, shutdown: service }, log_name)
        })
    }
}

struct Stops {
    /// This client only.
    stop: CancellationToken,
    /// The whole service (a parent of `stop`).
    shutdown: CancellationToken,
}

async fn run(
    shared: Arc<LinkState>,
    generation: u64,
    options: mqtt::Options,
    settings: Settings,
    stops: Stops,
    name: String,
) {
    let mut backoff = Backoff::new(settings.backoff_min, settings.backoff_max);
    let mut fail_log = RateLimited::new(Duration::from_secs(30));
    loop {
        let attempt = tokio::select! {
            biased;
            () = stops.stop.cancelled() => break,
            attempt = mqtt::connect(&options) => attempt,
        };
        let error = match attempt {
            Ok(mut connection) => {
                tracing::info!(connection = %name, "MQTT broker connected");
                let connected_at = Instant::now();
                shared.connected(generation);
                match session(&shared, generation, &mut connection, options.keep_alive, &settings, &stops).await {
                    Ok(()) => {
                        // Sends DISCONNECT so the broker drops the session at once; bounded,
                        // as the broker may be the reason we are stopping.
                        let _ = tokio::time::timeout(Duration::from_millis(500), connection.writer.disconnect()).await;
                        break;
                    }
                    Err(error) => {
                        if connected_at.elapsed() >= STABLE {
                            backoff.reset();
                        }
                        error
                    }
                }
            }
            Err(error) => error,
        };
        let text = error.to_string();
        if let Some(held_back) = fail_log.allow() {
            tracing::warn!(connection = %name, error = %text, held_back, "MQTT connection failed; will retry");
        }
        // The outbox puts every unacknowledged message back in its queue; the next session
        // sends them again.
        shared.disconnected(generation, Some(text));
        if !pause(&shared, backoff.next_delay(), settings.backoff_waiting, &stops.stop).await {
            break;
        }
    }
    shared.disconnected(generation, None);
    tracing::debug!(connection = %name, "MQTT client stopped");
}

/// One connected session: writes what the outbox hands out, tells it what the broker
/// acknowledged, and pings the broker every `keep_alive`. Ends with the error that ended the
/// connection, or with `Ok` once the client is stopped; when the whole service stops, only
/// after the outbox is empty or `settings.drain` passed.
async fn session(
    shared: &LinkState,
    generation: u64,
    connection: &mut Connection,
    keep_alive: Duration,
    settings: &Settings,
    stops: &Stops,
) -> Result<(), mqtt::Error> {
    let Connection { reader, writer } = connection;
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut awaiting_pong = false;
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        shared.take(generation, writer);
        if drain_until.is_some() && shared.is_empty(generation) {
            return Ok(());
        }
        let pending = writer.is_pending();
        tokio::select! {
            biased;
            () = stops.stop.cancelled(), if drain_until.is_none() => {
                if !stops.shutdown.is_cancelled() {
                    return Ok(());
                }
                drain_until = Some(tokio::time::Instant::now() + settings.drain);
            }
            () = sleep_until(drain_until) => return Ok(()),
            // Ready once a keep-alive, so first: a busy connection still pings.
            _ = ping.tick() => {
                if awaiting_pong {
                    return Err(mqtt::Error::Timeout);
                }
                writer.ping();
                awaiting_pong = true;
            }
            written = writer.write(), if pending => written?,
            received = reader.read() => {
                let received = received?;
                awaiting_pong &= !received.pong;
                shared.acked(generation, &received.acked);
            }
            () = shared.ready.notified() => {}
        }
    }
}

/// Waits until `until`, or forever without one.
async fn sleep_until(until: Option<tokio::time::Instant>) {
    match until {
        Some(until) => tokio::time::sleep_until(until).await,
        None => std::future::pending().await,
    }
}

/// Waits before the next connection attempt: `delay`, but at most `waiting` while messages
/// wait for the broker (also when the first of them comes during a longer delay), so a broker
/// that returns gets them within about `waiting`. False when the client is stopped meanwhile.
async fn pause(shared: &LinkState, delay: Duration, waiting: Duration, stop: &CancellationToken) -> bool {
    let started = tokio::time::Instant::now();
    let mut until = started + if shared.holds_any() { delay.min(waiting) } else { delay };
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return false,
            () = tokio::time::sleep_until(until) => return true,
            () = shared.waiting.notified() => until = until.min(started + waiting),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::FutureExt;

    use super::*;

    fn counter() -> (Arc<AtomicUsize>, impl Fn() + Send + Sync + 'static) {
        let count = Arc::new(AtomicUsize::new(0));
        let bump = count.clone();
        (count, move || {
            bump.fetch_add(1, Ordering::SeqCst);
        })
    }

    fn position() -> Message {
        Message { topic: Arc::from("t"), payload: bytes::Bytes::from_static(b"{}"), receipt: None }
    }

    #[test]
    fn an_event_reaches_the_journal_only_once_its_count_is_settled_and_progress_goes_at_once() {
        let wake: Arc<Wake> = Arc::default();
        let shared = LinkState::new(&Settings { queue: 4, ..Settings::default() }, wake.clone());
        let (acked, ack) = counter();
        let (progressed, progress) = counter();
        let deferred = shared.defer(Ack::new(ack).with_progress(progress));
        deferred.progress();
        assert_eq!(progressed.load(Ordering::SeqCst), 1, "progress is not held back");
        assert!(!shared.is_settling());
        deferred.ack();
        assert_eq!(acked.load(Ordering::SeqCst), 0, "held until a row counts it");
        assert!(shared.is_settling());
        assert!(wake.settle.notified().now_or_never().is_some(), "a quarter of the in-hand bound wakes the reporter");
        let settling = shared.take_settling();
        assert_eq!(settling.len(), 1);
        assert!(!shared.is_settling());
        settling.into_iter().for_each(Ack::ack);
        assert_eq!(acked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_long_reconnect_delay_is_cut_short_while_messages_wait() {
        const LONG: Duration = Duration::from_secs(30);
        const WAITING: Duration = Duration::from_millis(20);
        let shared = LinkState::new(&Settings::default(), Arc::default());
        let stop = CancellationToken::new();
        shared.push(position());
        let bounded = tokio::time::timeout(Duration::from_secs(5), pause(&shared, LONG, WAITING, &stop)).await;
        assert_eq!(bounded, Ok(true), "messages held: the cap applies");

        let idle = LinkState::new(&Settings::default(), Arc::default());
        let waiting = pause(&idle, LONG, WAITING, &stop);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(100), &mut waiting).await.is_err(),
            "nothing held: the full delay"
        );
        idle.push(position());
        assert_eq!(tokio::time::timeout(Duration::from_secs(5), waiting).await, Ok(true), "the first message ends it");

        stop.cancel();
        assert!(!pause(&idle, LONG, WAITING, &stop).await, "a stopped client does not wait");
    }

    /// A broker that accepts the connection, then goes silent: the client pings it within
    /// the keep-alive, leaves it when the ping stays unanswered, says why, and tries again.
    #[tokio::test]
    async fn a_broker_that_leaves_a_ping_unanswered_is_left_and_tried_again() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // Each connection reports everything it read after the CONNACK once the client closes it.
        let (connections, mut accepted) = tokio::sync::mpsc::unbounded_channel();
        let (reads, mut read) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                connections.send(()).unwrap();
                let reads = reads.clone();
                tokio::spawn(async move {
                    let mut connect = [0u8; 256];
                    assert!(socket.read(&mut connect).await.unwrap() > 0, "a CONNECT");
                    socket.write_all(&[0x20, 0x02, 0x00, 0x00]).await.unwrap();
                    let mut after = Vec::new();
                    let _ = socket.read_to_end(&mut after).await;
                    let _ = reads.send(after);
                });
            }
        });
        let settings = Settings {
            backoff_min: Duration::from_millis(10),
            backoff_max: Duration::from_millis(10),
            ..Settings::default()
        };
        let shared = LinkState::new(&settings, Arc::default());
        let options = mqtt::Options {
            client_id: "silent".into(),
            host: "127.0.0.1".into(),
            port,
            keep_alive: Duration::from_secs(1),
            login: None,
            tls: None,
        };
        let shutdown = CancellationToken::new();
        let _link = Link::spawn(shared.clone(), options, &settings, &shutdown, "silent".into());
        async fn within<T>(what: impl Future<Output = T>) -> T {
            tokio::time::timeout(Duration::from_secs(10), what).await.expect("within 10 s of a keep-alive of 1 s")
        }
        within(accepted.recv()).await.unwrap();
        let first = within(read.recv()).await.unwrap();
        assert_eq!(first, [0xC0, 0x00], "one ping, unanswered, then the client closed the connection");
        within(accepted.recv()).await.unwrap();
        assert_eq!(shared.snapshot().last_error.as_deref(), Some("no answer from the broker in time"));
        shutdown.cancel();
    }
}
