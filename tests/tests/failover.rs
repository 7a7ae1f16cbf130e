//! Evaluators that claim their partitions: as separate processes on a NATS and a PostgreSQL of
//! the test's own, they split the partitions evenly, take over those of one killed, give theirs
//! up cleanly on SIGTERM, make room for one joining, and one frozen past its lease acts no more
//! for the partitions it lost. Through all of it, each device's ENTER and EXIT come exactly
//! once, and an EXIT closes the stay its ENTER opened.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use zonecast_bus::{Subjects, Subscription};
use zonecast_tests::nats::NatsServer;
use zonecast_tests::process::{Service, SiteEnv, free_port};
use zonecast_tests::{call_ok, eventually, exactly_once, fresh_database, post_positions};

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "failover-admin-key";
const PARTITIONS: u32 = 16;
const DEVICES: usize = 48;
/// How long after an evaluator is killed its devices' events may come at most here: five
/// default leases (1 s each) and the takeover, on a machine that may be running other tests.
const FAILOVER_BOUND: Duration = Duration::from_secs(8);

struct Site {
    http: reqwest::Client,
    api: String,
    ingestor: String,
    env: Box<dyn Fn(u16) -> Vec<(String, String)>>,
    evaluators: Vec<(Service, String)>,
    others: Vec<Service>,
    subjects: Subjects,
}

impl Site {
    async fn start(nats: &NatsServer, database: &str, evaluators: usize) -> Self {
        let prefix = format!("zc{}", uuid::Uuid::new_v4().simple());
        let secret = zonecast_runtime::keys::random_base64(32).unwrap();
        let site = SiteEnv {
            database: database.to_owned(),
            nats: nats.url(),
            secret,
            api_keys: format!("{KEY}:admin"),
            prefix: prefix.clone(),
            partitions: PARTITIONS,
        };
        let env = move |port: u16| site.at(port);
        let http = zonecast_tests::http_client();
        let (api_port, ingestor_port) = (free_port(), free_port());
        let mut api = Service::start("zonecast-api", env(api_port), api_port);
        api.healthy(&http, WAIT).await;
        // The ingestor is ready once the evaluators follow every partition: waited for after
        // they start.
        let ingestor = Service::start("zonecast-ingestor", env(ingestor_port), ingestor_port);
        let mut site = Self {
            http,
            api: format!("http://127.0.0.1:{api_port}"),
            ingestor: format!("http://127.0.0.1:{ingestor_port}"),
            env: Box::new(env),
            evaluators: Vec::new(),
            others: vec![api, ingestor],
            subjects: Subjects::new(prefix),
        };
        for _ in 0..evaluators {
            site.add_evaluator().await;
        }
        let (http, ingestor) = (site.http.clone(), &mut site.others[1]);
        ingestor.healthy(&http, WAIT).await;
        site
    }

    /// Starts one more evaluator, claiming its partitions.
    async fn add_evaluator(&mut self) {
        let port = free_port();
        let mut evaluator = Service::start("zonecast-evaluator", (self.env)(port), port);
        evaluator.healthy(&self.http, WAIT).await;
        self.evaluators.push((evaluator, format!("http://127.0.0.1:{port}/metrics")));
    }

    /// A sample of an evaluator's `/metrics` (`None` while it does not answer).
    async fn sample(&self, evaluator: usize, prefix: &str) -> Option<f64> {
        let metrics = self.http.get(&self.evaluators[evaluator].1).send().await.ok()?.text().await.ok()?;
        metrics.lines().find(|l| l.starts_with(prefix))?.rsplit(' ').next()?.parse().ok()
    }

    /// Waits until the evaluators `live` own every partition between them, each within one
    /// of its share; returns what each owns.
    async fn balanced(&self, live: &[usize]) -> Vec<u32> {
        eventually(WAIT, || async {
            let mut owned = Vec::new();
            for &e in live {
                owned.push(self.sample(e, "zonecast_evaluator_partitions_owned{").await? as u32);
            }
            let (min, max) = (owned.iter().min()?, owned.iter().max()?);
            (owned.iter().sum::<u32>() == PARTITIONS && max - min <= 1).then_some(owned)
        })
        .await
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        call_ok(&self.http, &self.api, KEY, method, path, body).await
    }

    /// One position per device, all inside the zone or all outside.
    async fn positions(&self, macs: &[String], inside: bool) {
        post_positions(&self.http, &self.ingestor, KEY, macs, if inside { 1.0 } else { 500.0 }).await;
    }

    async fn colliding(&self, zone: &str) -> usize {
        let z = self.call(reqwest::Method::GET, &format!("/v3/modules/zones/{zone}"), None).await;
        z["CollidingDevices"].as_array().unwrap().len()
    }
}

/// Devices spread over every partition.
fn devices() -> Vec<String> {
    let macs: Vec<String> = (0..DEVICES).map(|i| format!("0D:00:00:00:01:{i:02X}")).collect();
    let partitions: std::collections::HashSet<u32> =
        macs.iter().map(|m| m.parse::<zonecast_model::Mac>().unwrap().partition(PARTITIONS)).collect();
    assert!(partitions.len() as u32 > PARTITIONS / 2, "devices must cover most partitions: {partitions:?}");
    macs
}

