//! Limits that hold on every route that could cross them: each refused with 422 (413 for a body
//! too large to parse) and a message naming the field, before the expensive work, and changing
//! nothing; each at its default, and lower when configured (in code, and for the binaries by
//! variable and flag). Hostile inputs are sent to a zonecast process of the test's own (the
//! all-in-one binary, or the distributed API binary) whose peak resident memory is read from
//! `/proc` around each one.
//!
//! The process tests run the binaries in the target directory: build them first
//! (`cargo build -p zonecast -p zonecast-api`, which `cargo test --workspace` does).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;
use zonecast_model::Limits;
use zonecast_tests::process::{Service, free_port};
use zonecast_tests::{ADMIN_KEY, Mode, Server, WRITE_KEY, both_modes, fresh_database, json, nats_url, sphere};

/// Sends `body` with `key`, which must be refused 422 invalid_data changing nothing; the message.
async fn invalid(server: &Server, method: Method, path: &str, key: &str, body: &Value) -> String {
    server.refused(method, path, Some(key), Some(body.to_string().into()), 422, "invalid_data").await
}

fn macs(from: usize, n: usize) -> Vec<String> {
    (from..from + n).map(|i| format!("00:00:00:{:02X}:{:02X}:{:02X}", i >> 16, (i >> 8) & 0xFF, i & 0xFF)).collect()
}

/// A zone whose polygon has `vertices` vertices on a circle, repeating the first at the end when
/// `closed`.
fn polygon(vertices: usize, closed: bool) -> Value {
    let mut rows: Vec<Value> = (0..vertices)
        .map(|i| {
            let a = i as f64 * std::f64::consts::TAU / vertices as f64;
            json!([100.0 * a.cos(), 100.0 * a.sin(), 0.0])
        })
        .collect();
    if closed {
        rows.push(rows[0].clone());
    }
    rows.extend([json!([1.0, 0.0, 0.0]), json!([0.0, 0.0, 1.0])]);
    json!({"Name": "p", "GeometryType": "polygon", "GeometryData": rows})
}

fn regex(pattern: impl Into<String>) -> Value {
    json!({"Selector": "Source.MAC", "Type": "regex", "Match": pattern.into()})
}

/// An MQTT connection body with one topic per chain.
fn connection(chains: Vec<Vec<Value>>) -> Value {
    let topics: Vec<Value> = chains
        .into_iter()
        .enumerate()
        .map(|(i, chain)| json!({"topic": format!("t{i}"), "FilterChain": chain}))
        .collect();
    json!({"host": "127.0.0.1", "port": 1883, "TLS": false, "topics": topics})
}

const CONNECTIONS: &str = "/v3/modules/mqtt/connections";
const RADIUS: &str = "/v3/modules/zones/devices/radius";

fn radii(n: usize) -> Value {
    Value::Object(macs(0, n).into_iter().map(|m| (m, json!(0.5))).collect())
}

async fn a_device_list_never_grows_past_ten_thousand_devices(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["DeviceList"] = json!(macs(0, 10_001));
    let message = invalid(&server, Method::POST, "/v3/modules/zones", WRITE_KEY, &input).await;
    assert_eq!(message, "DeviceList: must have at most 10000 entries, got 10001");
    input["DeviceList"] = json!(macs(0, 9_999));
    let zone = server.create_zone(input).await;
    let devices = format!("/v3/modules/zones/{}/devices", zone["ZoneID"].as_str().unwrap());
    // Two new devices (and one already listed) would make 10,001.
    let body: Value = json!(macs(9_998, 3));
    let message = invalid(&server, Method::POST, &devices, WRITE_KEY, &body).await;
    assert_eq!(message, "DeviceList: would hold 10001 devices; a zone's DeviceList holds at most 10000");
    // One more fits exactly.
    assert_eq!(server.ok(Method::POST, &devices, Some(json!(macs(9_999, 1)))).await["success"], true);
    let now = server.ok(Method::GET, &format!("/v3/modules/zones/{}", zone["ZoneID"].as_str().unwrap()), None).await;
    assert_eq!(now["DeviceList"].as_array().unwrap().len(), 10_000);
    // A body longer than the limit is refused as a whole, naming no field but the rule.
    let message = invalid(&server, Method::POST, &devices, WRITE_KEY, &json!(macs(20_000, 10_001))).await;
    assert_eq!(message, "must have at most 10000 entries, got 10001");
    server.stop().await;
}

