//! Metrics as Prometheus takes them, in both deployment modes: every service's `/metrics`
//! passes `promtool check metrics`, serves every metric of the catalog it owns from start (with
//! `# HELP` and `# TYPE`) and none outside it, and the evaluators' device gauges add up to the
//! devices posted. The alert rules of `deploy/prometheus/` pass `promtool check rules` and
//! watch every loss counter; every metric the sources name is in the catalog.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use zonecast_runtime::metrics::{CATALOG, Kind, Owner, Presence, find};
use zonecast_tests::mosquitto::Broker;
use zonecast_tests::nats::NatsServer;
use zonecast_tests::process::{Service, free_port};
use zonecast_tests::{eventually, files_under, fresh_database};

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "metrics-admin-key";
/// Distinct devices posted, spread over every partition.
const DEVICES: usize = 40;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `promtool args`, with `input` on its standard input; fails with its output unless it
/// succeeds, or with the command that installs it when it is missing.
fn promtool(args: &[&str], input: &str) {
    let child =
        Command::new("promtool").args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut child =
        child.unwrap_or_else(|e| panic!("promtool does not run ({e}); install it with: apt-get install prometheus"));
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "promtool {args:?} failed:\n{text}\n--- input ---\n{input}");
}

/// One scrape: each family's `# TYPE` and whether it has `# HELP`, and every sample.
#[derive(Default)]
struct Scrape {
    types: BTreeMap<String, String>,
    helped: Vec<String>,
    samples: Vec<(String, String, f64)>,
}

impl Scrape {
    fn parse(text: &str) -> Self {
        let mut scrape = Self::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                scrape.helped.push(rest.split(' ').next().unwrap().to_owned());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                scrape.types.insert(name.to_owned(), kind.to_owned());
            } else if !line.starts_with('#') {
                let (series, value) = line.rsplit_once(' ').unwrap();
                let (name, labels) = series.split_once('{').unwrap_or((series, ""));
                scrape.samples.push((name.to_owned(), labels.trim_end_matches('}').to_owned(), value.parse().unwrap()));
            }
        }
        scrape
    }

    /// The samples of family `name` (a histogram's `_bucket`, `_sum` and `_count`).
    fn of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a (String, String, f64)> + 'a {
        self.samples.iter().filter(move |(sample, _, _)| {
            sample == name || ["_bucket", "_sum", "_count"].iter().any(|s| sample.strip_suffix(s) == Some(name))
        })
    }

    fn sum(&self, name: &str) -> f64 {
        self.samples.iter().filter(|(sample, _, _)| sample == name).map(|(_, _, v)| v).sum()
    }
}

/// A service whose metrics are scraped: its binary, where, and the parts of it.
struct Target {
    binary: &'static str,
    url: String,
    owners: Vec<Owner>,
}

impl Target {
    fn new(binary: &'static str, port: u16, owners: &[Owner]) -> Self {
        let mut all = vec![Owner::Process];
        all.extend_from_slice(owners);
        Self { binary, url: format!("http://127.0.0.1:{port}/metrics"), owners: all }
    }

    fn owns(&self, kind: Owner) -> bool {
        self.owners.contains(&kind)
    }

    /// Scrapes, checks the text with promtool and every family against the catalog, and that
    /// every metric this target owns and that exists by now (`presences`) is served.
    async fn check(&self, http: &reqwest::Client, presences: &[Presence]) -> Scrape {
        let response = http.get(&self.url).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{}", self.url);
        let text = response.text().await.unwrap();
        promtool(&["check", "metrics"], &text);
        let scrape = Scrape::parse(&text);
        for (name, kind) in &scrape.types {
            let metric = find(name).unwrap_or_else(|| panic!("{}: {name} is not in the catalog", self.binary));
            assert_eq!(kind, metric.kind.as_str(), "{}: type of {name}", self.binary);
            assert!(scrape.helped.contains(name), "{}: {name} has no # HELP", self.binary);
        }
        let expected =
            CATALOG.iter().filter(|m| m.owners.iter().any(|o| self.owns(*o)) && presences.contains(&m.presence));
        for metric in expected {
            assert!(scrape.types.contains_key(metric.name), "{}: {} has no # TYPE", self.binary, metric.name);
            assert!(scrape.of(metric.name).next().is_some(), "{}: no sample of {}", self.binary, metric.name);
            if metric.kind == Kind::Histogram {
                let le = scrape.of(metric.name).filter(|(s, _, _)| s.ends_with("_bucket")).count();
                assert!(le > metric.buckets().len(), "{}: {} without its buckets", self.binary, metric.name);
            }
        }
        let info = scrape.of("zonecast_build_info").map(|(_, labels, _)| labels.clone()).collect::<Vec<_>>();
        let expected = format!("binary=\"{}\",version=\"{}\"", self.binary, zonecast_runtime::metrics::VERSION);
        assert_eq!(info, [expected], "{}: build info", self.binary);
        scrape
    }
}

