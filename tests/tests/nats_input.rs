//! The ingestor's NATS input (`<prefix>.ingest`) under load, in distributed mode on the
//! machine's NATS: one publisher's payloads are applied in the order it published them while
//! the pipeline holds the input again and again, and a flood past the input's buffer is
//! accounted for exactly: every position published is stored, or its payload counted in
//! `zonecast_ingest_dropped_total`.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use zonecast_model::lag::{LagReport, Stage};
use zonecast_tests::{Mode, Server, eventually, sphere};

const WAIT: Duration = Duration::from_secs(60);

fn at(t: DateTime<Utc>) -> String {
    zonecast_model::format_timestamp(&t)
}

fn mac(device: usize) -> String {
    format!("00:00:00:00:5{}:{:02X}", device / 256, device % 256)
}

/// Payload `k` of the sequence: every device's position at `t0 + k ms`, inside the zone round
/// the origin when `k` is even, 5 m away when it is odd.
fn payload(devices: usize, k: usize, t0: DateTime<Utc>) -> bytes::Bytes {
    let t = at(t0 + chrono::Duration::milliseconds(k as i64));
    let x = if k.is_multiple_of(2) { 0.0 } else { 5.0 };
    let body: Vec<Value> =
        (0..devices).map(|d| json!({"MAC": mac(d), "Position": [x, 0.0, 0.0], "Timestamp": t})).collect();
    serde_json::to_vec(&body).unwrap().into()
}

/// A pipeline replica of the test's own: it reports the lag it is set to on the pipeline's lag
/// subject, more often than a report goes stale, so that the ingestor holds its NATS input
/// (and answers 503 on HTTP) while the lag is past the bound.
struct Replica {
    lag: Arc<AtomicU64>,
    report: Arc<dyn Fn(u64) -> tokio::task::JoinHandle<()> + Send + Sync>,
    reports: tokio::task::JoinHandle<()>,
}

impl Replica {
    fn start(server: &Server) -> Self {
        let lag = Arc::new(AtomicU64::new(0));
        let (bus, subject, id) = (server.bus.clone(), server.subjects.pipeline_lag(), uuid::Uuid::new_v4());
        let report: Arc<dyn Fn(u64) -> tokio::task::JoinHandle<()> + Send + Sync> = Arc::new(move |lag_ms| {
            let (bus, subject) = (bus.clone(), subject.clone());
            tokio::spawn(async move {
                let report = LagReport { replica: id, stage: Stage::Evaluator, lag_ms };
                bus.publish(subject, serde_json::to_vec(&report).unwrap().into()).await.unwrap();
            })
        });
        let reports = tokio::spawn({
            let (lag, report) = (lag.clone(), report.clone());
            async move {
                let mut tick = tokio::time::interval(Duration::from_millis(50)); // sleep-ok: a replica's reports, not a wait
                loop {
                    tick.tick().await;
                    report(lag.load(Ordering::Relaxed));
                }
            }
        });
        Self { lag, report, reports }
    }

    /// Reports `lag_ms` from now on.
    fn set(&self, lag_ms: u64) {
        self.lag.store(lag_ms, Ordering::Relaxed);
        (self.report)(lag_ms);
    }

