//! Pinned evaluators lose nothing: two evaluators pinned to partitions 0-7 and 8-15 of 32, as
//! processes on a NATS and a PostgreSQL database of the test's own, with an ingestor, an API
//! and a forwarder to a Mosquitto broker. The 16 partitions no pin covers are shown unowned at
//! once (the cluster status, the ingestor's readiness and its gauge), their positions wait, and
//! an evaluator that is not pinned, started later, takes them and evaluates what waited: every
//! device's enter reaches the broker exactly once, and the pinned evaluators keep their ranges.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use zonecast_bus::Subjects;
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::nats::NatsServer;
use zonecast_tests::process::{Service, SiteEnv, free_port};
use zonecast_tests::{call_ok, eventually, exactly_once, fresh_database, post_positions};

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "pinned-admin-key";
const PARTITIONS: u32 = 32;
const DEVICES: usize = 64;

fn numbers(value: &Value) -> Vec<u32> {
    value.as_array().unwrap().iter().map(|p| u32::try_from(p.as_u64().unwrap()).unwrap()).collect()
}

/// The ingestor's readiness: its status code and the partitions it names unowned.
async fn readiness(http: &reqwest::Client, ingestor: &str) -> Option<(StatusCode, Vec<u32>)> {
    let r = http.get(format!("{ingestor}/readyz")).send().await.ok()?;
    let code = r.status();
    let body: Value = r.json().await.ok()?;
    Some((code, numbers(&body["partitions"]["unowned"])))
}

/// The ingestor's `zonecast_ingest_partitions_unowned`.
async fn gauge(http: &reqwest::Client, ingestor: &str) -> Option<f64> {
    let text = http.get(format!("{ingestor}/metrics")).send().await.ok()?.text().await.ok()?;
    text.lines().find(|l| l.starts_with("zonecast_ingest_partitions_unowned "))?.rsplit(' ').next()?.parse().ok()
}

/// The cluster status, `None` while the API answers 503 (a bucket's listing not ended in time).
async fn cluster(http: &reqwest::Client, api: &str) -> Option<Value> {
    let r = http.get(format!("{api}/v3/system/cluster")).header("X-API-Key", KEY).send().await.unwrap();
    (r.status() == StatusCode::OK).then_some(r.json().await.unwrap())
}

/// Each live evaluator's partitions, by what it says it is pinned to (`None`: sharing).
fn owned_by_pin(status: &Value) -> Vec<(Option<Vec<u32>>, Vec<u32>)> {
    let evaluators = status["Evaluators"].as_array().unwrap().iter().filter(|e| e["Alive"] == true);
    let mut owned: Vec<_> = evaluators
        .map(|e| (e["About"]["Pinned"].as_array().map(|_| numbers(&e["About"]["Pinned"])), numbers(&e["Partitions"])))
        .collect();
    owned.sort();
    owned
}

