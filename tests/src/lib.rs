//! Test support: start zonecast for real, in either deployment mode, each test in its own world
//! (fresh database, random subject prefix, port 0), and talk to it over HTTP like a client.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast_bus::{Bus, Subjects, Subscription};
use zonecast_runtime::{ApiKey, Authority, Client, Config, Secret, Shutdown};

pub use serde_json::json;

pub mod browser;
pub mod mosquitto;
pub mod nats;
pub mod pki;
pub mod process;
pub mod sse;

/// PostgreSQL server whose `postgres` role may create databases.
pub fn database_admin_url() -> String {
    std::env::var("ZONECAST_TEST_DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// NATS server.
pub fn nats_url() -> String {
    std::env::var("ZONECAST_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

const START_POSTGRES: &str = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start";
const START_NATS: &str = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log";

/// A fresh, empty PostgreSQL database; panics with the start command when the server is down.
pub async fn fresh_database() -> String {
    let name = format!("zc_test_{}", uuid::Uuid::new_v4().simple());
    zonecast_store::postgres::create_database(&database_admin_url(), &name).await.unwrap_or_else(|e| {
        panic!("PostgreSQL at {} is not usable ({e}); start it with: {START_POSTGRES}", database_admin_url())
    })
}

/// Drops the database of `url` (made by [`fresh_database`]); a test that gets there passed.
pub async fn drop_fresh_database(url: &str) {
    if let Some(name) = url.rsplit('/').next() {
        let _ = zonecast_store::postgres::drop_database(&database_admin_url(), name).await;
    }
}

/// Reads one HTTP/1.1 request from `socket`: its head and its body (by `Content-Length`);
/// `None` when the peer closes first. For receivers of the test's own.
pub async fn read_http_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(split) = buf.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&buf[..split]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
            .unwrap_or(0);
        if buf.len() >= split + 4 + length {
            return Some((head, buf[split + 4..split + 4 + length].to_vec()));
        }
    }
}

/// A NATS connection of the test's own; panics with the start command when the server is down.
pub async fn nats_bus() -> Arc<dyn Bus> {
    zonecast_bus::connect(Some(&nats_url()), "zonecast-tests")
        .await
        .unwrap_or_else(|e| panic!("NATS at {} is not reachable ({e}); start it with: {START_NATS}", nats_url()))
}

/// How the service under test is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The `zonecast` binary's composition: SQLite file, in-process bus.
    AllInOne,
    /// `zonecast-api` on PostgreSQL and NATS.
    Distributed,
}

/// Credentials every test server is configured with.
pub const ADMIN_KEY: &str = "test-admin-key";
pub const WRITE_KEY: &str = "test-write-key";
pub const READ_KEY: &str = "test-read-key";
pub const CLIENT_ID: &str = "integration";
pub const CLIENT_SECRET: &str = "s3cret:with:colons";

/// A running zonecast under test.
pub struct Server {
    pub mode: Mode,
    pub base: String,
    /// Where `POST /v3/positions` is answered: the API listener in the all-in-one, the
    /// ingestor's own listener in distributed mode.
    pub ingest_base: String,
    /// The operations listener (`/livez`, `/readyz`, `/metrics` without credentials), when the
    /// configuration sets `ops_addr`.
    pub ops_base: Option<String>,
    pub subjects: Subjects,
    /// A bus on which the test sees what the service publishes.
    pub bus: Arc<dyn Bus>,
    /// The event journal of the server (see [`Server::journal`]).
    journal: Arc<dyn zonecast_bus::Journal>,
    /// PostgreSQL URL of the distributed mode's database.
    pub database_url: Option<String>,
    /// Data directory of the all-in-one mode.
    pub data_dir: tempfile::TempDir,
    pub http: reqwest::Client,
    /// The configuration it runs with (store and bus URLs filled in), for restarts.
    pub config: Config,
    shutdown: Shutdown,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Distributed mode: the evaluator, separately stoppable.
    evaluator: Option<(Shutdown, tokio::task::JoinHandle<()>)>,
    /// Distributed mode: the forwarder, separately stoppable.
    forwarder: Option<(Shutdown, tokio::task::JoinHandle<()>)>,
}

/// Normalised positions as ingest publishes them, one at a time, with the subject each came
/// on (a batch's lines come one by one, each with the batch's subject).
pub struct PublishedPositions {
    subscription: Subscription,
    lines: std::collections::VecDeque<(String, bytes::Bytes)>,
}

impl PublishedPositions {
    /// The next position's subject and bytes, waiting at most `wait`; panics when none comes.
    pub async fn next(&mut self, wait: Duration) -> (String, bytes::Bytes) {
        self.within(wait).await.expect("a position within the timeout")
    }

    /// The next position's subject and bytes, if one comes within `wait`.
    pub async fn within(&mut self, wait: Duration) -> Option<(String, bytes::Bytes)> {
        let until = tokio::time::Instant::now() + wait;
        loop {
            if let Some(line) = self.lines.pop_front() {
                return Some(line);
            }
            let msg = tokio::time::timeout_at(until, self.subscription.next()).await.ok()?.expect("subscription open");
            self.lines.extend(zonecast_bus::positions::lines(&msg.payload).map(|l| (msg.subject.clone(), l)));
        }
    }

    /// The next position event for which `wanted` holds, skipping others, if one comes within
    /// `wait`.
    pub async fn next_matching(&mut self, wait: Duration, wanted: impl Fn(&Value) -> bool) -> Option<Value> {
        let until = tokio::time::Instant::now() + wait;
        loop {
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            let event: Value = serde_json::from_slice(&self.within(left).await?.1).unwrap();
            if wanted(&event) {
                return Some(event);
            }
        }
    }
}

/// The byte bound of each JetStream stream a test makes on the shared NATS server (its events,
/// its actions, its positions over all partitions). JetStream reserves a stream's bound from the
/// server's storage when the stream is made, so tests running side by side, or streams left by
/// a killed run, would otherwise exhaust it with the services' default of 1 GiB each.
pub const STREAM_BYTES: u64 = 64 << 20;

/// The environment that gives a spawned zonecast binary's JetStream streams the bound of
/// [`STREAM_BYTES`].
pub fn small_stream_env() -> [(String, String); 2] {
    [
        ("ZONECAST_EVENT_RETENTION_BYTES".to_owned(), STREAM_BYTES.to_string()),
        ("ZONECAST_POSITION_RETENTION_BYTES".to_owned(), STREAM_BYTES.to_string()),
    ]
}

/// A configuration with the test credentials, port 0 and a random subject prefix.
pub fn test_config(data_dir: &std::path::Path) -> Config {
    let mut config = Config {
        data_dir: data_dir.to_owned(),
        site_id: 501,
        secret_key: Some(Secret::new(zonecast_runtime::keys::random_base64(32).unwrap())),
        ..Config::default()
    };
    config.http.addr = "127.0.0.1:0".parse().unwrap();
    config.http.limits.max_body_bytes = 256 * 1024;
    config.bus.subject_prefix = format!("zt{}", uuid::Uuid::new_v4().simple());
    // The test's JetStream streams stay small on the shared server (and are removed by `stop`).
    config.bus.journal =
        zonecast_bus::JournalSettings { max_age: std::time::Duration::from_secs(600), max_bytes: STREAM_BYTES };
    config.bus.positions.max_bytes = STREAM_BYTES;
    config.auth.api_keys = vec![
        ApiKey { key: Secret::new(ADMIN_KEY), authority: Authority::Admin },
        ApiKey { key: Secret::new(WRITE_KEY), authority: Authority::Write },
        ApiKey { key: Secret::new(READ_KEY), authority: Authority::Read },
    ];
    config.auth.clients =
        vec![Client { id: CLIENT_ID.into(), secret: Secret::new(CLIENT_SECRET), authority: Authority::Write }];
    config
}

impl Server {
    /// Starts zonecast in `mode` with [`test_config`].
    pub async fn start(mode: Mode) -> Self {
        Self::start_configured(mode, |_| {}).await
    }

    /// Starts zonecast in `mode` with the test configuration as `configure` changes it.
    pub async fn start_configured(mode: Mode, configure: impl FnOnce(&mut Config)) -> Self {
        let data_dir = tempfile::tempdir().unwrap();
        let mut config = test_config(data_dir.path());
        configure(&mut config);
        Self::start_with(mode, config, data_dir).await
    }

    /// Starts zonecast in `mode` with `config` (its store and bus URLs are set here).
    pub async fn start_with(mode: Mode, mut config: Config, data_dir: tempfile::TempDir) -> Self {
        // What every binary's start-up does first; the services' `start` functions rely on it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // The metrics recorder before any service registers a counter, as every binary's
        // start-up installs it: counters registered before it would count nothing.
        zonecast_runtime::metrics::handle();
        let subjects = Subjects::new(config.bus.subject_prefix.clone());
        let shutdown = Shutdown::new();
        let mut forwarder = None;
        let (addr, ingest_addr, ops_addr, bus, journal, task, database_url, evaluator) = match mode {
            Mode::AllInOne => {
                let running = zonecast::start(config.clone(), shutdown.clone()).await.expect("all-in-one starts");
                let (bus, journal) = (running.bus, running.journal);
                (running.http_addr, running.http_addr, running.ops_addr, bus, journal, running.task, None, None)
            }
            Mode::Distributed => {
                let url = match &config.store.database_url {
                    Some(url) => url.expose().to_owned(),
                    None => fresh_database().await,
                };
                let bus = nats_bus().await;
                config.store.database_url = Some(Secret::new(url.clone()));
                config.bus.nats_url = Some(Secret::new(nats_url()));
                let running = zonecast_api::launch(config.api(), shutdown.clone()).await.expect("zonecast-api starts");
                let evaluator = start_evaluator(&config).await;
                forwarder = Some(start_forwarder(&config).await);
                let ingest_addr = start_ingestor(&config, shutdown.clone()).await;
                let addr = running.addr.expect("the API listens");
                let journal = bus.journal(&config.bus.subject_prefix, config.bus.journal);
                (addr, ingest_addr, running.ops_addr, bus, journal, running.task, Some(url), Some(evaluator))
            }
        };
        Self {
            mode,
            base: format!("http://{addr}"),
            ingest_base: format!("http://{ingest_addr}"),
            ops_base: ops_addr.map(|a| format!("http://{a}")),
            subjects,
            bus,
            journal,
            database_url,
            data_dir,
            http: http_client(),
            config,
            shutdown,
            task: Some(task),
            evaluator,
            forwarder,
        }
    }

    /// Stops everything and starts it again on the same data directory or database.
    pub async fn restart(mut self) -> Self {
        let (mode, config) = (self.mode, self.config.clone());
        let data_dir = std::mem::replace(&mut self.data_dir, tempfile::tempdir().unwrap());
        let mut config = config;
        // Listen on a new free port: the old one may linger.
        config.http.addr = "127.0.0.1:0".parse().unwrap();
        if config.ops_addr.is_some() {
            config.ops_addr = Some("127.0.0.1:0".parse().unwrap());
        }
        self.halt().await;
        // The stopped server's journal lets go of its file before the new one opens it.
        self.journal = Arc::new(zonecast_bus::InProcessBus::new()).journal("stopped", config.bus.journal);
        Self::start_with(mode, config, data_dir).await
    }

    /// Publishes a normalised position of `mac`, as the ingestor would: over NATS stored in
    /// its partition's stream, in one process on its subject.
    pub async fn position(&self, mac: &str, position: [f64; 3], timestamp: chrono::DateTime<chrono::Utc>) {
        let update = zonecast_model::PositionUpdate {
            mac: mac.parse().unwrap(),
            position,
            timestamp,
            gateway_uri: None,
            extra: Default::default(),
        };
        self.publish_positions(vec![update]).await;
    }

    /// Publishes normalised positions, as the ingestor would.
    pub async fn publish_positions(&self, updates: Vec<zonecast_model::PositionUpdate>) {
        let publisher = zonecast_ingest::Publisher::new(
            self.bus.clone(),
            self.subjects.clone(),
            self.config.bus.partitions,
            self.config.site_id,
            self.config.bus.positions,
        );
        let count = updates.len();
        assert_eq!(publisher.publish(updates, chrono::Utc::now()).await.unwrap(), count);
    }

    /// Publishes `payload` (one position event's bytes, or anything a broken publisher might
    /// send) as a batch of one line of `mac`'s partition: over NATS stored in the partition's
    /// stream, in one process on the partition's subject.
    pub async fn position_bytes(&self, mac: &zonecast_model::Mac, payload: &[u8]) {
        let partition = mac.partition(self.config.bus.partitions);
        let mut batch = bytes::BytesMut::new();
        zonecast_bus::positions::push_line(&mut batch, payload);
        match self.position_streams() {
            Some(streams) => {
                streams.send(vec![(partition, batch.freeze())]).await.unwrap().confirmed().await.unwrap();
            }
            None => self.bus.publish(self.subjects.position_batch(partition), batch.freeze()).await.unwrap(),
        }
    }

    /// The position streams over NATS; `None` in one process.
    pub fn position_streams(&self) -> Option<Arc<zonecast_bus::PositionStreams>> {
        self.bus.position_streams(self.subjects.prefix(), self.config.bus.partitions, self.config.bus.positions)
    }

    /// The subject `mac`'s positions are published on: its partition's batches.
    pub fn position_subject(&self, mac: &zonecast_model::Mac) -> String {
        self.subjects.position_batch(mac.partition(self.config.bus.partitions))
    }

    /// Subscribes to every normalised position as ingest publishes them (see
    /// [`Server::position_subject`]).
    pub async fn published_positions(&self) -> PublishedPositions {
        let subject = self.subjects.position_batches();
        PublishedPositions { subscription: self.bus.subscribe(&subject).await.unwrap(), lines: Default::default() }
    }

    /// Posts positions (`body`, any form `POST /v3/positions` takes) to the HTTP input with the
    /// write key, as a gateway does; the answer is the caller's to check.
    pub async fn post_positions(&self, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}/v3/positions", self.ingest_base))
            .header("X-API-Key", WRITE_KEY)
            .json(body)
            .send()
            .await
            .expect("the request reaches the server")
    }

    /// A token for the test client (`CLIENT_ID`) from `POST /v3/auth/token`.
    pub async fn client_token(&self) -> String {
        let issued = self
            .ok(
                Method::POST,
                "/v3/auth/token",
                Some(serde_json::json!({"grant_type": "client_credentials", "auth_id": CLIENT_ID, "auth_secret": CLIENT_SECRET})),
            )
            .await;
        issued["access_token"].as_str().expect("a token is issued").to_owned()
    }

    /// Subscribes to every zone and alarm event.
    pub async fn events(&self) -> Subscription {
        self.bus.subscribe(&self.subjects.events_all()).await.unwrap()
    }

    /// Sends `method path` with `key` as `X-API-Key` (none when `None`) and a raw body.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            req = req.header("X-API-Key", key);
        }
        if let Some(body) = body {
            req = req.header("Content-Type", "application/json").body(body);
        }
        let response = req.send().await.expect("request reaches the server");
        let status = response.status();
        let bytes = response.bytes().await.expect("response body");
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, value)
    }

    /// Sends JSON `body` (or nothing) with `key`.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.raw(method, path, key, body.map(|b| serde_json::to_vec(&b).unwrap())).await
    }

    /// As admin; panics unless the answer is 200, returning its body.
    pub async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method.clone(), path, Some(ADMIN_KEY), body).await;
        assert_eq!(status, StatusCode::OK, "{method} {path} answered {value}");
        value
    }

    /// Creates a zone from `input`, returning it.
    pub async fn create_zone(&self, input: Value) -> Value {
        self.ok(Method::POST, "/v3/modules/zones", Some(input)).await
    }

    /// Everything a client can read back, to prove that a refused request changed nothing.
    pub async fn snapshot(&self) -> Value {
        json!({
            "zones": self.ok(Method::GET, "/v3/modules/zones", None).await,
            "settings": self.ok(Method::GET, "/v3/modules/zones/settings", None).await,
            "connections": self.ok(Method::GET, "/v3/modules/mqtt/connections", None).await,
            "certificates": self.ok(Method::GET, "/v3/modules/mqtt/certificates", None).await,
        })
    }

    /// Sends a request that must be refused with `status` and the error `kind`, proves that it
    /// changed nothing (the [`Server::snapshot`] before equals the one after) and returns the
    /// error message. Panic messages name the request.
    pub async fn refused(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Vec<u8>>,
        status: u16,
        kind: &str,
    ) -> String {
        let shown =
            body.as_ref().map(|b| String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned()).unwrap_or_default();
        let before = self.snapshot().await;
        let answer = self.raw(method.clone(), path, key, body).await;
        assert_eq!(answer.0.as_u16(), status, "{method} {path} {shown} answered {} {}", answer.0, answer.1);
        let message = assert_error(&answer, status, kind);
        assert_eq!(self.snapshot().await, before, "{method} {path} {shown} was refused but changed state");
        message
    }

    /// Starts zonecast in `mode` with its ingestor reading positions from the machine's
    /// Mosquitto, and an RTLS gateway publishing to it. Returns once a probe position the gateway
    /// published (MAC `FF:FF:FF:FF:FF:FE`, far outside any site) came through: the input
    /// subscribes asynchronously, so positions published before that could be missed.
    pub async fn start_with_mqtt_gateway(mode: Mode) -> (Self, Gateway) {
        let root = format!("zt{}", uuid::Uuid::new_v4().simple());
        let server = Self::start_configured(mode, |config| {
            config.mqtt = Some(zonecast_runtime::config::MqttInputConfig {
                url: Secret::new("mqtt://127.0.0.1:1883"),
                topics: vec![format!("{root}/positions/#")],
                ca: None,
            });
        })
        .await;
        let mut options = rumqttc::MqttOptions::new(format!("{root}-gateway"), "127.0.0.1", 1883);
        options.set_keep_alive(Duration::from_secs(5));
        let (client, mut eventloop) = rumqttc::AsyncClient::new(options, 100);
        tokio::spawn(async move {
            while eventloop.poll().await.is_ok() {}
            panic!(
                "the Mosquitto at 127.0.0.1:1883 went away; start it with: mosquitto -d -c /etc/mosquitto/mosquitto.conf"
            );
        });
        let gateway = Gateway { client, topic: format!("{root}/positions/gw1") };
        let mut positions = server.published_positions().await;
        let probe = br#"{"MAC": "FF:FF:FF:FF:FF:FE", "Position": [100000, 100000, 0]}"#.to_vec();
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                gateway.publish(probe.clone()).await;
                let wanted = |e: &Value| e["Source"]["MAC"] == "FF:FF:FF:FF:FF:FE";
                if positions.next_matching(Duration::from_millis(300), wanted).await.is_some() {
                    break;
                }
            }
        })
        .await
        .expect("the MQTT position input subscribed within 10 s");
        (server, gateway)
    }

    /// Subscribes to `<prefix>.config.changed`.
    pub async fn config_changes(&self) -> Subscription {
        self.bus.subscribe(&self.subjects.config_changed()).await.unwrap()
    }

    /// Stops every part and waits until each has drained.
    async fn halt(&mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
        if let Some((shutdown, task)) = self.evaluator.take() {
            shutdown.cancel();
            task.await.unwrap();
        }
        if let Some((shutdown, task)) = self.forwarder.take() {
            shutdown.cancel();
            task.await.unwrap();
        }
    }

    /// The event journal the server's evaluators append to and its forwarders consume.
    pub fn journal(&self) -> std::sync::Arc<dyn zonecast_bus::Journal> {
        self.journal.clone()
    }

    /// Stops the server, waits until it has drained, and drops its database, its event
    /// journal and its position streams: a test that gets here passed (a failing one keeps its database for inspection;
    /// CI drops leftovers).
    pub async fn stop(mut self) {
        self.halt().await;
        if self.mode == Mode::Distributed {
            let _ = self.journal().remove_all().await;
            if let Some(streams) = self.position_streams() {
                let _ = streams.remove_all().await;
            }
        }
        if let Some(url) = &self.database_url
            && let Some(name) = url.rsplit('/').next()
        {
            let _ = zonecast_store::postgres::drop_database(&database_admin_url(), name).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some((shutdown, _)) = &self.evaluator {
            shutdown.cancel();
        }
        if let Some((shutdown, _)) = &self.forwarder {
            shutdown.cancel();
        }
    }
}

