//! `GET /v3/system/cluster`: which replicas of every service run, how far behind each is, and
//! which position partitions each evaluator owns.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Serialize;
use warp::reply::Response;
use zonecast_bus::Leases;
use zonecast_bus::leases::{Member, Owner};
use zonecast_bus::presence::Replica;

use crate::context::Context;
use crate::error::ApiError;
use crate::reply;

/// How the evaluators come by their partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// They claim them among themselves in the lease bucket on NATS (`<prefix>_EVALUATORS`),
    /// with heartbeats: the distributed deployment.
    Claimed,
    /// They run in the all-in-one's process, each given a fixed range; they write no
    /// heartbeat, so they are listed as alive while the process answers.
    AllInOne,
}

/// The evaluators and the position partitions they own.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
#[schemars(rename = "ClusterStatus", deny_unknown_fields)]
pub struct ClusterStatus {
    /// How the evaluators come by their partitions.
    mode: Mode,
    /// How many position partitions there are (`ZONECAST_PARTITIONS`).
    partitions: u32,
    /// How long an evaluator may go without a heartbeat before it counts as dead and its
    /// partitions are taken over, in milliseconds: the lease the live evaluators announce (the
    /// longest, should they differ), else the default lease.
    lease_ms: u64,
    /// Every evaluator known: the live ones, and dead ones until the others forget them (a
    /// while after their lease ran out; one stopped cleanly leaves at once). By ID.
    evaluators: Vec<EvaluatorStatus>,
    /// The partitions that no live evaluator owns, ascending: none when every partition is
    /// evaluated.
    unowned: Vec<u32>,
    /// Every replica of every service known, by service and ID: the live ones, and dead ones for
    /// a while after their last heartbeat (one stopped cleanly leaves at once). In the
    /// all-in-one, its one process.
    replicas: Vec<ReplicaStatus>,
}

/// One replica of a service.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
#[schemars(deny_unknown_fields)]
pub struct ReplicaStatus {
    /// `api`, `ingestor`, `evaluator` or `forwarder`; `zonecast` for the all-in-one.
    service: String,
    /// Its ID: random per start (8 hex digits; forwarders name their MQTT clients with it).
    #[serde(rename = "ReplicaID")]
    replica_id: String,
    /// Whether its last heartbeat is within the lease.
    alive: bool,
    /// Milliseconds since its last heartbeat, measured as for the evaluators; `null` in the
    /// all-in-one.
    heartbeat_age_ms: Option<u64>,
    /// How far behind it reported itself last, in milliseconds (evaluators and forwarders:
    /// the age of the oldest position or event it has not finished with); `null` for a service
    /// that reports none.
    lag_ms: Option<u64>,
}

/// One evaluator.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
#[schemars(deny_unknown_fields)]
pub struct EvaluatorStatus {
    /// Its ID: random per start (`in-process-<n>` in the all-in-one).
    #[serde(rename = "EvaluatorID")]
    evaluator_id: String,
    /// Whether its last heartbeat is within the lease.
    alive: bool,
    /// Milliseconds since its last heartbeat, by the NATS server's clock: measured from the
    /// newest heartbeat of any evaluator, or from the API's clock when that is later (so that
    /// evaluators all gone show as dead too). `null` in the all-in-one.
    heartbeat_age_ms: Option<u64>,
    /// The partitions it owns, ascending (those of a dead evaluator are free to be taken over,
    /// and counted as unowned).
    partitions: Vec<u32>,
    /// What it says of itself (JSON), as it last wrote it; `null` in the all-in-one.
    about: Option<serde_json::Value>,
}

/// `GET /v3/system/cluster`: the evaluators, which partitions each owns and whether it is
/// alive, read from the lease bucket (or, in the all-in-one, from how its evaluators were
/// started).
pub async fn status(ctx: &Context) -> Result<Response, ApiError> {
    let evaluators = &ctx.evaluators;
    let unavailable = |e: zonecast_bus::BusError| ApiError::Unavailable(format!("evaluators' leases: {e}"));
    let leases = match &evaluators.given {
        Some(_) => None,
        None => evaluators
            .leases
            .get_or_try_init(|| ctx.bus.leases(ctx.subjects.prefix(), evaluators.replicas))
            .await
            .map_err(unavailable)?
            .as_ref(),
    };
    let answer = match leases {
        Some(leases) => {
            let (members, owners) = leases.snapshot().await.map_err(unavailable)?;
            let presence = evaluators
                .presence
                .get_or_try_init(|| ctx.bus.presence(ctx.subjects.prefix(), evaluators.replicas))
                .await
                .map_err(unavailable)?;
            let replicas = match presence {
                Some(presence) => presence.snapshot().await.map_err(unavailable)?,
                None => Vec::new(),
            };
            let now = i128::from(chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX));
            claimed(evaluators.partitions, &members, &owners, &replicas, now)
        }
        None => given(evaluators.partitions, evaluators.given.as_deref().unwrap_or_default()),
    };
    Ok(reply::ok(&answer))
}

