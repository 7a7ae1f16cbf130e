//! The real `zonecast` binary as an operator meets it: on a fresh data directory with no
//! credentials it generates a private admin key and says where; the key works, is kept across
//! restarts with the data; SIGTERM stops it cleanly; bad configuration and an unreachable NATS
//! broker stop it at start with a message naming the culprit; `--help` lists its settings and
//! starts nothing; its log, at the default level and written to a pipe, has neither per-entry
//! lines nor colour codes. Children are killed on drop.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long the binary may take to start or stop.
const TIMEOUT: Duration = Duration::from_secs(30);
const BINARY: &str = env!("CARGO_BIN_EXE_zonecast");

/// The binary on `data_dir` with only the given `ZONECAST_*` variables (none inherited).
fn command(data_dir: &Path, vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BINARY);
    for (name, _) in std::env::vars() {
        if name.starts_with("ZONECAST_") || name == "RUST_LOG" {
            command.env_remove(name);
        }
    }
    command
        .env("ZONECAST_DATA_DIR", data_dir)
        .env("ZONECAST_HTTP_ADDR", "127.0.0.1:0")
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Lines a child wrote, shared with the task that reads them.
type Lines = Arc<Mutex<Vec<String>>>;

/// A running `zonecast`: its address and everything it wrote so far (stdout carries the logs).
struct Zonecast {
    child: Child,
    base: String,
    stderr: Lines,
    stdout: Lines,
    readers: Vec<JoinHandle<()>>,
    http: reqwest::Client,
}

/// Reads `output` to its end into `lines`, each line also to `tx` (while anyone listens).
/// Draining matters: a child blocks once a full pipe is not read.
fn collect(
    output: impl AsyncRead + Unpin + Send + 'static,
    lines: Lines,
    tx: Option<mpsc::UnboundedSender<String>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::new(output).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            lines.lock().unwrap().push(line.clone());
            if let Some(tx) = &tx {
                let _ = tx.send(line);
            }
        }
    })
}

impl Zonecast {
    /// Starts the binary and waits for its "listening on http://ADDR" line.
    async fn start(data_dir: &Path, vars: &[(&str, &str)]) -> Self {
        Self::start_command(command(data_dir, vars)).await
    }

    /// Starts `command` and waits for its "listening on http://ADDR" line.
    async fn start_command(mut command: Command) -> Self {
        let mut child = command.spawn().expect("the zonecast binary starts");
        let (stderr, stdout): (Lines, Lines) = Default::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let readers = vec![
            collect(child.stderr.take().unwrap(), stderr.clone(), Some(tx)),
            collect(child.stdout.take().unwrap(), stdout.clone(), None),
        ];
        let addr = tokio::time::timeout(TIMEOUT, async {
            while let Some(line) = rx.recv().await {
                if let Some(addr) = line.split("listening on http://").nth(1) {
                    return addr.trim().to_owned();
                }
            }
            panic!("zonecast ended before it was listening; stderr:\n{}", stderr.lock().unwrap().join("\n"));
        })
        .await
        .unwrap_or_else(|_| panic!("zonecast did not say where it listens within {TIMEOUT:?}"));
        let http = zonecast_tls::http_client().unwrap().build().unwrap();
        Self { child, base: format!("http://{addr}"), stderr, stdout, readers, http }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    /// `method path` with `X-API-Key: key` (none when `None`) and a JSON body.
    async fn call(&self, method: reqwest::Method, path: &str, key: Option<&str>, body: Option<Value>) -> (u16, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            request = request.header("X-API-Key", key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("zonecast answers");
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into())),
        )
    }

    /// Everything it wrote to stdout and stderr so far.
    fn output(&self) -> String {
        format!("{}\n{}", self.stdout.lock().unwrap().join("\n"), self.stderr())
    }

    /// Sends SIGTERM and waits for the exit.
    async fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().expect("still running").to_string();
        let kill = std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(kill.success(), "kill -TERM {pid} failed");
        let status = tokio::time::timeout(TIMEOUT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("zonecast did not stop within {TIMEOUT:?} of SIGTERM"))
            .unwrap();
        // The pipes close with the process: read what it wrote last.
        for reader in self.readers.drain(..) {
            tokio::time::timeout(TIMEOUT, reader).await.expect("its output ends").unwrap();
        }
        status
    }
}

