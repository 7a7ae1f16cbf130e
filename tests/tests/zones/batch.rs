//! Bulk zone writes: batch create, update, delete, activation and device lists; a refused batch
//! changes nothing.

use reqwest::Method;
use serde_json::Value;
use zonecast_bus::Subscription;
use zonecast_tests::{Mode, Server, json, sphere};

use super::{ack, announced, create, get, id, list, nothing_was_announced, path, zones_change};

pub(crate) async fn a_batch_create_returns_the_new_zones_in_order(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let first = create(&server, &mut changes, sphere("first", [0.0, 0.0, 0.0], 1.0)).await;
    let batch = json!([
        sphere("a", [0.0, 0.0, 0.0], 1.0),
        {"Name": "b", "GeometryType": "circle", "GeometryData": [[5, 5, 0], [2, 0, 0]], "AlertLevel": 9},
        {"GeometryType": "cylinder", "GeometryData": [[0, 0, 0], [0, 0, 1], [3, 1.5, 0]]},
    ]);
    let created = server.ok(Method::POST, "/v3/modules/zones/batch", Some(batch)).await;
    let created = created.as_array().expect("a list of zones").clone();
    let names: Vec<&str> = created.iter().map(|z| z["Name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b", ""]);
    assert_eq!(created[1]["AlertLevel"], 9);
    assert_eq!(created[2]["InclusionPolicy"], "all", "batch-created zones take the defaults too");
    let ids: Vec<String> = created.iter().map(id).collect();
    assert!(ids.iter().all(|i| *i == i.to_uppercase() && *i != id(&first)));
    assert_eq!(announced(&mut changes).await, zones_change(&ids.iter().map(String::as_str).collect::<Vec<_>>()));
    let mut expected = vec![first];
    expected.extend(created);
    assert_eq!(list(&server).await, expected);
    // AlertLevel has no upper bound.
    let high = json!([{"GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]], "AlertLevel": 1_000_000},
        {"GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]], "AlertLevel": u64::MAX}]);
    let high = server.ok(Method::POST, "/v3/modules/zones/batch", Some(high)).await;
    assert_eq!((&high[0]["AlertLevel"], &high[1]["AlertLevel"]), (&json!(1_000_000), &json!(u64::MAX)));
    assert_eq!(get(&server, &id(&high[1])).await, high[1]);
    announced(&mut changes).await;
    server.stop().await;
}

/// Four zones: alpha, beta, and two named gamma.
async fn four_zones(server: &Server, changes: &mut Subscription) -> Vec<Value> {
    let mut zones = Vec::new();
    for (i, name) in ["alpha", "beta", "gamma", "gamma"].into_iter().enumerate() {
        zones.push(create(server, changes, sphere(name, [i as f64 * 10.0, 0.0, 0.0], 1.0)).await);
    }
    zones
}

pub(crate) async fn a_batch_update_selects_zones_by_id_or_by_a_name_only_one_zone_has(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zones = four_zones(&server, &mut changes).await;
    let (alpha, beta) = (id(&zones[0]), id(&zones[1]));
    let batch = json!([
        {"ZoneID": alpha.to_lowercase(), "AlertLevel": 4},
        {"Name": "beta", "Active": false},
        {"ZoneID": alpha, "Name": "alpha-renamed"},
    ]);
    assert_eq!(server.ok(Method::PUT, "/v3/modules/zones/batch", Some(batch)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&alpha, &beta]));
    let mut expected = zones.clone();
    expected[0]["AlertLevel"] = json!(4);
    expected[0]["Name"] = json!("alpha-renamed");
    expected[1]["Active"] = json!(false);
    assert_eq!(list(&server).await, expected, "both changes to alpha apply, in order; the gammas are untouched");
    server.stop().await;
}

pub(crate) async fn a_batch_update_naming_no_zone_is_not_found_and_changes_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zones = four_zones(&server, &mut changes).await;
    let batch = json!([{"ZoneID": id(&zones[0]), "AlertLevel": 9}, {"Name": "nobody", "AlertLevel": 1}]);
    let message = server
        .refused(
            Method::PUT,
            "/v3/modules/zones/batch",
            Some(zonecast_tests::WRITE_KEY),
            Some(batch.to_string().into()),
            404,
            "not_found",
        )
        .await;
    assert!(message.contains("nobody"), "the message names the unmatched name: {message}");
    let unknown = uuid::Uuid::new_v4().to_string();
    let batch = json!([{"ZoneID": id(&zones[0]), "AlertLevel": 9}, {"ZoneID": unknown, "AlertLevel": 1}]);
    let message = server
        .refused(
            Method::PUT,
            "/v3/modules/zones/batch",
            Some(zonecast_tests::WRITE_KEY),
            Some(batch.to_string().into()),
            404,
            "not_found",
        )
        .await;
    assert!(message.to_uppercase().contains(&unknown.to_uppercase()), "the message names the unknown zone: {message}");
    nothing_was_announced(&server, &mut changes).await;
    server.stop().await;
}

pub(crate) async fn a_batch_update_by_a_name_two_zones_share_is_refused_and_changes_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zones = four_zones(&server, &mut changes).await;
    let batch = json!([{"ZoneID": id(&zones[0]), "AlertLevel": 9}, {"Name": "gamma", "AlertLevel": 1}]);
    let message = server
        .refused(
            Method::PUT,
            "/v3/modules/zones/batch",
            Some(zonecast_tests::WRITE_KEY),
            Some(batch.to_string().into()),
            422,
            "invalid_data",
        )
        .await;
    assert!(message.starts_with("[1].Name: "), "the message names the element and field: {message}");
    assert!(message.contains("gamma"), "{message}");
    nothing_was_announced(&server, &mut changes).await;
    server.stop().await;
}

pub(crate) async fn a_batch_delete_removes_exactly_the_listed_zones(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zones = four_zones(&server, &mut changes).await;
    let body = json!([id(&zones[0]).to_lowercase(), id(&zones[2]), id(&zones[0])]);
    assert_eq!(server.ok(Method::DELETE, "/v3/modules/zones", Some(body)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&id(&zones[0]), &id(&zones[2])]));
    assert_eq!(list(&server).await, vec![zones[1].clone(), zones[3].clone()]);
    server.stop().await;
}

