//! `GET /v3/system/cluster` on a distributed site: the API, an ingestor, a forwarder and two
//! evaluators as processes on a NATS and a PostgreSQL database of the test's own. Every process
//! is listed as a live replica of its service; the evaluators with disjoint partitions covering
//! all. An evaluator killed shows dead and the other then owns every partition; the forwarder
//! stopped leaves the list.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use zonecast_tests::nats::NatsServer;
use zonecast_tests::process::{Service, SiteEnv, free_port};
use zonecast_tests::{READ_KEY, eventually, fresh_database};

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "cluster-status-admin-key";
const PARTITIONS: u32 = 8;

/// The cluster status as the read key sees it, or `None` while the API answers 503: on a busy
/// machine a listing of a bucket may not end in time, and the API says so rather than answer
/// from part of it. Any other answer fails the test, with its body.
async fn status(http: &reqwest::Client, api: &str) -> Option<Value> {
    let r = http.get(format!("{api}/v3/system/cluster")).header("X-API-Key", READ_KEY).send().await.unwrap();
    let code = r.status();
    if code == StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let body = r.text().await.unwrap();
    assert_eq!(code, StatusCode::OK, "{body}");
    Some(serde_json::from_str(&body).unwrap())
}

fn partitions(evaluator: &Value) -> Vec<u32> {
    evaluator["Partitions"].as_array().unwrap().iter().map(|p| u32::try_from(p.as_u64().unwrap()).unwrap()).collect()
}

fn alive(status: &Value) -> Vec<&Value> {
    status["Evaluators"].as_array().unwrap().iter().filter(|e| e["Alive"] == true).collect()
}