/// Devices over every partition.
fn devices() -> Vec<String> {
    let macs: Vec<String> = (0..DEVICES).map(|i| format!("0E:00:00:00:{:02X}:{:02X}", i / 5, i * 53 % 256)).collect();
    let partitions: BTreeSet<u32> =
        macs.iter().map(|m| m.parse::<zonecast_model::Mac>().unwrap().partition(PARTITIONS)).collect();
    assert!(partitions.iter().any(|p| *p < 16) && partitions.iter().any(|p| *p >= 16), "{partitions:?}");
    macs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_no_pin_covers_are_shown_unowned_and_evaluated_once_an_evaluator_follows_them() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let broker = Broker::plain().await;
    let prefix = format!("zc{}", uuid::Uuid::new_v4().simple());
    let secret = zonecast_runtime::keys::random_base64(32).unwrap();
    let site = SiteEnv {
        database: database.clone(),
        nats: nats.url(),
        secret,
        api_keys: format!("{KEY}:admin"),
        prefix: prefix.clone(),
        partitions: PARTITIONS,
    };
    let env = |port| site.at(port);
    let http = zonecast_tests::http_client();
    let api_port = free_port();
    let mut api = Service::start("zonecast-api", env(api_port), api_port);
    api.healthy(&http, WAIT).await;
    let api_url = format!("http://127.0.0.1:{api_port}");
    let bus = zonecast_bus::connect(Some(&nats.url()), "pinned-test").await.unwrap();
    let mut events = bus.subscribe(&Subjects::new(prefix.clone()).events_all()).await.unwrap();

    let ingest_port = free_port();
    let ingestor_url = format!("http://127.0.0.1:{ingest_port}");
    let _ingestor = Service::start("zonecast-ingestor", env(ingest_port), ingest_port);
    let forwarder_port = free_port();
    let mut forwarder = Service::start("zonecast-forwarder", env(forwarder_port), forwarder_port);
    forwarder.healthy(&http, WAIT).await;

    // No evaluator yet: the ingestor is not ready, and says which partitions wait.
    let (code, unowned) = eventually(WAIT, || readiness(&http, &ingestor_url)).await;
    assert_eq!((code, unowned), (StatusCode::SERVICE_UNAVAILABLE, (0..PARTITIONS).collect::<Vec<_>>()));

    let mut evaluators = Vec::new();
    for range in ["0-7", "8-15"] {
        let port = free_port();
        let mut pinned = env(port);
        pinned.push(("ZONECAST_EVALUATOR_PARTITIONS".into(), range.into()));
        let mut evaluator = Service::start("zonecast-evaluator", pinned, port);
        evaluator.healthy(&http, WAIT).await;
        evaluators.push(evaluator);
    }

    // The pinned ones own their ranges; the rest is unowned, everywhere an operator looks.
    let rest: Vec<u32> = (16..PARTITIONS).collect();
    let status = eventually(WAIT, || async {
        let s = cluster(&http, &api_url).await?;
        (numbers(&s["Unowned"]) == rest && owned_by_pin(&s).len() == 2).then_some(s)
    })
    .await;
    assert_eq!(
        owned_by_pin(&status),
        [(Some(vec![0, 7]), (0..8).collect()), (Some(vec![8, 15]), (8..16).collect())],
        "{status}"
    );
    let (code, unowned) =
        eventually(WAIT, || async { readiness(&http, &ingestor_url).await.filter(|(_, unowned)| *unowned == rest) })
            .await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(unowned, rest);
    eventually(WAIT, || async { (gauge(&http, &ingestor_url).await? == rest.len() as f64).then_some(()) }).await;

    // Positions of every partition: those of the pinned ranges are evaluated, the others wait.
    call_ok(
        &http,
        &api_url,
        KEY,
        reqwest::Method::POST,
        "/v3/modules/zones",
        Some(json!({"Name": "hall", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [10, 0, 0]]})),
    )
    .await;
    let connection = json!({"host": "127.0.0.1", "port": broker.port, "TLS": false,
        "topics": [{"topic": "site/zones", "FilterChain": [{"FilterTemplate": "zone_events"}]}]});
    let connection =
        call_ok(&http, &api_url, KEY, reqwest::Method::POST, "/v3/modules/mqtt/connections", Some(connection)).await;
    let status_path = format!("/v3/modules/mqtt/connections/{}/status", connection["ConnectionID"].as_str().unwrap());
    eventually(WAIT, || async {
        let s = call_ok(&http, &api_url, KEY, reqwest::Method::GET, &status_path, None).await;
        (s["connected"] == true).then_some(())
    })
    .await;
    let mut mqtt = Subscriber::new(&broker, "site/#").await;
    let macs = devices();
    let partition = |m: &String| m.parse::<zonecast_model::Mac>().unwrap().partition(PARTITIONS);
    let pinned_macs: BTreeSet<String> = macs.iter().filter(|m| partition(m) < 16).cloned().collect();
    post_positions(&http, &ingestor_url, KEY, &macs, 1.0).await;
    let first = exactly_once(&mut events, "ZONE_ENTER", pinned_macs.len(), WAIT).await;
    assert_eq!(first.keys().cloned().collect::<BTreeSet<_>>(), pinned_macs);

    // An evaluator that shares: it takes the 16 unowned partitions and evaluates what waited.
    let port = free_port();
    let mut sharing = Service::start("zonecast-evaluator", env(port), port);
    sharing.healthy(&http, WAIT).await;
    evaluators.push(sharing);
    let rest_macs: BTreeSet<String> = macs.iter().filter(|m| partition(m) >= 16).cloned().collect();
    let later = exactly_once(&mut events, "ZONE_ENTER", rest_macs.len(), WAIT).await;
    assert_eq!(later.keys().cloned().collect::<BTreeSet<_>>(), rest_macs);
    let status = eventually(WAIT, || async {
        let s = cluster(&http, &api_url).await?;
        (numbers(&s["Unowned"]).is_empty() && owned_by_pin(&s).len() == 3).then_some(s)
    })
    .await;
    assert_eq!(
        owned_by_pin(&status),
        [(None, rest.clone()), (Some(vec![0, 7]), (0..8).collect()), (Some(vec![8, 15]), (8..16).collect())],
        "{status}"
    );
    let (code, unowned) = eventually(WAIT, || async {
        readiness(&http, &ingestor_url).await.filter(|(code, _)| *code == StatusCode::OK)
    })
    .await;
    assert_eq!((code, unowned), (StatusCode::OK, Vec::new()));
    eventually(WAIT, || async { (gauge(&http, &ingestor_url).await? == 0.0).then_some(()) }).await;

    // Every enter at the broker, once each.
    let mut at_broker = BTreeSet::new();
    while at_broker.len() < DEVICES {
        let (topic, event) = mqtt.next(WAIT).await;
        assert_eq!((topic.as_str(), event["Type"].as_str()), ("site/zones", Some("ZONE_ENTER")), "{event}");
        let mac = event["Source"]["MAC"].as_str().unwrap().to_owned();
        assert!(at_broker.insert(mac.clone()), "a second enter for {mac} at the broker");
    }
    assert_eq!(at_broker, macs.iter().cloned().collect());

    drop(evaluators);
    let name = database.rsplit('/').next().unwrap();
    zonecast_store::postgres::drop_database(&zonecast_tests::database_admin_url(), name).await.unwrap();
}