/// What each target serves from start: its own, and the MQTT input's on an ingestor (the
/// tests configure one).
fn at_start(target: &Target) -> Vec<Presence> {
    let mut presences = vec![Presence::Start];
    if target.owns(Owner::Ingestor) {
        presences.push(Presence::MqttInput);
    }
    presences
}

/// After a zone, a connection and positions: every metric.
const ALL: [Presence; 4] = [Presence::Start, Presence::MqttInput, Presence::Connection, Presence::Request];

/// Devices over both halves of the partitions: over both evaluators of either mode.
fn devices() -> Vec<String> {
    let macs: Vec<String> = (0..DEVICES).map(|i| format!("0D:00:00:00:{:02X}:{:02X}", i / 7, i * 37 % 256)).collect();
    let low = macs.iter().filter(|m| m.parse::<zonecast_model::Mac>().unwrap().partition(16) < 8).count();
    assert!(low > 0 && low < DEVICES, "the devices must cover both evaluators");
    macs
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> Value {
    eventually(WAIT, || async {
        let r = http.post(url).header("X-API-Key", KEY).json(&body).send().await.unwrap();
        match r.status() {
            StatusCode::OK => Some(r.json().await.unwrap()),
            StatusCode::SERVICE_UNAVAILABLE => None,
            other => panic!("POST {url} answered {other}: {}", r.text().await.unwrap_or_default()),
        }
    })
    .await
}

/// The checks of one deployment: at start, then after a zone, an MQTT connection and one
/// position of each device, until the evaluators count every device.
async fn exercise(targets: &[Target], api: &str, positions: &str, broker: &Broker) {
    let http = zonecast_tests::http_client();
    for target in targets {
        target.check(&http, &at_start(target)).await;
    }
    let zone = json!({"Name": "hall", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [10, 0, 0]]});
    post(&http, &format!("{api}/v3/modules/zones"), zone).await;
    let connection = json!({"host": "127.0.0.1", "port": broker.port, "TLS": false,
        "topics": [{"topic": "site/zones", "FilterChain": [{"FilterTemplate": "zone_events"}]}]});
    post(&http, &format!("{api}/v3/modules/mqtt/connections"), connection).await;
    let macs = devices();
    let body: Vec<Value> = macs.iter().map(|m| json!({"MAC": m, "Position": [1.0, 0, 0]})).collect();
    let answer = post(&http, &format!("{positions}/v3/positions"), Value::Array(body)).await;
    assert_eq!(answer["accepted"], DEVICES);
    let (mut counted, mut connections) = (0.0, 0);
    let settled = tokio::time::timeout(WAIT, async {
        loop {
            let (mut devices, mut with_connection) = (0.0, 0);
            for target in targets {
                let scrape = target.check(&http, &at_start(target)).await;
                devices += scrape.sum("zonecast_evaluator_devices");
                with_connection += usize::from(scrape.of("zonecast_forwarder_connected").next().is_some());
            }
            (counted, connections) = (devices, with_connection);
            if counted == DEVICES as f64 && connections > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await; // sleep-ok: polling interval of a bounded wait
        }
    })
    .await;
    assert!(settled.is_ok(), "the evaluators count {counted} devices of {DEVICES}; {connections} forwarders report");
    for target in targets {
        target.check(&http, &ALL).await;
    }
}