async fn an_info_event_message_and_a_radius_write_are_bounded(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["ZoneActions"] = json!([{"type": "info-event", "message": "é".repeat(1_025)}]);
    let message = invalid(&server, Method::POST, "/v3/modules/zones", WRITE_KEY, &input).await;
    assert_eq!(message, "ZoneActions[0].message: must be at most 1024 characters");
    input["ZoneActions"][0]["message"] = json!("é".repeat(1_024));
    server.create_zone(input).await;

    let message = invalid(&server, Method::PUT, RADIUS, WRITE_KEY, &radii(10_001)).await;
    assert_eq!(message, "must have at most 10000 entries, got 10001");
    assert_eq!(server.ok(Method::PUT, RADIUS, Some(radii(10_000))).await["success"], true);
    server.stop().await;
}

async fn a_polygon_takes_at_most_a_thousand_vertices_and_zone_actions_ten_thousand(mode: Mode) {
    // Ten thousand actions take more than the test servers' usual body limit.
    let server = Server::start_configured(mode, |c| c.http.limits.max_body_bytes = 1 << 20).await;
    let zones = "/v3/modules/zones";
    let message = invalid(&server, Method::POST, zones, WRITE_KEY, &polygon(1_001, false)).await;
    assert_eq!(message, "GeometryData: polygon takes at most 1000 vertices, got 1001");
    let message = invalid(&server, Method::POST, zones, WRITE_KEY, &polygon(1_002, false)).await;
    assert_eq!(message, "GeometryData: must have at most 1003 rows (a polygon of at most 1000 vertices), got 1004");
    // A closing vertex does not count.
    server.create_zone(polygon(1_000, true)).await;

    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["ZoneActions"] = json!(vec![json!({"type": "device-alarm"}); 10_001]);
    let message = invalid(&server, Method::POST, zones, WRITE_KEY, &input).await;
    assert_eq!(message, "ZoneActions: must have at most 10000 entries, got 10001");
    input["ZoneActions"] = json!(vec![json!({"type": "device-alarm"}); 10_000]);
    server.create_zone(input).await;
    server.stop().await;
}

async fn a_batch_takes_at_most_a_thousand_zones(mode: Mode) {
    let server = Server::start(mode).await;
    let zones: Vec<Value> = (0..1_001).map(|i| sphere(&format!("z{i}"), [0.0; 3], 1.0)).collect();
    let message = invalid(&server, Method::POST, "/v3/modules/zones/batch", WRITE_KEY, &json!(zones)).await;
    assert_eq!(message, "must have at most 1000 zones, got 1001");
    let message = invalid(&server, Method::PUT, "/v3/modules/zones/batch", WRITE_KEY, &json!(zones)).await;
    assert_eq!(message, "must have at most 1000 zones, got 1001");
    let created = server.ok(Method::POST, "/v3/modules/zones/batch", Some(json!(zones[..1_000]))).await;
    assert_eq!(created.as_array().unwrap().len(), 1_000);
    server.stop().await;
}

/// Topics, filters per chain and distinct regexes at their defaults; 128 filters of a Unicode
/// `\w{200}` once compiled for 21 s into gigabytes: each is refused now.
async fn a_connection_takes_a_hundred_topics_and_bounded_chains_and_regexes(mode: Mode) {
    // A hundred full chains take more than the test servers' usual body limit.
    let server = Server::start_configured(mode, |c| c.http.limits.max_body_bytes = 1 << 20).await;
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(vec![vec![]; 101])).await;
    assert_eq!(message, "topics: must have at most 100 entries, got 101");
    let all = json!({"FilterTemplate": "all"});
    let message =
        invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(vec![vec![all.clone(); 257]])).await;
    assert_eq!(message, "topics[0].FilterChain[256]: chain has more than 256 filters");
    // How soon and at what memory cost is measured on a process of its own (`memory` below).
    let filters: Vec<Value> = (0..128).map(|i| regex(format!("\\w{{200}}{i}"))).collect();
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(vec![filters])).await;
    assert!(
        message.starts_with("topics[0].FilterChain[0].Match: regex is too large when compiled (at most 256 KiB)"),
        "{message}"
    );

    // More distinct regexes than a connection may hold, spread over topics.
    let chains: Vec<Vec<Value>> = (0..2).map(|t| (0..70).map(|i| regex(format!("^{t}-{i}$"))).collect()).collect();
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(chains)).await;
    assert_eq!(message, "topics[1].FilterChain[58].Match: a connection may use at most 128 distinct regexes");
    // The product bound (25,600 filters) is what a hundred full chains hold: it cannot be
    // crossed while the other two are at their defaults.
    server.ok(Method::POST, CONNECTIONS, Some(connection(vec![vec![all; 256]; 100]))).await;
    server.stop().await;
}

