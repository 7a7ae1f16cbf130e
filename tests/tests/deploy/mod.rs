//! The deployment files under `deploy/` agree with the binaries: every `ZONECAST_*` variable
//! they name is one the services read, every probe and scrape path is answered by the listener
//! it points at (the real binaries run with the manifests' environment), and every Deployment
//! has resource limits, a restrictive securityContext and probes; the image is versioned and
//! pulled only when missing, holds only the service binaries and builds its dependencies in a
//! layer of their own; the systemd units of one host listen on distinct addresses. The cluster
//! layout (self-claiming evaluators, a three-server NATS, disruption budgets) is in `cluster`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cluster;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use zonecast_api::ApiConfig;
use zonecast_evaluator::EvaluatorConfig;
use zonecast_forwarder::ForwarderConfig;
use zonecast_ingestor::IngestorConfig;
use zonecast_runtime::config::{ENV_VARS, Load};
use zonecast_tests::process::{Service, free_port};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every YAML document of `path`, merge keys (`<<`) applied, as JSON.
fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = read(path);
    serde_norway::Deserializer::from_str(&text)
        .map(|document| {
            let mut value = serde_norway::Value::deserialize(document)
                .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()));
            value.apply_merge().unwrap_or_else(|e| panic!("{}: merge keys: {e}", path.display()));
            serde_json::to_value(value).unwrap()
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// The files of `dir` ending in `extension`, sorted.
fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    out.sort();
    out
}

/// Every Kubernetes object under `deploy/k8s`.
fn k8s_objects() -> Vec<Value> {
    let objects: Vec<Value> = files(&deploy_dir().join("k8s"), "yaml").iter().flat_map(|p| yaml_documents(p)).collect();
    assert!(!objects.is_empty(), "no manifests under deploy/k8s");
    objects
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().expect("every object has a name")
}

/// The `ZONECAST_*` variables the structured parts of the deployment files set: ConfigMap data,
/// container env, Secret data, compose `environment` and systemd `Environment=` lines.
fn variables_set() -> BTreeMap<String, String> {
    let mut set = BTreeMap::new();
    let mut add = |name: &str, origin: String| {
        if name.starts_with("ZONECAST_") {
            set.insert(name.to_owned(), origin);
        }
    };
    for object in k8s_objects() {
        let origin = format!("k8s {} {}", object["kind"].as_str().unwrap_or("?"), name(&object));
        for section in ["data", "stringData"] {
            for key in object[section].as_object().into_iter().flat_map(|m| m.keys()) {
                add(key, origin.clone());
            }
        }
        for container in containers(&object) {
            for env in container["env"].as_array().into_iter().flatten() {
                add(env["name"].as_str().unwrap(), origin.clone());
            }
        }
    }
    let compose = yaml_documents(&deploy_dir().join("compose.yaml"));
    for (service, spec) in compose[0]["services"].as_object().expect("compose services") {
        for key in spec["environment"].as_object().into_iter().flat_map(|m| m.keys()) {
            add(key, format!("compose service {service}"));
        }
    }
    for unit in files(&deploy_dir().join("systemd"), "service") {
        for line in read(&unit).lines() {
            if let Some(assignment) = line.trim().strip_prefix("Environment=") {
                let variable = assignment.trim_matches('"').split('=').next().unwrap();
                add(variable, format!("systemd {}", unit.display()));
            }
        }
    }
    set
}

/// Every `ZONECAST_…` word anywhere under `deploy/` (comments, Dockerfile, configuration).
fn variables_named() -> BTreeMap<String, String> {
    let mut named = BTreeMap::new();
    for path in zonecast_tests::files_under(&deploy_dir()) {
        let text = read(&path);
        for (at, _) in text.match_indices("ZONECAST_") {
            let word: String =
                text[at..].chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
            // `ZONECAST_INGEST_MQTT_*` names a family in prose, not a variable.
            if text[at + word.len()..].starts_with('*') {
                continue;
            }
            named.insert(word, path.display().to_string());
        }
    }
    named
}

fn containers(object: &Value) -> Vec<&Value> {
    object["spec"]["template"]["spec"]["containers"].as_array().into_iter().flatten().collect()
}

#[test]
fn every_zonecast_variable_the_deployment_files_set_is_read_by_the_services() {
    let set = variables_set();
    for expected in ["ZONECAST_HTTP_ADDR", "ZONECAST_OPS_ADDR", "ZONECAST_NATS_REPLICAS", "ZONECAST_DATA_DIR"] {
        assert!(set.contains_key(expected), "{expected} is set somewhere: the files were read ({set:?})");
    }
    for (variable, origin) in set.iter().chain(&variables_named()) {
        assert!(ENV_VARS.contains(&variable.as_str()), "{origin} sets {variable}, which no service reads");
    }
}