/// Runs the binary expecting it to fail at start; answers its exit status and stderr.
async fn run_to_failure(data_dir: &Path, vars: &[(&str, &str)]) -> (ExitStatus, String) {
    run_command_to_failure(command(data_dir, vars)).await
}

/// Runs `command` expecting it to fail at start; answers its exit status and stderr.
async fn run_command_to_failure(mut command: Command) -> (ExitStatus, String) {
    let child = command.spawn().expect("the zonecast binary starts");
    let output = tokio::time::timeout(TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("zonecast neither failed nor stopped within {TIMEOUT:?}"))
        .unwrap();
    (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The admin key file the binary names on stderr.
fn announced_key_file(stderr: &str) -> PathBuf {
    let line = stderr
        .lines()
        .find(|l| l.contains("admin API key is in "))
        .unwrap_or_else(|| panic!("stderr does not say where the admin key is:\n{stderr}"));
    let rest = line.split("admin API key is in ").nth(1).unwrap();
    PathBuf::from(rest.split(" (").next().unwrap().trim())
}

fn sphere(name: &str) -> Value {
    json!({"Name": name, "GeometryType": "sphere", "GeometryData": [[1.0, 2.0, 3.0], [2.0, 0, 0]]})
}

#[tokio::test]
async fn a_fresh_data_dir_gets_a_private_admin_key_that_can_create_a_zone() {
    let dir = tempfile::tempdir().unwrap();
    let mut zonecast = Zonecast::start(dir.path(), &[]).await;

    let file = announced_key_file(&zonecast.stderr());
    assert_eq!(file, dir.path().canonicalize().unwrap().join("admin.key"), "the key file is in the data directory");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the admin key file must be readable by its owner only");
    }
    let key = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert!(key.len() >= 16, "a key worth the name: {key:?}");
    assert!(!zonecast.stderr().contains(&key), "the key itself is printed on stderr");

    let (status, health) = zonecast.call(reqwest::Method::GET, "/healthz", None, None).await;
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["status"], json!("ok"), "{health}");

    let (status, body) = zonecast.call(reqwest::Method::GET, "/v3/modules/zones", None, None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"], json!("unauthorized"), "{body}");

    let (status, zone) =
        zonecast.call(reqwest::Method::POST, "/v3/modules/zones", Some(&key), Some(sphere("dock"))).await;
    assert_eq!(status, 200, "{zone}");
    let (status, zones) = zonecast.call(reqwest::Method::GET, "/v3/modules/zones", Some(&key), None).await;
    assert_eq!((status, zones), (200, json!([zone])));
    assert!(zonecast.terminate().await.success());
}

#[tokio::test]
async fn a_restart_on_the_same_data_dir_reuses_the_key_and_keeps_the_zones() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Zonecast::start(dir.path(), &[]).await;
    let file = announced_key_file(&first.stderr());
    let key = std::fs::read_to_string(&file).unwrap();
    let (status, zone) =
        first.call(reqwest::Method::POST, "/v3/modules/zones", Some(key.trim()), Some(sphere("kept"))).await;
    assert_eq!(status, 200, "{zone}");
    let status = first.terminate().await;
    assert!(status.success(), "{status}");

    let mut second = Zonecast::start(dir.path(), &[]).await;
    assert_eq!(announced_key_file(&second.stderr()), file, "the restart names the same key file");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), key, "the key file was rewritten");
    let path = format!("/v3/modules/zones/{}", zone["ZoneID"].as_str().unwrap());
    let (status, read) = second.call(reqwest::Method::GET, &path, Some(key.trim()), None).await;
    assert_eq!((status, read), (200, zone));
    assert!(second.terminate().await.success());
}

