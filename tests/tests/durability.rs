//! Delivery through faults, on real processes and a Mosquitto broker the test stops and starts.
//! Distributed: the API, an evaluator and a forwarder, each its own process, on a NATS server
//! (with JetStream) of the test's own and a fresh PostgreSQL database; a forwarder killed with
//! SIGKILL while it holds a backlog, and a forwarder that is not running at all while events
//! are produced, lose nothing. All-in-one: the `zonecast` binary killed with SIGKILL while
//! events wait for a broker delivers them after its restart. Every event reaches the broker
//! once it is back, and any copy carries the same `EventID`. An evaluator killed with SIGKILL
//! and restarted within the position window, and a NATS server restarted while positions wait
//! for an evaluator, lose no accepted position and repeat no event. http-request actions waiting
//! for a retry when the evaluator (or the all-in-one) is killed with SIGKILL reach their
//! receiver after the restart, each with its event's Idempotency-Key.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use zonecast_bus::{Bus, Subjects, Subscription};
use zonecast_model::PositionUpdate;
use zonecast_tests::fresh_database;
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::nats::NatsServer;
use zonecast_tests::process::{Service, free_port};

const WAIT: Duration = Duration::from_secs(60);
const KEY: &str = "durability-admin-key";
const PARTITIONS: u32 = 4;
/// Events produced in each phase.
const EVENTS: usize = 150;

/// The HTTP API of a running zonecast, as a client uses it.
struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method.clone(), format!("{}{path}", self.base)).header("X-API-Key", KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, StatusCode::OK, "{method} {path}: {v}");
        v
    }

    /// A zone around the origin and an MQTT connection to `broker` taking zone events; returns
    /// the connection's id once its client is connected.
    async fn zone_and_connection(&self, broker: &Broker) -> String {
        self.call(Method::POST, "/v3/modules/zones", Some(cell())).await;
        let connection = self
            .call(
                Method::POST,
                "/v3/modules/mqtt/connections",
                Some(json!({"host": "127.0.0.1", "port": broker.port, "TLS": false,
                            "topics": [{"topic": "zc/events", "FilterChain": [{"FilterTemplate": "zone_events"}]}]})),
            )
            .await["ConnectionID"]
            .as_str()
            .unwrap()
            .to_owned();
        self.wait_status(&connection, "connected", |s| s["connected"] == true).await;
        connection
    }

    /// Polls the connection's status until `pred` holds; the panic shows the last one.
    async fn wait_status(&self, connection: &str, what: &str, pred: impl Fn(&Value) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let s = self.call(Method::GET, &format!("/v3/modules/mqtt/connections/{connection}/status"), None).await;
            if pred(&s) {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "status never showed {what}: {s}");
            tokio::time::sleep(Duration::from_millis(100)).await; // sleep-ok: polling interval of a bounded wait
        }
    }
}

fn devices() -> Vec<String> {
    (0..EVENTS).map(|n| format!("00:00:00:00:{:02X}:{:02X}", n >> 8, n & 0xff)).collect()
}

/// The zone every position test moves devices in and out of: a sphere of 5 m at the origin.
fn cell() -> Value {
    json!({"Name": "cell", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [5, 0, 0]]})
}

