#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::net::SocketAddr;

use clap::{Command, CommandFactory};
use zonecast_api::{ApiCli, ApiConfig};
use zonecast_evaluator::{EvaluatorCli, EvaluatorConfig};
use zonecast_forwarder::{ForwarderCli, ForwarderConfig};
use zonecast_ingestor::{IngestorCli, IngestorConfig};
use zonecast_runtime::config::{ConfigError, ENV_VARS, Load, env_name};
use zonecast_runtime::{Authority, HttpLimits};

use super::{AllInOneCli, Config};

/// Every binary's command line.
fn commands() -> Vec<Command> {
    vec![
        AllInOneCli::command(),
        ApiCli::command(),
        IngestorCli::command(),
        EvaluatorCli::command(),
        ForwarderCli::command(),
    ]
}

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn args(binary: &str, flags: &[&str]) -> Vec<OsString> {
    std::iter::once(binary).chain(flags.iter().copied()).map(OsString::from).collect()
}

fn load<C: Load>(pairs: &[(&str, &str)]) -> Result<C, ConfigError> {
    C::load(args(C::BINARY, &[]), &env(pairs)).map(|l| l.config)
}

fn problems<C: Load + std::fmt::Debug>(pairs: &[(&str, &str)]) -> Vec<String> {
    load::<C>(pairs).unwrap_err().problems().iter().map(ToString::to_string).collect()
}

const SECRET: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const DISTRIBUTED: &[(&str, &str)] = &[
    ("ZONECAST_DATABASE_URL", "postgres://zc@db/zc"),
    ("ZONECAST_NATS_URL", "nats://bus:4222"),
    ("ZONECAST_SECRET_KEY", SECRET),
];

#[test]
fn the_all_in_one_starts_with_nothing_configured_on_the_documented_defaults() {
    let c = load::<Config>(&[]).unwrap();
    assert_eq!(c.http.addr.to_string(), "127.0.0.1:8080");
    assert_eq!(c.ops_addr, None);
    assert_eq!(c.bus.subject_prefix, "zonecast");
    assert_eq!(c.bus.partitions, 16);
    assert_eq!(c.site_id, 1);
    assert_eq!(c.bus.positions.max_lag, std::time::Duration::from_millis(15));
    assert_eq!(c.bus.positions.hold, std::time::Duration::from_secs(1));
    assert!(c.bus.nats_url.is_none() && c.store.database_url.is_none() && c.secret_key.is_none());
    assert!(c.auth.api_keys.is_empty() && c.auth.clients.is_empty());
    assert_eq!(c.http.limits, HttpLimits::default());
    assert_eq!(c.forwarder.queue, 10_000);
    assert_eq!(c.api.max_connections, 100);
    assert_eq!((c.api.stream_buffer, c.api.stream_heartbeat.as_millis(), c.api.stream_position_hz), (5000, 15_000, 5));
    assert!(c.api.cors_origins.is_empty());
    assert_eq!(c.limits, zonecast_model::Limits::DEFAULT);
}

#[test]
fn the_live_stream_settings_reach_the_api() {
    let c = load::<Config>(&[
        ("ZONECAST_STREAM_BUFFER", "64"),
        ("ZONECAST_STREAM_HEARTBEAT_MS", "500"),
        ("ZONECAST_STREAM_POSITION_HZ", "20"),
        ("ZONECAST_CORS_ORIGINS", "https://dash.example, http://localhost:3000/"),
    ])
    .unwrap();
    let api = c.api();
    assert_eq!(
        (api.api.stream_buffer, api.api.stream_heartbeat.as_millis(), api.api.stream_position_hz),
        (64, 500, 20)
    );
    assert_eq!(api.api.cors_origins, ["https://dash.example", "http://localhost:3000/"]);
    for refused in
        [("ZONECAST_STREAM_BUFFER", "0"), ("ZONECAST_STREAM_HEARTBEAT_MS", "5"), ("ZONECAST_STREAM_POSITION_HZ", "51")]
    {
        let refused = load::<Config>(&[refused]);
        assert!(refused.is_err(), "{refused:?}");
    }
}