#[tokio::test]
async fn sigterm_stops_the_binary_with_success() {
    let dir = tempfile::tempdir().unwrap();
    let mut zonecast = Zonecast::start(dir.path(), &[]).await;
    let (status, _) = zonecast.call(reqwest::Method::GET, "/healthz", None, None).await;
    assert_eq!(status, 200);
    let status = zonecast.terminate().await;
    assert!(status.success(), "zonecast exited with {status} after SIGTERM");
}

#[tokio::test]
async fn configured_api_keys_replace_the_generated_admin_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut zonecast = Zonecast::start(dir.path(), &[("ZONECAST_API_KEYS", "operator-key-1:admin")]).await;
    assert!(!dir.path().join("admin.key").exists(), "an admin key was generated although keys are configured");
    assert!(!zonecast.stderr().contains("admin API key is in"), "{}", zonecast.stderr());
    let (status, zone) =
        zonecast.call(reqwest::Method::POST, "/v3/modules/zones", Some("operator-key-1"), Some(sphere("ops"))).await;
    assert_eq!(status, 200, "{zone}");
    assert!(zonecast.terminate().await.success());
}

#[tokio::test]
async fn api_keys_without_an_authority_stop_the_start_with_a_message_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stderr) = run_to_failure(dir.path(), &[("ZONECAST_API_KEYS", "bad")]).await;
    assert!(!status.success(), "zonecast started with ZONECAST_API_KEYS=bad");
    assert!(stderr.contains("ZONECAST_API_KEYS"), "stderr does not name the variable:\n{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
}

#[tokio::test]
async fn an_unreachable_nats_broker_stops_the_start_with_a_message_naming_its_url() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("nats://127.0.0.1:{port}");
    let (status, stderr) = run_to_failure(dir.path(), &[("ZONECAST_NATS_URL", &url)]).await;
    assert!(!status.success(), "zonecast started without its NATS broker");
    assert!(stderr.contains(&url), "stderr does not name the NATS URL {url}:\n{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
}

#[tokio::test]
async fn the_logs_never_show_the_admin_key_or_a_connection_password() {
    let dir = tempfile::tempdir().unwrap();
    let mut zonecast = Zonecast::start(dir.path(), &[("RUST_LOG", "debug")]).await;
    let key = std::fs::read_to_string(announced_key_file(&zonecast.stderr())).unwrap().trim().to_owned();
    let password = "mqtt-password-that-must-stay-secret";
    let connection = json!({"host": "broker.example", "TLS": false, "username": "zc", "password": password});
    let (status, created) =
        zonecast.call(reqwest::Method::POST, "/v3/modules/mqtt/connections", Some(&key), Some(connection)).await;
    assert_eq!(status, 200, "{created}");
    let (status, _) = zonecast.call(reqwest::Method::GET, "/v3/modules/zones", Some("a-wrong-key"), None).await;
    assert_eq!(status, 401);
    assert!(zonecast.terminate().await.success());
    let output = zonecast.output();
    assert!(output.contains("config API listening"), "the logs were not captured:\n{output}");
    assert!(!output.contains(&key), "the admin key is in the output:\n{output}");
    assert!(!output.contains(password), "a connection password is in the output:\n{output}");
    assert!(!output.contains("a-wrong-key"), "a presented key is in the output:\n{output}");
}

#[tokio::test]
async fn an_empty_admin_key_file_stops_the_start_instead_of_admitting_an_empty_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admin.key");
    std::fs::write(&file, "\n").unwrap();
    let (status, stderr) = run_to_failure(dir.path(), &[]).await;
    assert!(!status.success(), "zonecast started on an empty admin key file");
    assert!(stderr.contains("admin.key"), "stderr does not name the key file:\n{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
}

