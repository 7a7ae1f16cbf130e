//! A nats-server of the test's own on a free port, with JetStream storing in a directory of
//! its own, which a test can stop and start again on the same port with what it stored (the
//! shared server on 4222 must never be disturbed); and a cluster of them ([`NatsCluster`]).

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

/// A NATS cluster of the test's own: `n` nats-servers with JetStream, each on free ports of its
/// own (clients and routes), storing in its own folder of one temporary directory, routed to
/// one another under the cluster name `zc`. Node `i` is named `node<i>`, as JetStream names the
/// leaders and replicas of its streams. Every node is killed on drop.
pub struct NatsCluster {
    nodes: Vec<Node>,
    dir: tempfile::TempDir,
}

struct Node {
    child: Option<Child>,
    port: u16,
    cluster_port: u16,
}

impl NatsCluster {
    /// Starts `n` nodes and waits until JetStream has a meta leader and can place a stream on
    /// all of them.
    pub async fn start(n: usize) -> Self {
        let nodes = (0..n)
            .map(|_| Node { child: None, port: crate::process::free_port(), cluster_port: crate::process::free_port() })
            .collect();
        let dir = tempfile::tempdir().expect("a directory for the cluster");
        let mut cluster = Self { nodes, dir };
        for i in 0..n {
            cluster.spawn(i);
        }
        for i in 0..n {
            cluster.accepting(i).await;
        }
        cluster.placeable(n).await;
        cluster
    }

    /// Every node's client URL, comma-separated: `nats://127.0.0.1:<port>,...`.
    pub fn url(&self) -> String {
        self.urls().join(",")
    }

    /// Every node's client URL.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|node| format!("nats://127.0.0.1:{}", node.port)).collect()
    }

    /// The server name of node `i`, as stream and cluster information names it.
    pub fn name(i: usize) -> String {
        format!("node{i}")
    }

    /// The node named `name`.
    pub fn index(&self, name: &str) -> usize {
        (0..self.nodes.len())
            .find(|&i| Self::name(i) == name)
            .unwrap_or_else(|| panic!("no node {name} in the cluster"))
    }

    /// Kills node `i` at once (SIGKILL): nothing is written out.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts node `i` again, on its ports with what it stored, and waits until it accepts
    /// connections (it catches up with the others on its own).
    pub async fn start_node(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
        self.accepting(i).await;
    }

    /// Kills every node.
    pub fn stop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }

    fn spawn(&mut self, i: usize) {
        let routes: Vec<String> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, node)| format!("nats://127.0.0.1:{}", node.cluster_port))
            .collect();
        let store = self.dir.path().join(Self::name(i));
        let log = self.dir.path().join(format!("{}.log", Self::name(i)));
        let node = &mut self.nodes[i];
        let child = Command::new(BINARY)
            .args(["-a", "127.0.0.1", "-p", &node.port.to_string(), "-n", &Self::name(i), "-js", "-sd"])
            .arg(&store)
            .args(["--cluster_name", "zc", "--cluster", &format!("nats://127.0.0.1:{}", node.cluster_port)])
            .args(["--routes", &routes.join(","), "-l"])
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{BINARY} does not run ({e}); install it with: apt-get install nats-server"));
        node.child = Some(child);
    }

    async fn accepting(&self, i: usize) {
        let port = self.nodes[i].port;
        crate::eventually(Duration::from_secs(10), || async move {
            tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok().map(|_| ())
        })
        .await;
    }

    /// Waits until JetStream has a meta leader and can place a stream of `replicas` replicas
    /// (every node has joined), by making one and removing it; panics with the last refusal
    /// after 30 s. (Account information would say less, and async-nats cannot read the answer
    /// of nats-server 2.9.)
    async fn placeable(&self, replicas: usize) {
        use async_nats::jetstream::stream;
        let client = async_nats::connect(self.urls()).await.expect("a connection to the NATS cluster");
        let js = async_nats::jetstream::new(client);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let probe = stream::Config {
                name: "PROBE_PLACEMENT".into(),
                subjects: vec!["probe.placement".into()],
                num_replicas: replicas,
                storage: stream::StorageType::Memory,
                max_bytes: 1 << 20,
                ..Default::default()
            };
            let attempt = async {
                js.create_stream(probe).await.map_err(|e| format!("a stream of {replicas} replicas: {e}"))?;
                js.delete_stream("PROBE_PLACEMENT").await.map_err(|e| format!("removing the probe: {e}"))?;
                Ok::<(), String>(())
            };
            match attempt.await {
                Ok(()) => return,
                Err(e) => assert!(
                    tokio::time::Instant::now() < deadline,
                    "the NATS cluster's JetStream is not ready within 30 s: {e}\n{}",
                    self.log_tails()
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await; // sleep-ok: polling
        }
    }
}

impl NatsCluster {
    /// The last lines of every node's log, for a failure's message.
    pub fn log_tails(&self) -> String {
        let mut text = String::new();
        for i in 0..self.nodes.len() {
            let log =
                std::fs::read_to_string(self.dir.path().join(format!("{}.log", Self::name(i)))).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            text.push_str(&format!("--- {}\n{}\n", Self::name(i), lines[lines.len().saturating_sub(8)..].join("\n")));
        }
        text
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        self.stop();
    }
}