#[test]
fn the_k8s_directory_applies_no_secret_and_no_placeholder() {
    let objects = k8s_objects();
    let secrets: Vec<&str> = of_kind(&objects, "Secret").into_iter().map(name).collect();
    assert!(secrets.is_empty(), "kubectl apply -f deploy/k8s would overwrite Secrets {secrets:?}");
    for file in files(&deploy_dir().join("k8s"), "yaml") {
        assert!(!read(&file).contains("REPLACE"), "{} holds a placeholder", file.display());
    }
}

/// The numeric `USER uid:gid` of the Dockerfile's runtime image.
fn image_user() -> (u64, u64) {
    let dockerfile = read(&deploy_dir().join("Dockerfile"));
    let user = dockerfile.lines().filter_map(|l| l.strip_prefix("USER ")).next_back().expect("the image sets USER");
    let (uid, gid) = user.trim().split_once(':').unwrap_or((user.trim(), user.trim()));
    let numeric = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("USER {user}: runAsNonRoot needs numeric ids"));
    (numeric(uid), numeric(gid))
}

#[test]
fn every_deployment_has_limits_a_restrictive_security_context_and_probes() {
    let objects = k8s_objects();
    let deployments = of_kind(&objects, "Deployment");
    assert!(deployments.len() >= 4, "api, ingestor, evaluator and forwarder Deployments");
    let (uid, gid) = image_user();
    for deployment in deployments {
        let deployment_name = name(deployment);
        let pod = &deployment["spec"]["template"];
        let pod_security = &pod["spec"]["securityContext"];
        for container in containers(deployment) {
            let at = format!("{deployment_name}/{}", container["name"].as_str().unwrap());
            let security = &container["securityContext"];
            // A container setting overrides the pod's.
            let effective = |key: &str| if security[key].is_null() { &pod_security[key] } else { &security[key] };
            assert_eq!(effective("runAsNonRoot"), &Value::Bool(true), "{at}: runAsNonRoot");
            assert_eq!(effective("runAsUser").as_u64(), Some(uid), "{at}: runAsUser is the image's USER");
            assert_eq!(effective("runAsGroup").as_u64(), Some(gid), "{at}: runAsGroup is the image's USER group");
            assert_eq!(effective("seccompProfile")["type"], "RuntimeDefault", "{at}: seccompProfile");
            assert_eq!(security["allowPrivilegeEscalation"], false, "{at}: allowPrivilegeEscalation");
            assert_eq!(security["readOnlyRootFilesystem"], true, "{at}: readOnlyRootFilesystem");
            let dropped = security["capabilities"]["drop"].as_array().cloned().unwrap_or_default();
            assert!(dropped.contains(&Value::from("ALL")), "{at}: capabilities drop ALL");
            for bound in ["requests", "limits"] {
                for resource in ["cpu", "memory"] {
                    let value = &container["resources"][bound][resource];
                    assert!(value.is_string() || value.is_number(), "{at}: resources.{bound}.{resource}");
                }
            }
            assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/livez", "{at}: liveness probe");
            assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz", "{at}: readiness probe");
        }
    }
}

#[test]
fn the_image_trusts_public_certificates_and_its_context_leaves_builds_and_history_out() {
    let dockerfile = read(&deploy_dir().join("Dockerfile"));
    let runtime = dockerfile.rsplit("\nFROM ").next().unwrap();
    assert!(runtime.contains("ca-certificates"), "the runtime image installs ca-certificates");
    let ignore = read(&deploy_dir().join("../.dockerignore"));
    let patterns: BTreeSet<&str> = ignore.lines().map(str::trim).filter(|l| !l.starts_with('#')).collect();
    for needed in [".git", "**/target", "/zonecast-data"] {
        assert!(patterns.contains(needed), ".dockerignore leaves {needed} out of the build context");
    }
}

#[test]
fn the_nats_configuration_listens_beyond_its_own_container() {
    let conf = read(&deploy_dir().join("nats-server.conf"));
    let host = conf.lines().find_map(|l| l.trim().strip_prefix("host:")).map(|h| h.split('#').next().unwrap().trim());
    assert!(
        !matches!(host, Some("127.0.0.1" | "localhost" | "::1")),
        "nats-server.conf binds {host:?}: the services in other containers cannot reach it"
    );
    let compose = yaml_documents(&deploy_dir().join("compose.yaml"));
    let nats = &compose[0]["services"]["nats"];
    assert!(nats["volumes"].to_string().contains("nats-server.conf"), "compose runs NATS with this file");
}

/// One HTTP check the manifests announce: a probe or a Prometheus scrape.
struct Check {
    what: String,
    path: String,
    port: u16,
}