/// Every exit closes the stay its device's enter opened.
fn same_stays(enters: &BTreeMap<String, Value>, exits: &BTreeMap<String, Value>) {
    for (mac, exit) in exits {
        assert_eq!(exit["Content"]["CollisionID"], enters[mac]["Content"]["CollisionID"], "{mac}: same stay");
        assert_eq!(exit["Content"]["Reason"], "position", "{mac}: {exit}");
    }
}

async fn site_with_zone(evaluators: usize) -> (NatsServer, String, Site, String, Subscription) {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let site = Site::start(&nats, &database, evaluators).await;
    let bus = zonecast_bus::connect(Some(&nats.url()), "failover-test").await.unwrap();
    let events = bus.subscribe(&site.subjects.events_all()).await.unwrap();
    let zone = site
        .call(
            reqwest::Method::POST,
            "/v3/modules/zones",
            Some(json!({"Name": "hall", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [10, 0, 0]]})),
        )
        .await;
    let zone = zone["ZoneID"].as_str().unwrap().to_owned();
    (nats, database, site, zone, events)
}

async fn drop_database(database: &str) {
    let name = database.rsplit('/').next().unwrap();
    zonecast_store::postgres::drop_database(&zonecast_tests::database_admin_url(), name).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluators_share_the_partitions_and_take_over_from_one_killed_one_leaving_and_one_joining() {
    let (_nats, database, mut site, zone, mut events) = site_with_zone(3).await;
    let macs = devices();
    assert_eq!(site.balanced(&[0, 1, 2]).await.iter().sum::<u32>(), PARTITIONS);

    site.positions(&macs, true).await;
    let enters = exactly_once(&mut events, "ZONE_ENTER", DEVICES, WAIT).await;
    eventually(WAIT, || async { (site.colliding(&zone).await == DEVICES).then_some(()) }).await;

    // Killed: the two others take its partitions over from the collisions it wrote, and the
    // exits of its devices, sent right after the kill, come within a few leases (the
    // benchmark has the figure; this bound leaves room for a busy machine).
    site.evaluators[0].0.kill().await;
    let killed = tokio::time::Instant::now();
    site.positions(&macs, false).await;
    let exits = exactly_once(&mut events, "ZONE_EXIT", DEVICES, WAIT).await;
    let waited = killed.elapsed();
    assert!(waited < FAILOVER_BOUND, "the exits came {waited:?} after the kill, over {FAILOVER_BOUND:?}");
    same_stays(&enters, &exits);
    assert_eq!(site.balanced(&[1, 2]).await, [8, 8]);

    // Joining: a new evaluator gets its share, and nothing is evaluated twice meanwhile.
    site.add_evaluator().await;
    site.balanced(&[1, 2, 3]).await;
    site.positions(&macs, true).await;
    let enters = exactly_once(&mut events, "ZONE_ENTER", DEVICES, WAIT).await;
    eventually(WAIT, || async { (site.colliding(&zone).await == DEVICES).then_some(()) }).await;

    // Leaving (SIGTERM): it hands its partitions over with their stays.
    site.evaluators[1].0.terminate(WAIT).await;
    assert_eq!(site.balanced(&[2, 3]).await, [8, 8]);
    site.positions(&macs, false).await;
    let exits = exactly_once(&mut events, "ZONE_EXIT", DEVICES, WAIT).await;
    same_stays(&enters, &exits);
    assert_eq!(site.colliding(&zone).await, 0);

    drop(site);
    drop_database(&database).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluator_frozen_past_its_lease_acts_no_more_for_the_partitions_it_lost() {
    let (_nats, database, site, zone, mut events) = site_with_zone(2).await;
    let macs = devices();
    site.balanced(&[0, 1]).await;
    site.positions(&macs, true).await;
    let enters = exactly_once(&mut events, "ZONE_ENTER", DEVICES, WAIT).await;
    eventually(WAIT, || async { (site.colliding(&zone).await == DEVICES).then_some(()) }).await;

    // Frozen (SIGSTOP) with its partitions' devices inside: the other takes them all over
    // once its lease is over, and sends the exits.
    site.evaluators[0].0.signal("-STOP");
    eventually(WAIT, || async {
        (site.sample(1, "zonecast_evaluator_partitions_owned{").await? as u32 == PARTITIONS).then_some(())
    })
    .await;
    site.positions(&macs, false).await;
    let exits = exactly_once(&mut events, "ZONE_EXIT", DEVICES, WAIT).await;
    same_stays(&enters, &exits);

    // Thawed: it finds its lease over and drops what it held, writes no stale collision and
    // publishes no event of its own; then it joins again and gets its share back.
    site.evaluators[0].0.signal("-CONT");
    site.balanced(&[0, 1]).await;
    let extra = tokio::time::timeout(Duration::from_secs(1), events.next()).await;
    assert!(extra.is_err(), "an event after the frozen evaluator came back: {extra:?}");
    assert_eq!(site.colliding(&zone).await, 0, "stale collisions written back");

    // And the site goes on exactly once from there.
    site.positions(&macs, true).await;
    let enters = exactly_once(&mut events, "ZONE_ENTER", DEVICES, WAIT).await;
    site.positions(&macs, false).await;
    same_stays(&enters, &exactly_once(&mut events, "ZONE_EXIT", DEVICES, WAIT).await);

    drop(site);
    drop_database(&database).await;
}