/// Distinct Unicode patterns of about 280 KB compiled each, each just within the per-pattern
/// bound: 128 of them would take 36 MB.
fn heavy_patterns(n: usize) -> Vec<Value> {
    (0..n).map(|i| regex(format!("^\\w{{5}}{i}$"))).collect()
}

/// The compiled size of all a connection's regexes is bounded together (the compile time bound
/// is lifted here, so that only the size one can be crossed).
async fn a_connections_regexes_take_at_most_8_mib_together(mode: Mode) {
    let server = Server::start_configured(mode, |c| c.limits.regex_compile_ms = 60_000).await;
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(vec![heavy_patterns(128)])).await;
    assert!(message.starts_with("topics[0].FilterChain["), "{message}");
    assert!(
        message.ends_with(
            ".Match: the connection's regexes take more than 8 MiB compiled together; use fewer or smaller ones"
        ),
        "{message}"
    );
    server.stop().await;
}

/// With the size bounds lifted, compiling is stopped by the time bound: about 2 s in, not after
/// the whole thousand patterns.
async fn compiling_a_connections_regexes_stops_at_two_seconds(mode: Mode) {
    let server = Server::start_configured(mode, |c| {
        c.limits.regexes_per_connection = 1_000;
        c.limits.regex_total_bytes = 1 << 30;
    })
    .await;
    let chains: Vec<Vec<Value>> = heavy_patterns(1_000).chunks(250).map(<[Value]>::to_vec).collect();
    let started = Instant::now();
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &connection(chains)).await;
    let elapsed = started.elapsed();
    assert!(
        message
            .ends_with(".Match: the connection's regexes took more than 2000 ms to compile; use fewer or simpler ones"),
        "{message}"
    );
    assert!(elapsed < Duration::from_secs(10), "refused after {elapsed:?}");
    server.stop().await;
}

