//! http-request zone actions as a receiver sees them: a real HTTP server started by the test
//! records every request. Each carries the event's EventID as Idempotency-Key, is signed with
//! the action's secret when it has one, and is tried again on 503 but not on 400; the secret is
//! never shown by the API and never stored in clear, neither in the store nor in the journal.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use zonecast_tests::{Mode, Server, both_modes, sphere, test_config};

const WAIT: Duration = Duration::from_secs(10);
const SECRET: &str = "receiver-shared-secret-0123456789";

/// One request as the receiver got it.
#[derive(Debug)]
struct Received {
    head: String,
    body: Vec<u8>,
}

impl Received {
    /// The value of header `name` (any case), if sent once; panics if sent twice.
    fn header(&self, name: &str) -> Option<String> {
        let values: Vec<String> = self
            .head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .collect();
        assert!(values.len() <= 1, "{name} sent {} times", values.len());
        values.into_iter().next()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// An HTTP receiver on a free port: answers each request with the next status of `script`
/// (with its extra header lines), 200 once the script is used up, and hands every request to
/// the channel once it is answered.
async fn receiver(script: &[(u16, &str)]) -> (String, mpsc::UnboundedReceiver<Received>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let script: Arc<Mutex<VecDeque<(u16, String)>>> =
        Arc::new(Mutex::new(script.iter().map(|(s, h)| (*s, (*h).to_owned())).collect()));
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let (script, tx) = (script.clone(), tx.clone());
            tokio::spawn(async move {
                let Some((head, body)) = zonecast_tests::read_http_request(&mut socket).await else { return };
                let received = Received { head, body };
                let (status, extra) = script.lock().unwrap().pop_front().unwrap_or((200, String::new()));
                let answer = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n{extra}\r\n");
                socket.write_all(answer.as_bytes()).await.unwrap();
                socket.shutdown().await.unwrap();
                let _ = tx.send(received);
            });
        }
    });
    (url, rx)
}

async fn next(requests: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    tokio::time::timeout(WAIT, requests.recv()).await.expect("a request within the timeout").unwrap()
}

