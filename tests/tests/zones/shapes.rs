//! Zone geometry: locking, every geometry type with every kind of action, and timed windows.

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::{Mode, Server, json, sphere};

use super::{ack, announced, create, get, id, list, path, zones_change};

pub(crate) async fn a_locked_zone_refuses_geometry_changes_until_it_is_unlocked(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zone = create(&server, &mut changes, sphere("dock", [0.0, 0.0, 0.0], 1.0)).await;
    let zone_id = id(&zone);

    assert_eq!(server.ok(Method::POST, &format!("{}/lock", path(&zone_id.to_lowercase())), None).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    let mut expected = zone.clone();
    expected["IsGeometryLocked"] = json!(true);
    assert_eq!(get(&server, &zone_id).await, expected);

    let key = Some(zonecast_tests::WRITE_KEY);
    let data = json!({"GeometryData": [[0, 0, 0], [2, 0, 0]]});
    let message =
        server.refused(Method::PUT, &path(&zone_id), key, Some(data.to_string().into()), 422, "invalid_data").await;
    assert!(message.starts_with("GeometryData: "), "{message}");
    let kind = json!({"GeometryType": "circle"});
    let message =
        server.refused(Method::PUT, &path(&zone_id), key, Some(kind.to_string().into()), 422, "invalid_data").await;
    assert!(message.starts_with("GeometryType: "), "{message}");
    let batch = json!([{"ZoneID": zone_id, "GeometryData": [[1, 0, 0], [1, 0, 0]], "Name": "moved"}]);
    let message = server
        .refused(Method::PUT, "/v3/modules/zones/batch", key, Some(batch.to_string().into()), 422, "invalid_data")
        .await;
    assert!(message.starts_with("[0].GeometryData: "), "{message}");

    let other = json!({"Name": "still editable", "AlertLevel": 5, "GeometryData": [[0, 0, 0], [1, 0, 0]]});
    assert_eq!(
        server.ok(Method::PUT, &path(&zone_id), Some(other)).await,
        ack(),
        "other fields, and the same geometry, are fine"
    );
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    expected["Name"] = json!("still editable");
    expected["AlertLevel"] = json!(5);
    assert_eq!(get(&server, &zone_id).await, expected);

    assert_eq!(server.ok(Method::POST, &format!("{}/unlock", path(&zone_id)), None).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    expected["IsGeometryLocked"] = json!(false);
    assert_eq!(get(&server, &zone_id).await, expected);
    let circle = json!({"GeometryType": "circle", "GeometryData": [[0, 0, 0], [2, 0, 0]]});
    assert_eq!(server.ok(Method::PUT, &path(&zone_id), Some(circle)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    expected["GeometryType"] = json!("circle");
    expected["GeometryData"] = json!([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]);
    assert_eq!(get(&server, &zone_id).await, expected);
    server.stop().await;
}

pub(crate) async fn every_geometry_type_is_accepted_with_every_kind_of_zone_action(mode: Mode) {
    let server = Server::start(mode).await;
    let geometries = [
        ("sphere", json!([[1.0, 2.0, 3.0], [2.5, 0.0, 0.0]])),
        ("circle", json!([[-4.0, 2.0, 0.0], [1.5, 0.0, 0.0]])),
        // Rotated 45° about z; axes need not be unit length.
        ("cuboid", json!([[1.0, 2.0, 0.0], [4.0, 3.0, 2.5], [1.0, 1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])),
        ("square", json!([[0.0, 0.0, 0.0], [5.0, 2.0, 0.0], [0.6, 0.8, 0.0], [-0.8, 0.6, 0.0]])),
        ("cylinder", json!([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [3.0, 1.5, 0.0]])),
        // An L-shaped prism 2.5 m high.
        (
            "polygon",
            json!([
                [0.0, 0.0, 0.0],
                [4.0, 0.0, 0.0],
                [4.0, 1.0, 0.0],
                [1.0, 1.0, 0.0],
                [1.0, 3.0, 0.0],
                [0.0, 3.0, 0.0],
                [2.5, 0.0, 0.0],
                [0.0, 0.0, 1.0]
            ]),
        ),
    ];
    let actions = json!([
        {"type": "info-event", "message": "entered", "on": "enter"},
        {"type": "info-event"},
        {"type": "device-alarm", "on": "exit"},
        {"type": "http-request", "uri": "https://example.test/hook", "method": "put", "headers": {"X-Token": "abc"}, "on": "both"},
        {"type": "http-request", "uri": "http://127.0.0.1:9/x"},
    ]);
    let stored_actions = json!([
        {"type": "info-event", "message": "entered", "on": "enter"},
        {"type": "info-event", "on": "enter"},
        {"type": "device-alarm", "on": "exit"},
        {"type": "http-request", "uri": "https://example.test/hook", "method": "PUT", "headers": {"X-Token": "abc"}, "on": "both", "has_secret": false},
        {"type": "http-request", "uri": "http://127.0.0.1:9/x", "method": "POST", "headers": {}, "on": "enter", "has_secret": false},
    ]);
    let mut created = Vec::new();
    for (kind, data) in geometries {
        let zone = server
            .create_zone(json!({"Name": kind, "GeometryType": kind, "GeometryData": data, "ZoneActions": actions}))
            .await;
        assert_eq!(zone["GeometryType"], kind);
        assert_eq!(zone["GeometryData"], data, "{kind} keeps its rows as given");
        assert_eq!(zone["ZoneActions"], stored_actions, "{kind}");
        assert_eq!(get(&server, &id(&zone)).await, zone);
        created.push(zone);
    }
    assert_eq!(list(&server).await, created);
    server.stop().await;
}

pub(crate) async fn a_timed_zone_keeps_its_window_in_utc_and_needs_an_ordered_one(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("shift", [0.0, 0.0, 0.0], 1.0);
    input["IsTimed"] = json!(true);
    input["StartTime"] = json!("2026-11-21T10:00:00Z");
    input["StopTime"] = json!("2026-11-21T12:30:00.250+01:00");
    let zone = server.create_zone(input.clone()).await;
    assert_eq!(zone["IsTimed"], true);
    assert_eq!(zone["StartTime"], "2026-11-21T10:00:00.000Z");
    assert_eq!(zone["StopTime"], "2026-11-21T11:30:00.250Z");
    let zone_id = id(&zone);

    let key = Some(zonecast_tests::WRITE_KEY);
    let refuse = |path: String, body: Value| {
        let server = &server;
        async move { server.refused(Method::PUT, &path, key, Some(body.to_string().into()), 422, "invalid_data").await }
    };
    let mut open_ended = input.clone();
    open_ended.as_object_mut().unwrap().remove("StopTime");
    let message = server
        .refused(Method::POST, "/v3/modules/zones", key, Some(open_ended.to_string().into()), 422, "invalid_data")
        .await;
    assert_eq!(message, "StopTime: is required when IsTimed is true");
    let message = refuse(path(&zone_id), json!({"StopTime": "2026-11-21T10:00:00.000Z"})).await;
    assert_eq!(message, "StopTime: must be after StartTime");
    let message = refuse(path(&zone_id), json!({"StartTime": null})).await;
    assert_eq!(message, "StartTime: is required when IsTimed is true");
    let message = refuse(path(&zone_id), json!({"StartTime": "tomorrow"})).await;
    assert!(message.starts_with("StartTime: "), "{message}");

    assert_eq!(server.ok(Method::PUT, &path(&zone_id), Some(json!({"IsTimed": false}))).await, ack());
    let mut expected = zone.clone();
    expected["IsTimed"] = json!(false);
    assert_eq!(get(&server, &zone_id).await, expected, "the window is kept while the zone is not timed");
    server.stop().await;
}
