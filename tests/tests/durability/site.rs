//! The site under test: the API, the services as processes, and what every device must get.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_bus::{Bus, Subjects, Subscription};
use zonecast_model::PositionUpdate;
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::nats::NatsServer;
use zonecast_tests::process::{Service, free_port};

pub(crate) const WAIT: Duration = Duration::from_secs(60);
pub(crate) const KEY: &str = "durability-admin-key";
pub(crate) const PARTITIONS: u32 = 4;
/// Events produced in each phase.
pub(crate) const EVENTS: usize = 150;

/// The HTTP API of a running zonecast, as a client uses it.
pub(crate) struct Api {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
}

impl Api {
    pub(crate) async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        zonecast_tests::call_ok(&self.http, &self.base, KEY, method, path, body).await
    }

    /// A zone around the origin and an MQTT connection to `broker` taking zone events; returns
    /// the connection's id once its client is connected.
    pub(crate) async fn zone_and_connection(&self, broker: &Broker) -> String {
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
    pub(crate) async fn wait_status(&self, connection: &str, what: &str, pred: impl Fn(&Value) -> bool) {
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

pub(crate) fn devices() -> Vec<String> {
    (0..EVENTS).map(|n| format!("00:00:00:00:{:02X}:{:02X}", n >> 8, n & 0xff)).collect()
}

/// The zone every position test moves devices in and out of: a sphere of 5 m at the origin.
pub(crate) fn cell() -> Value {
    json!({"Name": "cell", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [5, 0, 0]]})
}

/// The `zonecast` binary on its data directory `data`, healthy, and its API.
pub(crate) async fn all_in_one(data: &std::path::Path) -> (Service, Api) {
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
pub(crate) struct Site {
    pub(crate) api: Api,
    pub(crate) forwarder: Service,
    pub(crate) evaluator: Service,
    pub(crate) _api: Service,
    pub(crate) bus: Arc<dyn Bus>,
    /// The same connection's journal and position log.
    pub(crate) channels: zonecast_bus::Channels,
    pub(crate) subjects: Subjects,
    /// What the position streams keep, as the services are told.
    pub(crate) positions: zonecast_bus::PositionSettings,
    /// The evaluator's `/metrics`.
    pub(crate) evaluator_metrics: String,
}

impl Site {
    pub(crate) async fn start(nats: &NatsServer, database: &str) -> Self {
        Self::start_with(nats, database, zonecast_bus::PositionSettings::default()).await
    }

    /// A site with the cell, and the zone events as the test's bus connection sees them.
    pub(crate) async fn with_cell(nats: &NatsServer, database: &str) -> (Self, Subscription) {
        let site = Self::start(nats, database).await;
        site.api.call(Method::POST, "/v3/modules/zones", Some(cell())).await;
        let events = site.bus.subscribe(&site.subjects.events_all()).await.unwrap();
        (site, events)
    }

    /// A site whose position streams keep `positions.max_bytes` over all partitions.
    pub(crate) async fn start_with(
        nats: &NatsServer,
        database: &str,
        positions: zonecast_bus::PositionSettings,
    ) -> Self {
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
        let site = zonecast_bus::Site {
            prefix: &prefix,
            partitions: PARTITIONS,
            journal: Default::default(),
            positions,
            journal_file: None,
        };
        let channels = zonecast_bus::open(Some(&nats.url()), "durability-test", site).await.unwrap();
        let bus = channels.bus.clone();
        Self {
            api: Api { http, base: format!("http://127.0.0.1:{api_port}") },
            forwarder,
            evaluator,
            _api: api,
            bus,
            channels,
            subjects: Subjects::new(prefix),
            positions,
            evaluator_metrics,
        }
    }

    /// One position of each of `macs` at `x`, stored as the ingestor would.
    pub(crate) async fn positions(&self, macs: &[String], x: f64) {
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
        let publisher = zonecast_ingest::Publisher::new(&self.channels, self.subjects.clone(), 501, self.positions);
        assert_eq!(publisher.publish(updates, Utc::now()).await.unwrap(), macs.len());
    }

    /// Starts the evaluator again (after a kill) and waits until it is healthy.
    pub(crate) async fn restart_evaluator(&mut self) {
        self.evaluator.restart();
        self.evaluator.healthy(&self.api.http, WAIT).await;
    }

    /// The evaluator's `/metrics` lines starting with `prefix`, with their values.
    async fn evaluator_samples(&self, prefix: &str) -> Vec<f64> {
        let Ok(response) = self.api.http.get(&self.evaluator_metrics).send().await else { return Vec::new() };
        let metrics = response.text().await.unwrap_or_default();
        metrics.lines().filter(|l| l.starts_with(prefix)).filter_map(|l| l.rsplit(' ').next()?.parse().ok()).collect()
    }

    /// A counter of the evaluator's `/metrics` (0 before it counts anything).
    pub(crate) async fn evaluator_counter(&self, name: &str) -> f64 {
        self.evaluator_samples(&format!("{name} ")).await.first().copied().unwrap_or(0.0)
    }

    /// Waits until the evaluator reports a lag of `seconds` or more.
    pub(crate) async fn evaluator_lag_reaches(&self, seconds: f64) {
        zonecast_tests::eventually(WAIT, || async move {
            let lag = self.evaluator_samples("zonecast_pipeline_lag_seconds{").await.into_iter().fold(0.0, f64::max);
            (lag >= seconds).then_some(())
        })
        .await;
    }

    /// Waits until the evaluator's counter `name` has reached `count` since it started.
    pub(crate) async fn evaluator_counts(&self, name: &str, count: usize) {
        zonecast_tests::eventually(WAIT, || async move {
            (self.evaluator_counter(name).await >= count as f64).then_some(())
        })
        .await;
    }

    /// Round `round` of the walk in and out of the cell: every one of `macs` inside on even
    /// rounds, outside on odd ones.
    pub(crate) async fn round(&self, macs: &[String], round: usize) {
        self.positions(macs, if round.is_multiple_of(2) { 1.0 } else { 100.0 }).await;
    }

    /// Waits until the evaluator has acknowledged every stored position: every event they
    /// caused is stored, and so published.
    pub(crate) async fn positions_done(&self) {
        let log = &self.channels.positions;
        zonecast_tests::eventually(WAIT, || async move { (log.backlog().await.ok().flatten()? == 0).then_some(()) })
            .await;
    }

    /// The zone events each of `macs` has had, in order, each once (a copy, with the same
    /// EventID, must be the same event): read from `events` until everything the evaluator
    /// published for the positions stored so far has come.
    pub(crate) async fn transitions(&self, events: &mut Subscription, macs: &[String]) -> BTreeMap<String, Vec<Value>> {
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
pub(crate) fn alternate(by_device: &BTreeMap<String, Vec<Value>>, rounds: usize) {
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
pub(crate) async fn every_device_gets(sub: &mut Subscriber, kind: &str, macs: &[String]) {
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