fn millis(lease: std::time::Duration) -> u64 {
    u64::try_from(lease.as_millis()).unwrap_or(u64::MAX)
}

/// The status from the lease bucket's `members` and `owners` and the replica bucket's
/// `replicas`; `now` is the API's clock (Unix ns).
fn claimed(
    count: u32,
    members: &[Member],
    owners: &BTreeMap<u32, Owner>,
    replicas: &[Replica],
    now: i128,
) -> ClusterStatus {
    let beats = members.iter().map(|m| m.heartbeat_ns).chain(replicas.iter().map(|r| r.heartbeat_ns));
    let newest = beats.max().unwrap_or(now).max(now);
    // Rounded up, so that a member is alive exactly when its age is at most the lease.
    let age_ms = |heartbeat_ns: i128| {
        let ns = (newest - heartbeat_ns).max(0);
        u64::try_from((ns + 999_999) / 1_000_000).unwrap_or(u64::MAX)
    };
    let mut evaluators: Vec<EvaluatorStatus> = members
        .iter()
        .map(|m| EvaluatorStatus {
            evaluator_id: m.id.clone(),
            alive: m.alive(newest),
            heartbeat_age_ms: Some(age_ms(m.heartbeat_ns)),
            partitions: owners
                .iter()
                .filter(|(p, o)| **p < count && o.member.as_deref() == Some(m.id.as_str()))
                .map(|(p, _)| *p)
                .collect(),
            about: serde_json::from_slice(&m.about).ok(),
        })
        .collect();
    evaluators.sort_by(|a, b| a.evaluator_id.cmp(&b.evaluator_id));
    let lease = members.iter().filter(|m| m.alive(newest)).map(|m| m.lease).max().unwrap_or(Leases::LEASE);
    let mut replicas: Vec<ReplicaStatus> = replicas
        .iter()
        .map(|r| ReplicaStatus {
            service: r.service.clone(),
            replica_id: r.id.clone(),
            alive: r.alive(newest),
            heartbeat_age_ms: Some(age_ms(r.heartbeat_ns)),
            lag_ms: serde_json::from_slice::<serde_json::Value>(&r.about).ok().and_then(|a| a["LagMs"].as_u64()),
        })
        .collect();
    replicas.sort_by(|a, b| (&a.service, &a.replica_id).cmp(&(&b.service, &b.replica_id)));
    ClusterStatus {
        mode: Mode::Claimed,
        partitions: count,
        lease_ms: millis(lease),
        evaluators,
        unowned: zonecast_bus::leases::unowned(count, members, owners, newest),
        replicas,
    }
}

