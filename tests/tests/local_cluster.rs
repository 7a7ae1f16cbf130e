//! `deploy/run-distributed.sh` as the README tells a new user to run it: on a PostgreSQL role
//! and database that do not exist yet, it creates them, starts the API, an ingestor, two
//! evaluators and a forwarder on this machine's PostgreSQL and NATS, and prints where each
//! listens; a zone and positions sent through it reach an MQTT broker as a zone entry; SIGTERM
//! stops every service it started.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::process::{binary, free_port};

const WAIT: Duration = Duration::from_secs(120);

/// Drops the role the script made, as the PostgreSQL superuser the tests use.
async fn drop_role(role: &str) {
    let (client, connection) =
        tokio_postgres::connect(&zonecast_tests::database_admin_url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute(&format!("DROP ROLE IF EXISTS \"{role}\"")).await.unwrap();
}

/// POSTs `body` to `url` with the admin key; panics unless it succeeds.
async fn call(http: &reqwest::Client, key: &str, url: &str, body: Value) -> Value {
    let response = http.post(url).header("X-API-Key", key.trim()).json(&body).send().await.unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{url}: {status} {body}");
    body
}

/// The script's process group, ended on drop so a failing test leaves no service running.
struct Script(tokio::process::Child);

impl Drop for Script {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            let _ = std::process::Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).status();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_distributed_script_creates_its_database_starts_every_service_and_forwards_an_entry_to_mqtt() {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (role, database) = (format!("zc_test_role_{id}"), format!("zc_test_{id}"));
    let url = format!("postgres://{role}:pw-{id}@127.0.0.1:5432/{database}");
    let state = tempfile::tempdir().unwrap();
    let bin = binary("zonecast-api").parent().unwrap().to_owned();
    let [api, ingest, evaluator_1, evaluator_2, forwarder] = [(); 5].map(|()| format!("127.0.0.1:{}", free_port()));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/run-distributed.sh");
    let mut command = tokio::process::Command::new("bash");
    command
        .arg(script)
        .env("BIN", &bin)
        .env("STATE_DIR", state.path())
        .env("ZONECAST_DATABASE_URL", &url)
        .env("ZONECAST_NATS_URL", zonecast_tests::nats_url())
        .env("ZONECAST_SUBJECT_PREFIX", format!("zt{id}"))
        .envs(zonecast_tests::small_stream_env())
        .env("API_ADDR", &api)
        .env("INGEST_ADDR", &ingest)
        .env("EVALUATOR_ADDRS", format!("{evaluator_1} {evaluator_2}"))
        .env("FORWARDER_ADDR", &forwarder)
        .env_remove("ZONECAST_SECRET_KEY")
        .env_remove("ZONECAST_API_KEYS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    let mut script = Script(command.spawn().expect("bash runs the script"));
    let mut lines = BufReader::new(script.0.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let done = line.starts_with("Ctrl-C stops them all");
            printed.push(line);
            if done {
                return;
            }
        }
        panic!("the script ended before every service was ready:\n{}", printed.join("\n"));
    })
    .await
    .unwrap_or_else(|_| panic!("the services were not ready within {WAIT:?}"));
    let printed = printed.join("\n");
    assert!(printed.contains(&format!("creating PostgreSQL role {role} and database {database}")), "{printed}");
    for addr in [&api, &ingest, &evaluator_1, &evaluator_2, &forwarder] {
        assert!(printed.contains(addr.as_str()), "{addr} is not among the addresses printed:\n{printed}");
    }

    let key = std::fs::read_to_string(state.path().join("admin.key")).unwrap();
    let http = zonecast_tests::http_client();
    let broker = Broker::plain().await;
    let mut subscriber = Subscriber::new(&broker, "site/#").await;
    let connection = json!({"host": "127.0.0.1", "port": broker.port, "TLS": false,
        "topics": [{"topic": "site/zones", "FilterChain": [{"FilterTemplate": "zone_events"}]}]});
    call(&http, &key, &format!("http://{api}/v3/modules/mqtt/connections"), connection).await;
    let dock = zonecast_tests::sphere("dock", [0.0, 0.0, 0.0], 5.0);
    let zone = call(&http, &key, &format!("http://{api}/v3/modules/zones"), dock).await;
    let zone_id = zone["ZoneID"].as_str().unwrap().to_owned();
    // A device walking in and out of the zone until its entry arrives: the forwarder takes the
    // new connection, and the evaluators the new zone, a moment after the API has answered.
    let mac = "0A:0B:0C:0D:0E:0F";
    let walker = tokio::spawn({
        let (http, ingest, key) = (http.clone(), ingest.clone(), key.trim().to_owned());
        async move {
            for x in [50.0, 1.0].into_iter().cycle() {
                let body = json!([{"MAC": mac, "Position": [x, 0.0, 0.0]}]);
                let url = format!("http://{ingest}/v3/positions");
                let response = http.post(url).header("X-API-Key", &key).json(&body).send().await.unwrap();
                assert!(response.status().is_success(), "positions: {}", response.status());
                tokio::time::sleep(Duration::from_millis(250)).await; // sleep-ok: the device's report interval
            }
        }
    });
    let got = subscriber.until(WAIT, |_, event| event["Type"] == "ZONE_ENTER").await;
    walker.abort();
    let entered = &got.last().unwrap().1;
    assert_eq!(entered["Source"]["MAC"], json!(mac), "{entered}");
    assert_eq!(entered["Content"]["ZoneID"], json!(zone_id), "{entered}");

    let pid = script.0.id().unwrap();
    let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    let status = tokio::time::timeout(WAIT, script.0.wait()).await.expect("the script stops").unwrap();
    assert!(status.success(), "the script exited with {status} on SIGTERM");
    let still_running =
        std::process::Command::new("pgrep").args(["-g", &pid.to_string()]).output().expect("pgrep runs").stdout;
    assert!(
        still_running.is_empty(),
        "services still running after SIGTERM: {}",
        String::from_utf8_lossy(&still_running)
    );
    zonecast_tests::drop_fresh_database(&url).await;
    drop_role(&role).await;
}
