//! One zone at a time: creating, reading, updating, deleting and resetting it.

use reqwest::Method;
use zonecast_tests::{Mode, Server, json, sphere};

use super::{ack, announced, create, get, id, list, nothing_was_announced, path, zones_change};

pub(crate) async fn a_zone_created_from_geometry_alone_takes_the_documented_defaults(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zone = server.create_zone(json!({"GeometryType": "sphere", "GeometryData": [[1, 2, 3], [2.5, 0, 0]]})).await;
    let zone_id = id(&zone);
    assert_eq!(zone_id, zone_id.to_uppercase(), "ZoneID is upper-case");
    assert!(uuid::Uuid::parse_str(&zone_id).is_ok(), "ZoneID {zone_id} is a UUID");
    assert_eq!(
        zone,
        json!({
            "SiteID": 501, "ZoneID": zone_id, "Name": "", "GeometryType": "sphere",
            "GeometryData": [[1.0, 2.0, 3.0], [2.5, 0.0, 0.0]], "AlertLevel": 0, "Active": true,
            "InclusionPolicy": "all", "DeviceList": [], "ZoneActions": [], "IsTimed": false,
            "StartTime": null, "StopTime": null, "MobileOriginSource": null,
            "CollidingDevices": [], "IsGeometryLocked": false, "MaxDwellSeconds": null, "MaxOccupancy": null,
            "MinOccupancy": null, "AlarmsNeedAcknowledgement": true,
        })
    );
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    assert_eq!(get(&server, &zone_id).await, zone);
    server.stop().await;
}

pub(crate) async fn read_only_and_unknown_fields_sent_on_create_and_update_are_ignored(mode: Mode) {
    let server = Server::start(mode).await;
    let chosen = uuid::Uuid::new_v4().to_string().to_uppercase();
    let mut input = sphere("dock", [0.0, 0.0, 0.0], 1.0);
    input["SiteID"] = json!(7);
    input["ZoneID"] = json!(chosen);
    input["CollidingDevices"] = json!(["AA:BB:CC:DD:EE:FF"]);
    input["IsGeometryLocked"] = json!(true);
    input["Colour"] = json!("red");
    let zone = server.create_zone(input).await;
    assert_eq!(zone["SiteID"], 501);
    assert_ne!(id(&zone), chosen, "the server picks the ZoneID");
    assert_eq!(zone["CollidingDevices"], json!([]));
    assert_eq!(zone["IsGeometryLocked"], false);
    assert!(zone.get("Colour").is_none(), "unknown fields are not stored: {zone}");

    // A ZoneID or SiteID that would not even parse is ignored just the same.
    let mut odd = sphere("odd", [0.0, 0.0, 0.0], 1.0);
    odd["ZoneID"] = json!("my-own-id");
    odd["SiteID"] = json!("site seven");
    odd["CollidingDevices"] = json!("nobody");
    odd["IsGeometryLocked"] = json!("yes");
    let odd = server.create_zone(odd).await;
    assert!(uuid::Uuid::parse_str(&id(&odd)).is_ok());
    assert_eq!((odd["SiteID"].clone(), odd["IsGeometryLocked"].clone()), (json!(501), json!(false)));

    let update = json!({"Name": "renamed", "SiteID": 7, "ZoneID": chosen, "CollidingDevices": ["AA:BB:CC:DD:EE:FF"],
                        "IsGeometryLocked": true, "Colour": "red"});
    assert_eq!(server.ok(Method::PUT, &path(&id(&zone)), Some(update)).await, ack());
    let mut expected = zone.clone();
    expected["Name"] = json!("renamed");
    assert_eq!(get(&server, &id(&zone)).await, expected, "only Name changed");
    assert_eq!(list(&server).await, vec![expected, odd], "no zone appeared under the sent ZoneID");
    server.stop().await;
}

pub(crate) async fn zones_are_listed_in_creation_order(mode: Mode) {
    let server = Server::start(mode).await;
    let mut created = Vec::new();
    for name in ["charlie", "alpha", "bravo", "alpha"] {
        created.push(server.create_zone(sphere(name, [0.0, 0.0, 0.0], 1.0)).await);
    }
    assert_eq!(list(&server).await, created);
    server.stop().await;
}

pub(crate) async fn a_zone_is_retrieved_by_its_id_in_any_case(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = server.create_zone(sphere("dock", [1.0, 2.0, 3.0], 2.5)).await;
    let upper = id(&zone);
    let mixed: String =
        upper.chars().enumerate().map(|(i, c)| if i % 2 == 0 { c.to_ascii_lowercase() } else { c }).collect();
    for form in [upper.clone(), upper.to_lowercase(), mixed] {
        assert_eq!(get(&server, &form).await, zone, "GET by {form}");
    }
    server.stop().await;
}