async fn configured_limits_are_the_ones_enforced(mode: Mode) {
    let limits = Limits {
        device_list: 3,
        zone_actions: 2,
        polygon_vertices: 4,
        batch_zones: 2,
        radii_per_write: 2,
        info_message_chars: 5,
        topics_per_connection: 2,
        filters_per_chain: 3,
        filters_per_connection: 4,
        regexes_per_connection: 3,
        regex_bytes: 8 * 1024,
        regex_total_bytes: 4 * 1024,
        regex_compile_ms: 2_000,
    };
    let server = Server::start_configured(mode, |c| c.limits = limits).await;
    let zones = "/v3/modules/zones";
    let refused =
        async |method: Method, path: &str, body: Value| invalid(&server, method, path, ADMIN_KEY, &body).await;

    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["DeviceList"] = json!(macs(0, 4));
    assert_eq!(refused(Method::POST, zones, input.clone()).await, "DeviceList: must have at most 3 entries, got 4");
    input["DeviceList"] = json!(macs(0, 2));
    input["ZoneActions"] = json!([{"type": "device-alarm"}, {"type": "device-alarm"}, {"type": "device-alarm"}]);
    assert_eq!(refused(Method::POST, zones, input.clone()).await, "ZoneActions: must have at most 2 entries, got 3");
    input["ZoneActions"] = json!([{"type": "info-event", "message": "sixsix"}]);
    assert_eq!(
        refused(Method::POST, zones, input.clone()).await,
        "ZoneActions[0].message: must be at most 5 characters"
    );
    input["ZoneActions"] = json!([{"type": "info-event", "message": "five5"}]);
    let zone = server.create_zone(input).await;
    let devices = format!("/v3/modules/zones/{}/devices", zone["ZoneID"].as_str().unwrap());
    assert_eq!(
        refused(Method::POST, &devices, json!(macs(2, 2))).await,
        "DeviceList: would hold 4 devices; a zone's DeviceList holds at most 3"
    );
    assert_eq!(refused(Method::POST, &devices, json!(macs(0, 4))).await, "must have at most 3 entries, got 4");

    assert_eq!(
        refused(Method::POST, zones, polygon(5, false)).await,
        "GeometryData: polygon takes at most 4 vertices, got 5"
    );
    assert_eq!(
        refused(Method::POST, zones, polygon(6, false)).await,
        "GeometryData: must have at most 7 rows (a polygon of at most 4 vertices), got 8"
    );
    server.create_zone(polygon(4, true)).await;
    let three = json!([sphere("a", [0.0; 3], 1.0), sphere("b", [0.0; 3], 1.0), sphere("c", [0.0; 3], 1.0)]);
    assert_eq!(refused(Method::POST, "/v3/modules/zones/batch", three).await, "must have at most 2 zones, got 3");
    assert_eq!(refused(Method::PUT, RADIUS, radii(3)).await, "must have at most 2 entries, got 3");

    let all = json!({"FilterTemplate": "all"});
    assert_eq!(
        refused(Method::POST, CONNECTIONS, connection(vec![vec![]; 3])).await,
        "topics: must have at most 2 entries, got 3"
    );
    assert_eq!(
        refused(Method::POST, CONNECTIONS, connection(vec![vec![all.clone(); 4]])).await,
        "topics[0].FilterChain[3]: chain has more than 3 filters"
    );
    assert_eq!(
        refused(Method::POST, CONNECTIONS, connection(vec![vec![all.clone(); 3], vec![all.clone(); 2]])).await,
        "topics[1].FilterChain[1]: the connection's chains hold more than 4 filters together"
    );
    let literals = connection(vec![vec![regex("a"), regex("b")], vec![regex("c"), regex("d")]]);
    assert_eq!(
        refused(Method::POST, CONNECTIONS, literals).await,
        "topics[1].FilterChain[1].Match: a connection may use at most 3 distinct regexes"
    );
    assert!(
        refused(Method::POST, CONNECTIONS, connection(vec![vec![regex("\\w")]]))
            .await
            .starts_with("topics[0].FilterChain[0].Match: regex is too large when compiled (at most 4 KiB)"),
        "a regex alone may take at most what the connection's regexes take together"
    );
    let anchored = connection(vec![vec![regex("^a$"), regex("^b$")], vec![regex("^c$")]]);
    assert_eq!(
        refused(Method::POST, CONNECTIONS, anchored).await,
        "topics[1].FilterChain[0].Match: the connection's regexes take more than 4 KiB compiled together; use fewer or \
         smaller ones"
    );
    // The same patterns on two topics are compiled once: they fit.
    let shared = connection(vec![vec![regex("^a$"), regex("^b$")], vec![regex("^a$"), regex("^b$")]]);
    server.ok(Method::POST, CONNECTIONS, Some(shared)).await;
    server.stop().await;
}

async fn mqtt_connections_are_created_only_up_to_the_configured_bound(mode: Mode) {
    let server = Server::start_configured(mode, |c| c.api.max_connections = 2).await;
    let body = json!({"host": "127.0.0.1", "port": 1883, "TLS": false, "topics": []});
    for _ in 0..2 {
        server.ok(Method::POST, CONNECTIONS, Some(body.clone())).await;
    }
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &body).await;
    assert_eq!(message, "at most 2 MQTT connections may exist; delete one first");
    server.stop().await;
}

both_modes!(
    mqtt_connections_are_created_only_up_to_the_configured_bound,
    a_device_list_never_grows_past_ten_thousand_devices,
    an_info_event_message_and_a_radius_write_are_bounded,
    a_polygon_takes_at_most_a_thousand_vertices_and_zone_actions_ten_thousand,
    a_batch_takes_at_most_a_thousand_zones,
    a_connection_takes_a_hundred_topics_and_bounded_chains_and_regexes,
    a_connections_regexes_take_at_most_8_mib_together,
    compiling_a_connections_regexes_stops_at_two_seconds,
    configured_limits_are_the_ones_enforced,
);

