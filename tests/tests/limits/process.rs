//! A server process of its own, whose memory and answers are measured.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::process::{Service, free_port};
use zonecast_tests::{ADMIN_KEY, Mode, fresh_database, nats_url};

/// How far the server's resident memory may rise while it refuses one hostile input.
const GROWTH: u64 = 50 << 20;
/// How long refusing one may take (bodies of 8 MB included).
pub(crate) const QUICK: Duration = Duration::from_secs(2);

/// A zonecast process of the test's own: the all-in-one binary on SQLite and its in-process
/// bus, or the distributed API binary on a fresh PostgreSQL database and NATS.
pub(crate) struct Process {
    service: Service,
    pub(crate) base: String,
    http: reqwest::Client,
    _data_dir: tempfile::TempDir,
    /// The distributed API's database, dropped by [`Process::stop`].
    database: Option<String>,
}

impl Process {
    pub(crate) async fn start(mode: Mode, args: &[&str], env: &[(&str, &str)]) -> Self {
        let port = free_port();
        let data_dir = tempfile::tempdir().unwrap();
        let mut vars: Vec<(String, String)> = vec![
            ("ZONECAST_HTTP_ADDR".into(), format!("127.0.0.1:{port}")),
            ("ZONECAST_API_KEYS".into(), format!("{ADMIN_KEY}:admin")),
            ("ZONECAST_SECRET_KEY".into(), zonecast_runtime::keys::random_base64(32).unwrap()),
            ("ZONECAST_SUBJECT_PREFIX".into(), format!("zt{}", uuid::Uuid::new_v4().simple())),
        ];
        let mut database = None;
        let binary = match mode {
            Mode::AllInOne => {
                vars.push(("ZONECAST_DATA_DIR".into(), data_dir.path().display().to_string()));
                "zonecast"
            }
            Mode::Distributed => {
                let url = fresh_database().await;
                vars.push(("ZONECAST_DATABASE_URL".into(), url.clone()));
                vars.push(("ZONECAST_NATS_URL".into(), nats_url()));
                vars.extend(zonecast_tests::small_stream_env());
                database = Some(url);
                "zonecast-api"
            }
        };
        vars.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        let mut service = Service::start_with_args(binary, args, vars, port);
        let http = zonecast_tests::http_client();
        service.healthy(&http, Duration::from_secs(30)).await;
        let process = Self { service, base: format!("http://127.0.0.1:{port}"), http, _data_dir: data_dir, database };
        // One ordinary request first, so that what the first request sets up is not counted.
        let (status, answer) = process.send(Method::GET, "/v3/modules/zones", Vec::new()).await;
        assert_eq!(status, 200, "{answer}");
        process
    }

    /// Kills the process and drops its database: a test that gets here passed.
    pub(crate) async fn stop(mut self) {
        self.service.kill().await;
        if let Some(name) = self.database.as_deref().and_then(|url| url.rsplit('/').next()) {
            let _ = zonecast_store::postgres::drop_database(&zonecast_tests::database_admin_url(), name).await;
        }
    }

    /// A line of `/proc/<pid>/status`, in bytes.
    fn status(&self, key: &str) -> u64 {
        let pid = self.service.pid().expect("the process runs");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("no {key} in {status}"));
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    /// Starts a new peak: the kernel sets the high-water mark to the current resident size.
    fn reset_peak(&self) {
        let pid = self.service.pid().expect("the process runs");
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    }

    pub(crate) async fn send(&self, method: Method, path: &str, body: Vec<u8>) -> (u16, Value) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("X-API-Key", ADMIN_KEY)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap_or(Value::Null))
    }

    /// Runs `hostile`, measuring how much the server's peak resident memory rose above what it
    /// held before; the time it took.
    pub(crate) async fn measure<F: Future<Output = ()>>(&self, name: &str, hostile: F) -> Duration {
        let before = self.status("VmRSS:");
        self.reset_peak();
        let started = Instant::now();
        hostile.await;
        let elapsed = started.elapsed();
        let grown = self.status("VmHWM:").saturating_sub(before);
        eprintln!("{name}: peak resident memory +{:.1} MB, {elapsed:?}", grown as f64 / 1e6);
        assert!(grown < GROWTH, "{name}: the server's peak memory grew by {} MB", grown >> 20);
        elapsed
    }

    /// Sends `body`, which must be refused within `quick` with `status` and a message starting
    /// with `message`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn refused(
        &self,
        quick: Duration,
        name: &str,
        method: Method,
        path: &str,
        body: Vec<u8>,
        status: u16,
        message: &str,
    ) {
        let size = body.len();
        let elapsed = self
            .measure(name, async {
                let (got, answer) = self.send(method, path, body).await;
                assert_eq!(got, status, "{name} ({size} bytes): {answer}");
                let text = answer["message"].as_str().unwrap_or_default();
                assert!(text.starts_with(message), "{name}: {text}");
            })
            .await;
        assert!(elapsed < quick, "{name}: refused after {elapsed:?}");
    }
}