/// The probes and the scrape a Deployment's first container announces, ports resolved.
fn checks(deployment: &Value, container: &Value) -> Vec<Check> {
    let named: BTreeMap<&str, u64> = container["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["name"].as_str()?, p["containerPort"].as_u64()?)))
        .collect();
    let port = |value: &Value| -> u16 {
        let number = match value {
            Value::String(s) => named.get(s.as_str()).copied().or_else(|| s.parse().ok()),
            other => other.as_u64(),
        };
        number.and_then(|n| u16::try_from(n).ok()).unwrap_or_else(|| panic!("port {value} does not resolve"))
    };
    let mut out = Vec::new();
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let get = &container[probe]["httpGet"];
        if let Some(path) = get["path"].as_str() {
            out.push(Check { what: probe.to_owned(), path: path.to_owned(), port: port(&get["port"]) });
        }
    }
    let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
    if annotations["prometheus.io/scrape"] == "true" {
        out.push(Check {
            what: "Prometheus scrape".into(),
            path: annotations["prometheus.io/path"].as_str().unwrap_or("/metrics").to_owned(),
            port: port(&annotations["prometheus.io/port"]),
        });
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_probe_and_scrape_path_is_answered_without_credentials_by_the_service_it_belongs_to() {
    let objects = k8s_objects();
    let database = zonecast_tests::fresh_database().await;
    let http = zonecast_tests::http_client();
    let mut checked = 0;
    let deployments = of_kind(&objects, "Deployment");
    for &deployment in &deployments {
        let container = containers(deployment)[0];
        let binary = container["command"][0].as_str().expect("the container names its binary");
        // The environment as Kubernetes composes it: envFrom in order, then env.
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        for source in container["envFrom"].as_array().into_iter().flatten() {
            if let Some(map) = source["configMapRef"]["name"].as_str() {
                let config_map = of_kind(&objects, "ConfigMap").into_iter().find(|c| name(c) == map);
                let data = config_map.unwrap_or_else(|| panic!("ConfigMap {map} is not in deploy/k8s"))["data"].clone();
                for (k, v) in data.as_object().into_iter().flatten() {
                    env.insert(k.clone(), v.as_str().unwrap().to_owned());
                }
            }
            if source["secretRef"].is_object() {
                // The Secret the operator creates, with the keys the instructions name.
                env.insert("ZONECAST_SECRET_KEY".into(), zonecast_runtime::keys::random_base64(32).unwrap());
                env.insert("ZONECAST_API_KEYS".into(), format!("{}:admin", zonecast_tests::ADMIN_KEY));
                env.insert("ZONECAST_DATABASE_URL".into(), database.clone());
            }
        }
        for item in container["env"].as_array().into_iter().flatten() {
            env.insert(item["name"].as_str().unwrap().to_owned(), item["value"].as_str().unwrap().to_owned());
        }
        // This machine's NATS (one server: one copy of each stream), a subject prefix of the
        // test's own, small streams, and every listener moved from its manifest port to a free
        // local one.
        env.insert("ZONECAST_NATS_URL".into(), zonecast_tests::nats_url());
        env.insert("ZONECAST_NATS_REPLICAS".into(), "1".into());
        env.insert("ZONECAST_SUBJECT_PREFIX".into(), format!("zt{}", uuid::Uuid::new_v4().simple()));
        env.extend(zonecast_tests::small_stream_env());
        let mut local: BTreeMap<u16, u16> = BTreeMap::new();
        for (key, value) in env.iter_mut().filter(|(k, _)| k.ends_with("_ADDR")) {
            let manifest_port: u16 =
                value.rsplit(':').next().unwrap().parse().unwrap_or_else(|_| panic!("{key}={value}"));
            let port = *local.entry(manifest_port).or_insert_with(free_port);
            *value = format!("127.0.0.1:{port}");
        }
        let checks = checks(deployment, container);
        let deployment_name = name(deployment);
        let local_port = |check: &Check| -> u16 {
            *local.get(&check.port).unwrap_or_else(|| {
                panic!("{deployment_name}: {} on port {}, where {binary} has no listener", check.what, check.port)
            })
        };
        let ready = checks.iter().find(|c| c.what == "readinessProbe").expect("a readiness probe");
        // An ingestor is ready once an evaluator follows every partition: one runs beside it.
        let mut evaluator = (binary == "zonecast-ingestor").then(|| {
            let port = free_port();
            let mut beside = env.clone();
            beside.insert("ZONECAST_HTTP_ADDR".into(), format!("127.0.0.1:{port}"));
            Service::start("zonecast-evaluator", beside.into_iter().collect(), port)
        });
        let mut service = Service::start(binary, env.clone().into_iter().collect(), local_port(ready));
        service.healthy(&http, Duration::from_secs(30)).await;
        for check in &checks {
            let url = format!("http://127.0.0.1:{}{}", local_port(check), check.path);
            let response = http.get(&url).send().await.unwrap_or_else(|e| panic!("{deployment_name}: {url}: {e}"));
            assert_eq!(
                response.status(),
                StatusCode::OK,
                "{deployment_name}: {} GET {} on port {} ({binary})",
                check.what,
                check.path,
                check.port
            );
            if check.what == "Prometheus scrape" {
                let content_type = response.headers()[reqwest::header::CONTENT_TYPE].to_str().unwrap().to_owned();
                assert!(content_type.starts_with("text/plain"), "{deployment_name}: scrape answered {content_type}");
            }
            checked += 1;
        }
        service.kill().await;
        if let Some(evaluator) = evaluator.as_mut() {
            evaluator.kill().await;
        }
    }
    let expected = 3 * deployments.len();
    assert!(checked >= expected, "three checks for each of the {} Deployments, got {checked}", deployments.len());
    let name = database.rsplit('/').next().unwrap();
    let _ = zonecast_store::postgres::drop_database(&zonecast_tests::database_admin_url(), name).await;
}

#[test]
fn every_deployment_runs_the_versioned_image_pulled_only_when_missing() {
    let image = format!("zonecast:{}", env!("CARGO_PKG_VERSION"));
    let objects = k8s_objects();
    for deployment in of_kind(&objects, "Deployment") {
        for container in containers(deployment) {
            let at = format!("{}/{}", name(deployment), container["name"].as_str().unwrap());
            assert_eq!(container["image"], Value::from(image.clone()), "{at}: image");
            assert_eq!(container["imagePullPolicy"], "IfNotPresent", "{at}: imagePullPolicy");
        }
    }
    let compose = read(&deploy_dir().join("compose.yaml"));
    assert!(compose.contains(&format!("image: {image}")), "compose builds and tags {image}");
    assert!(!compose.contains("zonecast:latest"), "compose names zonecast:latest");
}

#[test]
fn the_image_holds_only_the_service_binaries_and_caches_its_dependencies_in_a_layer() {
    let dockerfile = read(&deploy_dir().join("Dockerfile"));
    let runtime = dockerfile.rsplit("\nFROM ").next().unwrap();
    assert!(!runtime.contains("loadgen"), "the runtime image ships the load generator");
    for binary in zonecast_tests::process::BINARIES {
        assert!(runtime.contains(&format!("/release/{binary} ")), "the runtime image lacks {binary}");
    }
    let cook = dockerfile.find("cargo chef cook").expect("dependencies built from the recipe first");
    let sources = dockerfile[cook..].find("COPY . .").map(|at| at + cook).expect("the sources copied after");
    assert!(dockerfile[sources..].contains("cargo build --release --locked"), "zonecast built after its sources");
}

/// The variables a systemd unit sets itself (`Environment=` lines), with `%i` as `instance`.
fn unit_environment(unit: &str, instance: &str) -> Vec<(String, String)> {
    read(&deploy_dir().join("systemd").join(unit))
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Environment="))
        .filter_map(|a| a.trim_matches('"').split_once('='))
        .map(|(k, v)| (k.to_owned(), v.replace("%i", instance)))
        .collect()
}

/// The listen address `C` loads from `unit`'s own variables and the settings every distributed
/// binary needs (those the environment files give).
fn unit_listener<C: Load>(unit: &str, addr: impl Fn(&C) -> std::net::SocketAddr) -> String {
    let mut env: std::collections::HashMap<String, String> = [
        ("ZONECAST_DATABASE_URL", "postgres://zonecast@db/zonecast"),
        ("ZONECAST_NATS_URL", "nats://nats:4222"),
        ("ZONECAST_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="),
        ("ZONECAST_API_KEYS", "key:admin"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    env.extend(unit_environment(unit, "1"));
    let loaded = C::load(vec![C::BINARY.into()], &env).unwrap_or_else(|e| panic!("{unit}: {e}"));
    addr(&loaded.config).to_string()
}

#[test]
fn the_systemd_units_of_one_host_listen_on_distinct_addresses() {
    let listeners = [
        unit_listener::<ApiConfig>("zonecast-api.service", |c| c.http.addr),
        unit_listener::<IngestorConfig>("zonecast-ingestor.service", |c| c.http.unwrap().addr),
        unit_listener::<EvaluatorConfig>("zonecast-evaluator@.service", |c| c.ops.addr),
        unit_listener::<ForwarderConfig>("zonecast-forwarder.service", |c| c.ops.addr),
    ];
    let distinct: BTreeSet<&String> = listeners.iter().collect();
    assert_eq!(distinct.len(), listeners.len(), "units on one host collide: {listeners:?}");
    for unit in files(&deploy_dir().join("systemd"), "service") {
        let text = read(&unit);
        assert!(text.contains("Environment=ZONECAST_LOG_FORMAT=json"), "{} logs text", unit.display());
    }
}