/// How far the server's resident memory may rise while it refuses one hostile input.
const GROWTH: u64 = 50 << 20;
/// How long refusing one may take (bodies of 8 MB included).
const QUICK: Duration = Duration::from_secs(2);

/// A zonecast process of the test's own: the all-in-one binary on SQLite and its in-process
/// bus, or the distributed API binary on a fresh PostgreSQL database and NATS.
struct Process {
    service: Service,
    base: String,
    http: reqwest::Client,
    _data_dir: tempfile::TempDir,
    /// The distributed API's database, dropped by [`Process::stop`].
    database: Option<String>,
}

impl Process {
    async fn start(mode: Mode, args: &[&str], env: &[(&str, &str)]) -> Self {
        // The HTTP client's TLS needs a provider, as in every binary.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let port = free_port();
        let data_dir = tempfile::tempdir().unwrap();
        let mut vars: Vec<(String, String)> = vec![
            ("ZONECAST_HTTP_ADDR".into(), format!("127.0.0.1:{port}")),
            ("ZONECAST_API_KEYS".into(), format!("{ADMIN_KEY}:admin")),
            ("ZONECAST_SECRET_KEY".into(), zonecast_runtime::keys::random_base64(32).unwrap()),
            ("ZONECAST_SUBJECT_PREFIX".into(), format!("zt{}", uuid::Uuid::new_v4().simple())),
        ];
        let mut database = None;
        let binary = match mode {
            Mode::AllInOne => {
                vars.push(("ZONECAST_DATA_DIR".into(), data_dir.path().display().to_string()));
                "zonecast"
            }
            Mode::Distributed => {
                let url = fresh_database().await;
                vars.push(("ZONECAST_DATABASE_URL".into(), url.clone()));
                vars.push(("ZONECAST_NATS_URL".into(), nats_url()));
                vars.extend(zonecast_tests::small_stream_env());
                database = Some(url);
                "zonecast-api"
            }
        };
        vars.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        let mut service = Service::start_with_args(binary, args, vars, port);
        let http = zonecast_tests::http_client();
        service.healthy(&http, Duration::from_secs(30)).await;
        let process = Self { service, base: format!("http://127.0.0.1:{port}"), http, _data_dir: data_dir, database };
        // One ordinary request first, so that what the first request sets up is not counted.
        let (status, answer) = process.send(Method::GET, "/v3/modules/zones", Vec::new()).await;
        assert_eq!(status, 200, "{answer}");
        process
    }

    /// Kills the process and drops its database: a test that gets here passed.
    async fn stop(mut self) {
        self.service.kill().await;
        if let Some(name) = self.database.as_deref().and_then(|url| url.rsplit('/').next()) {
            let _ = zonecast_store::postgres::drop_database(&zonecast_tests::database_admin_url(), name).await;
        }
    }

    /// A line of `/proc/<pid>/status`, in bytes.
    fn status(&self, key: &str) -> u64 {
        let pid = self.service.pid().expect("the process runs");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("no {key} in {status}"));
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    /// Starts a new peak: the kernel sets the high-water mark to the current resident size.
    fn reset_peak(&self) {
        let pid = self.service.pid().expect("the process runs");
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    }

    async fn send(&self, method: Method, path: &str, body: Vec<u8>) -> (u16, Value) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("X-API-Key", ADMIN_KEY)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap_or(Value::Null))
    }

    /// Runs `hostile`, measuring how much the server's peak resident memory rose above what it
    /// held before; the time it took.
    async fn measure<F: Future<Output = ()>>(&self, name: &str, hostile: F) -> Duration {
        let before = self.status("VmRSS:");
        self.reset_peak();
        let started = Instant::now();
        hostile.await;
        let elapsed = started.elapsed();
        let grown = self.status("VmHWM:").saturating_sub(before);
        eprintln!("{name}: peak resident memory +{:.1} MB, {elapsed:?}", grown as f64 / 1e6);
        assert!(grown < GROWTH, "{name}: the server's peak memory grew by {} MB", grown >> 20);
        elapsed
    }

    /// Sends `body`, which must be refused within `quick` with `status` and a message starting
    /// with `message`.
    #[allow(clippy::too_many_arguments)]
    async fn refused(
        &self,
        quick: Duration,
        name: &str,
        method: Method,
        path: &str,
        body: Vec<u8>,
        status: u16,
        message: &str,
    ) {
        let size = body.len();
        let elapsed = self
            .measure(name, async {
                let (got, answer) = self.send(method, path, body).await;
                assert_eq!(got, status, "{name} ({size} bytes): {answer}");
                let text = answer["message"].as_str().unwrap_or_default();
                assert!(text.starts_with(message), "{name}: {text}");
            })
            .await;
        assert!(elapsed < quick, "{name}: refused after {elapsed:?}");
    }
}

