//! The cluster layout the deployment files describe: the evaluators are one Deployment of
//! replicas that share the partitions among themselves (no range pinned, rolled one replica at a
//! time, autoscaled on a lag the evaluators serve), and so are the evaluators of compose, the
//! systemd template and the local script; NATS is three JetStream servers routed to each other,
//! and zonecast keeps a copy of every stream on each; every Deployment and StatefulSet has a
//! PodDisruptionBudget that lets a drain proceed, and keeps a quorum of a StatefulSet.

use serde_json::{Map, Value};
use zonecast_runtime::metrics::{Kind, Owner};

use super::{containers, deploy_dir, k8s_objects, name, of_kind, read, unit_environment, yaml_documents};

const PIN: &str = "ZONECAST_EVALUATOR_PARTITIONS";

/// The data of the ConfigMap `zonecast` every zonecast container takes its settings from.
fn zonecast_settings(objects: &[Value]) -> &Map<String, Value> {
    of_kind(objects, "ConfigMap")
        .into_iter()
        .find(|c| name(c) == "zonecast")
        .and_then(|c| c["data"].as_object())
        .expect("the ConfigMap zonecast")
}

fn setting<'a>(settings: &'a Map<String, Value>, key: &str) -> &'a str {
    settings.get(key).and_then(Value::as_str).unwrap_or_else(|| panic!("the ConfigMap zonecast sets {key}"))
}

/// Whether `selector` (matchLabels, or a Service's selector) picks the pods of `workload`.
fn selects(selector: &Value, workload: &Value) -> bool {
    let labels = &workload["spec"]["template"]["metadata"]["labels"];
    selector.as_object().is_some_and(|m| !m.is_empty() && m.iter().all(|(k, v)| &labels[k] == v))
}

fn same_namespace(a: &Value, b: &Value) -> bool {
    a["metadata"]["namespace"] == b["metadata"]["namespace"]
}

fn count(value: &Value, what: &str) -> u64 {
    value.as_u64().unwrap_or_else(|| panic!("{what} is a whole number, not {value}"))
}

#[test]
fn the_evaluators_are_one_deployment_of_replicas_that_share_the_partitions() {
    let objects = k8s_objects();
    let evaluators: Vec<&Value> = of_kind(&objects, "Deployment")
        .into_iter()
        .filter(|d| containers(d).iter().any(|c| c["command"][0] == "zonecast-evaluator"))
        .collect();
    let [evaluator] = evaluators.as_slice() else {
        panic!("one evaluator Deployment, found {:?}", evaluators.iter().copied().map(name).collect::<Vec<_>>())
    };
    let at = name(evaluator);
    let spec = &evaluator["spec"];
    assert!(count(&spec["replicas"], "replicas") >= 2, "{at}: a replica lost leaves others to take its partitions");
    assert_eq!(spec["strategy"]["type"], "RollingUpdate", "{at}: evaluators hand their partitions over");
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0, "{at}: an update never lowers capacity");
    let grace = count(&spec["template"]["spec"]["terminationGracePeriodSeconds"], "terminationGracePeriodSeconds");
    assert!(grace >= 10, "{at}: {grace} s is too short for a handover");
    for container in containers(evaluator) {
        let pinned = container["env"].as_array().into_iter().flatten().any(|e| e["name"] == PIN);
        assert!(!pinned, "{at}: pins a partition range");
    }
    let settings = zonecast_settings(&objects);
    assert!(!settings.contains_key(PIN), "the ConfigMap pins every evaluator to one range");

    let partitions: u64 = setting(settings, "ZONECAST_PARTITIONS").parse().expect("ZONECAST_PARTITIONS is a number");
    let autoscalers: Vec<&Value> = of_kind(&objects, "HorizontalPodAutoscaler")
        .into_iter()
        .filter(|h| h["spec"]["scaleTargetRef"]["kind"] == "Deployment" && h["spec"]["scaleTargetRef"]["name"] == at)
        .collect();
    let [autoscaler] = autoscalers.as_slice() else { panic!("one autoscaler of {at}, found {}", autoscalers.len()) };
    assert_eq!(autoscaler["apiVersion"], "autoscaling/v2", "{at}: autoscaler API");
    let (min, max) = (
        count(&autoscaler["spec"]["minReplicas"], "minReplicas"),
        count(&autoscaler["spec"]["maxReplicas"], "maxReplicas"),
    );
    assert!(min >= 2 && min <= max, "{at}: autoscaler bounds {min}..={max}");
    assert!(max <= partitions, "{at}: up to {max} replicas, but only {partitions} partitions to share");
    for metric in autoscaler["spec"]["metrics"].as_array().expect("the autoscaler's metrics") {
        assert_eq!(metric["type"], "Pods", "{at}: the autoscaler scales on a metric of the evaluators' own");
        let metric_name = metric["pods"]["metric"]["name"].as_str().expect("a metric name");
        let served = zonecast_runtime::metrics::find(metric_name);
        assert!(
            served.is_some_and(|m| m.kind == Kind::Gauge && m.owners.contains(&Owner::Evaluator)),
            "{at}: the autoscaler reads {metric_name}, which is no gauge of the evaluators"
        );
    }

    // Outside Kubernetes: two evaluators in compose, none pinned by the template or the script.
    let compose = yaml_documents(&deploy_dir().join("compose.yaml"));
    let mut compose_replicas = 0;
    for (service, spec) in compose[0]["services"].as_object().expect("compose services") {
        if spec["command"][0] == "zonecast-evaluator" {
            assert!(spec["environment"].get(PIN).is_none(), "compose service {service} pins a range");
            compose_replicas += spec["deploy"]["replicas"].as_u64().unwrap_or(1);
        }
    }
    assert!(compose_replicas >= 2, "compose runs {compose_replicas} evaluators");
    let unit = unit_environment("zonecast-evaluator@.service", "1");
    assert!(unit.iter().all(|(k, _)| k != PIN), "zonecast-evaluator@1 pins a range: {unit:?}");
    let script = read(&deploy_dir().join("run-distributed.sh"));
    assert!(!script.contains(PIN), "run-distributed.sh pins the evaluators' ranges");
}