/// The `zonecast` binary on its data directory `data`, healthy, and its API.
async fn all_in_one(data: &std::path::Path) -> (Service, Api) {
    let port = free_port();
    let env: Vec<(String, String)> = [
        ("ZONECAST_DATA_DIR", data.to_str().unwrap()),
        ("ZONECAST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
        ("ZONECAST_API_KEYS", &format!("{KEY}:admin")),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let http = zonecast_tests::http_client();
    let mut zonecast = Service::start("zonecast", env, port);
    zonecast.healthy(&http, WAIT).await;
    (zonecast, Api { http, base: format!("http://127.0.0.1:{port}") })
}

/// The services of one site and a bus connection of the test's own.
struct Site {
    api: Api,
    forwarder: Service,
    evaluator: Service,
    _api: Service,
    bus: Arc<dyn Bus>,
    subjects: Subjects,
    /// What the position streams keep, as the services are told.
    positions: zonecast_bus::PositionSettings,
    /// The evaluator's `/metrics`.
    evaluator_metrics: String,
}

impl Site {
    async fn start(nats: &NatsServer, database: &str) -> Self {
        Self::start_with(nats, database, zonecast_bus::PositionSettings::default()).await
    }

    /// A site whose position streams keep `positions.max_bytes` over all partitions.
    async fn start_with(nats: &NatsServer, database: &str, positions: zonecast_bus::PositionSettings) -> Self {
        let prefix = format!("zd{}", uuid::Uuid::new_v4().simple());
        let secret = zonecast_runtime::keys::random_base64(32).unwrap();
        let env = |port: u16| -> Vec<(String, String)> {
            [
                ("ZONECAST_DATABASE_URL", database),
                ("ZONECAST_NATS_URL", nats.url().as_str()),
                ("ZONECAST_SECRET_KEY", secret.as_str()),
                ("ZONECAST_API_KEYS", &format!("{KEY}:admin")),
                ("ZONECAST_SUBJECT_PREFIX", prefix.as_str()),
                ("ZONECAST_PARTITIONS", &PARTITIONS.to_string()),
                ("ZONECAST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
                ("ZONECAST_POSITION_RETENTION_BYTES", &positions.max_bytes.to_string()),
            ]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
        };
        let http = zonecast_tests::http_client();
        let api_port = free_port();
        let mut api = Service::start("zonecast-api", env(api_port), api_port);
        api.healthy(&http, WAIT).await;
        let port = free_port();
        let mut evaluator = Service::start("zonecast-evaluator", env(port), port);
        let evaluator_metrics = format!("http://127.0.0.1:{port}/metrics");
        let port = free_port();
        let mut forwarder = Service::start("zonecast-forwarder", env(port), port);
        evaluator.healthy(&http, WAIT).await;
        forwarder.healthy(&http, WAIT).await;
        let bus = zonecast_bus::connect(Some(&nats.url()), "durability-test").await.unwrap();
        Self {
            api: Api { http, base: format!("http://127.0.0.1:{api_port}") },
            forwarder,
            evaluator,
            _api: api,
            bus,
            subjects: Subjects::new(prefix),
            positions,
            evaluator_metrics,
        }
    }

    /// One position of each of `macs` at `x`, stored as the ingestor would.
    async fn positions(&self, macs: &[String], x: f64) {
        let updates = macs
            .iter()
            .map(|mac| PositionUpdate {
                mac: mac.parse().unwrap(),
                position: [x, 0.0, 0.0],
                timestamp: Utc::now(),
                gateway_uri: None,
                extra: Default::default(),
            })
            .collect();
        let publisher =
            zonecast_ingest::Publisher::new(self.bus.clone(), self.subjects.clone(), PARTITIONS, 501, self.positions);
        assert_eq!(publisher.publish(updates, Utc::now()).await.unwrap(), macs.len());
    }

    /// Waits until the evaluator has acknowledged every stored position: every event they
    /// caused is stored, and so published.
    async fn positions_done(&self) {
        let streams = self.bus.position_streams(self.subjects.prefix(), PARTITIONS, self.positions).unwrap();
        let streams = &streams;
        zonecast_tests::eventually(WAIT, || async move {
            for partition in 0..PARTITIONS {
                if streams.backlog(partition).await.ok()? > 0 {
                    return None;
                }
            }
            Some(())
        })
        .await;
    }

    /// The zone events each of `macs` has had, in order, each once (a copy, with the same
    /// EventID, must be the same event): read from `events` until everything the evaluator
    /// published for the positions stored so far has come.
    async fn transitions(&self, events: &mut Subscription, macs: &[String]) -> BTreeMap<String, Vec<Value>> {
        self.positions_done().await;
        // Published after every event the evaluator published: read up to it, all have come.
        let sentinel = self.subjects.zone_event("sentinel", zonecast_model::ZoneEventKind::Info);
        self.bus.publish(sentinel.clone(), "{}".into()).await.unwrap();
        let mut seen: BTreeMap<String, Value> = BTreeMap::new();
        let mut by_device: BTreeMap<String, Vec<Value>> = macs.iter().map(|m| (m.clone(), Vec::new())).collect();
        loop {
            let msg = tokio::time::timeout(WAIT, events.next()).await.expect("events within the timeout").unwrap();
            if msg.subject == sentinel {
                return by_device;
            }
            let mut event: Value = serde_json::from_slice(&msg.payload).unwrap();
            // A position evaluated again after the restart causes the same event again, with
            // the same EventID (the journal stores it once), only evaluated at another time.
            event.as_object_mut().unwrap().remove("LocalTimestamp");
            let id = event["EventID"].as_str().unwrap().to_owned();
            if let Some(first) = seen.get(&id) {
                assert_eq!(first, &event, "a copy carries the same EventID and is the same event");
                continue;
            }
            seen.insert(id, event.clone());
            let mac = event["Source"]["MAC"].as_str().unwrap().to_owned();
            by_device.get_mut(&mac).unwrap_or_else(|| panic!("an event of an unexpected device: {event}")).push(event);
        }
    }
}

/// Checks that each device had `rounds` transitions, entering first and then alternating.
fn alternate(by_device: &BTreeMap<String, Vec<Value>>, rounds: usize) {
    for (mac, events) in by_device {
        let kinds: Vec<&str> = events.iter().map(|e| e["Type"].as_str().unwrap()).collect();
        let expected: Vec<&str> = (0..rounds).map(|r| if r % 2 == 0 { "ZONE_ENTER" } else { "ZONE_EXIT" }).collect();
        assert_eq!(kinds, expected, "{mac}: one event per position that crossed the zone's boundary");
        for pair in events.chunks(2) {
            if let [enter, exit] = pair {
                assert_eq!(enter["Content"]["CollisionID"], exit["Content"]["CollisionID"], "{mac}: {pair:?}");
            }
        }
    }
}

/// Reads the broker until an event of `kind` has arrived for every one of `macs`; checks that
/// copies of an event (same `EventID`) are the same event, and that each device has one.
async fn every_device_gets(sub: &mut Subscriber, kind: &str, macs: &[String]) {
    let wanted: BTreeSet<&str> = macs.iter().map(String::as_str).collect();
    let mut by_device: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut copies: BTreeMap<String, Value> = BTreeMap::new();
    while by_device.len() < wanted.len() {
        let (_, event) = sub.next(WAIT).await;
        if event["Type"] != kind {
            continue;
        }
        let id = event["EventID"].as_str().unwrap().to_owned();
        if let Some(first) = copies.get(&id) {
            assert_eq!(first, &event, "a copy carries the same EventID and is the same event");
        }
        copies.insert(id.clone(), event.clone());
        let mac = event["Source"]["MAC"].as_str().unwrap().to_owned();
        assert!(wanted.contains(mac.as_str()), "{kind} of an unexpected device {mac}");
        by_device.entry(mac).or_default().insert(id);
    }
    for (mac, ids) in by_device {
        assert_eq!(ids.len(), 1, "{mac} has one {kind}, not {ids:?}");
    }
}

#[tokio::test]
async fn forwarders_killed_with_a_backlog_or_down_while_events_flow_lose_nothing() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let mut site = Site::start(&nats, &database).await;
    let mut broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let connection = site.api.zone_and_connection(&broker).await;

    // A backlog held by the forwarder while the broker is away, then SIGKILL.
    broker.stop().await;
    site.api.wait_status(&connection, "disconnected", |s| s["connected"] == false).await;
    let macs = devices();
    site.positions(&macs, 1.0).await;
    site.api.wait_status(&connection, "the backlog", |s| s["queued"] == EVENTS).await;
    site.forwarder.kill().await;
    broker.start().await;
    site.forwarder.restart();
    site.forwarder.healthy(&site.api.http, WAIT).await;
    every_device_gets(&mut sub, "ZONE_ENTER", &macs).await;

    // Events produced while no forwarder runs at all.
    site.forwarder.kill().await;
    site.positions(&macs, 100.0).await;
    site.forwarder.restart();
    site.forwarder.healthy(&site.api.http, WAIT).await;
    every_device_gets(&mut sub, "ZONE_EXIT", &macs).await;
    site.api.wait_status(&connection, "everything delivered", |s| s["queued"] == 0 && s["dropped"] == 0).await;
    zonecast_tests::drop_fresh_database(&database).await;
}

#[tokio::test]
async fn the_all_in_one_killed_with_undelivered_events_delivers_them_after_its_restart() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let data = tempfile::tempdir().unwrap();
    let (mut zonecast, api) = all_in_one(data.path()).await;
    let mut broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let connection = api.zone_and_connection(&broker).await;

    broker.stop().await;
    api.wait_status(&connection, "disconnected", |s| s["connected"] == false).await;
    let macs = devices();
    let body: Vec<Value> = macs.iter().map(|m| json!({"MAC": m, "Position": [1, 0, 0]})).collect();
    let accepted = api.call(Method::POST, "/v3/positions", Some(Value::Array(body))).await;
    assert_eq!(accepted["accepted"], EVENTS);
    api.wait_status(&connection, "the events waiting", |s| s["queued"] == EVENTS).await;
    zonecast.kill().await;
    broker.start().await;
    zonecast.restart();
    zonecast.healthy(&api.http, WAIT).await;
    every_device_gets(&mut sub, "ZONE_ENTER", &macs).await;
    api.wait_status(&connection, "everything delivered", |s| s["queued"] == 0 && s["dropped"] == 0).await;
}

#[tokio::test]
async fn an_evaluator_killed_and_restarted_within_the_window_loses_no_position_and_repeats_no_enter() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let mut site = Site::start(&nats, &database).await;
    site.api.call(Method::POST, "/v3/modules/zones", Some(cell())).await;
    let mut events = site.bus.subscribe(&site.subjects.events_all()).await.unwrap();
    let macs = devices();
    // Each round moves every device across the zone's boundary: in on even rounds, out on odd.
    // The evaluator is killed while it works on round 2, misses rounds 3 to 7, and comes back
    // for the rest: every position is evaluated once, in order.
    const ROUNDS: usize = 12;
    for round in 0..ROUNDS {
        if round == 3 {
            site.evaluator.kill().await;
        }
        if round == 8 {
            site.evaluator.restart();
            site.evaluator.healthy(&site.api.http, WAIT).await;
        }
        site.positions(&macs, if round % 2 == 0 { 1.0 } else { 100.0 }).await;
    }
    alternate(&site.transitions(&mut events, &macs).await, ROUNDS);
    zonecast_tests::drop_fresh_database(&database).await;
}

