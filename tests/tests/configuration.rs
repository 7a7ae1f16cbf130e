//! Each service binary as an operator configures it: `--help` lists the settings it reads with
//! their variables, and a binary missing what it needs stops at start naming every missing
//! setting at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use zonecast_tests::process::{BINARIES, binary};

/// Runs `name` with `args` and only `vars` among the `ZONECAST_*` variables; answers whether it
/// succeeded, its stdout and its stderr.
fn run(name: &str, args: &[&str], vars: &[(&str, &str)]) -> (bool, String, String) {
    let mut command = std::process::Command::new(binary(name));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZONECAST_")) {
        command.env_remove(k);
    }
    let output = command.args(args).envs(vars.iter().copied()).output().expect("the binary runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.success(), text(&output.stdout), text(&output.stderr))
}

#[test]
fn every_service_binary_lists_its_settings_with_their_variables_in_help() {
    for (name, variables) in [
        (
            "zonecast-api",
            &[
                "ZONECAST_HTTP_ADDR",
                "ZONECAST_OPS_ADDR",
                "ZONECAST_API_KEYS",
                "ZONECAST_DATABASE_URL",
                "ZONECAST_LIMIT_DEVICE_LIST",
                "ZONECAST_LIMIT_REGEX_COMPILE_MS",
            ][..],
        ),
        ("zonecast-ingestor", &["ZONECAST_INGEST_HTTP_ADDR", "ZONECAST_INGEST_MQTT_URL", "ZONECAST_NATS_URL"]),
        (
            "zonecast-evaluator",
            &["ZONECAST_HTTP_ADDR", "ZONECAST_EVALUATOR_PARTITIONS", "ZONECAST_DATABASE_URL", "ZONECAST_NATS_URL"],
        ),
        (
            "zonecast-forwarder",
            &[
                "ZONECAST_HTTP_ADDR",
                "ZONECAST_FORWARDER_QUEUE",
                "ZONECAST_HTTP_ACTION_RETRY_FOR",
                "ZONECAST_SECRET_KEY",
                "ZONECAST_LIMIT_REGEX_TOTAL_BYTES",
            ],
        ),
        (
            "zonecast",
            &["ZONECAST_DATA_DIR", "ZONECAST_LIMIT_POLYGON_VERTICES", "ZONECAST_LIMIT_FILTERS_PER_CONNECTION"],
        ),
    ] {
        let (ok, help, stderr) = run(name, &["--help"], &[]);
        assert!(ok, "{name} --help failed: {stderr}");
        for variable in variables {
            assert!(help.contains(variable), "{name} --help does not list {variable}:\n{help}");
        }
    }
    assert_eq!(BINARIES.len(), 5);
}

#[test]
fn a_distributed_binary_without_its_required_settings_names_them_all_and_does_not_start() {
    for (name, missing) in [
        ("zonecast-api", &["ZONECAST_DATABASE_URL", "ZONECAST_NATS_URL", "ZONECAST_SECRET_KEY"][..]),
        ("zonecast-ingestor", &["ZONECAST_NATS_URL", "ZONECAST_SECRET_KEY"]),
        ("zonecast-evaluator", &["ZONECAST_DATABASE_URL", "ZONECAST_NATS_URL"]),
        ("zonecast-forwarder", &["ZONECAST_DATABASE_URL", "ZONECAST_NATS_URL", "ZONECAST_SECRET_KEY"]),
    ] {
        let (ok, _, stderr) = run(name, &[], &[("ZONECAST_PARTITIONS", "0")]);
        assert!(!ok, "{name} started without its required settings");
        for variable in missing.iter().chain(&["ZONECAST_PARTITIONS"]) {
            assert!(stderr.contains(variable), "{name} does not name {variable}:\n{stderr}");
        }
    }
}
