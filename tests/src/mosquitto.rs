//! Mosquitto brokers of a test's own, on free ports: plain, TLS with client certificates
//! required, or user name and password. Each can be stopped (SIGTERM, so it saves its sessions)
//! and started again on the same ports, or paused (SIGSTOP) to play a broker that hangs.
//!
//! Besides the listener under test every broker has a plain *observer* listener on which
//! [`Subscriber`] watches what arrives. Files live in a temporary directory owned by the
//! `mosquitto` user, since Mosquitto started as root drops to that user before reading them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

use crate::pki::pki;

/// How long a broker may take to open its listeners.
const READY: Duration = Duration::from_secs(10);

/// What the listener under test asks of clients.
enum Access {
    Anonymous,
    /// TLS with `require_certificate true`; client certificates must chain to this CA (PEM).
    Tls {
        client_ca_pem: Vec<u8>,
    },
    /// `allow_anonymous false` with a password file holding this user.
    Password {
        user: String,
        password: String,
    },
}

/// A running (or stopped) Mosquitto of the test's own.
pub struct Broker {
    dir: tempfile::TempDir,
    /// The listener the forwarder connects to.
    pub port: u16,
    /// A plain listener for test subscribers.
    pub observer_port: u16,
    /// Credentials the observer listener needs, if any.
    pub observer_login: Option<(String, String)>,
    child: Option<Child>,
}

/// Hands `path` to the `mosquitto` user when we are root (Mosquitto then runs as that user);
/// otherwise Mosquitto runs as us and can read our files anyway.
fn give_to_mosquitto(path: &Path) {
    let Ok(output) = std::process::Command::new("id").args(["-u", "mosquitto"]).output() else { return };
    let Ok(uid) = String::from_utf8_lossy(&output.stdout).trim().parse::<u32>() else { return };
    let gid = std::process::Command::new("id")
        .args(["-g", "mosquitto"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<u32>().ok());
    let _ = std::os::unix::fs::chown(path, Some(uid), gid);
}

impl Broker {
    /// Anonymous, plain TCP.
    pub async fn plain() -> Self {
        Self::start_new(Access::Anonymous).await
    }

    /// TLS with `require_certificate true`: the server certificate is the test PKI's (for
    /// `localhost` and 127.0.0.1, signed by its CA); client certificates must be signed by
    /// `client_ca_pem`.
    pub async fn tls(client_ca_pem: &[u8]) -> Self {
        Self::start_new(Access::Tls { client_ca_pem: client_ca_pem.to_vec() }).await
    }

    /// User name and password required (also on the observer listener).
    pub async fn with_password(user: &str, password: &str) -> Self {
        Self::start_new(Access::Password { user: user.into(), password: password.into() }).await
    }

    async fn start_new(access: Access) -> Self {
        // A port handed out free can be taken before Mosquitto binds it (by another socket's
        // ephemeral port): the broker is then made again on fresh ports.
        for _ in 0..5 {
            let mut broker = Self::configured(&access);
            if broker.listen().await {
                return broker;
            }
        }
        panic!("mosquitto found its ports taken five times in a row")
    }

    /// A broker with `access` on free ports, configured in a directory of its own, not started.
    fn configured(access: &Access) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory for Mosquitto");
        let (port, observer_port) = (crate::process::free_port(), crate::process::free_port());
        let d = dir.path();
        let mut conf = format!(
            "per_listener_settings false\npersistence true\npersistence_location {}/\nlog_dest file {}\n\
             max_queued_messages 1000000\n",
            d.display(),
            d.join("mosquitto.log").display()
        );
        let mut observer_login = None;
        let listener = match access {
            Access::Anonymous => format!("listener {port} 127.0.0.1\nallow_anonymous true\n"),
            Access::Tls { client_ca_pem } => {
                std::fs::write(d.join("client-ca.pem"), client_ca_pem).unwrap();
                std::fs::write(d.join("server.pem"), &pki().server_cert_pem).unwrap();
                std::fs::write(d.join("server.key"), &pki().server_key_pem).unwrap();
                format!(
                    "listener {port} 127.0.0.1\ncafile {0}/client-ca.pem\ncertfile {0}/server.pem\n\
                     keyfile {0}/server.key\nrequire_certificate true\nallow_anonymous true\n",
                    d.display()
                )
            }
            Access::Password { user, password } => {
                let file = d.join("passwords");
                let status = std::process::Command::new("mosquitto_passwd")
                    .arg("-b")
                    .arg("-c")
                    .arg(&file)
                    .args([user, password])
                    .status()
                    .expect("mosquitto_passwd runs (apt-get install mosquitto)");
                assert!(status.success(), "mosquitto_passwd failed");
                observer_login = Some((user.clone(), password.clone()));
                format!("listener {port} 127.0.0.1\nallow_anonymous false\npassword_file {}\n", file.display())
            }
        };
        conf.push_str(&listener);
        conf.push_str(&format!("listener {observer_port} 127.0.0.1\n"));
        std::fs::write(d.join("mosquitto.conf"), conf).unwrap();
        for entry in std::fs::read_dir(d).unwrap() {
            give_to_mosquitto(&entry.unwrap().path());
        }
        give_to_mosquitto(d);
        Self { dir, port, observer_port, observer_login, child: None }
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("mosquitto.conf")
    }

    /// Starts the broker (again) on its ports and waits until both listeners accept.
    pub async fn start(&mut self) {
        assert!(self.listen().await, "mosquitto found a port of its own taken:\n{}", self.log());
    }

    /// Starts the broker and waits until both listeners accept; false when it stopped because
    /// a port was taken.
    async fn listen(&mut self) -> bool {
        assert!(self.child.is_none(), "the broker is running already");
        let child = Command::new("mosquitto")
            .arg("-c")
            .arg(self.conf())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("mosquitto runs (apt-get install mosquitto)");
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + READY;
        for port in [self.port, self.observer_port] {
            while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
                if let Some(child) = &mut self.child
                    && let Ok(Some(status)) = child.try_wait()
                {
                    self.child = None;
                    if self.log().contains("Address already in use") {
                        return false;
                    }
                    panic!("mosquitto exited ({status}) before listening; its log:\n{}", self.log());
                }
                assert!(tokio::time::Instant::now() < deadline, "mosquitto not listening on {port}:\n{}", self.log());
                tokio::time::sleep(Duration::from_millis(20)).await; // sleep-ok: polling interval of a bounded wait
            }
        }
        true
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().and_then(Child::id).expect("the broker is running");
        let status = std::process::Command::new("kill").args([signal, &pid.to_string()]).status().expect("kill runs");
        assert!(status.success(), "kill {signal} {pid} failed");
    }

    /// Stops the broker as an operator would (SIGTERM): clients are disconnected and the
    /// sessions of persistent clients are saved for the next start.
    pub async fn stop(&mut self) {
        self.signal("-TERM");
        let mut child = self.child.take().expect("the broker is running");
        tokio::time::timeout(READY, child.wait()).await.expect("mosquitto stops on SIGTERM").unwrap();
    }

    /// Freezes the broker (SIGSTOP): connections stay open but nothing is read or answered.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws a paused broker (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// The broker's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default()
    }

    /// How often a client whose id starts with `client_id` has connected, from the log.
    pub fn connects(&self, client_id: &str) -> usize {
        self.log()
            .lines()
            .filter(|l| l.contains("New client connected") && l.contains(&format!(" as {client_id}")))
            .count()
    }
}

