//! The service binaries as real processes: found next to the test executable in the target
//! directory (brought up to date with cargo once per test executable), started with an
//! environment of their own, and killed on drop so a failing test leaves nothing behind.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::process::{Child, Command};

/// Every binary the tests run as processes: the distributed services and the all-in-one.
pub const BINARIES: [&str; 5] =
    ["zonecast-api", "zonecast-ingestor", "zonecast-evaluator", "zonecast-forwarder", "zonecast"];

fn target_dir() -> PathBuf {
    // <target>/<profile>/deps/<test executable>
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(|deps| deps.parent()).expect("target profile directory").to_owned()
}

/// The path of binary `name`, building the service binaries first: `cargo test` does not build
/// the binaries of other packages, and a binary left from an earlier build would test old code
/// (when they are up to date, cargo only checks). They are built with the features of
/// `cargo test --workspace` (the workspace with its test targets, so with the features the
/// dev-dependencies add): a build of the binaries alone would resolve other features and
/// compile their dependencies a second time.
pub fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let dir = target_dir();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "--workspace", "--bins", "--tests"]);
        // What cargo sets for this test process (this package's name, manifest, output
        // directory) is not the environment of the `cargo test` that built the dependencies:
        // build scripts that watch those variables (ring's) would count as changed and
        // compile again, with everything above them.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let set_for_tests = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_", "CARGO_CRATE_"]
                .iter()
                .any(|prefix| key.starts_with(prefix))
                || ["CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&key.as_ref());
            if set_for_tests {
                cmd.env_remove(key.as_ref());
            }
        }
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo runs");
        assert!(status.success(), "building the service binaries failed");
    });
    let path = dir.join(name);
    assert!(path.exists(), "{} is missing; build it with: cargo build -p {name}", path.display());
    path
}

/// A free TCP port on 127.0.0.1 (bound and released; the caller binds it next).
pub fn free_port() -> u16 {
    // A port handed out is free only until its service binds it: a second call before then,
    // from the same test or another one running beside it, would get the same port from the
    // system. Each port is handed out once per test process.
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}

/// A running service process.
pub struct Service {
    /// Binary name.
    pub name: String,
    /// Where its `/healthz` is.
    pub health_url: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl Service {
    /// Starts `name` with `env` (on top of a clean environment without `ZONECAST_*`);
    /// `health_port` is where it serves `/healthz`.
    pub fn start(name: &str, env: Vec<(String, String)>, health_port: u16) -> Self {
        Self::start_with_args(name, Vec::new(), env, health_port)
    }

    /// [`Service::start`] with command-line `args` too.
    pub fn start_with_args(name: &str, args: Vec<String>, env: Vec<(String, String)>, health_port: u16) -> Self {
        let mut service = Self {
            name: name.to_owned(),
            health_url: format!("http://127.0.0.1:{health_port}/healthz"),
            args,
            env,
            child: None,
        };
        service.spawn();
        service
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new(binary(&self.name));
        cmd.args(&self.args);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZONECAST_") || k == "RUST_LOG") {
            cmd.env_remove(k);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true);
        self.child = Some(cmd.spawn().unwrap_or_else(|e| panic!("{} does not start: {e}", self.name)));
    }

    /// Waits until `/healthz` answers 200.
    pub async fn healthy(&mut self, http: &reqwest::Client, timeout: Duration) {
        let url = self.health_url.clone();
        let name = self.name.clone();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("{name} exited with {status} before it was healthy");
            }
            if let Ok(r) = http.get(&url).send().await
                && r.status().is_success()
            {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "{name} not healthy at {url} within {timeout:?}");
            tokio::time::sleep(Duration::from_millis(50)).await; // sleep-ok: polling interval of a bounded wait
        }
    }

    /// Kills the process at once (SIGKILL): nothing is flushed.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            exited(&self.name, &mut child, Duration::from_secs(30)).await;
        }
    }

    /// Starts it again with the same environment.
    pub fn restart(&mut self) {
        self.spawn();
    }

    /// Sends `signal` (`-TERM`, `-STOP`, `-CONT`, …) to the process.
    pub fn signal(&self, signal: &str) {
        let pid = self.pid().unwrap_or_else(|| panic!("{} is not running", self.name));
        let status = std::process::Command::new("kill").args([signal, &pid.to_string()]).status().unwrap();
        assert!(status.success(), "kill {signal} {pid} failed");
    }

    /// Stops the process as an orchestrator would (SIGTERM) and waits until it has exited.
    pub async fn terminate(&mut self, timeout: Duration) {
        self.signal("-TERM");
        let mut child = self.child.take().unwrap_or_else(|| panic!("{} is not running", self.name));
        let status = exited(&self.name, &mut child, timeout).await;
        assert!(status.success(), "{} stopped with {status} on SIGTERM", self.name);
    }
}

/// Waits until `child` has exited, asking for its status every 20 ms: tokio learns of a
/// child's exit from SIGCHLD, which, with the runtimes of many tests in one process, does not
/// always reach the runtime waiting for it. Panics after `timeout`.
async fn exited(name: &str, child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{name}: {e}")) {
            return status;
        }
        assert!(tokio::time::Instant::now() < deadline, "{name} did not exit within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(20)).await; // sleep-ok: polling the exit
    }
}

/// What every distributed service of a test's site shares: its database, NATS, secret key,
/// API keys, subject prefix and partition count; each service listens on `port` (its
/// `ZONECAST_HTTP_ADDR`, and an ingestor's `ZONECAST_INGEST_HTTP_ADDR`).
pub struct SiteEnv {
    /// PostgreSQL URL.
    pub database: String,
    /// NATS URL.
    pub nats: String,
    /// `ZONECAST_SECRET_KEY`.
    pub secret: String,
    /// `ZONECAST_API_KEYS`.
    pub api_keys: String,
    /// `ZONECAST_SUBJECT_PREFIX`.
    pub prefix: String,
    /// `ZONECAST_PARTITIONS`.
    pub partitions: u32,
}

impl SiteEnv {
    /// The environment of one service listening on `port`.
    pub fn at(&self, port: u16) -> Vec<(String, String)> {
        let addr = format!("127.0.0.1:{port}");
        [
            ("ZONECAST_DATABASE_URL", self.database.as_str()),
            ("ZONECAST_NATS_URL", self.nats.as_str()),
            ("ZONECAST_SECRET_KEY", self.secret.as_str()),
            ("ZONECAST_API_KEYS", self.api_keys.as_str()),
            ("ZONECAST_SUBJECT_PREFIX", self.prefix.as_str()),
            ("ZONECAST_PARTITIONS", &self.partitions.to_string()),
            ("ZONECAST_HTTP_ADDR", &addr),
            ("ZONECAST_INGEST_HTTP_ADDR", &addr),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
    }
}
