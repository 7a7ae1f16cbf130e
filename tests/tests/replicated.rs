//! Streams kept on three NATS servers (`ZONECAST_NATS_REPLICAS=3`): the distributed services
//! run on a three-node NATS cluster of the test's own, every stream they make is kept on all
//! three, and one node killed while devices keep crossing a zone's boundary loses no event on
//! its way to an MQTT broker. Asked for three replicas of a single NATS server, the services
//! refuse to start and say why.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::TryStreamExt;
use serde_json::{Value, json};
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::nats::{NatsCluster, NatsServer};
use zonecast_tests::process::{Service, binary, free_port};
use zonecast_tests::{call_ok, drop_fresh_database, eventually, fresh_database, post_positions, small_stream_env};

const WAIT: Duration = Duration::from_secs(60);
const KEY: &str = "replicated-admin-key";
const DEVICES: usize = 8;
/// Rounds of crossings before the kill, and at least as many after it.
const ROUNDS_BEFORE: usize = 3;
const ROUNDS_AFTER: usize = 8;

/// The environment of every service: the cluster's URL list, three replicas.
fn environment(nats: &str, database: &str, prefix: &str, secret: &str, port: u16) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("ZONECAST_DATABASE_URL", database),
        ("ZONECAST_NATS_URL", nats),
        ("ZONECAST_NATS_REPLICAS", "3"),
        ("ZONECAST_SECRET_KEY", secret),
        ("ZONECAST_API_KEYS", &format!("{KEY}:admin")),
        ("ZONECAST_SUBJECT_PREFIX", prefix),
        ("ZONECAST_PARTITIONS", "16"),
        ("ZONECAST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
        ("ZONECAST_INGEST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    env.extend(small_stream_env());
    env
}

async fn call(http: &reqwest::Client, api: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    call_ok(http, api, KEY, method, path, body).await
}

/// Posts one position per device, all inside the zone or all outside, until accepted.
async fn post_round(http: &reqwest::Client, ingestor: &str, macs: &[String], inside: bool) {
    post_positions(http, ingestor, KEY, macs, if inside { 1.0 } else { 500.0 }).await;
}

/// The stream names and information of every stream under `prefix`; `None` while the cluster
/// cannot answer (a stream's group still forming, a node just killed or restarted).
async fn streams(
    js: &async_nats::jetstream::Context,
    prefix: &str,
) -> Option<BTreeMap<String, async_nats::jetstream::stream::Info>> {
    let names: Vec<String> = js.stream_names().try_collect().await.ok()?;
    let mut infos = BTreeMap::new();
    for name in names.into_iter().filter(|n| n.starts_with(&format!("{prefix}_"))) {
        let info = js.get_stream(&name).await.ok()?.info().await.ok()?.clone();
        infos.insert(name, info);
    }
    Some(infos)
}

/// Notes a zone event seen on MQTT under its device and its `EventID`: a copy (the same
/// `EventID` again, as at-least-once delivery allows) must be of the same type.
fn record(seen: &mut BTreeMap<String, BTreeMap<String, String>>, event: &Value) {
    let mac = event["Source"]["MAC"].as_str().unwrap().to_owned();
    let id = event["EventID"].as_str().unwrap().to_owned();
    let kind = event["Type"].as_str().unwrap().to_owned();
    let earlier = seen.entry(mac).or_default().insert(id, kind.clone());
    assert!(earlier.is_none_or(|k| k == kind), "one EventID, two types: {event}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_a_three_node_nats_cluster_lose_no_event_when_a_node_is_killed() {
    let mut cluster = NatsCluster::start(3).await;
    let database = fresh_database().await;
    let broker = Broker::plain().await;
    let prefix = format!("zc{}", uuid::Uuid::new_v4().simple());
    let secret = zonecast_runtime::keys::random_base64(32).unwrap();
    let http = zonecast_tests::http_client();
    let nats = cluster.url();
    let env = |port| environment(&nats, &database, &prefix, &secret, port);

    let api_port = free_port();
    let mut api = Service::start("zonecast-api", env(api_port), api_port);
    api.healthy(&http, WAIT).await;
    let api_url = format!("http://127.0.0.1:{api_port}");
    // The evaluator before the ingestor, as a cluster is started: the ingestor is ready once the
    // evaluators follow every partition.
    let port = free_port();
    let mut evaluator_env = env(port);
    evaluator_env.push(("ZONECAST_EVALUATOR_PARTITIONS".into(), "0-15".into()));
    let mut evaluator = Service::start("zonecast-evaluator", evaluator_env, port);
    evaluator.healthy(&http, WAIT).await;
    let ingest_port = free_port();
    let mut services = vec![api, evaluator, Service::start("zonecast-ingestor", env(ingest_port), ingest_port)];
    let ingestor = format!("http://127.0.0.1:{ingest_port}");
    let port = free_port();
    services.push(Service::start("zonecast-forwarder", env(port), port));
    for s in &mut services {
        s.healthy(&http, WAIT).await;
    }

    // A zone, and an MQTT connection that forwards its events to the broker.
    let zone = json!({"Name": "hall", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [10, 0, 0]]});
    call(&http, &api_url, reqwest::Method::POST, "/v3/modules/zones", Some(zone)).await;
    let connection = call(
        &http,
        &api_url,
        reqwest::Method::POST,
        "/v3/modules/mqtt/connections",
        Some(json!({"host": "127.0.0.1", "port": broker.port, "TLS": false,
            "topics": [{"topic": "site/zones", "FilterChain": [{"FilterTemplate": "zone_events"}]}]})),
    )
    .await;
    let status = format!("/v3/modules/mqtt/connections/{}/status", connection["ConnectionID"].as_str().unwrap());
    eventually(WAIT, || async {
        (call(&http, &api_url, reqwest::Method::GET, &status, None).await["connected"] == true).then_some(())
    })
    .await;
    let mut mqtt = Subscriber::new(&broker, "site/#").await;

    // Every stream the services made is kept on the three servers: a leader and two replicas.
    let js = async_nats::jetstream::new(async_nats::connect(cluster.urls()).await.unwrap());
    let expected: BTreeSet<String> =
        ["EVENTS", "ACTIONS", "COMMANDS", "POSITIONS"].map(|s| format!("{prefix}_{s}")).into();
    let infos = eventually(WAIT, || async {
        let infos = streams(&js, &prefix).await?;
        let complete = infos.keys().cloned().collect::<BTreeSet<_>>() == expected
            && infos.values().all(|i| i.cluster.as_ref().is_some_and(|c| c.leader.is_some() && c.replicas.len() == 2));
        complete.then_some(infos)
    })
    .await;
    for (name, info) in &infos {
        assert_eq!(info.config.num_replicas, 3, "{name}");
    }
    let leader = infos[&format!("{prefix}_EVENTS")].cluster.as_ref().unwrap().leader.clone().unwrap();
    let victim = cluster.index(&leader);

    // Devices cross the zone's boundary in rounds, all in, all out, while the node leading the
    // events stream is killed.
    let macs: Arc<Vec<String>> = Arc::new((0..DEVICES).map(|i| format!("0D:00:00:00:00:{i:02X}")).collect());
    let rounds = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let poster = tokio::spawn({
        let (http, ingestor, macs, rounds, stop) =
            (http.clone(), ingestor.clone(), macs.clone(), rounds.clone(), stop.clone());
        async move {
            while !stop.load(Ordering::Acquire) {
                let round = rounds.load(Ordering::Acquire);
                post_round(&http, &ingestor, &macs, round % 2 == 0).await;
                rounds.store(round + 1, Ordering::Release);
            }
        }
    });
    let done = || rounds.load(Ordering::Acquire);
    eventually(WAIT, || async { (done() >= ROUNDS_BEFORE).then_some(()) }).await;
    cluster.kill(victim);
    let at_kill = done();
    eventually(WAIT * 2, || async { (done() >= at_kill + ROUNDS_AFTER).then_some(()) }).await;
    stop.store(true, Ordering::Release);
    poster.await.unwrap();
    let total = done();

    // Every crossing reached the broker: per device, one event per round, entering and leaving
    // in turn. A copy is allowed only as the same event again (its EventID).
    let mut seen: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let complete = |seen: &BTreeMap<String, BTreeMap<String, String>>| {
        seen.len() == DEVICES && seen.values().all(|events| events.len() >= total)
    };
    let deadline = tokio::time::Instant::now() + WAIT * 2;
    while !complete(&seen) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let Ok((topic, event)) = tokio::time::timeout(left, mqtt.next(WAIT * 3)).await else {
            let counts: BTreeMap<&String, usize> = seen.iter().map(|(mac, events)| (mac, events.len())).collect();
            panic!("after {total} rounds, distinct events per device on MQTT: {counts:?}");
        };
        assert_eq!(topic, "site/zones", "{event}");
        record(&mut seen, &event);
    }
    // Nothing more than that turns up (a bounded negative wait); copies may.
    while let Ok((_, event)) = tokio::time::timeout(Duration::from_secs(1), mqtt.next(WAIT)).await {
        record(&mut seen, &event);
    }
    for (mac, events) in &seen {
        let enters = events.values().filter(|k| *k == "ZONE_ENTER").count();
        let exits = events.values().filter(|k| *k == "ZONE_EXIT").count();
        assert_eq!((enters, exits, events.len()), (total.div_ceil(2), total / 2, total), "{mac}: {events:?}");
    }

    // The node comes back with what it stored and catches up: three current copies again.
    cluster.start_node(victim).await;
    eventually(WAIT, || async {
        let infos = streams(&js, &prefix).await?;
        infos
            .values()
            .all(|i| {
                i.cluster.as_ref().is_some_and(|c| {
                    c.leader.is_some() && c.replicas.len() == 2 && c.replicas.iter().all(|r| r.current && !r.offline)
                })
            })
            .then_some(())
    })
    .await;

    drop(services);
    drop_fresh_database(&database).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_asked_for_three_replicas_of_a_single_nats_server_refuse_to_start_and_say_why() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let prefix = format!("zc{}", uuid::Uuid::new_v4().simple());
    let secret = zonecast_runtime::keys::random_base64(32).unwrap();
    for name in ["zonecast-ingestor", "zonecast-api"] {
        let mut cmd = tokio::process::Command::new(binary(name));
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZONECAST_") || k == "RUST_LOG") {
            cmd.env_remove(k);
        }
        let output = tokio::time::timeout(
            WAIT,
            cmd.envs(environment(&nats.url(), &database, &prefix, &secret, free_port()))
                .env("RUST_LOG", "warn")
                .kill_on_drop(true)
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("{name} still running with ZONECAST_NATS_REPLICAS=3 on a single NATS server"))
        .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{name} started: {stderr}");
        assert!(
            stderr.contains("with 3 replicas (ZONECAST_NATS_REPLICAS=3)")
                && stderr.contains("needs a NATS cluster with JetStream on at least that many servers"),
            "{name}: {stderr}"
        );
    }
    drop_fresh_database(&database).await;
}