/// The pods of `replicas` a budget lets a drain evict at once.
fn disruptions_allowed(budget: &Value, replicas: u64) -> u64 {
    let spec = &budget["spec"];
    match (&spec["maxUnavailable"], &spec["minAvailable"]) {
        (Value::Null, min) => replicas.saturating_sub(count(min, "minAvailable")),
        (max, _) => count(max, "maxUnavailable"),
    }
}

#[test]
fn every_deployment_and_statefulset_has_a_disruption_budget_that_lets_a_drain_proceed() {
    let objects = k8s_objects();
    let budgets = of_kind(&objects, "PodDisruptionBudget");
    let workloads: Vec<&Value> =
        of_kind(&objects, "Deployment").into_iter().chain(of_kind(&objects, "StatefulSet")).collect();
    assert!(workloads.len() >= 5, "api, ingestor, evaluator, forwarder and NATS");
    for workload in workloads {
        let at = format!("{} {}", workload["kind"].as_str().unwrap(), name(workload));
        let budget = budgets
            .iter()
            .find(|b| same_namespace(b, workload) && selects(&b["spec"]["selector"]["matchLabels"], workload))
            .unwrap_or_else(|| panic!("{at}: no PodDisruptionBudget selects its pods"));
        let replicas = workload["spec"]["replicas"].as_u64().unwrap_or(1);
        let allowed = disruptions_allowed(budget, replicas);
        assert!(allowed >= 1, "{at}: its budget blocks every drain");
        if workload["kind"] == "StatefulSet" {
            let quorum = replicas / 2 + 1;
            assert!(
                replicas - allowed.min(replicas) >= quorum,
                "{at}: a drain may take {allowed} of {replicas}, below a quorum"
            );
        }
    }
}

/// The route URLs of a nats-server configuration (`routes [ ... ]` or `routes: [ ... ]`).
fn routes(conf: &str) -> Vec<String> {
    let at = conf.find("routes").expect("the configuration names routes");
    let list = &conf[at..];
    let (open, close) = (list.find('[').expect("routes ["), list.find(']').expect("routes ]"));
    list[open + 1..close]
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|r| r.trim_matches(|c| c == '"' || c == '\''))
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The host of a URL such as `nats://host:port`.
fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.rsplit_once('@').map_or(rest, |(_, rest)| rest).split([':', '/']).next().unwrap()
}

