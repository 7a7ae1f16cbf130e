//! Hostile inputs, refused quickly and within bounded memory.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use zonecast_model::Limits;
use zonecast_tests::{Mode, json, sphere};

use super::configured::heavy_patterns;
use super::process::{Process, QUICK};
use super::requests::{CONNECTIONS, RADIUS, connection, regex};

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
pub(crate) async fn hostile_inputs_are_refused_quickly_and_within_bounded_memory(mode: Mode) {
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
