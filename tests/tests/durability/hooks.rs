//! A receiver of http-request actions, and what it has seen.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::site::{WAIT, cell};

/// One request as an http-request action's receiver got it, with the status it answered.
pub(crate) struct Hook {
    pub(crate) key: String,
    pub(crate) body: Vec<u8>,
    pub(crate) status: u16,
}

/// An HTTP receiver of the test's own on a free port: answers every request with the status
/// held in the returned cell and hands each request to the channel.
pub(crate) async fn hook_receiver() -> (String, Arc<AtomicU16>, mpsc::UnboundedReceiver<Hook>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let status = Arc::new(AtomicU16::new(503));
    let (tx, rx) = mpsc::unbounded_channel();
    let answer = status.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let (answer, tx) = (answer.clone(), tx.clone());
            tokio::spawn(async move {
                let Some((head, body)) = zonecast_tests::read_http_request(&mut socket).await else { return };
                let status = answer.load(Ordering::SeqCst);
                let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                if socket.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
                let _ = socket.shutdown().await;
                let key = head
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .find(|(n, _)| n.trim().eq_ignore_ascii_case("idempotency-key"))
                    .map(|(_, v)| v.trim().to_owned())
                    .unwrap_or_default();
                let _ = tx.send(Hook { key, body, status });
            });
        }
    });
    (url, status, rx)
}

/// What a receiver has seen: per Idempotency-Key, the bodies it got and whether one of them
/// was answered 200.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) bodies: BTreeMap<String, Vec<u8>>,
    pub(crate) delivered: BTreeSet<String>,
}

impl Seen {
    /// Reads requests until `done` holds; every copy of a key carries the same body, and the
    /// body is the event whose EventID is the key.
    pub(crate) async fn until(
        &mut self,
        hooks: &mut mpsc::UnboundedReceiver<Hook>,
        what: &str,
        done: impl Fn(&Self) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !done(self) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let hook = tokio::time::timeout(left, hooks.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("never {what}: {} keys seen, {} delivered", self.bodies.len(), self.delivered.len())
                })
                .unwrap();
            let event: Value = serde_json::from_slice(&hook.body).unwrap();
            assert_eq!(event["EventID"].as_str(), Some(hook.key.as_str()), "the key is the event's EventID");
            assert_eq!(event["Type"], "ZONE_ENTER");
            if let Some(first) = self.bodies.get(&hook.key) {
                assert_eq!(first, &hook.body, "a copy carries the same key and the same body");
            }
            self.bodies.insert(hook.key.clone(), hook.body);
            if hook.status == 200 {
                self.delivered.insert(hook.key);
            }
        }
    }

    /// Checks that `devices` entered, one event each, and every event was delivered.
    pub(crate) fn every_device_delivered(&self, devices: &[String]) {
        let macs: BTreeSet<String> = self
            .bodies
            .values()
            .map(|b| serde_json::from_slice::<Value>(b).unwrap()["Source"]["MAC"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(macs, devices.iter().cloned().collect(), "one entry per device");
        assert_eq!(self.bodies.len(), devices.len(), "one event per device");
        assert_eq!(self.delivered.len(), devices.len(), "every event delivered");
    }
}

/// Devices of the http-request action tests.
pub(crate) const HOOKED: usize = 20;

/// The zone of the position tests with an http-request action to `url`.
pub(crate) fn cell_with_action(url: &str) -> Value {
    let mut zone = cell();
    zone["ZoneActions"] = json!([{"type": "http-request", "uri": url}]);
    zone
}