/// The status of the all-in-one's evaluators, each given its partitions.
fn given(count: u32, evaluators: &[Vec<u32>]) -> ClusterStatus {
    let owned: BTreeSet<u32> = evaluators.iter().flatten().copied().collect();
    ClusterStatus {
        mode: Mode::AllInOne,
        partitions: count,
        lease_ms: millis(Leases::LEASE),
        evaluators: evaluators
            .iter()
            .enumerate()
            .map(|(n, partitions)| EvaluatorStatus {
                evaluator_id: format!("in-process-{n}"),
                alive: true,
                heartbeat_age_ms: None,
                partitions: partitions.clone(),
                about: None,
            })
            .collect(),
        unowned: (0..count).filter(|p| !owned.contains(p)).collect(),
        replicas: vec![ReplicaStatus {
            service: "zonecast".into(),
            replica_id: zonecast_runtime::presence::replica_id(),
            alive: true,
            heartbeat_age_ms: None,
            lag_ms: None,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i128 = 1_000_000_000;

    fn member(id: &str, heartbeat_ns: i128) -> Member {
        let about = br#"{"Partitions":4,"LeaseMs":3000}"#.to_vec().into();
        Member {
            id: id.into(),
            about,
            heartbeat_ns,
            revision: 1,
            lease: std::time::Duration::from_secs(3),
            pinned: None,
        }
    }

    fn owner(id: Option<&str>) -> Owner {
        Owner { member: id.map(str::to_owned), revision: 1 }
    }

    #[test]
    fn a_member_past_its_lease_is_dead_and_its_partitions_unowned() {
        let members = [member("b", 100 * SECOND), member("a", 96 * SECOND)];
        let owners = BTreeMap::from([(0, owner(Some("a"))), (1, owner(Some("b"))), (2, owner(None))]);
        // The API's clock a little behind the server's: the newest heartbeat counts.
        let replicas = [
            Replica {
                service: "ingestor".into(),
                id: "i1".into(),
                about: br#"{"LagMs":null}"#.to_vec().into(),
                heartbeat_ns: 95 * SECOND,
            },
            Replica {
                service: "forwarder".into(),
                id: "f1".into(),
                about: br#"{"LagMs":120}"#.to_vec().into(),
                heartbeat_ns: 100 * SECOND,
            },
        ];
        let status = claimed(4, &members, &owners, &replicas, 99 * SECOND);
        let ids: Vec<_> = status.evaluators.iter().map(|e| e.evaluator_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        let a = &status.evaluators[0];
        assert_eq!((a.alive, a.heartbeat_age_ms, a.partitions.clone()), (false, Some(4000), vec![0]));
        let b = &status.evaluators[1];
        assert_eq!((b.alive, b.heartbeat_age_ms, b.partitions.clone()), (true, Some(0), vec![1]));
        assert_eq!(b.about, Some(serde_json::json!({"Partitions": 4, "LeaseMs": 3000})));
        assert_eq!(status.unowned, [0, 2, 3]);
        assert_eq!((status.mode, status.partitions, status.lease_ms), (Mode::Claimed, 4, 3000));
        let replicas: Vec<_> = status
            .replicas
            .iter()
            .map(|r| (r.service.as_str(), r.replica_id.as_str(), r.alive, r.heartbeat_age_ms, r.lag_ms))
            .collect();
        assert_eq!(
            replicas,
            [("forwarder", "f1", true, Some(0), Some(120)), ("ingestor", "i1", false, Some(5000), None)]
        );
    }

    #[test]
    fn a_member_is_alive_exactly_while_its_age_is_at_most_the_lease() {
        let lease = 3 * SECOND;
        for (silent, alive, age) in [
            (lease, true, 3000),
            (lease + 1, false, 3001),
            (lease - 999_999, true, 3000),
            (lease - 1_000_000, true, 2999),
        ] {
            let members = [member("a", 0), member("b", silent)];
            let status = claimed(1, &members, &BTreeMap::new(), &[], 0);
            let a = &status.evaluators[0];
            assert_eq!((a.alive, a.heartbeat_age_ms), (alive, Some(age)), "silent for {silent} ns");
            assert_eq!(a.alive, a.heartbeat_age_ms <= Some(status.lease_ms));
        }
    }

    #[test]
    fn members_all_silent_are_dead_by_the_api_clock() {
        let members = [member("a", 10 * SECOND)];
        let owners = BTreeMap::from([(0, owner(Some("a"))), (1, owner(Some("a")))]);
        let status = claimed(2, &members, &owners, &[], 20 * SECOND);
        assert!(!status.evaluators[0].alive);
        assert_eq!(status.unowned, [0, 1]);
        let status = claimed(2, &members, &owners, &[], 11 * SECOND);
        assert!(status.evaluators[0].alive);
        assert!(status.unowned.is_empty());
    }

    #[test]
    fn the_all_in_one_lists_its_given_ranges() {
        let status = given(4, &[vec![0, 1], vec![2, 3]]);
        assert_eq!(status.mode, Mode::AllInOne);
        assert_eq!(status.evaluators.len(), 2);
        assert!(status.evaluators.iter().all(|e| e.alive && e.heartbeat_age_ms.is_none()));
        assert_eq!(status.evaluators[1].partitions, [2, 3]);
        assert!(status.unowned.is_empty());
        let answer = serde_json::to_value(given(2, &[vec![0]])).unwrap();
        let evaluator = serde_json::json!({"EvaluatorID": "in-process-0", "Alive": true, "HeartbeatAgeMs": null, "Partitions": [0], "About": null});
        let process = serde_json::json!({"Service": "zonecast", "ReplicaID": zonecast_runtime::presence::replica_id(), "Alive": true, "HeartbeatAgeMs": null, "LagMs": null});
        assert_eq!(
            answer,
            serde_json::json!({"Mode": "all-in-one", "Partitions": 2, "LeaseMs": 1000, "Evaluators": [evaluator], "Unowned": [1], "Replicas": [process]})
        );
    }
}