#[tokio::test]
async fn positions_stored_before_a_nats_restart_are_all_evaluated_after_it() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut nats = NatsServer::start().await;
    let database = fresh_database().await;
    let mut site = Site::start(&nats, &database).await;
    site.api.call(Method::POST, "/v3/modules/zones", Some(cell())).await;
    let macs = devices();
    // Accepted while no evaluator runs: they wait in their streams through the restart.
    site.evaluator.kill().await;
    site.positions(&macs, 1.0).await;
    nats.restart().await;
    let bus = &site.bus;
    zonecast_tests::eventually(WAIT, || async move { bus.is_connected().then_some(()) }).await;
    let mut events = site.bus.subscribe(&site.subjects.events_all()).await.unwrap();
    site.evaluator.restart();
    site.evaluator.healthy(&site.api.http, WAIT).await;
    site.positions(&macs, 100.0).await;
    alternate(&site.transitions(&mut events, &macs).await, 2);
    zonecast_tests::drop_fresh_database(&database).await;
}

/// One request as an http-request action's receiver got it, with the status it answered.
struct Hook {
    key: String,
    body: Vec<u8>,
    status: u16,
}

/// An HTTP receiver of the test's own on a free port: answers every request with the status
/// held in the returned cell and hands each request to the channel.
async fn hook_receiver() -> (String, Arc<AtomicU16>, mpsc::UnboundedReceiver<Hook>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let status = Arc::new(AtomicU16::new(503));
    let (tx, rx) = mpsc::unbounded_channel();
    let answer = status.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let (answer, tx) = (answer.clone(), tx.clone());
            tokio::spawn(async move {
                let Some((head, body)) = zonecast_tests::read_http_request(&mut socket).await else { return };
                let status = answer.load(Ordering::SeqCst);
                let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                if socket.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
                let _ = socket.shutdown().await;
                let key = head
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .find(|(n, _)| n.trim().eq_ignore_ascii_case("idempotency-key"))
                    .map(|(_, v)| v.trim().to_owned())
                    .unwrap_or_default();
                let _ = tx.send(Hook { key, body, status });
            });
        }
    });
    (url, status, rx)
}

