//! A nats-server of the test's own on a free port, with JetStream storing in a directory of
//! its own, which a test can stop and start again on the same port with what it stored (the
//! shared server on 4222 must never be disturbed).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A nats-server child process; killed on drop.
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    store: tempfile::TempDir,
}

const BINARY: &str = "/usr/sbin/nats-server";

impl NatsServer {
    /// Starts one on a free port and waits until it accepts connections.
    pub async fn start() -> Self {
        let port = crate::process::free_port();
        let store = tempfile::tempdir().expect("a JetStream directory");
        let mut server = Self { child: None, port, store };
        server.resume().await;
        server
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server as an operator restarting it does (SIGTERM: it writes out what it
    /// stored and closes), then starts it again on the same port with what it stored.
    pub async fn restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            assert!(status.is_ok_and(|s| s.success()), "kill -TERM nats-server");
            let _ = child.wait();
        }
        self.resume().await;
    }

    /// Starts the server again on the same port and waits until it accepts connections.
    pub async fn resume(&mut self) {
        self.stop();
        let child = Command::new(BINARY)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string(), "-js", "-sd"])
            .arg(self.store.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{BINARY} does not run ({e}); install it with: apt-get install nats-server"));
        self.child = Some(child);
        let port = self.port;
        crate::eventually(Duration::from_secs(10), || async move {
            tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok().map(|_| ())
        })
        .await;
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}