/// A distributed ingestor on `config`'s NATS with a connection of its own: HTTP listener on a
/// free port, NATS input, and the MQTT input when `config` asks for one. Returns its address.
async fn start_ingestor(config: &Config, shutdown: Shutdown) -> std::net::SocketAddr {
    let mut ingestor = config.ingestor();
    ingestor.http =
        Some(zonecast_runtime::HttpConfig { addr: "127.0.0.1:0".parse().unwrap(), limits: config.http.limits });
    let running = zonecast_ingestor::launch(ingestor, shutdown).await.expect("zonecast-ingestor starts");
    running.addr.expect("the ingestor listens")
}

/// A distributed forwarder on `config`'s database and NATS, with connections of its own.
async fn start_forwarder(config: &Config) -> (Shutdown, tokio::task::JoinHandle<()>) {
    let shutdown = Shutdown::new();
    let running = zonecast_forwarder::launch(config.forwarder(), shutdown.clone()).await.expect("forwarder starts");
    (shutdown, running.task)
}

/// A distributed evaluator on `config`'s database and NATS, with connections of its own.
async fn start_evaluator(config: &Config) -> (Shutdown, tokio::task::JoinHandle<()>) {
    let shutdown = Shutdown::new();
    let running = zonecast_evaluator::launch(config.evaluator(), shutdown.clone()).await.expect("evaluator starts");
    (shutdown, running.task)
}