#[tokio::test]
async fn help_lists_every_setting_with_its_variable_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output = command(dir.path(), &[]).arg("--help").output().await.unwrap();
    assert!(output.status.success(), "zonecast --help failed");
    let help = String::from_utf8_lossy(&output.stdout);
    for variable in
        ["ZONECAST_CONFIG", "ZONECAST_HTTP_ADDR", "ZONECAST_DATA_DIR", "ZONECAST_NATS_URL", "ZONECAST_API_KEYS"]
    {
        assert!(help.contains(variable), "--help does not list {variable}:\n{help}");
    }
    assert!(help.contains("[default: ./zonecast-data]"), "{help}");
    assert!(!dir.path().join("admin.key").exists(), "--help started the service");
}

/// The demo's zones as the admin key reads them: (ZoneID, Name) pairs, sorted.
async fn demo_zones(zonecast: &Zonecast, key: &str) -> Vec<(String, String)> {
    let (status, zones) = zonecast.call(reqwest::Method::GET, "/v3/modules/zones", Some(key), None).await;
    assert_eq!(status, 200, "{zones}");
    let mut pairs: Vec<(String, String)> = zones
        .as_array()
        .unwrap()
        .iter()
        .map(|z| (z["ZoneID"].as_str().unwrap().to_owned(), z["Name"].as_str().unwrap().to_owned()))
        .collect();
    pairs.sort();
    pairs
}

#[tokio::test]
async fn the_demo_flag_builds_the_warehouse_once_and_sigterm_stops_its_devices_with_success() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = command(dir.path(), &[]);
    args.arg("--demo");
    let mut first = Zonecast::start_command(args).await;
    let key = std::fs::read_to_string(announced_key_file(&first.stderr())).unwrap().trim().to_owned();
    let zones = demo_zones(&first, &key).await;
    assert_eq!(zones.len(), 36, "{zones:?}");
    // Its devices reach the evaluators: some zone gets occupants.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let (_, listed) = first.call(reqwest::Method::GET, "/v3/modules/zones", Some(&key), None).await;
        if listed.as_array().unwrap().iter().any(|z| !z["CollidingDevices"].as_array().unwrap().is_empty()) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no demo device entered a zone within {TIMEOUT:?}");
        tokio::time::sleep(Duration::from_millis(100)).await; // sleep-ok: polling interval of a bounded wait
    }
    let status = first.terminate().await;
    assert!(status.success(), "zonecast --demo exited with {status} after SIGTERM:\n{}", first.output());
    let output = first.output();
    assert!(output.contains("demo site stopped"), "{output}");
    // At the default level an operator's log tells what to act on, not every entry; written to
    // a pipe, it carries no colour codes.
    assert!(!output.contains("zone entered"), "entries are logged at info:\n{output}");
    assert!(!output.contains('\u{1b}'), "a log written to a pipe has escape codes:\n{output}");

    // The variable does what the flag does; the zones are not made twice.
    let second = Zonecast::start(dir.path(), &[("ZONECAST_DEMO", "true")]).await;
    assert_eq!(demo_zones(&second, &key).await, zones);
}

#[tokio::test]
async fn a_bad_demo_value_stops_the_start_with_a_message_naming_the_variable_or_flag() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stderr) = run_to_failure(dir.path(), &[("ZONECAST_DEMO", "maybe")]).await;
    assert!(!status.success(), "zonecast started with ZONECAST_DEMO=maybe");
    assert!(stderr.contains("ZONECAST_DEMO: 'maybe': must be true or false"), "{stderr}");
    let mut flag = command(dir.path(), &[]);
    flag.arg("--demo=yes");
    let (status, stderr) = run_command_to_failure(flag).await;
    assert!(!status.success(), "zonecast started with --demo=yes");
    assert!(stderr.contains("--demo: 'yes': must be true or false"), "{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
    assert!(!dir.path().join("zonecast.sqlite").exists(), "a refused start made a database");
}