pub(crate) async fn an_update_changes_only_the_supplied_fields(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zone = create(
        &server,
        &mut changes,
        json!({
            "Name": "dock", "GeometryType": "cylinder", "GeometryData": [[0, 0, 0], [0, 0, 1], [3, 1.5, 0]],
            "AlertLevel": 3, "Active": true, "InclusionPolicy": "none", "DeviceList": ["00:11:22:33:44:55"],
            "ZoneActions": [{"type": "info-event", "message": "hi", "on": "enter"}],
            "IsTimed": true, "StartTime": "2026-01-01T00:00:00.000Z", "StopTime": "2027-01-01T00:00:00.000Z",
            "MobileOriginSource": "00:11:22:33:44:66",
        }),
    )
    .await;
    let zone_id = id(&zone);

    let update = json!({"AlertLevel": 7, "DeviceList": ["aa-bb-cc-dd-ee-ff"]});
    assert_eq!(server.ok(Method::PUT, &path(&zone_id.to_lowercase()), Some(update)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    let mut expected = zone.clone();
    expected["AlertLevel"] = json!(7);
    expected["DeviceList"] = json!(["AA:BB:CC:DD:EE:FF"]);
    assert_eq!(get(&server, &zone_id).await, expected);

    let update = json!({"Name": "quay", "MobileOriginSource": null, "GeometryData": [[1, 1, 0], [0, 0, 2], [4, 1, 0]]});
    assert_eq!(server.ok(Method::PUT, &path(&zone_id), Some(update)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    expected["Name"] = json!("quay");
    expected["MobileOriginSource"] = json!(null);
    expected["GeometryData"] = json!([[1.0, 1.0, 0.0], [0.0, 0.0, 2.0], [4.0, 1.0, 0.0]]);
    assert_eq!(get(&server, &zone_id).await, expected);

    assert_eq!(server.ok(Method::PUT, &path(&zone_id), Some(json!({}))).await, ack(), "an empty update is fine");
    assert_eq!(get(&server, &zone_id).await, expected);
    server.stop().await;
}

pub(crate) async fn mac_addresses_are_stored_upper_case_with_colons_and_without_repeats(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("dock", [0.0, 0.0, 0.0], 1.0);
    input["DeviceList"] = json!(["aa-bb-cc-dd-ee-ff", "00:11:22:aa:bb:cc", "AA:BB:CC:DD:EE:FF"]);
    input["MobileOriginSource"] = json!("0a-0b-0c-0d-0e-0f");
    let zone = server.create_zone(input).await;
    assert_eq!(zone["DeviceList"], json!(["AA:BB:CC:DD:EE:FF", "00:11:22:AA:BB:CC"]));
    assert_eq!(zone["MobileOriginSource"], "0A:0B:0C:0D:0E:0F");
    assert_eq!(get(&server, &id(&zone)).await, zone);
    server.stop().await;
}

pub(crate) async fn a_deleted_zone_is_gone_and_cannot_be_deleted_again(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let doomed = create(&server, &mut changes, sphere("doomed", [0.0, 0.0, 0.0], 1.0)).await;
    let kept = create(&server, &mut changes, sphere("kept", [5.0, 0.0, 0.0], 1.0)).await;
    assert_eq!(server.ok(Method::DELETE, &path(&id(&doomed).to_lowercase()), None).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&id(&doomed)]));
    let answer = server.call(Method::GET, &path(&id(&doomed)), Some(zonecast_tests::READ_KEY), None).await;
    zonecast_tests::assert_error(&answer, 404, "not_found");
    assert_eq!(list(&server).await, vec![kept]);
    let message = server
        .refused(Method::DELETE, &path(&id(&doomed)), Some(zonecast_tests::WRITE_KEY), None, 404, "not_found")
        .await;
    assert!(message.contains(&id(&doomed)), "the message names the zone: {message}");
    nothing_was_announced(&server, &mut changes).await;
    server.stop().await;
}

pub(crate) async fn a_reset_is_acknowledged_and_announced_as_a_reset_of_that_zone(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zone = create(&server, &mut changes, sphere("dock", [0.0, 0.0, 0.0], 1.0)).await;
    let zone_id = id(&zone);
    let reset = format!("{}/reset", path(&zone_id.to_lowercase()));
    assert_eq!(server.ok(Method::POST, &reset, None).await, ack());
    assert_eq!(announced(&mut changes).await, json!({"Kind": "zones", "IDs": [zone_id], "Operation": "reset"}));
    assert_eq!(get(&server, &zone_id).await, zone, "a reset leaves the zone's configuration alone");
    server.stop().await;
}