#[test]
fn nats_is_three_routed_jetstream_servers_and_zonecast_keeps_a_copy_on_each() {
    let objects = k8s_objects();
    let servers: Vec<&Value> = of_kind(&objects, "StatefulSet")
        .into_iter()
        .filter(|s| containers(s).iter().any(|c| c["image"].as_str().is_some_and(|i| i.starts_with("nats:"))))
        .collect();
    let [nats] = servers.as_slice() else { panic!("one NATS StatefulSet, found {}", servers.len()) };
    let at = name(nats);
    let replicas = count(&nats["spec"]["replicas"], "replicas");
    assert_eq!(replicas, 3, "{at}: three servers, so that one lost leaves a quorum");
    let container = containers(nats)[0];
    let image = container["image"].as_str().unwrap();
    let tag = image.split_once(':').unwrap().1;
    assert!(tag.split('-').next().unwrap().split('.').count() == 3, "{at}: {image} is not pinned to a release");
    assert_eq!(container["imagePullPolicy"], "IfNotPresent", "{at}: imagePullPolicy");
    let security = &container["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false, "{at}: allowPrivilegeEscalation");
    assert_eq!(security["readOnlyRootFilesystem"], true, "{at}: readOnlyRootFilesystem");
    assert_eq!(nats["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"], true, "{at}: runAsNonRoot");
    assert!(container["resources"]["limits"]["memory"].is_string(), "{at}: a memory limit");

    // The routes name every server by its stable name under the headless Service.
    let headless = nats["spec"]["serviceName"].as_str().expect("serviceName");
    let service = of_kind(&objects, "Service")
        .into_iter()
        .find(|s| name(s) == headless && same_namespace(s, nats))
        .unwrap_or_else(|| panic!("{at}: no Service {headless}"));
    assert_eq!(service["spec"]["clusterIP"], "None", "{at}: {headless} is headless");
    assert!(selects(&service["spec"]["selector"], nats), "{at}: {headless} selects its pods");
    let config_maps: Vec<&str> = nats["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["configMap"]["name"].as_str())
        .collect();
    let conf: String = of_kind(&objects, "ConfigMap")
        .into_iter()
        .filter(|c| config_maps.contains(&name(c)))
        .flat_map(|c| c["data"].as_object().into_iter().flatten().filter_map(|(_, v)| v.as_str()))
        .find(|text| text.contains("cluster"))
        .unwrap_or_else(|| panic!("{at}: no configuration with a cluster block in ConfigMaps {config_maps:?}"))
        .to_owned();
    let routes = routes(&conf);
    for ordinal in 0..replicas {
        let server = format!("{at}-{ordinal}.{headless}");
        assert!(
            routes.iter().any(|r| host(r) == server || host(r).starts_with(&format!("{server}."))),
            "{at}: no route to {server} in {routes:?}"
        );
    }

    // JetStream stores on a volume of each server's own.
    let store = conf
        .lines()
        .find_map(|l| l.trim().strip_prefix("store_dir"))
        .map(|v| v.trim_start_matches([':', '=', ' ']).trim().trim_matches('"').to_owned())
        .unwrap_or_else(|| panic!("{at}: JetStream without store_dir"));
    assert!(conf.contains("jetstream"), "{at}: JetStream is not enabled");
    let claims: Vec<&str> = nats["spec"]["volumeClaimTemplates"].as_array().into_iter().flatten().map(name).collect();
    let mounted =
        container["volumeMounts"].as_array().into_iter().flatten().any(|m| {
            claims.contains(&m["name"].as_str().unwrap()) && store.starts_with(m["mountPath"].as_str().unwrap())
        });
    assert!(mounted, "{at}: store_dir {store} is not on a volume claim ({claims:?})");

    // zonecast connects through a Service in front of the servers and keeps a copy on each.
    let settings = zonecast_settings(&objects);
    let url = setting(settings, "ZONECAST_NATS_URL");
    let client = of_kind(&objects, "Service").into_iter().find(|s| name(s) == host(url));
    let client = client.unwrap_or_else(|| panic!("ZONECAST_NATS_URL {url} names no Service"));
    assert!(selects(&client["spec"]["selector"], nats), "ZONECAST_NATS_URL {url}: its Service is not in front of {at}");
    assert_eq!(
        setting(settings, "ZONECAST_NATS_REPLICAS"),
        replicas.to_string(),
        "a copy of each stream on each server"
    );
}