/// `sha256=<hex HMAC-SHA256 of body keyed with secret>`, as a receiver computes it.
fn expected_signature(secret: &str, body: &[u8]) -> String {
    let tag = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes()), body);
    format!("sha256={}", tag.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn mac(n: u32) -> String {
    format!("00:00:00:00:0A:{n:02X}")
}

fn with_action(name: &str, centre: [f64; 3], action: Value) -> Value {
    let mut zone = sphere(name, centre, 1.0);
    zone["ZoneActions"] = json!([action]);
    zone
}

async fn requests_carry_the_event_id_as_idempotency_key_and_a_signature_only_the_secret_verifies(mode: Mode) {
    let server = Server::start(mode).await;
    let (signed_url, mut signed) = receiver(&[]).await;
    let (plain_url, mut plain) = receiver(&[]).await;
    let zone = server
        .create_zone(with_action(
            "signed",
            [0.0, 0.0, 0.0],
            json!({"type": "http-request", "uri": signed_url, "secret": SECRET, "headers": {"X-Site": "north"}}),
        ))
        .await;
    server.create_zone(with_action("plain", [50.0, 0.0, 0.0], json!({"type": "http-request", "uri": plain_url}))).await;
    server.position(&mac(1), [0.0, 0.0, 0.0], Utc::now()).await;
    let request = next(&mut signed).await;
    let event = request.json();
    assert_eq!(event["Type"], "ZONE_ENTER");
    assert_eq!(event["Content"]["ZoneID"], zone["ZoneID"]);
    assert_eq!(request.header("Idempotency-Key").as_deref(), event["EventID"].as_str());
    assert_eq!(request.header("X-Site").as_deref(), Some("north"));
    assert_eq!(request.header("Content-Type").as_deref(), Some("application/json"));
    let signature = request.header("X-Zonecast-Signature").expect("a signature");
    assert_eq!(signature, expected_signature(SECRET, &request.body), "the signature verifies with the secret");
    assert_ne!(signature, expected_signature("another-secret-0123456789", &request.body));

    // An action without a secret: unsigned, with its Idempotency-Key all the same.
    server.position(&mac(2), [50.0, 0.0, 0.0], Utc::now()).await;
    let request = next(&mut plain).await;
    assert_eq!(request.header("Idempotency-Key").as_deref(), request.json()["EventID"].as_str());
    assert_eq!(request.header("X-Zonecast-Signature"), None);

    // The zone written back as GET shows it (without the secret) keeps signing with it.
    let path = format!("/v3/modules/zones/{}", zone["ZoneID"].as_str().unwrap());
    let mut shown = server.ok(Method::GET, &path, None).await;
    assert_eq!(shown["ZoneActions"][0]["has_secret"], json!(true));
    shown["Name"] = json!("signed, renamed");
    server.ok(Method::PUT, &path, Some(shown)).await;
    server.position(&mac(3), [0.0, 0.0, 0.0], Utc::now()).await;
    let request = next(&mut signed).await;
    assert_eq!(request.json()["Content"]["ZoneName"], "signed, renamed");
    assert_eq!(request.header("X-Zonecast-Signature"), Some(expected_signature(SECRET, &request.body)));
    server.stop().await;
}

async fn a_receiver_answering_503_twice_gets_the_same_request_a_third_time_and_it_is_delivered(mode: Mode) {
    let server = Server::start(mode).await;
    let (url, mut requests) = receiver(&[(503, ""), (503, "retry-after: 0\r\n")]).await;
    server
        .create_zone(with_action(
            "busy",
            [0.0, 0.0, 0.0],
            json!({"type": "http-request", "uri": url, "secret": SECRET}),
        ))
        .await;
    server.position(&mac(4), [0.0, 0.0, 0.0], Utc::now()).await;
    let tries = [next(&mut requests).await, next(&mut requests).await, next(&mut requests).await];
    let key = tries[0].header("Idempotency-Key").unwrap();
    assert_eq!(Some(key.as_str()), tries[0].json()["EventID"].as_str());
    for request in &tries {
        assert_eq!(request.header("Idempotency-Key"), Some(key.clone()), "every try carries the same key");
        assert_eq!(request.body, tries[0].body, "every try carries the same body");
        assert_eq!(request.header("X-Zonecast-Signature"), Some(expected_signature(SECRET, &request.body)));
    }
    // The third was answered 200: delivered, so no fourth comes; the tries were counted.
    let (_, metrics) = server.raw(Method::GET, "/metrics", Some(zonecast_tests::READ_KEY), None).await;
    let text = metrics.as_str().unwrap();
    let retries: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("zonecast_forwarder_http_action_retries_total "))
        .map(|v| v.trim().parse().unwrap())
        .expect("retry counter exported");
    assert!(retries >= 2.0, "{retries}");
    assert!(text.contains(r#"zonecast_forwarder_http_actions_total{outcome="success"}"#), "{text}");
    server.stop().await;
}

async fn a_receiver_answering_400_is_not_asked_again(mode: Mode) {
    let server = Server::start(mode).await;
    let (url, mut requests) = receiver(&[(400, "")]).await;
    server
        .create_zone(with_action("strict", [0.0, 0.0, 0.0], json!({"type": "http-request", "uri": url, "on": "both"})))
        .await;
    let d = mac(5);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let refused = next(&mut requests).await;
    assert_eq!(refused.json()["Type"], "ZONE_ENTER");
    server.position(&d, [9.0, 0.0, 0.0], Utc::now()).await;
    let after = next(&mut requests).await;
    assert_eq!(after.json()["Type"], "ZONE_EXIT", "the refused enter was sent again");
    assert_ne!(after.header("Idempotency-Key"), refused.header("Idempotency-Key"));
    // A retry would come within 200 ms of the refusal: a second of silence shows there is none.
    let more = tokio::time::timeout(Duration::from_secs(1), requests.recv()).await;
    assert!(more.is_err(), "a request came after the 400: {more:?}");
    server.stop().await;
}

/// Every byte the store holds: the SQLite files, or the zones' rows in PostgreSQL.
async fn stored_bytes(server: &Server) -> Vec<u8> {
    match server.mode {
        Mode::AllInOne => {
            let file = server.data_dir.path().join(zonecast::DATABASE_FILE);
            let mut bytes = std::fs::read(&file).unwrap();
            let wal = file.with_file_name(format!("{}-wal", zonecast::DATABASE_FILE));
            if wal.exists() {
                bytes.extend(std::fs::read(&wal).unwrap());
            }
            bytes
        }
        Mode::Distributed => {
            let url = server.database_url.as_deref().unwrap();
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
            let connection = tokio::spawn(connection);
            let rows = client.query("SELECT spec::text FROM zones", &[]).await.unwrap();
            let bytes = rows.iter().flat_map(|r| r.get::<_, String>(0).into_bytes()).collect();
            drop(client);
            connection.await.unwrap().unwrap();
            bytes
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

async fn the_secret_is_never_shown_and_stored_only_sealed(mode: Mode) {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path());
    let keys = zonecast_runtime::Keys::from_secret(config.secret_key.as_ref().unwrap()).unwrap();
    let server = Server::start_with(mode, config, dir).await;
    let created = server
        .create_zone(with_action(
            "vault",
            [0.0, 0.0, 0.0],
            json!({"type": "http-request", "uri": "http://127.0.0.1:9/hook", "secret": SECRET}),
        ))
        .await;
    let id = created["ZoneID"].as_str().unwrap();
    let single = server.ok(Method::GET, &format!("/v3/modules/zones/{id}"), None).await;
    let list = server.ok(Method::GET, "/v3/modules/zones", None).await;
    for shown in [&created, &single, &list] {
        let text = shown.to_string();
        assert!(!text.contains(SECRET) && !text.contains("secret_sealed"), "{text}");
    }
    assert_eq!(
        single["ZoneActions"],
        json!([{"type": "http-request", "uri": "http://127.0.0.1:9/hook", "method": "POST", "headers": {}, "on": "enter", "has_secret": true}])
    );

    // In the store: the zone's row holds the secret sealed with the server's key, never in clear.
    let stored = stored_bytes(&server).await;
    assert!(contains(&stored, b"vault"), "the zone's row was not seen");
    assert!(contains(&stored, b"secret_sealed"), "no sealed secret stored");
    assert!(!contains(&stored, SECRET.as_bytes()), "the secret is stored in clear");
    let sqlite = server.data_dir.path().join(zonecast::DATABASE_FILE);
    let store = zonecast_store::open(server.database_url.as_deref(), 2, &sqlite).await.unwrap();
    let zone = store.get_zone(id.parse().unwrap()).await.unwrap();
    let zonecast_model::ZoneAction::HttpRequest { secret: Some(zonecast_model::ActionSecret::Sealed(sealed)), .. } =
        &zone.zone_actions[0]
    else {
        panic!("{:?}", zone.zone_actions)
    };
    assert_eq!(keys.open_text(sealed).unwrap().expose(), SECRET);

    // null removes it.
    let path = format!("/v3/modules/zones/{id}");
    let removed = json!({"ZoneActions": [{"type": "http-request", "uri": "http://127.0.0.1:9/hook", "secret": null}]});
    server.ok(Method::PUT, &path, Some(removed)).await;
    let shown = server.ok(Method::GET, &path, None).await;
    assert_eq!(shown["ZoneActions"][0]["has_secret"], json!(false));
    server.stop().await;
}

async fn a_request_waiting_in_the_journal_holds_the_secret_sealed(mode: Mode) {
    use futures::StreamExt;
    use zonecast_bus::journal::Kind;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path());
    let keys = zonecast_runtime::Keys::from_secret(config.secret_key.as_ref().unwrap()).unwrap();
    let server = Server::start_with(mode, config, dir).await;
    // A consumer of the test's own sees every request stored from now on.
    let journal = server.journal();
    journal.create_consumer(Kind::Actions, "audit", 10).await.unwrap();
    let (url, mut requests) = receiver(&[(503, "")]).await;
    let zone = server
        .create_zone(with_action(
            "kept",
            [0.0, 0.0, 0.0],
            json!({"type": "http-request", "uri": url, "secret": SECRET}),
        ))
        .await;
    server.position(&mac(6), [0.0, 0.0, 0.0], Utc::now()).await;
    let mut audit = journal.consume(Kind::Actions, "audit", 10).await.unwrap();
    let stored = tokio::time::timeout(WAIT, audit.next()).await.expect("a stored request").unwrap();
    assert_eq!(stored.subject, server.subjects.http_action(zone["ZoneID"].as_str().unwrap()));
    let text = String::from_utf8(stored.payload.to_vec()).unwrap();
    assert!(!text.contains(SECRET), "the secret is stored in clear: {text}");
    let request: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(request["uri"], json!(url));
    assert_eq!(request["method"], "POST");
    let sealed = request["secret"].as_str().expect("the secret, sealed");
    assert_eq!(keys.open_text(sealed).unwrap().expose(), SECRET, "sealed with the server's key");
    // The receiver gets the event the request holds, signed with the secret in clear.
    let first = next(&mut requests).await;
    assert_eq!(first.json(), request["event"]);
    let delivered = next(&mut requests).await;
    assert_eq!(delivered.header("X-Zonecast-Signature"), Some(expected_signature(SECRET, &delivered.body)));
    if mode == Mode::AllInOne {
        let file = server.data_dir.path().join(zonecast::JOURNAL_FILE);
        let mut bytes = std::fs::read(&file).unwrap();
        if let Ok(wal) = std::fs::read(file.with_file_name(format!("{}-wal", zonecast::JOURNAL_FILE))) {
            bytes.extend(wal);
        }
        assert!(contains(&bytes, sealed.as_bytes()), "the request is in the journal file");
        assert!(!contains(&bytes, SECRET.as_bytes()), "the journal file holds the secret in clear");
    }
    journal.remove_consumer(Kind::Actions, "audit").await.unwrap();
    server.stop().await;
}

async fn bad_secrets_are_refused_with_the_rule(mode: Mode) {
    let server = Server::start(mode).await;
    let action = |secret: Value| {
        let zone =
            with_action("bad", [0.0, 0.0, 0.0], json!({"type": "http-request", "uri": "http://h/", "secret": secret}));
        Some(serde_json::to_vec(&zone).unwrap())
    };
    let zones = "/v3/modules/zones";
    let key = Some(zonecast_tests::ADMIN_KEY);
    let length = "ZoneActions[0].secret: must be 16 to 256 characters long";
    for (secret, message) in [
        (json!("too-short"), length),
        (json!("y".repeat(15)), length),
        (json!("x".repeat(257)), length),
        (json!(1234567890123456_u64), "ZoneActions[0].secret: must be a string, got a number"),
        (json!(["0123456789abcdef"]), "ZoneActions[0].secret: must be a string, got an array"),
        (json!({"value": "0123456789abcdef"}), "ZoneActions[0].secret: must be a string, got an object"),
    ] {
        let got = server.refused(Method::POST, zones, key, action(secret.clone()), 422, "invalid_data").await;
        assert_eq!(got, message, "{secret}");
    }
    server.stop().await;
}

both_modes!(
    requests_carry_the_event_id_as_idempotency_key_and_a_signature_only_the_secret_verifies,
    a_receiver_answering_503_twice_gets_the_same_request_a_third_time_and_it_is_delivered,
    a_receiver_answering_400_is_not_asked_again,
    the_secret_is_never_shown_and_stored_only_sealed,
    a_request_waiting_in_the_journal_holds_the_secret_sealed,
    bad_secrets_are_refused_with_the_rule,
);
