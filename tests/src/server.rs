//! A zonecast under test: started in either mode on the test configuration, each in its own
//! world, stopped and restarted, and spoken to over HTTP and the bus as a client would.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast::Config;
use zonecast_bus::{Bus, Channels, PositionLog, Subjects, Subscription};
use zonecast_runtime::Shutdown;

use serde_json::json;
use zonecast_runtime::Secret;

use crate::{
    ADMIN_KEY, CLIENT_ID, CLIENT_SECRET, Gateway, Mode, PublishedPositions, WRITE_KEY, assert_error,
    database_admin_url, fresh_database, http_client, nats_bus, nats_url, test_config,
};

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
    /// The position log of the server.
    positions: Arc<dyn PositionLog>,
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
        // The metrics recorder before any service registers a counter, as every binary's
        // start-up installs it: counters registered before it would count nothing.
        zonecast_runtime::metrics::handle();
        crate::log_warnings();
        let subjects = Subjects::new(config.bus.subject_prefix.clone());
        let shutdown = Shutdown::new();
        let mut forwarder = None;
        let (addr, ingest_addr, ops_addr, channels, task, database_url, evaluator) = match mode {
            Mode::AllInOne => {
                let running = zonecast::start(config.clone(), shutdown.clone()).await.expect("all-in-one starts");
                (running.http_addr, running.http_addr, running.ops_addr, running.channels, running.task, None, None)
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
                let channels = Channels {
                    journal: bus.journal(&config.bus.subject_prefix, config.bus.journal),
                    positions: bus.position_log(
                        &config.bus.subject_prefix,
                        config.bus.partitions,
                        config.bus.positions,
                    ),
                    bus,
                };
                (addr, ingest_addr, running.ops_addr, channels, running.task, Some(url), Some(evaluator))
            }
        };
        let Channels { bus, journal, positions } = channels;
        Self {
            mode,
            base: format!("http://{addr}"),
            ingest_base: format!("http://{ingest_addr}"),
            ops_base: ops_addr.map(|a| format!("http://{a}")),
            subjects,
            bus,
            journal,
            positions,
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
    /// the position stream, in one process on its partition's subject.
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
        let channels = Channels { bus: self.bus.clone(), journal: self.journal(), positions: self.positions.clone() };
        let publisher = zonecast_ingest::Publisher::new(
            &channels,
            self.subjects.clone(),
            self.config.site_id,
            self.config.bus.positions,
        );
        let count = updates.len();
        assert_eq!(publisher.publish(updates, chrono::Utc::now()).await.unwrap(), count);
    }

    /// Publishes `payload` (one position event's bytes, or anything a broken publisher might
    /// send) to the position log as a batch of one line of `mac`'s partition.
    pub async fn position_bytes(&self, mac: &zonecast_model::Mac, payload: &[u8]) {
        let partition = mac.partition(self.config.bus.partitions);
        let mut batch = bytes::BytesMut::new();
        zonecast_bus::positions::push_line(&mut batch, payload);
        let batch: zonecast_bus::Decoded = Arc::new(Lines(batch.freeze()));
        self.positions.publish(vec![(partition, batch)]).await.unwrap().confirmed().await.unwrap();
    }

    /// The position log.
    pub fn position_log(&self) -> Arc<dyn PositionLog> {
        self.positions.clone()
    }

    /// The subject `mac`'s positions are published on: its partition's batches in one
    /// process, the batches of every partition together over NATS.
    pub fn position_subject(&self, mac: &zonecast_model::Mac) -> String {
        match self.mode {
            Mode::AllInOne => self.subjects.position_batch(mac.partition(self.config.bus.partitions)),
            Mode::Distributed => self.subjects.position_rounds(),
        }
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
        self.send(method, path, key, "application/json", body).await
    }

    /// Sends `body` (or nothing) labelled `content_type`, with `key`; the answer as JSON when
    /// it is JSON, else as a string.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        content_type: &str,
        body: Option<Vec<u8>>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            req = req.header("X-API-Key", key);
        }
        if let Some(body) = body {
            req = req.header("Content-Type", content_type).body(body);
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
            "devices": self.ok(Method::GET, "/v3/devices?limit=1000", None).await,
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
            config.mqtt = Some(zonecast_ingestor::MqttInputConfig {
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

    /// Distributed mode: stops the server's own forwarder as an operator would (it delivers
    /// what it can for up to 2 s, writes its last status rows and ends), leaving the site
    /// without a forwarder until the test starts one (see [`Server::forwarder_process`]).
    pub async fn stop_forwarder(&mut self) {
        let (shutdown, task) = self.forwarder.take().expect("a distributed server runs a forwarder of its own");
        shutdown.cancel();
        task.await.unwrap();
    }

    /// Distributed mode: a `zonecast-forwarder` process for this server's database, NATS,
    /// subject prefix and secret key, serving `/healthz` on a free port; killed when dropped.
    pub fn forwarder_process(&self) -> crate::process::Service {
        let port = crate::process::free_port();
        let database = self.database_url.clone().expect("a distributed server has a database");
        let secret = self.config.secret_key.as_ref().expect("the test configuration has a secret key");
        let mut env: Vec<(String, String)> = vec![
            ("ZONECAST_DATABASE_URL".into(), database),
            ("ZONECAST_NATS_URL".into(), nats_url()),
            ("ZONECAST_SECRET_KEY".into(), secret.expose().to_owned()),
            ("ZONECAST_SUBJECT_PREFIX".into(), self.config.bus.subject_prefix.clone()),
            ("ZONECAST_HTTP_ADDR".into(), format!("127.0.0.1:{port}")),
        ];
        env.extend(crate::small_stream_env());
        let retention = self.config.bus.journal.max_age.as_secs();
        env.push(("ZONECAST_EVENT_RETENTION_SECS".into(), retention.to_string()));
        crate::process::Service::start("zonecast-forwarder", env, port)
    }

    /// The event journal the server's evaluators append to and its forwarders consume.
    pub fn journal(&self) -> std::sync::Arc<dyn zonecast_bus::Journal> {
        self.journal.clone()
    }

    /// Stops the server, waits until it has drained, and drops its database, its event
    /// journal, its position streams and its key-value buckets: a test that gets here passed (a
    /// failing one keeps its database for inspection; CI drops leftovers).
    pub async fn stop(mut self) {
        self.halt().await;
        if self.mode == Mode::Distributed {
            let _ = self.journal().remove_all().await;
            let _ = self.positions.remove_all().await;
            // The key-value buckets of the evaluators' leases and of the replicas' heartbeats.
            if let Ok(client) = async_nats::connect(nats_url()).await {
                let jetstream = async_nats::jetstream::new(client);
                for bucket in ["EVALUATORS", "REPLICAS"] {
                    let _ = jetstream.delete_stream(format!("KV_{}_{bucket}", self.subjects.prefix())).await;
                }
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

/// Lines as a publisher outside zonecast may have written them: nothing decoded to hand over.
#[derive(Debug)]
struct Lines(bytes::Bytes);

impl zonecast_bus::Encode for Lines {
    fn decoded(&self) -> &(dyn std::any::Any + Send + Sync) {
        &self.0
    }

    fn encode(&self) -> bytes::Bytes {
        self.0.clone()
    }
}
