//! Concurrent writes to one zone, as many clients send them at once: every write answered 200
//! stays written. Also the zone's version as an `ETag`, and `If-Match` for clients that do their
//! own read-modify-write. Both modes: SQLite in the all-in-one, PostgreSQL in the distributed one.
#![allow(clippy::unwrap_used)]

use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast_tests::{ADMIN_KEY, Mode, Server, both_modes, json, sphere};

fn path(zone: &str) -> String {
    format!("/v3/modules/zones/{zone}")
}

async fn create(server: &Server, input: Value) -> String {
    server.create_zone(input).await["ZoneID"].as_str().unwrap().to_owned()
}

async fn get(server: &Server, zone: &str) -> Value {
    server.ok(Method::GET, &path(zone), None).await
}

fn macs(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("00:00:00:00:{:02X}:{:02X}", i / 256, i % 256)).collect()
}

/// Sends `method path` with `body` and optionally `If-Match`; the status and the ETag answered.
async fn send(
    server: &Server,
    method: Method,
    path: &str,
    body: Option<Value>,
    if_match: Option<&str>,
) -> (StatusCode, Option<String>) {
    let mut req = server.http.request(method, format!("{}{path}", server.base)).header("X-API-Key", ADMIN_KEY);
    if let Some(tag) = if_match {
        req = req.header("If-Match", tag);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let response = req.send().await.unwrap();
    let etag = response.headers().get("ETag").map(|v| v.to_str().unwrap().to_owned());
    (response.status(), etag)
}

async fn fifty_concurrent_device_additions_keep_all_fifty_devices(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = create(&server, sphere("dock", [0.0; 3], 1.0)).await;
    let devices = macs(50);
    let at = format!("{}/devices", path(&zone));
    // Each addition is sent until it is answered 200, as a client does with a 503 (the store
    // may be briefly unavailable on a loaded machine, which says nothing of lost updates).
    let add = |mac: &String| {
        let (server, at, body, mac) = (&server, &at, json!([mac]), mac.clone());
        async move {
            for _ in 0..20 {
                let (status, answer) = server.call(Method::POST, at, Some(ADMIN_KEY), Some(body.clone())).await;
                if status != StatusCode::SERVICE_UNAVAILABLE {
                    return (status, answer);
                }
            }
            panic!("{mac}: answered 503 twenty times");
        }
    };
    let answers = join_all(devices.iter().map(add)).await;
    assert!(answers.iter().all(|(status, _)| *status == StatusCode::OK), "{answers:?}");
    let mut stored: Vec<String> = get(&server, &zone).await["DeviceList"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect();
    stored.sort();
    assert_eq!(stored, devices, "every device whose addition was answered 200 is in the list");
    server.stop().await;
}

/// A lock and a geometry update sent together, thirty times: whenever the lock was answered
/// 200 the zone ends locked, and the geometry changed only if its update was answered 200.
async fn a_lock_answered_200_is_never_undone_by_a_concurrent_update(mode: Mode) {
    let server = Server::start(mode).await;
    for round in 0..30 {
        let zone = create(&server, sphere(&format!("cell {round}"), [0.0; 3], 1.0)).await;
        let geometry = json!({"GeometryData": [[5, 5, 5], [2, 0, 0]]});
        // A name-only update must not undo a lock either.
        let name = json!({"Name": "renamed"});
        let (at, lock_at) = (path(&zone), format!("{}/lock", path(&zone)));
        let (lock, moved, renamed) = tokio::join!(
            server.call(Method::POST, &lock_at, Some(ADMIN_KEY), None),
            server.call(Method::PUT, &at, Some(ADMIN_KEY), Some(geometry)),
            server.call(Method::PUT, &at, Some(ADMIN_KEY), Some(name)),
        );
        assert_eq!(lock.0, StatusCode::OK, "{lock:?}");
        assert_eq!(renamed.0, StatusCode::OK, "{renamed:?}");
        let now = get(&server, &zone).await;
        assert_eq!(now["IsGeometryLocked"], true, "round {round}: the lock answered 200 was lost");
        assert_eq!(now["Name"], "renamed", "round {round}");
        match moved.0 {
            StatusCode::OK => assert_eq!(now["GeometryData"][0], json!([5.0, 5.0, 5.0]), "round {round}"),
            StatusCode::UNPROCESSABLE_ENTITY => {
                assert_eq!(now["GeometryData"][0], json!([0.0, 0.0, 0.0]), "round {round}");
                assert_eq!(moved.1["message"], "GeometryData: cannot change while the zone's geometry is locked");
            }
            other => panic!("round {round}: the geometry update answered {other}: {}", moved.1),
        }
    }
    server.stop().await;
}

async fn concurrent_activation_and_device_changes_both_hold(mode: Mode) {
    let server = Server::start(mode).await;
    for round in 0..20 {
        let mut input = sphere(&format!("gate {round}"), [0.0; 3], 1.0);
        input["Active"] = json!(false);
        let zone = create(&server, input).await;
        let devices_at = format!("{}/devices", path(&zone));
        let (activated, added) = tokio::join!(
            server.call(Method::POST, "/v3/modules/zones/activate", Some(ADMIN_KEY), Some(json!([zone]))),
            server.call(Method::POST, &devices_at, Some(ADMIN_KEY), Some(json!(["00:00:00:00:00:01"]))),
        );
        assert_eq!((activated.0, added.0), (StatusCode::OK, StatusCode::OK));
        let now = get(&server, &zone).await;
        assert_eq!(now["Active"], true, "round {round}");
        assert_eq!(now["DeviceList"], json!(["00:00:00:00:00:01"]), "round {round}");
    }
    server.stop().await;
}

async fn a_batch_update_and_single_updates_of_the_same_zones_lose_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let zones = [create(&server, sphere("a", [0.0; 3], 1.0)).await, create(&server, sphere("b", [9.0; 3], 1.0)).await];
    let batch = json!([{"ZoneID": zones[0], "AlertLevel": 7}, {"ZoneID": zones[1], "AlertLevel": 7}]);
    let (a_at, b_devices_at) = (path(&zones[0]), format!("{}/devices", path(&zones[1])));
    let (batched, a, b) = tokio::join!(
        server.call(Method::PUT, "/v3/modules/zones/batch", Some(ADMIN_KEY), Some(batch)),
        server.call(Method::PUT, &a_at, Some(ADMIN_KEY), Some(json!({"Name": "a2"}))),
        server.call(Method::POST, &b_devices_at, Some(ADMIN_KEY), Some(json!(["00:00:00:00:00:02"]))),
    );
    assert_eq!((batched.0, a.0, b.0), (StatusCode::OK, StatusCode::OK, StatusCode::OK));
    let (za, zb) = (get(&server, &zones[0]).await, get(&server, &zones[1]).await);
    assert_eq!((za["AlertLevel"].clone(), za["Name"].clone()), (json!(7), json!("a2")));
    assert_eq!((zb["AlertLevel"].clone(), zb["DeviceList"].clone()), (json!(7), json!(["00:00:00:00:00:02"])));
    server.stop().await;
}

async fn a_zone_shows_its_version_as_an_etag_and_writes_honour_if_match(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = create(&server, sphere("dock", [0.0; 3], 1.0)).await;
    let (status, tag) = send(&server, Method::GET, &path(&zone), None, None).await;
    assert_eq!((status, tag.as_deref()), (StatusCode::OK, Some("\"0\"")));

    // A write with the current ETag goes through and answers the next one.
    let (status, tag) = send(&server, Method::PUT, &path(&zone), Some(json!({"Name": "one"})), Some("\"0\"")).await;
    assert_eq!((status, tag.as_deref()), (StatusCode::OK, Some("\"1\"")));

    // A stale ETag is 412 and changes nothing, on every single-zone write.
    let before = get(&server, &zone).await;
    let devices = format!("{}/devices", path(&zone));
    let stale: [(Method, String, Option<Value>); 5] = [
        (Method::PUT, path(&zone), Some(json!({"Name": "two"}))),
        (Method::POST, devices.clone(), Some(json!(["00:00:00:00:00:01"]))),
        (Method::DELETE, devices, Some(json!(["00:00:00:00:00:01"]))),
        (Method::POST, format!("{}/lock", path(&zone)), None),
        (Method::DELETE, path(&zone), None),
    ];
    for (method, at, body) in stale {
        let (status, _) = send(&server, method.clone(), &at, body, Some("\"0\"")).await;
        assert_eq!(status, StatusCode::PRECONDITION_FAILED, "{method} {at}");
    }
    let answer = server.call(Method::PUT, &path(&zone), Some(ADMIN_KEY), None).await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "sanity: a PUT without a body is malformed");
    assert_eq!(get(&server, &zone).await, before);

    // A malformed If-Match matches no version; `*` matches any.
    let (status, _) = send(&server, Method::POST, &format!("{}/lock", path(&zone)), None, Some("1")).await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    let (status, tag) = send(&server, Method::POST, &format!("{}/lock", path(&zone)), None, Some("*")).await;
    assert_eq!((status, tag.as_deref()), (StatusCode::OK, Some("\"2\"")));

    // A delete with the current ETag deletes.
    let (status, _) = send(&server, Method::DELETE, &path(&zone), None, Some("\"2\"")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(&server, Method::GET, &path(&zone), None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

both_modes!(
    fifty_concurrent_device_additions_keep_all_fifty_devices,
    a_lock_answered_200_is_never_undone_by_a_concurrent_update,
    concurrent_activation_and_device_changes_both_hold,
    a_batch_update_and_single_updates_of_the_same_zones_lose_nothing,
    a_zone_shows_its_version_as_an_etag_and_writes_honour_if_match,
);
