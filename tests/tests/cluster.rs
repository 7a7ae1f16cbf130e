//! The distributed deployment for real: two API replicas, two ingestors, two evaluators that
//! split the partitions and two forwarders, each its own process, on a NATS of the test's own,
//! a fresh PostgreSQL database and a Mosquitto broker.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use zonecast_bus::Subjects;
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::nats::NatsServer;
use zonecast_tests::process::{Service, free_port};
use zonecast_tests::{call_ok, eventually, exactly_once, fresh_database, post_positions};

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "cluster-admin-key";
const DEVICES: usize = 24;

struct Cluster {
    http: reqwest::Client,
    apis: Vec<String>,
    ingestors: Vec<String>,
    evaluators: Vec<Service>,
    others: Vec<Service>,
    subjects: Subjects,
}

impl Cluster {
    async fn start(nats: &NatsServer, database: &str) -> Self {
        let prefix = format!("zc{}", uuid::Uuid::new_v4().simple());
        let secret = zonecast_runtime::keys::random_base64(32).unwrap();
        let common = |port: u16, extra: &[(&str, &str)]| -> Vec<(String, String)> {
            let mut env: Vec<(String, String)> = [
                ("ZONECAST_DATABASE_URL", database),
                ("ZONECAST_NATS_URL", nats.url().as_str()),
                ("ZONECAST_SECRET_KEY", secret.as_str()),
                ("ZONECAST_API_KEYS", &format!("{KEY}:admin")),
                ("ZONECAST_SUBJECT_PREFIX", prefix.as_str()),
                ("ZONECAST_PARTITIONS", "16"),
                ("ZONECAST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
                ("ZONECAST_INGEST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
            ]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
            env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
            env
        };
        let http = zonecast_tests::http_client();
        let mut all = Vec::new();
        let (mut apis, mut ingestors) = (Vec::new(), Vec::new());
        // The first API creates the schema; the others start after it is healthy.
        for i in 0..2 {
            let port = free_port();
            let mut api = Service::start("zonecast-api", common(port, &[]), port);
            if i == 0 {
                api.healthy(&http, WAIT).await;
            }
            apis.push(format!("http://127.0.0.1:{port}"));
            all.push(api);
        }
        for _ in 0..2 {
            let port = free_port();
            all.push(Service::start("zonecast-ingestor", common(port, &[]), port));
            ingestors.push(format!("http://127.0.0.1:{port}"));
        }
        for _ in 0..2 {
            let port = free_port();
            all.push(Service::start("zonecast-forwarder", common(port, &[]), port));
        }
        let mut evaluators = Vec::new();
        for range in ["0-7", "8-15"] {
            let port = free_port();
            evaluators.push(Service::start(
                "zonecast-evaluator",
                common(port, &[("ZONECAST_EVALUATOR_PARTITIONS", range)]),
                port,
            ));
        }
        for s in all.iter_mut().chain(evaluators.iter_mut()) {
            s.healthy(&http, WAIT).await;
        }
        Self { http, apis, ingestors, evaluators, others: all, subjects: Subjects::new(prefix) }
    }

    async fn call(&self, api: usize, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        call_ok(&self.http, &self.apis[api], KEY, method, path, body).await
    }

    /// Posts one position per device, half to each ingestor; all inside or all outside zone.
    async fn positions(&self, macs: &[String], inside: bool) {
        for (i, chunk) in macs.chunks(macs.len().div_ceil(2)).enumerate() {
            post_positions(&self.http, &self.ingestors[i % 2], KEY, chunk, if inside { 1.0 } else { 500.0 }).await;
        }
    }

    async fn all_healthy(&mut self) {
        for s in self.others.iter_mut().chain(self.evaluators.iter_mut()) {
            s.healthy(&self.http, WAIT).await;
        }
    }
}

/// Devices spread over both evaluators' partition ranges.
fn devices() -> Vec<String> {
    let macs: Vec<String> = (0..DEVICES).map(|i| format!("0C:00:00:00:00:{i:02X}")).collect();
    let low = macs.iter().filter(|m| m.parse::<zonecast_model::Mac>().unwrap().partition(16) < 8).count();
    assert!(low > 0 && low < DEVICES, "devices must cover both evaluators");
    macs
}

/// Exactly `n` MQTT messages, all `kind` on `topic`, one per device.
async fn exactly_once_mqtt(sub: &mut Subscriber, topic: &str, kind: &str, n: usize) {
    let mut macs = HashSet::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while macs.len() < n {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let (t, e) = sub.next(left).await;
        assert_eq!((t.as_str(), e["Type"].as_str()), (topic, Some(kind)), "{e}");
        let mac = e["Source"]["MAC"].as_str().unwrap().to_owned();
        assert!(macs.insert(mac.clone()), "a second {kind} for {mac} on MQTT");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_of_separate_processes_delivers_each_event_exactly_once_and_survives_restarts() {
    let mut nats = NatsServer::start().await;
    let database = fresh_database().await;
    let broker = Broker::plain().await;
    let mut cluster = Cluster::start(&nats, &database).await;
    let bus = zonecast_bus::connect(Some(&nats.url()), "cluster-test").await.unwrap();
    let mut events = bus.subscribe(&cluster.subjects.events_all()).await.unwrap();
    let macs = devices();

    // Configuration through either API replica reaches every evaluator and forwarder.
    let zone = cluster
        .call(
            0,
            reqwest::Method::POST,
            "/v3/modules/zones",
            Some(json!({"Name": "hall", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [10, 0, 0]]})),
        )
        .await;
    let zone_id = zone["ZoneID"].as_str().unwrap().to_owned();
    let connection = cluster
        .call(
            1,
            reqwest::Method::POST,
            "/v3/modules/mqtt/connections",
            Some(json!({"host": "127.0.0.1", "port": broker.port, "TLS": false,
            "topics": [{"topic": "site/zones", "FilterChain": [{"FilterTemplate": "zone_events"}]}]})),
        )
        .await;
    let conn_id = connection["ConnectionID"].as_str().unwrap().to_owned();
    let status_path = format!("/v3/modules/mqtt/connections/{conn_id}/status");
    eventually(WAIT, || async {
        let s = cluster.call(0, reqwest::Method::GET, &status_path, None).await;
        (s["connected"] == true && s["replicas"].as_array().unwrap().len() == 2).then_some(())
    })
    .await;
    let mut mqtt = Subscriber::new(&broker, "site/#").await;

    // Each position yields each event exactly once, on NATS and on MQTT.
    cluster.positions(&macs, true).await;
    let enters = exactly_once(&mut events, "ZONE_ENTER", DEVICES, WAIT).await;
    exactly_once_mqtt(&mut mqtt, "site/zones", "ZONE_ENTER", DEVICES).await;

    // An evaluator killed (SIGKILL) and restarted loses no collision state and emits no
    // duplicate enters.
    eventually(WAIT, || async {
        let z = cluster.call(1, reqwest::Method::GET, &format!("/v3/modules/zones/{zone_id}"), None).await;
        (z["CollidingDevices"].as_array().unwrap().len() == DEVICES).then_some(())
    })
    .await;
    cluster.evaluators[0].kill().await;
    cluster.evaluators[0].restart();
    cluster.evaluators[0].healthy(&cluster.http, WAIT).await;
    cluster.positions(&macs, true).await;
    cluster.positions(&macs, false).await;
    let exits = exactly_once(&mut events, "ZONE_EXIT", DEVICES, WAIT).await;
    for (mac, exit) in &exits {
        assert_eq!(
            exit["Content"]["CollisionID"], enters[mac]["Content"]["CollisionID"],
            "{mac}: same stay, no new enter"
        );
        assert_eq!(exit["Content"]["Reason"], "position");
    }
    exactly_once_mqtt(&mut mqtt, "site/zones", "ZONE_EXIT", DEVICES).await;

    // A change through API 1 reaches both evaluators: deactivation exits everyone.
    cluster.positions(&macs, true).await;
    exactly_once(&mut events, "ZONE_ENTER", DEVICES, WAIT).await;
    exactly_once_mqtt(&mut mqtt, "site/zones", "ZONE_ENTER", DEVICES).await;
    cluster.call(0, reqwest::Method::POST, "/v3/modules/zones/deactivate", Some(json!([zone_id]))).await;
    let exits = exactly_once(&mut events, "ZONE_EXIT", DEVICES, WAIT).await;
    assert!(exits.values().all(|e| e["Content"]["Reason"] == "deactivated"));
    exactly_once_mqtt(&mut mqtt, "site/zones", "ZONE_EXIT", DEVICES).await;

    // A change through API 2 reaches both forwarders: new events go to the new topic only.
    cluster
        .call(
            1,
            reqwest::Method::PUT,
            &format!("/v3/modules/mqtt/connections/{conn_id}"),
            Some(json!({"host": "127.0.0.1", "port": broker.port, "TLS": false,
            "topics": [{"topic": "site/moved", "FilterChain": [{"FilterTemplate": "zone_events"}]}]})),
        )
        .await;
    cluster.call(1, reqwest::Method::POST, "/v3/modules/zones/activate", Some(json!([zone_id]))).await;
    cluster.positions(&macs, true).await;
    exactly_once(&mut events, "ZONE_ENTER", DEVICES, WAIT).await;
    exactly_once_mqtt(&mut mqtt, "site/moved", "ZONE_ENTER", DEVICES).await;

    // NATS restarted: every service reconnects and goes on.
    nats.stop();
    nats.resume().await;
    cluster.all_healthy().await;
    eventually(WAIT, || async {
        let r = cluster.http.get(format!("{}/healthz", cluster.ingestors[0])).send().await.ok()?;
        r.status().is_success().then_some(())
    })
    .await;
    cluster.positions(&macs, false).await;
    exactly_once(&mut events, "ZONE_EXIT", DEVICES, WAIT).await;
    exactly_once_mqtt(&mut mqtt, "site/moved", "ZONE_EXIT", DEVICES).await;

    // Occupancy is counted over both evaluators: a limit neither evaluator's devices pass alone
    // is passed by all of them together, and reported once.
    let low = macs.iter().filter(|m| m.parse::<zonecast_model::Mac>().unwrap().partition(16) < 8).count();
    let cap = low.max(DEVICES - low);
    let occupancy_subject = format!("{}.events.zone.*.occupancy", cluster.subjects.prefix());
    let mut occupancy = bus.subscribe(&occupancy_subject).await.unwrap();
    let yard = json!({"Name": "yard", "GeometryType": "sphere", "GeometryData": [[500, 0, 0], [10, 0, 0]],
                      "MaxOccupancy": cap});
    let yard = cluster.call(0, reqwest::Method::POST, "/v3/modules/zones", Some(yard)).await;
    let yard_path = format!("/v3/modules/zones/{}", yard["ZoneID"].as_str().unwrap());
    // The devices stand in the yard already: their next positions enter them, once both
    // evaluators have the new zone.
    eventually(WAIT, || async {
        cluster.positions(&macs, false).await;
        let z = cluster.call(1, reqwest::Method::GET, &yard_path, None).await;
        (z["CollidingDevices"].as_array().unwrap().len() == DEVICES).then_some(())
    })
    .await;
    let over = zonecast_tests::next_json(&mut occupancy, WAIT).await;
    assert_eq!(over["Type"], "ZONE_OCCUPANCY_EXCEEDED", "{over}");
    assert_eq!(over["Content"]["ZoneID"], yard["ZoneID"]);
    assert!(over["Content"]["Count"].as_u64().unwrap() > cap as u64, "{over}");
    let again = tokio::time::timeout(Duration::from_millis(700), futures::StreamExt::next(&mut occupancy)).await;
    assert!(again.is_err(), "a second occupancy event: {again:?}");

    // Passed: stop the processes and drop the test database.
    drop(cluster);
    let name = database.rsplit('/').next().unwrap();
    zonecast_store::postgres::drop_database(&zonecast_tests::database_admin_url(), name).await.unwrap();
}
