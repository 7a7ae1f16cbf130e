//! Test support: start zonecast for real, in either deployment mode, each test in its own world
//! (fresh database, random subject prefix, port 0), and talk to it over HTTP like a client.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::Value;
use zonecast::Config;
use zonecast_bus::{Bus, Subscription};
use zonecast_runtime::{ApiKey, Authority, Client, Secret};

pub use serde_json::json;

pub mod browser;
pub mod mosquitto;
pub mod nats;
pub mod pki;
pub mod process;
mod server;
pub mod sse;

pub use server::Server;

/// Has the warnings and errors that services started in the test process log written to the
/// output of the test that started them: the test harness shows it when that test fails, and
/// a service that was retrying something says what.
pub fn log_warnings() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_test_writer()
            .with_ansi(false)
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
            .finish();
        // A subscriber set by someone else first is kept.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

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

/// Takes the database of `url` (made by [`fresh_database`]) away from its services: no new
/// connection is allowed and those open are ended, as when PostgreSQL stops, while the rest
/// of the server goes on serving the other tests. [`reopen_database`] brings it back.
pub async fn close_database(url: &str) {
    let name = url.rsplit('/').next().unwrap_or_default();
    admin_sql(&format!(
        "ALTER DATABASE \"{name}\" WITH ALLOW_CONNECTIONS false;
         SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}';"
    ))
    .await;
}

/// Lets the services of the database of `url` connect again after [`close_database`].
pub async fn reopen_database(url: &str) {
    let name = url.rsplit('/').next().unwrap_or_default();
    admin_sql(&format!("ALTER DATABASE \"{name}\" WITH ALLOW_CONNECTIONS true")).await;
}

/// Runs `sql` as the suite's PostgreSQL superuser.
async fn admin_sql(sql: &str) {
    let url = database_admin_url();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {url} is not usable ({e}); start it with: {START_POSTGRES}"));
    tokio::spawn(connection);
    client.batch_execute(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
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
    zonecast_bus::connect(Some(&nats_url()), "zonecast-tests").await.unwrap_or_else(|e| {
        panic!("NATS at {} is not reachable ({e}); start it with: {START_NATS}{}", nats_url(), nats_log_tail())
    })
}

/// The end of the shared NATS server's log, which says why a server that was there went away.
fn nats_log_tail() -> String {
    const LOG: &str = "/var/log/nats-server.log";
    match std::fs::read_to_string(LOG) {
        Ok(log) => {
            let lines: Vec<&str> = log.lines().collect();
            format!("\nthe end of {LOG}:\n{}", lines[lines.len().saturating_sub(30)..].join("\n"))
        }
        Err(_) => String::new(),
    }
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
    config.bus.journal = zonecast_bus::JournalSettings {
        max_age: std::time::Duration::from_secs(600),
        max_bytes: STREAM_BYTES,
        ..zonecast_bus::JournalSettings::default()
    };
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

/// Exactly `n` zone events of `kind` on `sub`, one per device (by `Source.MAC`), each within
/// `wait`, then no further event for a moment: a duplicate or a stray event fails the test.
/// Returns them by MAC.
pub async fn exactly_once(
    sub: &mut Subscription,
    kind: &str,
    n: usize,
    wait: Duration,
) -> std::collections::BTreeMap<String, Value> {
    let mut seen = std::collections::BTreeMap::new();
    tokio::time::timeout(wait, async {
        while seen.len() < n {
            let e = next_json(sub, wait).await;
            let mac = e["Source"]["MAC"].as_str().unwrap_or_default().to_owned();
            assert_eq!(e["Type"], kind, "expected only {kind} events, got {e}");
            assert!(seen.insert(mac.clone(), e).is_none(), "a second {kind} for {mac}");
        }
    })
    .await
    .unwrap_or_else(|_| panic!("only {} of {n} {kind} events", seen.len()));
    // Absence: nothing more turns up (a short negative wait).
    let extra = tokio::time::timeout(Duration::from_millis(700), futures::StreamExt::next(sub)).await;
    assert!(extra.is_err(), "an unexpected event after {n} {kind}: {extra:?}");
    seen
}

/// Calls an API at `base` with `key` and returns the JSON answer, which must be 200.
pub async fn call_ok(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let mut req = http.request(method.clone(), format!("{base}{path}")).header("X-API-Key", key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap_or_else(|e| panic!("{method} {base}{path}: {e}"));
    let status = r.status();
    let v: Value = r.json().await.unwrap_or_default();
    assert_eq!(status, StatusCode::OK, "{method} {path}: {v}");
    v
}

/// Posts one position per device of `macs` at `[x, 0, 0]` to the ingestor at `base` until it is
/// accepted whole: a 503 (pushed back, NATS reconnecting or failing over) took nothing of the
/// body and carries `Retry-After`, so the body is sent again, as a gateway does; any other
/// refusal fails.
pub async fn post_positions(http: &reqwest::Client, base: &str, key: &str, macs: &[String], x: f64) {
    let body: Vec<Value> = macs.iter().map(|m| serde_json::json!({"MAC": m, "Position": [x, 0, 0]})).collect();
    let url = format!("{base}/v3/positions");
    let answer: Value = eventually(Duration::from_secs(30), || async {
        let r = http.post(&url).header("X-API-Key", key).json(&body).send().await.ok()?;
        match r.status() {
            StatusCode::OK => Some(r.json().await.unwrap()),
            StatusCode::SERVICE_UNAVAILABLE => {
                assert!(r.headers().contains_key("retry-after"), "a 503 without Retry-After");
                None
            }
            other => panic!("POST {url} answered {other}: {}", r.text().await.unwrap_or_default()),
        }
    })
    .await;
    assert_eq!(answer["accepted"], macs.len(), "{answer}");
}

/// An HTTP client for the services under test. It lets a pooled connection go after 5 s idle,
/// before the services close it (10 s without a request, `ZONECAST_HTTP_HEADER_TIMEOUT_MS`): a
/// request sent on a connection the server is closing at that very moment fails as an
/// incomplete message.
pub fn http_client() -> reqwest::Client {
    zonecast_tls::http_client()
        .expect("a TLS configuration")
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .expect("an HTTP client")
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

/// Every file below `dir`, in its subfolders too.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
            if path.is_dir() { pending.push(path) } else { files.push(path) }
        }
    }
    files
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