    /// Reports `lag_ms` from now on, and returns once the ingestor acts on it: its HTTP input
    /// refuses positions while the lag is past the bound and takes them again after.
    async fn lag(&self, server: &Server, lag_ms: u64) {
        self.set(lag_ms);
        let behind = lag_ms > server.config.bus.positions.max_lag.as_millis() as u64;
        let wanted = if behind { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
        eventually(WAIT, || async { (server.post_positions(&json!([])).await.status() == wanted).then_some(()) }).await;
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.reports.abort();
    }
}

/// The value of counter `name{input="nats"}` on the ingestor's `/metrics`.
async fn nats_counter(server: &Server, name: &str) -> u64 {
    let url = format!("{}/metrics", server.ingest_base);
    let text = server.http.get(url).header("X-API-Key", zonecast_tests::READ_KEY).send().await.unwrap();
    let text = text.text().await.unwrap();
    let prefix = format!("{name}{{input=\"nats\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// While the pipeline is behind, the input holds, and what comes meanwhile waits in its
/// buffer; once the pipeline caught up, the input resumes. With the pipeline's lag flapping
/// past the bound and back every few milliseconds while payloads stream in, a payload is never
/// overtaken by a later one: each device enters and leaves the zone exactly as published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_are_applied_in_the_order_they_were_published_while_the_input_holds_and_resumes() {
    let server = Server::start(Mode::Distributed).await;
    server.create_zone(sphere("gate", [0.0, 0.0, 0.0], 1.0)).await;
    let mut events = server.events().await;
    let (devices, payloads, held) = (10, 400, 20);
    let t0 = Utc::now();
    let replica = Arc::new(Replica::start(&server));
    let holds_before = nats_counter(&server, "zonecast_ingest_holds_total").await;
    // The first payloads come while the pipeline is behind: they wait.
    replica.lag(&server, 60_000).await;
    for k in 0..held {
        server.bus.publish(server.subjects.ingest(), payload(devices, k, t0)).await.unwrap();
    }
    server.bus.flush().await.unwrap();
    // Then behind for 5 ms out of every 10 while the rest stream in.
    let flapping = tokio::spawn({
        let replica = replica.clone();
        async move {
            let mut tick = tokio::time::interval(Duration::from_millis(5)); // sleep-ok: a replica's reports, not a wait
            for n in 0u64.. {
                tick.tick().await;
                replica.set(if n.is_multiple_of(2) { 0 } else { 60_000 });
            }
        }
    });
    for k in held..payloads {
        server.bus.publish(server.subjects.ingest(), payload(devices, k, t0)).await.unwrap();
        if k % 10 == 9 {
            server.bus.flush().await.unwrap();
        }
    }
    server.bus.flush().await.unwrap();
    flapping.abort();
    replica.lag(&server, 0).await;

    let mut seen: HashMap<String, Vec<(String, String)>> = HashMap::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while seen.values().map(Vec::len).sum::<usize>() < devices * payloads {
        let message = tokio::time::timeout_at(deadline, events.next())
            .await
            .unwrap_or_else(|_| panic!("events so far: {:?}", seen.values().map(Vec::len).collect::<Vec<_>>()))
            .unwrap();
        let event: Value = serde_json::from_slice(&message.payload).unwrap();
        if event["Category"] != "ZONE" {
            continue;
        }
        let kind = event["Type"].as_str().unwrap().to_owned();
        let time = event["Timestamp"].as_str().unwrap().to_owned();
        seen.entry(event["Source"]["MAC"].as_str().unwrap().to_owned()).or_default().push((kind, time));
    }
    let expected: Vec<(String, String)> = (0..payloads)
        .map(|k| {
            let kind = if k.is_multiple_of(2) { "ZONE_ENTER" } else { "ZONE_EXIT" };
            (kind.to_owned(), at(t0 + chrono::Duration::milliseconds(k as i64)))
        })
        .collect();
    for device in 0..devices {
        assert_eq!(seen.get(&mac(device)), Some(&expected), "device {}: every position applied, in order", mac(device));
    }
    assert!(
        nats_counter(&server, "zonecast_ingest_holds_total").await > holds_before,
        "the input held while the payloads came"
    );
    server.stop().await;
}

/// Held by the pipeline's lag, the input buffers what it can (64 KiB here) and drops the rest;
/// once released it stores what it buffered, in order. Published = stored + dropped, exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_past_the_buffer_is_stored_or_counted_as_dropped_exactly() {
    let server = Server::start_configured(Mode::Distributed, |c| c.bus.ingest_buffer_bytes = 64 << 10).await;
    // Every stored position's device and timestamp, in the order stored.
    let stored: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let mut batches = server.bus.subscribe(&server.subjects.position_batches()).await.unwrap();
    tokio::spawn({
        let stored = stored.clone();
        async move {
            while let Some(message) = batches.next().await {
                for line in zonecast_bus::positions::lines(&message.payload) {
                    let event: Value = serde_json::from_slice(&line).unwrap();
                    let mac = event["Source"]["MAC"].as_str().unwrap().to_owned();
                    stored.lock().unwrap().push((mac, event["Timestamp"].as_str().unwrap().to_owned()));
                }
            }
        }
    });
    let (devices, payloads) = (10, 3_000);
    let t0 = Utc::now();
    let dropped_before = nats_counter(&server, "zonecast_ingest_dropped_total").await;

    // The pipeline behind: the input holds the first payload, buffers what fits behind it and
    // drops the rest.
    let replica = Replica::start(&server);
    replica.lag(&server, 60_000).await;
    for k in 0..payloads {
        server.bus.publish(server.subjects.ingest(), payload(devices, k, t0)).await.unwrap();
    }
    server.bus.flush().await.unwrap();
    replica.lag(&server, 0).await;

    // Published = stored + dropped, once the input has stored what it buffered.
    let (dropped, stored_count) = eventually(WAIT, || async {
        let dropped = nats_counter(&server, "zonecast_ingest_dropped_total").await - dropped_before;
        let stored_count = stored.lock().unwrap().len();
        (stored_count as u64 == (payloads as u64 - dropped) * devices as u64).then_some((dropped, stored_count))
    })
    .await;
    assert!(dropped > 0, "the flood went past the buffer");
    assert!(stored_count >= devices * 2, "the held payload and the buffered ones were stored");
    let stored = stored.lock().unwrap().clone();
    let mut last: HashMap<&str, &str> = HashMap::new();
    for (mac, time) in &stored {
        if let Some(before) = last.insert(mac, time) {
            assert!(before < time.as_str(), "{mac}: {time} stored after {before}");
        }
    }
    let first = at(t0);
    for device in 0..devices {
        let mac = mac(device);
        let stored_first = stored.iter().find(|(m, _)| *m == mac).map(|(_, t)| t.as_str());
        assert_eq!(stored_first, Some(first.as_str()), "{mac}: the held payload first");
    }
    server.stop().await;
}
