//! End-to-end forwarding throughput: positions published on an in-process position log, routed
//! by the forwarder through 10 connections × 10 topics with filter chains to one local
//! Mosquitto, counted by an MQTT subscriber. Run with `cargo bench -p zonecast-forwarder --bench throughput`
//! (release build; needs the `mosquitto` binary). Prints messages per second and where the CPU
//! time went (this process, the subscriber thread, the broker).
//!
//! Every event matches exactly one topic of every connection, so one event is ten MQTT
//! messages. The publisher keeps at most `WINDOW` messages outstanding (published but not yet
//! counted by the subscriber), so the forwarder's queues never overflow and the figure is the
//! sustained rate, not a burst into memory.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use serde_json::json;
use uuid::Uuid;
use zonecast_bus::{Bus, InProcessBus, Subjects};
use zonecast_model::{Connection, Topic};
use zonecast_runtime::{Keys, Secret, Shutdown};
use zonecast_store::StoredConnection;

const CONNECTIONS: usize = 10;
const TOPICS: usize = 10;
/// Events published; each becomes `CONNECTIONS` MQTT messages.
const EVENTS: u64 = 60_000;
/// MQTT messages allowed in flight between the bus and the subscriber.
const WINDOW: u64 = 20_000;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// CPU seconds (user + system) from a `/proc/.../stat` line.
fn cpu_seconds(stat: &str) -> f64 {
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

fn proc_cpu(path: &str) -> f64 {
    std::fs::read_to_string(path).map(|s| cpu_seconds(&s)).unwrap_or(f64::NAN)
}

struct Mosquitto {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_mosquitto(port: u16) -> Option<Mosquitto> {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("mosquitto.conf");
    std::fs::write(&conf, format!("listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\n")).unwrap();
    // Started as root, Mosquitto drops to the `mosquitto` user: let it read its config.
    if let Ok(out) = Command::new("id").args(["-u", "mosquitto"]).output()
        && let Ok(uid) = String::from_utf8_lossy(&out.stdout).trim().parse::<u32>()
    {
        let _ = std::os::unix::fs::chown(dir.path(), Some(uid), None);
        let _ = std::os::unix::fs::chown(&conf, Some(uid), None);
    }
    let child =
        Command::new("mosquitto").arg("-c").arg(&conf).stdout(Stdio::null()).stderr(Stdio::null()).spawn().ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "mosquitto did not start listening");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(Mosquitto { child, _dir: dir })
}

/// Connection `c`, topic `t`: position events whose height is in `[t, t + 1)` from a site up to
/// `501 + c` (all 100 chains differ); odd connections add a regex on the MAC and an `any` group.
fn chain(c: usize, t: usize) -> serde_json::Value {
    let mut chain = vec![
        json!({"FilterTemplate": "position_events"}),
        json!({"Selector": "Content.Position.2", "Type": "gte", "Match": t}),
        json!({"Selector": "Content.Position.2", "Type": "lt", "Match": t + 1}),
        json!({"Selector": "Source.SiteID", "Type": "lte", "Match": 501 + c}),
    ];
    if c % 2 == 1 {
        chain.push(json!({"Selector": "Source.MAC", "Type": "regex", "Match": "^00:00:"}));
        chain.push(json!({"Children": {"any": [
            {"Selector": "Content.Sequence", "Type": "exists"},
            {"Selector": "Source.GatewayURI", "Type": "exists"}]}}));
    }
    json!(chain)
}

fn event(n: u64) -> Vec<u8> {
    let z = (n % TOPICS as u64) as f64 + 0.5;
    let mac = format!("00:00:00:00:{:02X}:{:02X}", (n >> 8) & 0xff, n & 0xff);
    serde_json::to_vec(&json!({
        "Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE",
        "Timestamp": "2026-11-21T10:00:00.000Z", "LocalTimestamp": "2026-11-21T10:00:00.004Z",
        "Source": {"MAC": mac, "GatewayURI": null, "SiteID": 501},
        "Content": {"Position": [12.25, 7.5, z], "Sequence": n},
    }))
    .unwrap()
}

/// Counts every message under `bench/#` on its own thread, so its CPU time can be told apart;
/// returns the counter and the thread (which yields its CPU seconds). By default a minimal
/// MQTT 3.1.1 reader (CONNECT, SUBSCRIBE QoS 0, then only PUBLISH fixed headers are parsed);
/// with `BENCH_SUBSCRIBER=rumqttc` a full rumqttc client, which costs about 2.5 µs per message.
fn spawn_subscriber(port: u16, ready: std::sync::mpsc::Sender<()>) -> (Arc<AtomicU64>, std::thread::JoinHandle<f64>) {
    let count = Arc::new(AtomicU64::new(0));
    let counter = count.clone();
    if std::env::var("BENCH_SUBSCRIBER").as_deref() != Ok("rumqttc") {
        let thread = std::thread::spawn(move || {
            raw_count(port, &counter, &ready);
            proc_cpu("/proc/thread-self/stat")
        });
        return (count, thread);
    }
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let mut options = MqttOptions::new("bench-subscriber", "127.0.0.1", port);
            options.set_max_packet_size(1 << 20, 1 << 20).set_keep_alive(Duration::from_secs(30));
            let (client, mut eventloop) = AsyncClient::new(options, 16);
            let target = EVENTS * CONNECTIONS as u64;
            loop {
                match eventloop.poll().await.expect("subscriber connection") {
                    Event::Incoming(Packet::ConnAck(_)) => client.try_subscribe("bench/#", QoS::AtMostOnce).unwrap(),
                    Event::Incoming(Packet::SubAck(_)) => ready.send(()).unwrap(),
                    Event::Incoming(Packet::Publish(_)) => {
                        let seen = counter.fetch_add(1, Ordering::Relaxed) + 1;
                        if seen >= target {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        });
        proc_cpu("/proc/thread-self/stat")
    });
    (count, thread)
}

/// Counts PUBLISH packets on a plain socket, reading at most every millisecond: the cheapest
/// possible subscriber, so the figure is the forwarder's and the broker's.
fn raw_count(port: u16, counter: &AtomicU64, ready: &std::sync::mpsc::Sender<()>) {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let id = b"bench-counter";
    let mut connect =
        vec![0x10, (12 + id.len()) as u8, 0, 4, b'M', b'Q', b'T', b'T', 4, 0x02, 0, 60, 0, id.len() as u8];
    connect.extend_from_slice(id);
    socket.write_all(&connect).unwrap();
    let filter = b"bench/#";
    let mut subscribe = vec![0x82, (5 + filter.len()) as u8, 0, 1, 0, filter.len() as u8];
    subscribe.extend_from_slice(filter);
    subscribe.push(0);
    socket.write_all(&subscribe).unwrap();
    let target = EVENTS * CONNECTIONS as u64;
    let mut buffer = vec![0u8; 1 << 16];
    let (mut filled, mut seen) = (0usize, 0u64);
    loop {
        let n = socket.read(&mut buffer[filled..]).unwrap();
        assert!(n > 0, "broker closed the counting subscriber");
        filled += n;
        let mut at = 0;
        // Walk complete packets: type nibble, remaining length (varint), body.
        while filled - at >= 2 {
            let (mut length, mut shift, mut i) = (0usize, 0, at + 1);
            while i < filled && buffer[i] & 0x80 != 0 {
                length |= usize::from(buffer[i] & 0x7f) << shift;
                shift += 7;
                i += 1;
            }
            if i >= filled {
                break;
            }
            length |= usize::from(buffer[i]) << shift;
            let end = i + 1 + length;
            if end > filled {
                break;
            }
            match buffer[at] >> 4 {
                3 => seen += 1,
                9 => ready.send(()).unwrap(),
                _ => {}
            }
            at = end;
        }
        buffer.copy_within(at..filled, 0);
        filled -= at;
        counter.store(seen, Ordering::Relaxed);
        if seen >= target {
            return;
        }
        if n < 16 * 1024 {
            // Let the socket fill up instead of waking for every message.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// How long routing alone takes per event over the same 100 chains, no I/O.
fn routing_cost(connections: &[Connection]) -> Duration {
    let (router, _) = zonecast_forwarder::Router::build(connections, zonecast_filter::Bounds::DEFAULT);
    let events: Vec<serde_json::Value> = (0..10_000).map(|n| serde_json::from_slice(&event(n)).unwrap()).collect();
    let start = Instant::now();
    let mut routed = 0usize;
    for _ in 0..10 {
        for e in &events {
            routed += router.route(e).count();
        }
    }
    assert_eq!(routed, 10 * events.len() * CONNECTIONS);
    start.elapsed() / (10 * events.len() as u32)
}

/// A batch of positions as the position log carries it: one event per line.
#[derive(Debug)]
struct Batch(bytes::Bytes);

impl Batch {
    fn of(event: &[u8]) -> Self {
        let mut lines = bytes::BytesMut::new();
        zonecast_bus::positions::push_line(&mut lines, event);
        Self(lines.freeze())
    }
}

impl zonecast_bus::Encode for Batch {
    fn decoded(&self) -> &(dyn std::any::Any + Send + Sync) {
        &self.0
    }

    fn encode(&self) -> bytes::Bytes {
        self.0.clone()
    }
}

fn main() {
    let port = free_port();
    let Some(broker) = start_mosquitto(port) else {
        eprintln!("throughput bench skipped: the mosquitto binary is not installed");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let store = zonecast_store::open(None, zonecast_store::DEFAULT_POOL_SIZE, &dir.path().join("bench.sqlite")).await.unwrap();
        let connections: Vec<Connection> = (0..CONNECTIONS)
            .map(|c| Connection {
                id: Uuid::new_v4(),
                host: "127.0.0.1".into(),
                port,
                tls: false,
                certificate_profile_id: None,
                username: None,
                has_password: false,
                topics: (0..TOPICS)
                    .map(|t| Topic { topic: format!("bench/{c}/{t}"), filter_chain: chain(c, t) })
                    .collect(),
            })
            .collect();
        for c in &connections {
            store.insert_connection(&StoredConnection { connection: c.clone(), password_sealed: None }, usize::MAX).await.unwrap();
        }
        let per_event = routing_cost(&connections);

        let bus = Arc::new(InProcessBus::new());
        let subjects = Subjects::new("bench");
        let keys =
            Arc::new(Keys::from_secret(&Secret::new(zonecast_runtime::keys::random_base64(32).unwrap())).unwrap());
        let status_store = store.clone();
        let positions = bus.position_log("bench", 1, zonecast_bus::PositionSettings::default());
        let deps = zonecast_forwarder::Deps {
            store,
            journal: bus.journal("bench", zonecast_bus::JournalSettings::default()),
            positions: positions.clone(),
            bus: bus.clone(),
            subjects: subjects.clone(),
            keys,
            settings: zonecast_forwarder::Settings::default(),
            replica: "bench".into(),
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (count, subscriber) = spawn_subscriber(port, ready_tx);
        ready_rx.recv_timeout(Duration::from_secs(10)).expect("subscriber ready");
        let shutdown = Shutdown::new();
        let running = zonecast_forwarder::start(deps, shutdown.clone()).await.unwrap();
        // Every client connected (as its status row says) before the clock starts.
        let deadline = Instant::now() + Duration::from_secs(10);
        for c in &connections {
            while !status_store.connection_status(c.id).await.unwrap().iter().any(|s| s.connected) {
                assert!(Instant::now() < deadline, "forwarder clients did not connect");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        // One position a batch, on the position log the forwarder's position topics follow, as
        // ingest publishes them.
        let payloads: Vec<zonecast_bus::Decoded> = (0..EVENTS).map(|n| Arc::new(Batch::of(&event(n))) as _).collect();
        let broker_pid = broker.child.id();
        let (cpu_self0, cpu_broker0) = (proc_cpu("/proc/self/stat"), proc_cpu(&format!("/proc/{broker_pid}/stat")));
        let start = Instant::now();
        let target = EVENTS * CONNECTIONS as u64;
        for (n, payload) in payloads.into_iter().enumerate() {
            while (n as u64) * CONNECTIONS as u64 >= count.load(Ordering::Relaxed) + WINDOW {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            positions.publish(vec![(0, payload)]).await.unwrap().confirmed().await.unwrap();
        }
        while count.load(Ordering::Relaxed) < target {
            assert!(
                start.elapsed() < Duration::from_secs(300),
                "only {} of {target} arrived",
                count.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let elapsed = start.elapsed();
        let (cpu_self, cpu_broker) =
            (proc_cpu("/proc/self/stat") - cpu_self0, proc_cpu(&format!("/proc/{broker_pid}/stat")) - cpu_broker0);
        let cpu_subscriber = subscriber.join().unwrap();
        shutdown.cancel();
        running.stopped().await.unwrap();
        let rate = target as f64 / elapsed.as_secs_f64();
        let counter = std::env::var("BENCH_SUBSCRIBER").unwrap_or_else(|_| "raw".into());
        println!("forwarder throughput: {CONNECTIONS} connections x {TOPICS} topics, QoS 1, one local Mosquitto, {counter} subscriber");
        println!("  {target} MQTT messages ({EVENTS} events) in {:.2} s", elapsed.as_secs_f64());
        println!("  {rate:.0} messages/s forwarded ({:.0} events/s in)", rate / CONNECTIONS as f64);
        println!(
            "  routing alone: {:.2} µs per event over {} chains",
            per_event.as_secs_f64() * 1e6,
            CONNECTIONS * TOPICS
        );
        println!(
            "  CPU seconds: bench process {:.2} (of which subscriber thread {:.2}), mosquitto {:.2}, wall {:.2}",
            cpu_self,
            cpu_subscriber,
            cpu_broker,
            elapsed.as_secs_f64()
        );
    });
}
