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

mod configured;
mod hostile;
mod process;
mod requests;

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::{Mode, both_modes, json, sphere};

use configured::{
    a_connections_regexes_take_at_most_8_mib_together, compiling_a_connections_regexes_stops_at_two_seconds,
    configured_limits_are_the_ones_enforced, mqtt_connections_are_created_only_up_to_the_configured_bound,
};
use hostile::hostile_inputs_are_refused_quickly_and_within_bounded_memory;
use process::Process;
use requests::{
    CONNECTIONS, RADIUS, a_batch_takes_at_most_a_thousand_zones,
    a_connection_takes_a_hundred_topics_and_bounded_chains_and_regexes,
    a_device_list_never_grows_past_ten_thousand_devices,
    a_polygon_takes_at_most_a_thousand_vertices_and_zone_actions_ten_thousand,
    an_info_event_message_and_a_radius_write_are_bounded, connection, macs, polygon, radii, regex,
};

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