#[test]
fn every_limit_is_set_by_its_variable_flag_or_file_key_and_reaches_the_services() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.toml");
    std::fs::write(&path, "limit_batch_zones = 50\nlimit_regex_total_bytes = 1048576\n").unwrap();
    let loaded = Config::load(
        args("zonecast", &["--limit-polygon-vertices", "12", "--limit-regex-compile-ms=250"]),
        &env(&[
            ("ZONECAST_CONFIG", path.to_str().unwrap()),
            ("ZONECAST_LIMIT_DEVICE_LIST", "100"),
            ("ZONECAST_LIMIT_ZONE_ACTIONS", "3"),
            ("ZONECAST_LIMIT_RADII_PER_WRITE", "20"),
            ("ZONECAST_LIMIT_DEVICES_PER_IMPORT", "30"),
            ("ZONECAST_LIMIT_INFO_MESSAGE_CHARS", "64"),
            ("ZONECAST_LIMIT_TOPICS_PER_CONNECTION", "4"),
            ("ZONECAST_LIMIT_FILTERS_PER_CHAIN", "8"),
            ("ZONECAST_LIMIT_FILTERS_PER_CONNECTION", "16"),
            ("ZONECAST_LIMIT_REGEXES_PER_CONNECTION", "2"),
            ("ZONECAST_LIMIT_REGEX_BYTES", "65536"),
        ]),
    )
    .unwrap()
    .config;
    let expected = zonecast_model::Limits {
        device_list: 100,
        zone_actions: 3,
        polygon_vertices: 12,
        batch_zones: 50,
        radii_per_write: 20,
        devices_per_import: 30,
        info_message_chars: 64,
        topics_per_connection: 4,
        filters_per_chain: 8,
        filters_per_connection: 16,
        regexes_per_connection: 2,
        regex_bytes: 65_536,
        regex_total_bytes: 1 << 20,
        regex_compile_ms: 250,
    };
    assert_eq!(loaded.limits, expected);
    assert_eq!(loaded.api().limits, expected);
    assert_eq!(loaded.forwarder().limits, expected);
}

#[test]
fn the_forwarder_takes_the_filter_chain_limits_and_the_api_all_of_them() {
    let mut env_pairs = DISTRIBUTED.to_vec();
    env_pairs.push(("ZONECAST_LIMIT_REGEX_BYTES", "4096"));
    let forwarder = load::<ForwarderConfig>(&env_pairs).unwrap();
    assert_eq!(forwarder.limits.regex_bytes, 4096);
    let api = load::<ApiConfig>(&env_pairs).unwrap();
    assert_eq!(api.limits.regex_bytes, 4096);
    let e =
        ForwarderConfig::load(args("zonecast-forwarder", &["--limit-device-list=5"]), &env(DISTRIBUTED)).unwrap_err();
    assert!(e.to_string().starts_with("command line: unexpected argument '--limit-device-list'"), "{e}");
}

#[test]
fn limits_out_of_range_are_named() {
    let one = |pairs: &[(&str, &str)]| problems::<Config>(pairs).join("\n");
    assert_eq!(
        one(&[("ZONECAST_LIMIT_DEVICE_LIST", "0")]),
        "ZONECAST_LIMIT_DEVICE_LIST: must be between 1 and 1000000"
    );
    assert_eq!(
        one(&[("ZONECAST_LIMIT_POLYGON_VERTICES", "2")]),
        "ZONECAST_LIMIT_POLYGON_VERTICES: must be between 3 and 1000000"
    );
    assert_eq!(
        one(&[("ZONECAST_LIMIT_REGEX_COMPILE_MS", "soon")]),
        "ZONECAST_LIMIT_REGEX_COMPILE_MS: 'soon': invalid digit found in string"
    );
}