fn mqtt_input(broker: &Broker) -> [(String, String); 2] {
    [
        ("ZONECAST_INGEST_MQTT_URL".into(), format!("mqtt://127.0.0.1:{}", broker.port)),
        ("ZONECAST_INGEST_MQTT_TOPICS".into(), "rtls/#".into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_all_in_one_serves_every_metric_and_counts_every_device_once() {
    let broker = Broker::plain().await;
    let data = tempfile::tempdir().unwrap();
    let (port, ops) = (free_port(), free_port());
    let mut env: Vec<(String, String)> = [
        ("ZONECAST_DATA_DIR", data.path().to_str().unwrap()),
        ("ZONECAST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
        ("ZONECAST_OPS_ADDR", &format!("127.0.0.1:{ops}")),
        ("ZONECAST_API_KEYS", &format!("{KEY}:admin")),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    env.extend(mqtt_input(&broker));
    let mut zonecast = Service::start("zonecast", env, port);
    zonecast.healthy(&zonecast_tests::http_client(), WAIT).await;
    let parts = [Owner::Api, Owner::Ingestor, Owner::Evaluator, Owner::Forwarder];
    let base = format!("http://127.0.0.1:{port}");
    exercise(&[Target::new("zonecast", ops, &parts)], &base, &base, &broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_distributed_service_serves_its_metrics_and_the_evaluators_add_up_to_the_devices() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let broker = Broker::plain().await;
    let secret = zonecast_runtime::keys::random_base64(32).unwrap();
    let prefix = format!("zc{}", uuid::Uuid::new_v4().simple());
    let env = |port: u16, extra: &[(String, String)]| -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            ("ZONECAST_DATABASE_URL", database.as_str()),
            ("ZONECAST_NATS_URL", nats.url().as_str()),
            ("ZONECAST_SECRET_KEY", secret.as_str()),
            ("ZONECAST_API_KEYS", &format!("{KEY}:admin")),
            ("ZONECAST_SUBJECT_PREFIX", prefix.as_str()),
            // The two evaluators pin 0-7 and 8-15.
            ("ZONECAST_PARTITIONS", "16"),
            ("ZONECAST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
            ("ZONECAST_INGEST_HTTP_ADDR", &format!("127.0.0.1:{port}")),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        env.extend_from_slice(extra);
        env
    };
    let http = zonecast_tests::http_client();
    let (api, ops) = (free_port(), free_port());
    let mut services = vec![Service::start(
        "zonecast-api",
        env(api, &[("ZONECAST_OPS_ADDR".into(), format!("127.0.0.1:{ops}"))]),
        api,
    )];
    // The API makes the tables before the others read them.
    services[0].healthy(&http, WAIT).await;
    let mut targets = vec![Target::new("zonecast-api", ops, &[Owner::Nats, Owner::Api])];
    let ingestor = free_port();
    services.push(Service::start("zonecast-ingestor", env(ingestor, &mqtt_input(&broker)), ingestor));
    targets.push(Target::new("zonecast-ingestor", ingestor, &[Owner::Nats, Owner::Ingestor]));
    for range in ["0-7", "8-15"] {
        let port = free_port();
        let partitions = [("ZONECAST_EVALUATOR_PARTITIONS".to_owned(), range.to_owned())];
        services.push(Service::start("zonecast-evaluator", env(port, &partitions), port));
        targets.push(Target::new("zonecast-evaluator", port, &[Owner::Nats, Owner::Evaluator]));
    }
    let forwarder = free_port();
    services.push(Service::start("zonecast-forwarder", env(forwarder, &[]), forwarder));
    targets.push(Target::new("zonecast-forwarder", forwarder, &[Owner::Nats, Owner::Forwarder]));
    for service in &mut services {
        service.healthy(&http, WAIT).await;
    }
    exercise(&targets, &format!("http://127.0.0.1:{api}"), &format!("http://127.0.0.1:{ingestor}"), &broker).await;
    drop(services);
    let name = database.rsplit('/').next().unwrap();
    zonecast_store::postgres::drop_database(&zonecast_tests::database_admin_url(), name).await.unwrap();
}

#[test]
fn the_alert_rules_pass_promtool_and_watch_every_loss_counter() {
    let path = root().join("deploy/prometheus/zonecast-alerts.yml");
    promtool(&["check", "rules", path.to_str().unwrap()], "");
    let rules = std::fs::read_to_string(&path).unwrap();
    let exprs: Vec<&str> = rules.lines().filter_map(|l| l.trim().strip_prefix("expr: ")).collect();
    for metric in CATALOG.iter().filter(|m| m.loss) {
        assert!(exprs.iter().any(|e| e.contains(metric.name)), "no alert rule watches {}", metric.name);
    }
    for expr in &exprs {
        for word in
            expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| w.starts_with("zonecast_"))
        {
            let family = ["_bucket", "_sum", "_count"].iter().find_map(|s| word.strip_suffix(s)).unwrap_or(word);
            assert!(find(word).or(find(family)).is_some(), "an alert rule names {word}, which is not in the catalog");
        }
    }
}

/// Every metric name written in the sources of the services and shared crates is in the
/// catalog, so that none is served without its help text.
#[test]
fn every_metric_the_sources_name_is_in_the_catalog() {
    let mut named = 0;
    let sources =
        [root().join("common"), root().join("services")].iter().flat_map(|d| files_under(d)).collect::<Vec<_>>();
    for path in sources.into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")) {
        let text = std::fs::read_to_string(&path).unwrap();
        for macro_call in ["counter!(\"", "gauge!(\"", "histogram!(\"", "register_series(\""] {
            for (at, _) in text.match_indices(macro_call) {
                let name = text[at + macro_call.len()..].split('"').next().unwrap();
                assert!(find(name).is_some(), "{}: {name} is not in the catalog", path.display());
                named += 1;
            }
        }
    }
    assert!(named > 30, "only {named} metric names found in the sources");
}