/// What a receiver has seen: per Idempotency-Key, the bodies it got and whether one of them
/// was answered 200.
#[derive(Default)]
struct Seen {
    bodies: BTreeMap<String, Vec<u8>>,
    delivered: BTreeSet<String>,
}

impl Seen {
    /// Reads requests until `done` holds; every copy of a key carries the same body, and the
    /// body is the event whose EventID is the key.
    async fn until(&mut self, hooks: &mut mpsc::UnboundedReceiver<Hook>, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !done(self) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let hook = tokio::time::timeout(left, hooks.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("never {what}: {} keys seen, {} delivered", self.bodies.len(), self.delivered.len())
                })
                .unwrap();
            let event: Value = serde_json::from_slice(&hook.body).unwrap();
            assert_eq!(event["EventID"].as_str(), Some(hook.key.as_str()), "the key is the event's EventID");
            assert_eq!(event["Type"], "ZONE_ENTER");
            if let Some(first) = self.bodies.get(&hook.key) {
                assert_eq!(first, &hook.body, "a copy carries the same key and the same body");
            }
            self.bodies.insert(hook.key.clone(), hook.body);
            if hook.status == 200 {
                self.delivered.insert(hook.key);
            }
        }
    }

    /// Checks that `devices` entered, one event each, and every event was delivered.
    fn every_device_delivered(&self, devices: &[String]) {
        let macs: BTreeSet<String> = self
            .bodies
            .values()
            .map(|b| serde_json::from_slice::<Value>(b).unwrap()["Source"]["MAC"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(macs, devices.iter().cloned().collect(), "one entry per device");
        assert_eq!(self.bodies.len(), devices.len(), "one event per device");
        assert_eq!(self.delivered.len(), devices.len(), "every event delivered");
    }
}

/// Devices of the http-request action tests.
const HOOKED: usize = 20;

/// The zone of the position tests with an http-request action to `url`.
fn cell_with_action(url: &str) -> Value {
    let mut zone = cell();
    zone["ZoneActions"] = json!([{"type": "http-request", "uri": url}]);
    zone
}

#[tokio::test]
async fn http_actions_waiting_for_a_retry_when_the_evaluator_is_killed_are_delivered_after_its_restart() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let mut site = Site::start(&nats, &database).await;
    let (url, status, mut hooks) = hook_receiver().await;
    site.api.call(Method::POST, "/v3/modules/zones", Some(cell_with_action(&url))).await;
    let macs: Vec<String> = devices().into_iter().take(HOOKED).collect();
    site.positions(&macs, 1.0).await;
    // Every request has been tried and refused: all of them wait for a retry.
    let mut seen = Seen::default();
    seen.until(&mut hooks, "every request tried", |s| s.bodies.len() == HOOKED).await;
    site.evaluator.kill().await;
    site.evaluator.restart();
    site.evaluator.healthy(&site.api.http, WAIT).await;
    status.store(200, Ordering::SeqCst);
    seen.until(&mut hooks, "every request delivered", |s| s.delivered.len() == HOOKED).await;
    seen.every_device_delivered(&macs);
    zonecast_tests::drop_fresh_database(&database).await;
}