/// An MQTT client on a broker's observer listener, subscribed with QoS 1 in a persistent
/// session (so messages that arrive while the broker is restarted are kept for it).
pub struct Subscriber {
    rx: mpsc::UnboundedReceiver<(String, Bytes)>,
    task: tokio::task::JoinHandle<()>,
}

impl Subscriber {
    /// Subscribes to `filter` on `broker` and returns once the broker has confirmed it.
    pub async fn new(broker: &Broker, filter: &str) -> Self {
        let id = format!("observer-{}", uuid::Uuid::new_v4().simple());
        let mut options = MqttOptions::new(id, "127.0.0.1", broker.observer_port);
        options.set_clean_session(false).set_keep_alive(Duration::from_secs(5)).set_max_packet_size(1 << 20, 1 << 20);
        if let Some((user, password)) = &broker.observer_login {
            options.set_credentials(user.clone(), password.clone());
        }
        let (client, mut eventloop) = AsyncClient::new(options, 16);
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = oneshot::channel();
        let filter = filter.to_owned();
        let task = tokio::spawn(async move {
            let mut ready = Some(ready_tx);
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        client.try_subscribe(filter.clone(), QoS::AtLeastOnce).expect("subscribe request");
                    }
                    Ok(Event::Incoming(Packet::SubAck(_))) => {
                        if let Some(ready) = ready.take() {
                            let _ = ready.send(());
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        if tx.send((p.topic, p.payload)).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => {
                        // The broker is away (a test stopped it): try again shortly.
                        tokio::time::sleep(Duration::from_millis(50)).await; // sleep-ok: reconnect delay
                    }
                }
            }
        });
        tokio::time::timeout(READY, ready_rx).await.expect("subscription confirmed in time").expect("subscriber alive");
        Self { rx, task }
    }

    /// The next message: its topic and JSON payload; panics after `timeout`.
    pub async fn next(&mut self, timeout: Duration) -> (String, Value) {
        let (topic, payload) = tokio::time::timeout(timeout, self.rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no MQTT message within {timeout:?}"))
            .expect("subscriber alive");
        (topic, serde_json::from_slice(&payload).expect("a JSON payload"))
    }

    /// Messages until `done` says the last one was the one awaited; panics after `timeout`.
    pub async fn until(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&str, &Value) -> bool,
    ) -> Vec<(String, Value)> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let (topic, payload) = tokio::time::timeout(left, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("not done within {timeout:?}; got {} messages", got.len()))
                .expect("subscriber alive");
            let value: Value = serde_json::from_slice(&payload).expect("a JSON payload");
            let finished = done(&topic, &value);
            got.push((topic, value));
            if finished {
                return got;
            }
        }
    }

    /// What has arrived so far, without waiting.
    pub fn received(&mut self) -> Vec<(String, Value)> {
        let mut got = Vec::new();
        while let Ok((topic, payload)) = self.rx.try_recv() {
            got.push((topic, serde_json::from_slice(&payload).expect("a JSON payload")));
        }
        got
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.task.abort();
    }
}
