//! HTTP listeners under hostile clients: idle and half-sent connections are closed after the
//! header timeout, a stalled body is answered 408, and the number of open connections is capped
//! without starving the clients that wait. On the API listener and the ingestor's, both modes.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zonecast_tests::{Mode, Server, WRITE_KEY, both_modes};

/// Longest any wait here may take: several header timeouts.
const WAIT: Duration = Duration::from_secs(10);

async fn server(mode: Mode, max_connections: usize) -> Server {
    Server::start_configured(mode, |config| {
        config.http.limits.header_timeout = Duration::from_millis(500);
        config.http.limits.body_timeout = Duration::from_millis(500);
        config.http.limits.max_connections = max_connections;
    })
    .await
}

fn authority(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}

/// Reads until the server closes the connection; what it sent.
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut out))
        .await
        .expect("the server closed the connection within the timeout")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

async fn idle_and_half_sent_connections_are_closed_and_a_stalled_body_is_408(mode: Mode) {
    let server = server(mode, 64).await;
    // The ingestor's listener takes positions; the distributed API's takes zones.
    for (base, path) in [(&server.base, "/v3/modules/zones"), (&server.ingest_base, "/v3/positions")] {
        let at = authority(base);
        // Nothing sent at all.
        let mut idle = TcpStream::connect(&at).await.unwrap();
        until_closed(&mut idle).await;
        // Half a request head.
        let mut half = TcpStream::connect(&at).await.unwrap();
        half.write_all(b"GET /v3/modules/zones HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        until_closed(&mut half).await;
        // A whole head, a tenth of the body it announces.
        let mut stalled = TcpStream::connect(&at).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nX-API-Key: {WRITE_KEY}\r\nContent-Type: application/json\r\n\
             Content-Length: 100\r\n\r\n[{{\"MAC\": "
        );
        stalled.write_all(head.as_bytes()).await.unwrap();
        let answer = until_closed(&mut stalled).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{base}: {answer}");
        assert!(answer.contains("request body did not arrive within"), "{answer}");
    }
    server.stop().await;
}

/// With room for two connections, two idle clients hold the listener full: a third waits (its
/// request is not answered while they are open) and is served once the header timeout has
/// closed them.
async fn connections_past_the_cap_wait_and_are_served_when_room_frees(mode: Mode) {
    let server = server(mode, 2).await;
    let at = authority(&server.base);
    let _first = TcpStream::connect(&at).await.unwrap();
    let _second = TcpStream::connect(&at).await.unwrap();
    let started = Instant::now();
    let mut third = TcpStream::connect(&at).await.unwrap();
    third.write_all(b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let answer = until_closed(&mut third).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "answered after {:?}, while two idle connections still held the listener full",
        started.elapsed()
    );
    server.stop().await;
}

both_modes!(
    idle_and_half_sent_connections_are_closed_and_a_stalled_body_is_408,
    connections_past_the_cap_wait_and_are_served_when_room_frees,
);