#[test]
fn each_distributed_binary_names_every_setting_it_needs_and_lacks() {
    assert_eq!(
        problems::<ApiConfig>(&[]),
        [
            "ZONECAST_DATABASE_URL: is required by zonecast-api",
            "ZONECAST_NATS_URL: is required by zonecast-api",
            "ZONECAST_SECRET_KEY: is required by zonecast-api (base64 of 32 random bytes, the same for every replica)",
        ]
    );
    assert_eq!(
        problems::<IngestorConfig>(&[]),
        [
            "ZONECAST_NATS_URL: is required by zonecast-ingestor",
            "ZONECAST_SECRET_KEY: is required by zonecast-ingestor (the same as the API's, to accept its tokens)",
        ]
    );
    assert_eq!(
        problems::<EvaluatorConfig>(&[]),
        [
            "ZONECAST_DATABASE_URL: is required by zonecast-evaluator",
            "ZONECAST_NATS_URL: is required by zonecast-evaluator",
        ]
    );
    assert_eq!(
        problems::<ForwarderConfig>(&[("ZONECAST_DATABASE_URL", "postgres://db/zc")]),
        [
            "ZONECAST_NATS_URL: is required by zonecast-forwarder",
            "ZONECAST_SECRET_KEY: is required by zonecast-forwarder (the API's, to unseal passwords, profiles and \
             action secrets)",
        ]
    );
}

#[test]
fn each_binary_asks_only_for_what_it_uses() {
    // The ingestor needs no database, the evaluator no secret key.
    let evaluator = load::<EvaluatorConfig>(&DISTRIBUTED[..2]).unwrap();
    assert_eq!(evaluator.evaluator.partitions, None);
    load::<IngestorConfig>(&DISTRIBUTED[1..]).unwrap();
    load::<ApiConfig>(DISTRIBUTED).unwrap();
    let forwarder = load::<ForwarderConfig>(DISTRIBUTED).unwrap();
    assert_eq!(forwarder.forwarder.http_action_retry_for, std::time::Duration::from_secs(3600));
}

#[test]
fn the_nats_replicas_reach_every_stream_and_out_of_range_is_named() {
    let c = load::<Config>(&[]).unwrap();
    assert_eq!((c.bus.journal.replicas, c.bus.positions.replicas), (1, 1));
    let mut env_pairs = DISTRIBUTED.to_vec();
    env_pairs.push(("ZONECAST_NATS_REPLICAS", "3"));
    let evaluator = load::<EvaluatorConfig>(&env_pairs).unwrap();
    assert_eq!((evaluator.bus.journal.replicas, evaluator.bus.positions.replicas), (3, 3));
    let ingestor = IngestorConfig::load(args("zonecast-ingestor", &["--nats-replicas=5"]), &env(DISTRIBUTED)).unwrap();
    assert_eq!(ingestor.config.bus.positions.replicas, 5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.toml");
    std::fs::write(&path, "nats_replicas = 2\n").unwrap();
    let mut from_file = DISTRIBUTED.to_vec();
    from_file.push(("ZONECAST_CONFIG", path.to_str().unwrap()));
    assert_eq!(load::<ForwarderConfig>(&from_file).unwrap().bus.journal.replicas, 2);
    let one = |pairs: &[(&str, &str)]| problems::<Config>(pairs).join("\n");
    assert_eq!(one(&[("ZONECAST_NATS_REPLICAS", "0")]), "ZONECAST_NATS_REPLICAS: must be between 1 and 5");
    assert_eq!(one(&[("ZONECAST_NATS_REPLICAS", "6")]), "ZONECAST_NATS_REPLICAS: must be between 1 and 5");
    assert_eq!(
        one(&[("ZONECAST_NATS_REPLICAS", "three")]),
        "ZONECAST_NATS_REPLICAS: 'three': invalid digit found in string"
    );
    std::fs::write(&path, "nats_replicas = 7\n").unwrap();
    let file = path.display().to_string();
    assert_eq!(problems::<ApiConfig>(&from_file), [format!("nats_replicas (in {file}): must be between 1 and 5")]);
}

#[test]
fn several_problems_are_reported_together() {
    let e = load::<EvaluatorConfig>(&[
        ("ZONECAST_HTTP_ADDR", "nowhere"),
        ("ZONECAST_PARTITIONS", "0"),
        ("ZONECAST_LOG_FORMAT", "xml"),
        ("ZONECAST_NATS_URL", "nats://bus:4222"),
    ])
    .unwrap_err();
    let names: Vec<&str> = e.problems().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["ZONECAST_PARTITIONS", "ZONECAST_HTTP_ADDR", "ZONECAST_DATABASE_URL", "ZONECAST_LOG_FORMAT"],
        "{e}"
    );
    let shown = e.to_string();
    assert!(shown.starts_with("4 configuration problems:\n  ZONECAST_PARTITIONS: must be between"), "{shown}");
}

