//! The ingestor seen from outside: positions in over HTTP, NATS and MQTT; normalised
//! LOCATION_RAW_UPDATE events out on their partition subjects, in both deployment modes.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use zonecast_tests::{
    Mode, PublishedPositions, READ_KEY, Server, WRITE_KEY, both_modes, eventually, next_json, sphere, test_config,
};

const WAIT: Duration = Duration::from_secs(10);

async fn post(server: &Server, key: Option<&str>, body: Vec<u8>) -> (StatusCode, Value) {
    let mut req = server.http.post(format!("{}/v3/positions", server.ingest_base)).body(body);
    if let Some(key) = key {
        req = req.header("X-API-Key", key);
    }
    let r = req.send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Collects `n` positions with their subjects.
async fn positions(sub: &mut PublishedPositions, n: usize) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while out.len() < n {
        let (subject, payload) = sub.next(WAIT).await;
        out.push((subject, serde_json::from_slice(&payload).unwrap()));
    }
    out
}

async fn every_payload_form_is_published_normalised_on_its_partition_subject(mode: Mode) {
    let server = Server::start(mode).await;
    let mut sub = server.published_positions().await;
    let event = json!({"Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T10:00:00.250Z",
        "Source": {"MAC": "0a:0b:0c:0d:0e:01", "GatewayURI": "gw-7"},
        "Content": {"Position": [1, 2, 3], "Velocity": [0.5, 0, 0], "Orientation": [1, 0, 0, 0], "Sequence": 42}});
    let body = json!([
        event,
        {"MAC": "0a-0b-0c-0d-0e-02", "Position": [4.5, 5, -6]},
        {"Type": "LOCATION_BATCH_UPDATE", "Content": [
            {"MAC": "0A:0B:0C:0D:0E:03", "Position": [0, 0, 0], "Timestamp": "2026-11-21T11:00:00+01:00"},
            {"Type": "LOCATION_RAW_UPDATE", "Source": {"MAC": "0a:0b:0c:0d:0e:04"}, "Content": {"Position": [9, 9, 9]}}]}
    ]);
    let before = chrono::Utc::now();
    let (status, answer) = post(&server, Some(WRITE_KEY), serde_json::to_vec(&body).unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer, json!({"accepted": 4, "rejected": []}));
    let mut got = positions(&mut sub, 4).await;
    got.sort_by(|a, b| a.1["Source"]["MAC"].as_str().cmp(&b.1["Source"]["MAC"].as_str()));
    for (subject, event) in &got {
        let mac = event["Source"]["MAC"].as_str().unwrap();
        assert_eq!(subject, &server.position_subject(&mac.parse().unwrap()), "partition subject of {mac}");
        assert_eq!(
            (event["Category"].as_str(), event["Type"].as_str()),
            (Some("LOCATION"), Some("LOCATION_RAW_UPDATE"))
        );
        assert_eq!(event["Source"]["SiteID"], 501);
    }
    let macs: Vec<&str> = got.iter().map(|(_, e)| e["Source"]["MAC"].as_str().unwrap()).collect();
    assert_eq!(macs, ["0A:0B:0C:0D:0E:01", "0A:0B:0C:0D:0E:02", "0A:0B:0C:0D:0E:03", "0A:0B:0C:0D:0E:04"]);
    let first = &got[0].1;
    assert_eq!(first["Timestamp"], "2026-11-21T10:00:00.250Z");
    assert_eq!(first["Source"]["GatewayURI"], "gw-7");
    assert_eq!(
        first["Content"],
        json!({"Position": [1.0, 2.0, 3.0], "Velocity": [0.5, 0, 0], "Orientation": [1, 0, 0, 0], "Sequence": 42})
    );
    assert_eq!(got[1].1["Content"]["Position"], json!([4.5, 5.0, -6.0]));
    assert_eq!(got[2].1["Timestamp"], "2026-11-21T10:00:00.000Z", "offsets become UTC");
    let received: chrono::DateTime<chrono::Utc> = got[3].1["Timestamp"].as_str().unwrap().parse().unwrap();
    assert!(received >= before - chrono::Duration::milliseconds(1), "a missing Timestamp is the time of receipt");
    server.stop().await;
}