pub(crate) async fn a_batch_delete_with_one_unknown_zone_deletes_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zones = four_zones(&server, &mut changes).await;
    for unknown in [uuid::Uuid::new_v4().to_string(), "not-a-zone".to_owned()] {
        let body = json!([id(&zones[0]), id(&zones[1]), unknown]);
        let message = server
            .refused(
                Method::DELETE,
                "/v3/modules/zones",
                Some(zonecast_tests::WRITE_KEY),
                Some(body.to_string().into()),
                404,
                "not_found",
            )
            .await;
        assert!(message.to_uppercase().contains(&unknown.to_uppercase()), "the message names {unknown}: {message}");
    }
    nothing_was_announced(&server, &mut changes).await;
    server.stop().await;
}

pub(crate) async fn zones_are_deactivated_and_activated_by_the_list(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zones = four_zones(&server, &mut changes).await;
    let ids: Vec<String> = zones.iter().map(id).collect();
    let active = |list: &[Value]| list.iter().map(|z| z["Active"].as_bool().unwrap()).collect::<Vec<_>>();

    let body = json!([ids[0].to_lowercase(), ids[1]]);
    assert_eq!(server.ok(Method::POST, "/v3/modules/zones/deactivate", Some(body)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&ids[0], &ids[1]]));
    assert_eq!(active(&list(&server).await), [false, false, true, true]);

    let body = json!([ids[0], ids[2]]);
    assert_eq!(server.ok(Method::POST, "/v3/modules/zones/activate", Some(body)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&ids[0], &ids[2]]));
    let now = list(&server).await;
    assert_eq!(active(&now), [true, false, true, true]);
    for (before, after) in zones.iter().zip(&now) {
        let mut before = before.clone();
        before["Active"] = after["Active"].clone();
        assert_eq!(&before, after, "only Active changes");
    }
    server.stop().await;
}

pub(crate) async fn activating_or_deactivating_with_one_unknown_zone_changes_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zones = four_zones(&server, &mut changes).await;
    server.ok(Method::POST, "/v3/modules/zones/deactivate", Some(json!([id(&zones[1])]))).await;
    assert_eq!(announced(&mut changes).await, zones_change(&[&id(&zones[1])]));
    for op in ["activate", "deactivate"] {
        for unknown in [uuid::Uuid::new_v4().to_string(), "not-a-zone".to_owned()] {
            let body = json!([id(&zones[0]), id(&zones[1]), unknown]);
            let path = format!("/v3/modules/zones/{op}");
            let message = server
                .refused(
                    Method::POST,
                    &path,
                    Some(zonecast_tests::WRITE_KEY),
                    Some(body.to_string().into()),
                    404,
                    "not_found",
                )
                .await;
            assert!(
                message.to_uppercase().contains(&unknown.to_uppercase()),
                "{op}: the message names {unknown}: {message}"
            );
        }
    }
    nothing_was_announced(&server, &mut changes).await;
    server.stop().await;
}

pub(crate) async fn devices_are_merged_into_and_removed_from_a_device_list(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("dock", [0.0, 0.0, 0.0], 1.0);
    input["DeviceList"] = json!(["00:00:00:00:00:01"]);
    let mut changes = server.config_changes().await;
    let zone = create(&server, &mut changes, input).await;
    let zone_id = id(&zone);
    let devices = format!("{}/devices", path(&zone_id.to_lowercase()));

    let add = json!(["00-00-00-00-00-02", "00:00:00:00:00:01", "00:00:00:00:00:02", "0a:0b:0c:0d:0e:0f"]);
    assert_eq!(server.ok(Method::POST, &devices, Some(add)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    let mut expected = zone.clone();
    expected["DeviceList"] = json!(["00:00:00:00:00:01", "00:00:00:00:00:02", "0A:0B:0C:0D:0E:0F"]);
    assert_eq!(get(&server, &zone_id).await, expected);

    let remove = json!(["00-00-00-00-00-01", "0A-0B-0C-0D-0E-0F", "00:00:00:00:00:99"]);
    assert_eq!(server.ok(Method::DELETE, &devices, Some(remove)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    expected["DeviceList"] = json!(["00:00:00:00:00:02"]);
    assert_eq!(get(&server, &zone_id).await, expected);
    server.stop().await;
}

pub(crate) async fn a_batch_create_with_one_bad_zone_creates_none(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let batch = json!([
        sphere("a", [0.0, 0.0, 0.0], 1.0),
        sphere("b", [5.0, 0.0, 0.0], 1.0),
        sphere("c", [9.0, 0.0, 0.0], 0.0),
        sphere("d", [12.0, 0.0, 0.0], 1.0),
    ]);
    let message = server
        .refused(
            Method::POST,
            "/v3/modules/zones/batch",
            Some(zonecast_tests::WRITE_KEY),
            Some(batch.to_string().into()),
            422,
            "invalid_data",
        )
        .await;
    assert!(message.starts_with("[2]."), "the message names the element: {message}");
    assert_eq!(message, "[2].GeometryData[1]: radius must be > 0");
    assert!(list(&server).await.is_empty());
    nothing_was_announced(&server, &mut changes).await;
    server.stop().await;
}
