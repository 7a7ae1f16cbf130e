//! Read-your-writes: once the API has answered a configuration write, every evaluator and
//! forwarder has it in force, so the next position is judged against it; the answer says how
//! many did (`X-Zonecast-Applied`) and which revision of the change log the write is
//! (`X-Zonecast-Revision`). A write that reaches the log but whose announcement is lost is
//! still applied, and a new mobile zone is placed at once at its source's last position,
//! whichever evaluator owns the source.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_model::{ConfigApplied, ConfigChanged, ConfigKind, Mac, ZoneInput};
use zonecast_tests::{ADMIN_KEY, Mode, Server, both_modes, next_matching, sphere};

const WAIT: Duration = Duration::from_secs(10);

/// A device MAC of partition range `lo..=hi` (of 16), the `n`th such one from `start`.
fn device_in(lo: u32, hi: u32, n: usize, start: u32) -> String {
    (start..)
        .map(|i| format!("0A:00:00:00:{:02X}:{:02X}", i >> 8, i & 0xff))
        .filter(|m| (lo..=hi).contains(&m.parse::<Mac>().unwrap().partition(16)))
        .nth(n)
        .unwrap()
}

/// Sends a write as admin and returns its body, its revision and its `applied/live` header.
async fn write(server: &Server, method: Method, path: &str, body: Value) -> (Value, u64, (usize, usize)) {
    let response = server
        .http
        .request(method.clone(), format!("{}{path}", server.base))
        .header("X-API-Key", ADMIN_KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{method} {path}");
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    let revision = header("x-zonecast-revision").expect("X-Zonecast-Revision").parse().unwrap();
    let applied = header("x-zonecast-applied").expect("X-Zonecast-Applied");
    let (a, l) = applied.split_once('/').unwrap();
    let applied = (a.parse().unwrap(), l.parse().unwrap());
    (response.json().await.unwrap(), revision, applied)
}

/// The replicas that apply configuration in `server`: one forwarder and one evaluator per
/// core in the all-in-one; one of each in the distributed test deployment.
fn replicas(server: &Server) -> usize {
    match server.mode {
        Mode::AllInOne => std::thread::available_parallelism().map_or(1, |n| n.get()).min(16) + 1,
        Mode::Distributed => 2,
    }
}

fn entered(zone: &str, device: &str) -> impl Fn(&Value) -> bool {
    let (zone, device) = (zone.to_owned(), device.to_owned());
    move |e| {
        e["Type"] == "ZONE_ENTER" && e["Content"]["ZoneID"] == zone.as_str() && e["Source"]["MAC"] == device.as_str()
    }
}

async fn a_zone_is_in_force_for_the_first_position_after_its_answer(mode: Mode) {
    let server = Server::start(mode).await;
    let mut events = server.events().await;
    let mut last = 0;
    for i in 0..10 {
        let centre = [f64::from(i) * 100.0, 0.0, 0.0];
        let (zone, revision, applied) =
            write(&server, Method::POST, "/v3/modules/zones", sphere(&format!("dock {i}"), centre, 5.0)).await;
        assert!(revision > last, "revisions rise with every write: {revision} after {last}");
        last = revision;
        assert_eq!(applied, (replicas(&server), replicas(&server)), "every replica applied zone {i}");
        // Sent at once: no retry, no wait. Without the zone in force it would be judged outside.
        let device = format!("0B:00:00:00:00:{i:02X}");
        server.position(&device, centre, Utc::now()).await;
        next_matching(&mut events, WAIT, entered(zone["ZoneID"].as_str().unwrap(), &device)).await;
    }
    // A write of another kind is applied and counted the same way.
    let radii = json!({"0B:00:00:00:00:00": 2.5});
    let (_, revision, applied) = write(&server, Method::PUT, "/v3/modules/zones/devices/radius", radii).await;
    assert_eq!((revision, applied), (last + 1, (replicas(&server), replicas(&server))));
    server.stop().await;
}

async fn a_new_mobile_zone_is_placed_at_its_source_last_position_at_once(mode: Mode) {
    let server = Server::start(mode).await;
    let mut events = server.events().await;
    // Sources and workers on either side of the all-in-one's partition split (0-7 and 8-15):
    // the zone's evaluator learns the source's position from the one that owns it.
    let cases = [
        (device_in(0, 7, 0, 0), device_in(8, 15, 0, 0)),
        (device_in(8, 15, 1, 0), device_in(0, 7, 1, 0)),
        (device_in(0, 7, 2, 0), device_in(0, 7, 3, 0)),
    ];
    for (i, (source, worker)) in cases.iter().enumerate() {
        let at = [1000.0 * (i as f64 + 1.0), 0.0, 1.0];
        // The source reports once, inside a small probe zone: its enter proves that its
        // position was applied before the mobile zone exists.
        let probe = server.create_zone(sphere(&format!("probe {i}"), at, 0.5)).await;
        server.position(source, at, Utc::now()).await;
        next_matching(&mut events, WAIT, entered(probe["ZoneID"].as_str().unwrap(), source)).await;
        let mobile = json!({"Name": format!("forklift {i}"), "GeometryType": "cylinder",
            "GeometryData": [[0, 0, 0], [0, 0, 1], [2, 2, 0]], "MobileOriginSource": source});
        let (zone, _, _) = write(&server, Method::POST, "/v3/modules/zones", mobile).await;
        // The source has not moved since; the worker steps in beside it.
        server.position(worker, [at[0] + 1.5, 0.0, 1.0], Utc::now()).await;
        next_matching(&mut events, WAIT, entered(zone["ZoneID"].as_str().unwrap(), worker)).await;
    }
    server.stop().await;
}

async fn a_write_whose_announcement_was_lost_is_applied_all_the_same(mode: Mode) {
    let server = Server::start(mode).await;
    let mut reports = server.bus.subscribe(&server.subjects.config_applied()).await.unwrap();
    // Another store handle on the same database or file, writing and logging as the API does
    // but announcing nothing: as if the announcement had been lost.
    let store = match &server.database_url {
        Some(url) => zonecast_store::open(Some(url), 2, std::path::Path::new("unused")).await.unwrap(),
        None => {
            let path = server.data_dir.path().join(zonecast::DATABASE_FILE);
            zonecast_store::open(None, 1, &path).await.unwrap()
        }
    };
    let zone = ZoneInput::parse(&sphere("unannounced", [5.0, 5.0, 5.0], 2.0), &zonecast_model::Limits::DEFAULT)
        .unwrap()
        .create(uuid::Uuid::new_v4())
        .unwrap();
    store.insert_zones(std::slice::from_ref(&zone)).await.unwrap();
    let change = ConfigChanged {
        kind: ConfigKind::Zones,
        ids: vec![zonecast_model::format_id(&zone.id)],
        operation: None,
        revision: 0,
    };
    let revision = store.log_change(&change).await.unwrap();
    // Every evaluator finds it in the log within its next look (every second).
    let mut caught_up = std::collections::HashSet::new();
    while caught_up.len() < replicas(&server) - 1 {
        let msg = tokio::time::timeout(WAIT, reports.next()).await.expect("a report").unwrap();
        let report: ConfigApplied = serde_json::from_slice(&msg.payload).unwrap();
        if report.service == "evaluator" && report.revision >= revision {
            caught_up.insert(report.instance);
        }
    }
    let mut events = server.events().await;
    server.position("0C:00:00:00:00:01", [5.0, 5.0, 5.0], Utc::now()).await;
    next_matching(&mut events, WAIT, entered(&zonecast_model::format_id(&zone.id), "0C:00:00:00:00:01")).await;
    server.stop().await;
}

both_modes!(
    a_zone_is_in_force_for_the_first_position_after_its_answer,
    a_new_mobile_zone_is_placed_at_its_source_last_position_at_once,
    a_write_whose_announcement_was_lost_is_applied_all_the_same,
);

/// A replica that says it is alive but never applies the write: the API answers after its
/// bounded wait, telling that one of the replicas does not have the write; once the replica
/// says it leaves, writes no longer wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_for_a_replica_that_lags_only_as_long_as_configured() {
    let server = Server::start_configured(Mode::Distributed, |c| c.api.apply_wait = Duration::from_millis(300)).await;
    let laggard =
        ConfigApplied { service: "evaluator".into(), instance: uuid::Uuid::new_v4(), revision: 0, leaving: false };
    let say = |report: &ConfigApplied| {
        let (bus, subject, payload) =
            (server.bus.clone(), server.subjects.config_applied(), serde_json::to_vec(report).unwrap());
        async move {
            bus.publish(subject, payload.into()).await.unwrap();
            bus.flush().await.unwrap();
        }
    };
    say(&laggard).await;
    let (_, _, applied) = write(&server, Method::POST, "/v3/modules/zones", sphere("a", [0.0; 3], 1.0)).await;
    assert_eq!(applied, (2, 3), "the evaluator and forwarder applied it; the laggard did not");
    say(&ConfigApplied { leaving: true, ..laggard }).await;
    let (_, _, applied) = write(&server, Method::POST, "/v3/modules/zones", sphere("b", [0.0; 3], 1.0)).await;
    assert_eq!(applied, (2, 2));
    server.stop().await;
}