/// Next message of `sub` whose JSON satisfies `pred`, skipping others; panics after `timeout`.
pub async fn next_matching(sub: &mut Subscription, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let value = next_json(sub, left).await;
        if pred(&value) {
            return value;
        }
    }
}

/// Polls `check` until it returns `Some`, every 20 ms, for at most `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "condition not met within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(20)).await; // sleep-ok: polling interval of a bounded wait
    }
}

/// An HTTP client for the services under test. It lets a pooled connection go after 5 s idle,
/// before the services close it (10 s without a request, `ZONECAST_HTTP_HEADER_TIMEOUT_MS`): a
/// request sent on a connection the server is closing at that very moment fails as an
/// incomplete message.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder().pool_idle_timeout(Duration::from_secs(5)).build().expect("an HTTP client")
}

/// The next message of `sub` as JSON, or a panic after `timeout`.
pub async fn next_json(sub: &mut Subscription, timeout: Duration) -> Value {
    let msg =
        tokio::time::timeout(timeout, sub.next()).await.expect("a message within the timeout").expect("stream open");
    serde_json::from_slice(&msg.payload).expect("JSON payload")
}

/// A sphere ZoneInput.
pub fn sphere(name: &str, centre: [f64; 3], radius: f64) -> Value {
    json!({"Name": name, "GeometryType": "sphere", "GeometryData": [centre, [radius, 0, 0]]})
}