/// The replicas listed, as (service, alive), in the order listed.
fn replicas(status: &Value) -> Vec<(String, bool)> {
    let replicas = status["Replicas"].as_array().unwrap().iter();
    replicas.map(|r| (r["Service"].as_str().unwrap().to_owned(), r["Alive"] == true)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_status_shows_the_evaluators_partitions_and_one_killed_as_dead() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let prefix = format!("zc{}", uuid::Uuid::new_v4().simple());
    let secret = zonecast_runtime::keys::random_base64(32).unwrap();
    let site = SiteEnv {
        database: database.clone(),
        nats: nats.url(),
        secret,
        api_keys: format!("{KEY}:admin,{READ_KEY}:read"),
        prefix,
        partitions: PARTITIONS,
    };
    let env = |port| site.at(port);
    let http = zonecast_tests::http_client();
    let api_port = free_port();
    let mut api = Service::start("zonecast-api", env(api_port), api_port);
    api.healthy(&http, WAIT).await;
    let api_url = format!("http://127.0.0.1:{api_port}");

    let unauthenticated = http.get(format!("{api_url}/v3/system/cluster")).send().await.unwrap();
    assert_eq!(unauthenticated.status(), StatusCode::UNAUTHORIZED);

    let ingest_port = free_port();
    let mut ingestor = Service::start("zonecast-ingestor", env(ingest_port), ingest_port);
    let forwarder_port = free_port();
    let mut forwarder = Service::start("zonecast-forwarder", env(forwarder_port), forwarder_port);
    forwarder.healthy(&http, WAIT).await;
    let mut evaluators = Vec::new();
    for _ in 0..2 {
        let port = free_port();
        let mut evaluator = Service::start("zonecast-evaluator", env(port), port);
        evaluator.healthy(&http, WAIT).await;
        evaluators.push(evaluator);
    }
    // The ingestor is ready once the evaluators follow every partition.
    ingestor.healthy(&http, WAIT).await;

    // Two alive, each with its share, together every partition exactly once.
    let before = eventually(WAIT, || async {
        let s = status(&http, &api_url).await?;
        let live = alive(&s);
        let owned: Vec<u32> = live.iter().flat_map(|e| partitions(e)).collect();
        let shares: Vec<usize> = live.iter().map(|e| partitions(e).len()).collect();
        let balanced = shares.iter().all(|n| *n == PARTITIONS as usize / 2);
        (live.len() == 2 && balanced && s["Unowned"].as_array()?.is_empty()).then(|| (s.clone(), owned))
    })
    .await;
    let (before, owned) = before;
    assert_eq!(before["Mode"], "claimed", "{before}");
    assert_eq!(before["Partitions"], PARTITIONS, "{before}");
    assert_eq!(before["LeaseMs"], 1000, "{before}");
    let distinct: BTreeSet<u32> = owned.iter().copied().collect();
    assert_eq!(owned.len(), distinct.len(), "partitions owned twice: {before}");
    assert_eq!(distinct, (0..PARTITIONS).collect(), "{before}");
    for e in alive(&before) {
        assert!(e["HeartbeatAgeMs"].as_u64().unwrap() <= 1000, "{e}");
        assert_eq!(e["About"]["LeaseMs"], 1000, "{e}");
        let p = partitions(e);
        assert!(p.windows(2).all(|w| w[0] < w[1]), "partitions sorted: {e}");
    }
    let ids: BTreeSet<String> = alive(&before).iter().map(|e| e["EvaluatorID"].as_str().unwrap().to_owned()).collect();
    // Every process a live replica of its service, by service; those that hold work say how
    // far behind they are (from their first lag report on). Asked until so: on a busy machine a
    // late heartbeat shows a replica dead for a moment.
    let reports_lag = |r: &Value| r["Service"] == "evaluator" || r["Service"] == "forwarder";
    let expected = ["api", "evaluator", "evaluator", "forwarder", "ingestor"].map(|s| (s.to_owned(), true));
    let listed = eventually(WAIT, || async {
        let s = status(&http, &api_url).await?;
        let reported = s["Replicas"].as_array()?.iter().all(|r| !reports_lag(r) || r["LagMs"].is_u64());
        (replicas(&s) == expected && reported).then_some(s)
    })
    .await;
    for r in listed["Replicas"].as_array().unwrap() {
        assert_eq!(r["ReplicaID"].as_str().unwrap().len(), 8, "{r}");
        assert!(r["HeartbeatAgeMs"].as_u64().unwrap() <= 3000, "{r}");
        assert_eq!(r["LagMs"].is_u64(), reports_lag(r), "{r}");
    }

    // Killed: it shows dead (or is gone) once its lease is over, and the survivor takes
    // every partition over.
    evaluators[0].kill().await;
    let after = eventually(WAIT, || async {
        let s = status(&http, &api_url).await?;
        let live = alive(&s);
        let survivor = live.first().filter(|_| live.len() == 1)?;
        (partitions(survivor) == (0..PARTITIONS).collect::<Vec<_>>() && s["Unowned"].as_array()?.is_empty())
            .then(|| s.clone())
    })
    .await;
    let survivor = alive(&after)[0]["EvaluatorID"].as_str().unwrap().to_owned();
    assert!(ids.contains(&survivor), "the survivor is one of the two: {after}");
    let killed: Vec<&String> = ids.iter().filter(|id| **id != survivor).collect();
    for e in after["Evaluators"].as_array().unwrap().iter().filter(|e| e["EvaluatorID"] == *killed[0].as_str()) {
        assert_eq!(e["Alive"], false, "{after}");
        assert!(e["HeartbeatAgeMs"].as_u64().unwrap() > 1000, "{after}");
    }

    // Its replica dead within the lease, kept in the list for a while.
    let dead = eventually(WAIT, || async {
        let s = status(&http, &api_url).await?;
        let evaluators: Vec<bool> =
            replicas(&s).into_iter().filter(|(s, _)| s == "evaluator").map(|(_, a)| a).collect();
        (evaluators.len() == 2 && evaluators.iter().filter(|a| **a).count() == 1).then_some(())
    });
    dead.await;

    // A forwarder stopped cleanly leaves the list at once.
    forwarder.terminate(WAIT).await;
    let left = eventually(WAIT, || status(&http, &api_url)).await;
    assert!(!replicas(&left).iter().any(|(s, _)| s == "forwarder"), "{left}");

    drop(evaluators);
    drop(ingestor);
    drop(api);
    let name = database.rsplit('/').next().unwrap();
    zonecast_store::postgres::drop_database(&zonecast_tests::database_admin_url(), name).await.unwrap();
}