#[test]
fn bad_values_are_named_with_what_is_wrong() {
    let one = |pairs: &[(&str, &str)]| problems::<Config>(pairs).join("\n");
    assert_eq!(
        one(&[("ZONECAST_API_KEYS", "abc:root")]),
        "ZONECAST_API_KEYS: unknown authority 'root' (expected read, write or admin)"
    );
    assert_eq!(one(&[("ZONECAST_API_KEYS", "bad")]), "ZONECAST_API_KEYS: expected key:authority pairs");
    assert_eq!(
        one(&[("ZONECAST_CLIENTS", "svc:s3cret")]),
        "ZONECAST_CLIENTS: expected auth_id:auth_secret:authority triples"
    );
    // The evaluator's range, checked by zonecast-evaluator (64 partitions unless set).
    let evaluator = |range: &str| {
        let pairs = [DISTRIBUTED[0], DISTRIBUTED[1], ("ZONECAST_EVALUATOR_PARTITIONS", range)];
        problems::<EvaluatorConfig>(&pairs).join("\n")
    };
    assert_eq!(evaluator("0-64"), "ZONECAST_EVALUATOR_PARTITIONS: range ends at 64 but there are 64 partitions");
    assert_eq!(evaluator("5-2"), "ZONECAST_EVALUATOR_PARTITIONS: '5-2': start after end");
    assert_eq!(evaluator("a-b"), "ZONECAST_EVALUATOR_PARTITIONS: 'a-b': expected a partition or a range such as 0-7");
    assert_eq!(one(&[("ZONECAST_FORWARDER_QUEUE", "0")]), "ZONECAST_FORWARDER_QUEUE: must be between 1 and 10000000");
    assert_eq!(one(&[("ZONECAST_INGEST_HOLD_MS", "60001")]), "ZONECAST_INGEST_HOLD_MS: must be between 0 and 60000");
    let c = load::<Config>(&[("ZONECAST_INGEST_HOLD_MS", "0")]).unwrap();
    assert_eq!(c.bus.positions.hold, std::time::Duration::ZERO, "0: 503 at once");
    assert_eq!(
        one(&[("ZONECAST_HTTP_ACTION_RETRY_FOR", "86401")]),
        "ZONECAST_HTTP_ACTION_RETRY_FOR: must be between 0 and 86400"
    );
    assert_eq!(
        one(&[("ZONECAST_HTTP_ACTION_RETRY_FOR", "1h")]),
        "ZONECAST_HTTP_ACTION_RETRY_FOR: '1h': invalid digit found in string"
    );
    let c = load::<Config>(&[("ZONECAST_HTTP_ACTION_RETRY_FOR", "0")]).unwrap();
    assert_eq!(c.forwarder.http_action_retry_for, std::time::Duration::ZERO);
    assert_eq!(
        one(&[("ZONECAST_HTTP_ADDR", "nowhere")]),
        "ZONECAST_HTTP_ADDR: 'nowhere': invalid socket address syntax"
    );
    assert_eq!(
        one(&[("ZONECAST_SUBJECT_PREFIX", "a.b")]),
        "ZONECAST_SUBJECT_PREFIX: must be one subject token: letters, digits, - and _"
    );
    assert_eq!(
        one(&[("ZONECAST_INGEST_MQTT_URL", "mqtt://broker")]),
        "ZONECAST_INGEST_MQTT_TOPICS: is required when ZONECAST_INGEST_MQTT_URL is set"
    );
}

#[test]
fn credentials_parse_and_never_show_in_debug() {
    let c = load::<Config>(&[
        ("ZONECAST_API_KEYS", "abc:admin, def:read"),
        ("ZONECAST_CLIENTS", "svc:s3cr:et:write"),
        ("ZONECAST_NATS_URL", "nats://user:natspass@bus"),
        ("ZONECAST_SECRET_KEY", SECRET),
    ])
    .unwrap();
    assert_eq!(c.auth.api_keys.len(), 2);
    assert_eq!(c.auth.clients[0].secret.expose(), "s3cr:et");
    assert_eq!(c.auth.clients[0].authority, Authority::Write);
    let debug = format!("{c:?}");
    for secret in ["abc", "s3cr", "natspass", SECRET] {
        assert!(!debug.contains(secret), "{secret} in {debug}");
    }
}

