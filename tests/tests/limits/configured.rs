//! Regex bounds and limits set by configuration.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;
use zonecast_model::Limits;
use zonecast_tests::{ADMIN_KEY, Mode, Server, json, sphere};

use super::requests::{CONNECTIONS, RADIUS, connection, invalid, macs, polygon, radii, regex};

/// Distinct Unicode patterns of about 280 KB compiled each, each just within the per-pattern
/// bound: 128 of them would take 36 MB.
pub(crate) fn heavy_patterns(n: usize) -> Vec<Value> {
    (0..n).map(|i| regex(format!("^\\w{{5}}{i}$"))).collect()
}

/// The compiled size of all a connection's regexes is bounded together (the compile time bound
/// is lifted here, so that only the size one can be crossed).
pub(crate) async fn a_connections_regexes_take_at_most_8_mib_together(mode: Mode) {
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
pub(crate) async fn compiling_a_connections_regexes_stops_at_two_seconds(mode: Mode) {
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

pub(crate) async fn configured_limits_are_the_ones_enforced(mode: Mode) {
    let limits = Limits {
        device_list: 3,
        zone_actions: 2,
        polygon_vertices: 4,
        batch_zones: 2,
        radii_per_write: 2,
        devices_per_import: 2,
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
    let devices: Vec<Value> = macs(0, 3).into_iter().map(|mac| json!({"MAC": mac, "Name": "d"})).collect();
    assert_eq!(refused(Method::POST, "/v3/devices/import", json!(devices)).await, "must have at most 2 devices, got 3");

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

pub(crate) async fn mqtt_connections_are_created_only_up_to_the_configured_bound(mode: Mode) {
    let server = Server::start_configured(mode, |c| c.api.max_connections = 2).await;
    let body = json!({"host": "127.0.0.1", "port": 1883, "TLS": false, "topics": []});
    for _ in 0..2 {
        server.ok(Method::POST, CONNECTIONS, Some(body.clone())).await;
    }
    let message = invalid(&server, Method::POST, CONNECTIONS, ADMIN_KEY, &body).await;
    assert_eq!(message, "at most 2 MQTT connections may exist; delete one first");
    server.stop().await;
}