/// Asserts the documented error body with `status` and `kind`; returns the message.
#[track_caller]
pub fn assert_error(answer: &(StatusCode, Value), status: u16, kind: &str) -> String {
    let (got, body) = answer;
    assert_eq!(got.as_u16(), status, "expected {status} {kind}, got {got} {body}");
    assert_eq!(body["status"], json!(status), "{body}");
    assert_eq!(body["success"], json!(false), "{body}");
    assert_eq!(body["error"], json!(kind), "{body}");
    let message = body["message"].as_str().expect("message").to_owned();
    assert!(!message.is_empty());
    message
}

/// An RTLS gateway publishing positions to the broker a server's MQTT input reads.
pub struct Gateway {
    /// The gateway's client.
    pub client: rumqttc::AsyncClient,
    /// The topic it publishes to.
    pub topic: String,
}

impl Gateway {
    /// Publishes `payload` (QoS 1).
    pub async fn publish(&self, payload: impl Into<Vec<u8>>) {
        self.client.publish(&self.topic, rumqttc::QoS::AtLeastOnce, false, payload.into()).await.unwrap();
    }
}

/// Generates one `#[tokio::test]` per mode for each listed async fn taking a `Mode`.
#[macro_export]
macro_rules! both_modes {
    ($($name:ident),* $(,)?) => {
        mod all_in_one {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name($crate::Mode::AllInOne).await }) *
        }
        mod distributed {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name($crate::Mode::Distributed).await }) *
        }
    };
}