#[test]
fn a_flag_wins_over_its_variable_which_wins_over_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.toml");
    std::fs::write(&path, "site_id = 7\npartitions = 8\napi_keys = [\"k1:read\"]\nhttp_addr = \"127.0.0.1:1\"\n")
        .unwrap();
    let loaded = Config::load(
        args("zonecast", &["--http-addr", "127.0.0.1:3"]),
        &env(&[
            ("ZONECAST_CONFIG", path.to_str().unwrap()),
            ("ZONECAST_SITE_ID", "501"),
            ("ZONECAST_EVALUATOR_LEASE_MS", "1500"),
            ("ZONECAST_HTTP_ADDR", "127.0.0.1:2"),
        ]),
    )
    .unwrap()
    .config;
    assert_eq!(loaded.site_id, 501);
    assert_eq!(loaded.bus.partitions, 8);
    assert_eq!(loaded.evaluator.timing.lease, std::time::Duration::from_millis(1500));
    assert_eq!(loaded.auth.api_keys[0].authority, Authority::Read);
    assert_eq!(loaded.http.addr, "127.0.0.1:3".parse::<SocketAddr>().unwrap());
}

#[test]
fn the_all_in_one_refuses_a_pinned_range_and_a_lease_shorter_than_three_heartbeats() {
    let e = Config::load(args("zonecast", &[]), &env(&[("ZONECAST_EVALUATOR_PARTITIONS", "0-3")])).unwrap_err();
    assert!(e.to_string().contains("ZONECAST_EVALUATOR_PARTITIONS: the all-in-one evaluates every partition"), "{e}");
    let e = Config::load(
        args("zonecast", &[]),
        &env(&[("ZONECAST_EVALUATOR_HEARTBEAT_MS", "400"), ("ZONECAST_EVALUATOR_LEASE_MS", "1000")]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("ZONECAST_EVALUATOR_LEASE_MS: 1000 is less than three heartbeats"), "{e}");
}

#[test]
fn problems_in_the_file_name_its_key_and_unknown_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.toml");
    std::fs::write(&path, "partitions = 0\nno_such_setting = 1\n").unwrap();
    let file = path.display().to_string();
    let e = Config::load(args("zonecast", &["--config", &file]), &env(&[])).unwrap_err();
    let shown: Vec<String> = e.problems().iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            format!("no_such_setting (in {file}): unknown setting"),
            format!("partitions (in {file}): must be between 1 and 4096")
        ]
    );
}

#[test]
fn a_bad_flag_is_named_as_given() {
    let e = EvaluatorConfig::load(args("zonecast-evaluator", &["--partitions=x"]), &env(DISTRIBUTED)).unwrap_err();
    assert_eq!(e.to_string(), "--partitions: 'x': invalid digit found in string");
    let e = EvaluatorConfig::load(args("zonecast-evaluator", &["--no-such-flag"]), &env(&[])).unwrap_err();
    assert!(e.to_string().starts_with("command line: unexpected argument '--no-such-flag'"), "{e}");
}

#[test]
fn the_demo_is_off_by_default_and_on_with_the_flag_alone_its_variable_or_its_file_key() {
    let demo = |flags: &[&str], pairs: &[(&str, &str)]| Config::load(args("zonecast", flags), &env(pairs));
    assert!(!demo(&[], &[]).unwrap().config.demo);
    assert!(demo(&["--demo"], &[]).unwrap().config.demo);
    assert!(demo(&[], &[("ZONECAST_DEMO", "true")]).unwrap().config.demo);
    assert!(!demo(&["--demo=false"], &[("ZONECAST_DEMO", "true")]).unwrap().config.demo);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("zonecast.toml");
    std::fs::write(&file, "demo = true\n").unwrap();
    assert!(demo(&[], &[("ZONECAST_CONFIG", file.to_str().unwrap())]).unwrap().config.demo);

    assert_eq!(problems::<Config>(&[("ZONECAST_DEMO", "yes")]), ["ZONECAST_DEMO: 'yes': must be true or false"]);
    assert_eq!(demo(&["--demo=1"], &[]).unwrap_err().to_string(), "--demo: '1': must be true or false");
    let e = demo(&["--demo", "on"], &[]).unwrap_err().to_string();
    assert!(e.starts_with("command line: unexpected argument 'on'"), "{e}");
    // Only the all-in-one runs the demo.
    let e = ApiConfig::load(args("zonecast-api", &["--demo"]), &env(DISTRIBUTED)).unwrap_err().to_string();
    assert!(e.starts_with("command line: unexpected argument '--demo'"), "{e}");
}