#[tokio::test]
async fn http_actions_waiting_for_a_retry_when_the_all_in_one_is_killed_are_delivered_after_its_restart() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let data = tempfile::tempdir().unwrap();
    let (mut zonecast, api) = all_in_one(data.path()).await;
    let (url, status, mut hooks) = hook_receiver().await;
    api.call(Method::POST, "/v3/modules/zones", Some(cell_with_action(&url))).await;
    let macs: Vec<String> = devices().into_iter().take(HOOKED).collect();
    let body: Vec<Value> = macs.iter().map(|m| json!({"MAC": m, "Position": [1, 0, 0]})).collect();
    let accepted = api.call(Method::POST, "/v3/positions", Some(Value::Array(body))).await;
    assert_eq!(accepted["accepted"], HOOKED);
    let mut seen = Seen::default();
    seen.until(&mut hooks, "every request tried", |s| s.bodies.len() == HOOKED).await;
    zonecast.kill().await;
    zonecast.restart();
    zonecast.healthy(&api.http, WAIT).await;
    status.store(200, Ordering::SeqCst);
    seen.until(&mut hooks, "every request delivered", |s| s.delivered.len() == HOOKED).await;
    seen.every_device_delivered(&macs);
}

/// Positions that leave their stream before a stopped evaluator comes back are skipped, and
/// the skip is counted: the streams here keep 1 MiB per partition, and far more is stored while
/// the evaluator is down. The newest positions are still evaluated.
#[tokio::test]
async fn positions_that_left_the_window_while_the_evaluator_was_away_are_counted_as_skipped() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let small = zonecast_bus::PositionSettings { max_bytes: 1 << 20, ..Default::default() };
    let mut site = Site::start_with(&nats, &database, small).await;
    site.api.call(Method::POST, "/v3/modules/zones", Some(cell())).await;
    let macs = devices();
    site.evaluator.kill().await;
    // About 3 MiB per partition, in batches of ~10 KiB: the oldest two thirds leave.
    for round in 0..300 {
        site.positions(&macs, if round % 2 == 0 { 100.0 } else { 1.0 }).await;
    }
    let mut events = site.bus.subscribe(&site.subjects.events_all()).await.unwrap();
    site.evaluator.restart();
    site.evaluator.healthy(&site.api.http, WAIT).await;
    // The last round put every device inside: each enters.
    let by_device = site.transitions(&mut events, &macs).await;
    for (mac, events) in &by_device {
        assert_eq!(events.last().map(|e| e["Type"].clone()), Some(json!("ZONE_ENTER")), "{mac}: {events:?}");
    }
    let metrics = site.api.http.get(&site.evaluator_metrics).send().await.unwrap().text().await.unwrap();
    let skipped: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("zonecast_evaluator_position_batches_skipped_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no skipped batches counted:\n{metrics}"));
    // Each partition kept at most ~110 of its 300 batches.
    assert!(skipped >= f64::from(PARTITIONS) * 150.0, "{skipped} batches counted as skipped");
    zonecast_tests::drop_fresh_database(&database).await;
}