/// `n` copies of `item` separated by commas.
fn repeated(item: &str, n: usize) -> String {
    let mut out = String::with_capacity((item.len() + 1) * n);
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out
}

/// One hostile request and how it must be refused.
struct Hostile {
    name: &'static str,
    method: Method,
    path: String,
    body: Vec<u8>,
    status: u16,
    /// How the message starts.
    message: &'static str,
    /// How soon it must be refused.
    within: Duration,
}

/// Hostile requests at the default limits, each near the 8 MiB body limit or past what its
/// work would cost.
fn hostile_requests() -> Vec<Hostile> {
    let vertices = format!(r#"{{"GeometryType": "polygon", "GeometryData": [{}]}}"#, repeated("[0,0,0]", 1_000_000));
    let list = format!("[{}]", repeated(r#""00:00:00:00:00:01""#, 400_000));
    let map = format!("{{{}}}", repeated(r#""00:00:00:00:00:01": 1"#, 350_000));
    let mut chatty = sphere("chatty", [0.0; 3], 1.0);
    chatty["ZoneActions"] = json!([{"type": "info-event", "message": "x".repeat(8_000_000)}]);
    let unicode: Vec<Value> = (0..128).map(|i| regex(format!("\\w{{200}}{i}"))).collect();
    // No zone needs to exist: the body is refused before any is looked up.
    let devices = format!("/v3/modules/zones/{}/devices", uuid::Uuid::new_v4());
    vec![
        Hostile {
            name: "a polygon of 1,000,000 vertices",
            method: Method::POST,
            path: "/v3/modules/zones".into(),
            body: vertices.into(),
            status: 413,
            message: "request body too large: GeometryData: must have at most 20000 elements",
            within: QUICK,
        },
        Hostile {
            name: "400,000 devices added to a DeviceList",
            method: Method::POST,
            path: devices,
            body: list.into(),
            status: 413,
            message: "request body too large: must have at most 20000 elements",
            within: QUICK,
        },
        Hostile {
            name: "a radius write of 350,000 entries",
            method: Method::PUT,
            path: RADIUS.into(),
            body: map.into(),
            status: 413,
            message: "request body too large: must have at most 20000 members",
            within: QUICK,
        },
        Hostile {
            name: "an info message of 8,000,000 characters",
            method: Method::POST,
            path: "/v3/modules/zones".into(),
            body: chatty.to_string().into(),
            status: 422,
            message: "ZoneActions[0].message: must be at most 1024 characters",
            within: QUICK,
        },
        Hostile {
            name: "128 filters of \\w{200} in one connection",
            method: Method::POST,
            path: CONNECTIONS.into(),
            body: connection(vec![unicode]).to_string().into(),
            status: 422,
            message: "topics[0].FilterChain[0].Match: regex is too large when compiled",
            within: QUICK,
        },
        // Refused once 8 MiB of regexes are compiled, or 2 s of compiling spent (a slow machine,
        // a debug build): within the compile budget and a second.
        Hostile {
            name: "128 regexes of about 280 KB each",
            method: Method::POST,
            path: CONNECTIONS.into(),
            body: connection(vec![heavy_patterns(128)]).to_string().into(),
            status: 422,
            message: "topics[0].FilterChain[",
            within: Duration::from_millis(Limits::DEFAULT.regex_compile_ms) + Duration::from_secs(1),
        },
    ]
}

/// Each hostile request, sent to a fresh server at the default limits (so that no earlier one
/// left memory behind for it to reuse), is refused before the work it would cause, quickly and
/// within a bounded rise of the server's memory; and a thousand idle connections hold little.
async fn hostile_inputs_are_refused_quickly_and_within_bounded_memory(mode: Mode) {
    for hostile in hostile_requests() {
        let server = Process::start(mode, &[], &[]).await;
        let Hostile { name, method, path, body, status, message, within } = hostile;
        server.refused(within, name, method, &path, body, status, message).await;
        server.stop().await;
    }

    // A thousand clients that connect and send nothing. Once a request on the next connection is
    // answered, the server has accepted them all (it accepts in order).
    let server = Process::start(mode, &[], &[]).await;
    let authority = server.base.trim_start_matches("http://").to_owned();
    server
        .measure("1,000 idle HTTP connections", async {
            let mut idle = Vec::new();
            for _ in 0..1_000 {
                idle.push(tokio::net::TcpStream::connect(&authority).await.unwrap());
            }
            let answer = zonecast_tests::http_client().get(format!("{}/livez", server.base)).send().await.unwrap();
            assert_eq!(answer.status(), 200);
            drop(idle);
        })
        .await;
    server.stop().await;
}

/// The all-in-one binary takes every limit from its `ZONECAST_LIMIT_*` variables and
/// `--limit-*` flags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_all_in_one_binary_takes_its_limits_from_variables_and_flags() {
    let server = Process::start(
        Mode::AllInOne,
        &["--limit-batch-zones=2", "--limit-polygon-vertices", "4", "--limit-regex-compile-ms=1"],
        &[
            ("ZONECAST_LIMIT_DEVICE_LIST", "3"),
            ("ZONECAST_LIMIT_REGEX_BYTES", "8192"),
            ("ZONECAST_LIMIT_INFO_MESSAGE_CHARS", "5"),
            ("ZONECAST_LIMIT_RADII_PER_WRITE", "2"),
        ],
    )
    .await;
    let send = async |method: Method, path: &str, body: Value| {
        let (status, answer) = server.send(method, path, body.to_string().into()).await;
        assert_eq!(status, 422, "{answer}");
        answer["message"].as_str().unwrap().to_owned()
    };
    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["DeviceList"] = json!(macs(0, 4));
    assert_eq!(send(Method::POST, "/v3/modules/zones", input).await, "DeviceList: must have at most 3 entries, got 4");
    let mut input = sphere("gate", [0.0; 3], 1.0);
    input["ZoneActions"] = json!([{"type": "info-event", "message": "sixsix"}]);
    assert_eq!(
        send(Method::POST, "/v3/modules/zones", input).await,
        "ZoneActions[0].message: must be at most 5 characters"
    );
    assert_eq!(send(Method::PUT, RADIUS, radii(3)).await, "must have at most 2 entries, got 3");
    let three = json!([sphere("a", [0.0; 3], 1.0), sphere("b", [0.0; 3], 1.0), sphere("c", [0.0; 3], 1.0)]);
    assert_eq!(send(Method::POST, "/v3/modules/zones/batch", three).await, "must have at most 2 zones, got 3");
    assert_eq!(
        send(Method::POST, "/v3/modules/zones", polygon(5, false)).await,
        "GeometryData: polygon takes at most 4 vertices, got 5"
    );
    let message = send(Method::POST, CONNECTIONS, connection(vec![vec![regex("\\w")]])).await;
    assert!(message.starts_with("topics[0].FilterChain[0].Match: regex is too large when compiled (at most 8 KiB)"));
    // A hundred and twenty patterns take well over a millisecond to compile together.
    let ascii: Vec<Value> = (0..120).map(|i| regex(format!("^(?-u:\\w){{40}}{i}$"))).collect();
    let message = send(Method::POST, CONNECTIONS, connection(vec![ascii])).await;
    assert!(message.ends_with("took more than 1 ms to compile; use fewer or simpler ones"), "{message}");
    server.stop().await;
}

mod memory {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn all_in_one() {
        hostile_inputs_are_refused_quickly_and_within_bounded_memory(Mode::AllInOne).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn distributed() {
        hostile_inputs_are_refused_quickly_and_within_bounded_memory(Mode::Distributed).await;
    }
}