#[test]
fn each_distributed_binary_listens_on_its_own_default_address() {
    let api = load::<ApiConfig>(DISTRIBUTED).unwrap().http.addr;
    let ingestor = load::<IngestorConfig>(DISTRIBUTED).unwrap().http.unwrap().addr;
    let evaluator = load::<EvaluatorConfig>(DISTRIBUTED).unwrap().ops.addr;
    let forwarder = load::<ForwarderConfig>(DISTRIBUTED).unwrap().ops.addr;
    let addrs = [api, ingestor, evaluator, forwarder].map(|a| a.to_string());
    assert_eq!(addrs, ["127.0.0.1:8080", "127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"]);
    assert_eq!(load::<Config>(&[]).unwrap().http.addr.to_string(), "127.0.0.1:8080", "the all-in-one's");
}

#[test]
fn help_lists_each_setting_with_its_variable_and_default() {
    let help = |binary: &str| match Config::load(args(binary, &["--help"]), &env(&[])) {
        Err(ConfigError::Help(text)) => text,
        other => panic!("{other:?}"),
    };
    let text = help("zonecast");
    for expected in [
        "--http-addr <ADDR>",
        "[env: ZONECAST_HTTP_ADDR",
        "[default: 127.0.0.1:8080]",
        "ZONECAST_CONFIG",
        "--limit-device-list <N>",
        "[env: ZONECAST_LIMIT_REGEX_TOTAL_BYTES",
        "[default: 2000]",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
    let text = match EvaluatorConfig::load(args("zonecast-evaluator", &["--help"]), &env(&[])) {
        Err(ConfigError::Help(text)) => text,
        other => panic!("{other:?}"),
    };
    assert!(
        text.contains("ZONECAST_EVALUATOR_PARTITIONS")
            && text.contains("Required: ZONECAST_DATABASE_URL, ZONECAST_NATS_URL.")
            && !text.contains("ZONECAST_HTTP_ACTION_RETRY_FOR"),
        "{text}"
    );
    assert!(!text.contains("ZONECAST_API_KEYS"), "the evaluator takes no credentials:\n{text}");
    assert!(!text.contains("ZONECAST_SECRET_KEY"), "the evaluator unseals nothing:\n{text}");
    let text = match ForwarderConfig::load(args("zonecast-forwarder", &["--help"]), &env(&[])) {
        Err(ConfigError::Help(text)) => text,
        other => panic!("{other:?}"),
    };
    assert!(text.contains("ZONECAST_HTTP_ACTION_RETRY_FOR"), "the forwarder sends http-request actions:\n{text}");
}

#[test]
fn every_setting_follows_the_naming_rule_and_env_vars_lists_exactly_what_the_binaries_read() {
    let mut read = BTreeSet::new();
    for command in commands() {
        for arg in command.get_arguments() {
            let Some(var) = arg.get_env() else { continue };
            let var = var.to_str().unwrap().to_owned();
            assert_eq!(var, env_name(arg.get_id().as_str()), "{}: {var}", command.get_name());
            assert!(arg.get_long().is_some(), "{var} has no flag");
            read.insert(var);
        }
    }
    assert_eq!(read, ENV_VARS.iter().map(|v| (*v).to_owned()).collect::<BTreeSet<_>>());
}

#[test]
fn secret_values_are_hidden_from_help() {
    for command in commands() {
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if ["nats_url", "database_url", "secret_key", "api_keys", "clients", "ingest_mqtt_url"].contains(&id) {
                assert!(arg.is_hide_env_values_set(), "{}: {id}", command.get_name());
            }
        }
    }
}