async fn bad_elements_are_rejected_with_their_index_and_the_rest_accepted(mode: Mode) {
    let server = Server::start(mode).await;
    let mut sub = server.published_positions().await;
    let body = json!([
        {"MAC": "00:00:00:00:0F:01", "Position": [0, 0, 0]},
        {"MAC": "00:00:00:00:0F", "Position": [0, 0, 0]},
        {"MAC": "00:00:00:00:0F:02", "Position": [0, 0]},
        {"MAC": "00:00:00:00:0F:02", "Position": [0, 0, "INF"]},
        {"MAC": "00:00:00:00:0F:02", "Position": [0, 0, 0], "Timestamp": 5},
        {"Type": "ZONE_ENTER"},
        "text",
        {"MAC": "00:00:00:00:0F:03", "Position": [1, 1, 1]},
    ]);
    // 1e400 does not fit a double: the JSON parser refuses it, which spoils only its element.
    let text = serde_json::to_string(&body).unwrap().replace("\"INF\"", "1e400");
    let (status, answer) = post(&server, Some(WRITE_KEY), text.into_bytes()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["accepted"], 2);
    let rejected = answer["rejected"].as_array().unwrap();
    let indexes: Vec<u64> = rejected.iter().map(|r| r["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, [1, 2, 3, 4, 5, 6]);
    assert!(rejected[0]["message"].as_str().unwrap().starts_with("MAC:"), "{}", rejected[0]);
    assert_eq!(rejected[1]["message"], "Position: must be an array of three finite numbers");
    assert_eq!(rejected[2]["message"], "Position[2]: number out of range");
    assert_eq!(rejected[3]["message"], "Timestamp: must be an ISO 8601 string");
    let got = positions(&mut sub, 2).await;
    let macs: Vec<&str> = got.iter().map(|(_, e)| e["Source"]["MAC"].as_str().unwrap()).collect();
    assert_eq!(macs, ["00:00:00:00:0F:01", "00:00:00:00:0F:03"]);
    for (status, body, kind) in [
        (400, b"{\"MAC\":".to_vec(), "malformed"),
        (400, b"42".to_vec(), "malformed"),
        (413, vec![b' '; 300 * 1024], "malformed"),
    ] {
        let answer = post(&server, Some(WRITE_KEY), body).await;
        zonecast_tests::assert_error(&answer, status, kind);
    }
    zonecast_tests::assert_error(&post(&server, None, b"[]".to_vec()).await, 401, "unauthorized");
    zonecast_tests::assert_error(&post(&server, Some("wrong"), b"[]".to_vec()).await, 401, "unauthorized");
    zonecast_tests::assert_error(&post(&server, Some(READ_KEY), b"[]".to_vec()).await, 403, "forbidden");
    server.stop().await;
}

/// A `LOCATION_RAW_UPDATE` event as text, `content` written as it is (numbers beyond a double
/// cannot be built as JSON values).
fn event_text(mac: &str, content: &str) -> String {
    format!(
        r#"{{"Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE", "Source": {{"MAC": "{mac}"}}, "Content": {content}}}"#
    )
}

/// Reads positions until one of each of `macs` has arrived (others are skipped); their MACs,
/// sorted.
async fn until_seen(sub: &mut PublishedPositions, macs: &[&str]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    while !macs.iter().all(|m| seen.contains(*m)) {
        let event: Value = serde_json::from_slice(&sub.next(WAIT).await.1).unwrap();
        let mac = event["Source"]["MAC"].as_str().unwrap().to_owned();
        if macs.contains(&mac.as_str()) {
            seen.insert(mac);
        }
    }
    seen.into_iter().collect()
}

async fn a_number_out_of_range_spoils_only_its_element_in_every_posted_form(mode: Mode) {
    let server = Server::start(mode).await;
    let mut sub = server.published_positions().await;
    let send = |text: String| post(&server, Some(WRITE_KEY), text.into_bytes());
    let out = |index: u64, field: &str| json!({"index": index, "message": format!("{field}: number out of range")});

    let events = format!(
        "[{}, {}, {}, {}]",
        event_text("00:00:00:00:1A:01", r#"{"Position": [1, 2, 3]}"#),
        event_text("00:00:00:00:1A:02", r#"{"Position": [1e400, 2, 3]}"#),
        event_text("00:00:00:00:1A:03", r#"{"Position": [1, 2, 3], "Velocity": [0, 0, -1e400]}"#),
        event_text("00:00:00:00:1A:04", r#"{"Position": [1, 2, 3], "Sequence": 9}"#),
    );
    let answer = send(events).await;
    assert_eq!(
        answer,
        (
            StatusCode::OK,
            json!({"accepted": 2, "rejected": [out(1, "Content.Position[0]"), out(2, "Content.Velocity[2]")]})
        )
    );

    let compact = r#"[
        {"MAC": "00:00:00:00:1B:01", "Position": [1, 2, 3]},
        {"MAC": "00:00:00:00:1B:02", "Position": [1, 2, 3], "Orientation": [1, 0, 0, 1e400]},
        {"MAC": "00:00:00:00:1B:03", "Position": [1, 2, 3], "Sequence": -1e400},
        {"MAC": "00:00:00:00:1B:04", "Position": [1, 2, 3], "Timestamp": "2026-11-21T10:00:00Z"}
    ]"#;
    let answer = send(compact.to_owned()).await;
    assert_eq!(
        answer,
        (StatusCode::OK, json!({"accepted": 2, "rejected": [out(1, "Orientation[3]"), out(2, "Sequence")]}))
    );

    let mixed = format!(
        r#"[{}, {{"MAC": "00:00:00:00:1C:02", "Position": [0, -1e400, 0]}},
            {{"Type": "LOCATION_BATCH_UPDATE", "Content": [
                {{"MAC": "00:00:00:00:1C:03", "Position": [0, 0, 0]}},
                {{"MAC": "00:00:00:00:1C:04", "Position": [0, 0, 1e400]}}]}}]"#,
        event_text("00:00:00:00:1C:01", r#"{"Position": [1, 2, 3]}"#)
    );
    let answer = send(mixed).await;
    assert_eq!(
        answer,
        (
            StatusCode::OK,
            json!({"accepted": 2, "rejected": [out(1, "Position[1]"), out(2, "Content[1]: Position[2]")]})
        )
    );

    // A single object is element 0, whether its problem is a bad MAC or a number out of range.
    let answer = send(r#"{"MAC": "nope", "Position": [0, 0, 0]}"#.to_owned()).await;
    assert_eq!(
        (answer.0, &answer.1["accepted"], &answer.1["rejected"][0]["index"]),
        (StatusCode::OK, &json!(0), &json!(0))
    );
    let answer = send(r#"{"MAC": "00:00:00:00:1D:01", "Position": [0, 0, 1e400]}"#.to_owned()).await;
    assert_eq!(answer, (StatusCode::OK, json!({"accepted": 0, "rejected": [out(0, "Position[2]")]})));

    let got = until_seen(
        &mut sub,
        &[
            "00:00:00:00:1A:01",
            "00:00:00:00:1A:04",
            "00:00:00:00:1B:01",
            "00:00:00:00:1B:04",
            "00:00:00:00:1C:01",
            "00:00:00:00:1C:03",
        ],
    )
    .await;
    assert_eq!(got.len(), 6);

    let not_json = br#"[{"MAC": "00:00:00:00:1D:02", "Position": [0, 0, 1e400]}"#.to_vec();
    zonecast_tests::assert_error(&post(&server, Some(WRITE_KEY), not_json).await, 400, "malformed");
    server.stop().await;
}

async fn a_number_out_of_range_spoils_only_its_element_on_the_nats_and_mqtt_inputs(mode: Mode) {
    let (server, gateway) = Server::start_with_mqtt_gateway(mode).await;
    let mut sub = server.published_positions().await;
    let payload = |n: u8| {
        format!(
            r#"[{{"MAC": "00:00:00:00:{n:02X}:01", "Position": [1, 2, 3]}},
                {{"MAC": "00:00:00:00:{n:02X}:02", "Position": [1, 2, 1e400]}},
                {},
                {{"MAC": "00:00:00:00:{n:02X}:04", "Position": [4, 5, 6]}}]"#,
            event_text(&format!("00:00:00:00:{n:02X}:03"), r#"{"Position": [1, 2, 3], "Velocity": [-1e400, 0, 0]}"#)
        )
        .into_bytes()
    };

    let before = rejected_count(&metrics_text(&server).await, "nats");
    server.bus.publish(server.subjects.ingest(), payload(0x2A).into()).await.unwrap();
    assert_eq!(until_seen(&mut sub, &["00:00:00:00:2A:01", "00:00:00:00:2A:04"]).await.len(), 2);
    eventually(WAIT, || async { (rejected_count(&metrics_text(&server).await, "nats") >= before + 2.0).then_some(()) })
        .await;

    let before = rejected_count(&metrics_text(&server).await, "mqtt");
    gateway.publish(payload(0x2B)).await;
    assert_eq!(until_seen(&mut sub, &["00:00:00:00:2B:01", "00:00:00:00:2B:04"]).await.len(), 2);
    eventually(WAIT, || async { (rejected_count(&metrics_text(&server).await, "mqtt") >= before + 2.0).then_some(()) })
        .await;
    server.stop().await;
}

fn rejected_count(metrics: &str, input: &str) -> f64 {
    let prefix = format!("zonecast_ingest_rejected_total{{input=\"{input}\"}} ");
    metrics.lines().find_map(|l| l.strip_prefix(&prefix)).map_or(0.0, |v| v.trim().parse().unwrap())
}

async fn metrics_text(server: &Server) -> String {
    let (_, body) = server.raw(Method::GET, "/metrics", Some(READ_KEY), None).await;
    body.as_str().unwrap().to_owned()
}

async fn positions_on_the_ingest_subject_are_published_and_bad_ones_counted(mode: Mode) {
    let server = Server::start(mode).await;
    let mut sub = server.published_positions().await;
    let before = rejected_count(&metrics_text(&server).await, "nats");
    let ingest = server.subjects.ingest();
    for payload in [
        br#"not json"#.to_vec(),
        br#"{"MAC": "00:00:00:00:0E:01", "Position": [1, 2]}"#.to_vec(),
        br#"[{"MAC": "00:00:00:00:0E:02", "Position": [1, 2, 3]}, {"MAC": "bad"}]"#.to_vec(),
        br#"{"MAC": "00:00:00:00:0E:03", "Position": [4, 5, 6]}"#.to_vec(),
    ] {
        server.bus.publish(ingest.clone(), payload.into()).await.unwrap();
    }
    let got = positions(&mut sub, 2).await;
    let macs: Vec<&str> = got.iter().map(|(_, e)| e["Source"]["MAC"].as_str().unwrap()).collect();
    assert_eq!(macs, ["00:00:00:00:0E:02", "00:00:00:00:0E:03"], "bad payloads were skipped, the loop went on");
    eventually(WAIT, || async { (rejected_count(&metrics_text(&server).await, "nats") >= before + 3.0).then_some(()) })
        .await;
    server.stop().await;
}

async fn positions_from_an_rtls_broker_over_mqtt_are_ingested(mode: Mode) {
    let (server, gateway) = Server::start_with_mqtt_gateway(mode).await;
    let mut sub = server.published_positions().await;
    gateway.publish(br#"{"MAC": "aa:00:00:00:00:01", "Position": [1, 2, 3]}"#.to_vec()).await;
    let got = sub.next_matching(WAIT, |e| e["Source"]["MAC"] == "AA:00:00:00:00:01").await.expect("the position");
    assert_eq!(got["Content"]["Position"], json!([1.0, 2.0, 3.0]));
    gateway.publish(b"garbage".to_vec()).await;
    let batch =
        json!({"Type": "LOCATION_BATCH_UPDATE", "Content": [{"MAC": "aa:00:00:00:00:02", "Position": [0, 0, 0]}]});
    gateway.publish(serde_json::to_vec(&batch).unwrap()).await;
    let next = sub.next_matching(WAIT, |e| e["Source"]["MAC"] == "AA:00:00:00:00:02").await.expect("the position");
    assert_eq!(next["Content"]["Position"], json!([0.0, 0.0, 0.0]), "garbage before it was skipped");
    server.stop().await;
}

async fn a_posted_position_reaches_the_evaluator(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = server.create_zone(sphere("door", [3.0, 3.0, 0.0], 1.0)).await;
    let mut events = server.events().await;
    let (status, answer) =
        post(&server, Some(WRITE_KEY), br#"{"MAC": "00:00:00:00:0D:01", "Position": [3, 3.5, 0]}"#.to_vec()).await;
    assert_eq!((status, answer["accepted"].as_u64()), (StatusCode::OK, Some(1)));
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(enter["Type"], "ZONE_ENTER");
    assert_eq!(enter["Content"]["ZoneID"], zone["ZoneID"]);
    server.stop().await;
}

both_modes!(
    every_payload_form_is_published_normalised_on_its_partition_subject,
    bad_elements_are_rejected_with_their_index_and_the_rest_accepted,
    positions_on_the_ingest_subject_are_published_and_bad_ones_counted,
    positions_from_an_rtls_broker_over_mqtt_are_ingested,
    a_posted_position_reaches_the_evaluator,
    a_number_out_of_range_spoils_only_its_element_in_every_posted_form,
    a_number_out_of_range_spoils_only_its_element_on_the_nats_and_mqtt_inputs,
    per_position_subjects_are_published_only_when_asked_for,
);

/// Positions travel in batches per partition (over NATS stored, in one process handed over
/// decoded); with `ZONECAST_POSITION_SUBJECTS` each is published on its device's own subject too,
/// for taps of single devices, and without it none is.
async fn per_position_subjects_are_published_only_when_asked_for(mode: Mode) {
    for tap in [true, false] {
        let server = Server::start_configured(mode, |c| c.bus.positions.per_position_subjects = tap).await;
        let mac: zonecast_model::Mac = "00:00:00:00:0E:11".parse().unwrap();
        let subject = server.subjects.positions(mac.partition(server.config.bus.partitions), mac.as_str());
        let mut single = server.bus.subscribe(&server.subjects.positions_all()).await.unwrap();
        let mut batches = server.published_positions().await;
        let (status, _) =
            post(&server, Some(WRITE_KEY), br#"{"MAC": "00:00:00:00:0E:11", "Position": [1, 2, 3]}"#.to_vec()).await;
        assert_eq!(status, StatusCode::OK);
        let (batch_subject, stored) = batches.next(WAIT).await;
        assert_eq!(batch_subject, server.position_subject(&mac));
        if tap {
            let msg = tokio::time::timeout(WAIT, single.next()).await.expect("the tapped position").unwrap();
            assert_eq!(msg.subject, subject);
            assert_eq!(msg.payload, stored, "the same event bytes as in the batch");
        } else {
            // Published after the position (were it published on its subject): read up to it.
            let sentinel = server.subjects.positions(0, "FF:FF:FF:FF:FF:FF");
            server.bus.publish(sentinel.clone(), "{}".into()).await.unwrap();
            let msg = tokio::time::timeout(WAIT, single.next()).await.expect("the sentinel").unwrap();
            assert_eq!(msg.subject, sentinel, "no position on its own subject without the tap");
        }
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_input_answers_503_while_nats_is_down_and_accepts_again_after() {
    let mut nats = zonecast_tests::nats::NatsServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path()).ingestor();
    config.bus.nats_url = Some(zonecast_runtime::Secret::new(nats.url()));
    config.http = Some(zonecast_runtime::HttpConfig::at("127.0.0.1:0".parse().unwrap()));
    let shutdown = zonecast_runtime::Shutdown::new();
    let running = zonecast_ingestor::launch(config, shutdown.clone()).await.unwrap();
    let addr = running.addr.unwrap();
    let http = zonecast_tests::http_client();
    let post = || async {
        let r = http
            .post(format!("http://{addr}/v3/positions"))
            .header("X-API-Key", WRITE_KEY)
            .body(r#"{"MAC": "00:00:00:00:0C:01", "Position": [0, 0, 0]}"#)
            .send()
            .await
            .unwrap();
        let retry_after = r.headers().get(reqwest::header::RETRY_AFTER).map(|v| v.to_str().unwrap().to_owned());
        (r.status(), r.json::<Value>().await.unwrap(), retry_after)
    };
    assert_eq!(post().await.0, StatusCode::OK);
    nats.stop();
    let (status, body, retry_after) = eventually(WAIT, || async {
        let answer = post().await;
        (answer.0 == StatusCode::SERVICE_UNAVAILABLE).then_some(answer)
    })
    .await;
    zonecast_tests::assert_error(&(status, body), 503, "unavailable");
    assert_eq!(retry_after.as_deref(), Some("1"), "a 503 tells the client when to try again");
    // Readiness (and its former name) reports the bus; liveness stays 200, so the replica is
    // taken out of rotation, not restarted.
    for path in ["/readyz", "/healthz"] {
        let r = http.get(format!("http://{addr}{path}")).send().await.unwrap();
        let (status, health) = (r.status(), r.json::<Value>().await.unwrap());
        assert_eq!((status, health["bus"].as_str()), (StatusCode::SERVICE_UNAVAILABLE, Some("disconnected")), "{path}");
    }
    let live = http.get(format!("http://{addr}/livez")).send().await.unwrap().status();
    assert_eq!(live, StatusCode::OK, "liveness does not depend on the bus");
    // NATS back on the same port: the client reconnects and input is accepted again.
    nats.resume().await;
    eventually(Duration::from_secs(20), || async { (post().await.0 == StatusCode::OK).then_some(()) }).await;
    shutdown.cancel();
}

/// The position stream exists once the ingestor has started, before any position comes: the
/// first positions wait for their store only, not for the stream to be made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ingestor_makes_the_position_stream_at_start() {
    let nats = zonecast_tests::nats::NatsServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path()).ingestor();
    config.bus.nats_url = Some(zonecast_runtime::Secret::new(nats.url()));
    let prefix = config.bus.subject_prefix.clone();
    let shutdown = zonecast_runtime::Shutdown::new();
    let _running = zonecast_ingestor::launch(config, shutdown.clone()).await.unwrap();
    // Names as the services derive them; JetStream's own client reads the streams without
    // making them.
    let jetstream = async_nats::jetstream::new(async_nats::connect(nats.url()).await.unwrap());
    let name = zonecast_bus::positions::stream_name(&prefix);
    let mut stream = jetstream.get_stream(&name).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    let info = stream.info().await.unwrap();
    assert_eq!(info.config.subjects, [zonecast_bus::Subjects::new(prefix.clone()).position_rounds()], "{name}");
    assert_eq!(info.state.messages, 0, "{name}: made before any position came");
    shutdown.cancel();
}
