//! Every zone operation end to end, as a client sees it: what each write answers, what reads
//! back afterwards, and what each write announces on `config.changed`. Refused writes, bulk
//! ones included, change nothing and announce nothing.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use zonecast_bus::Subscription;
use zonecast_tests::{Mode, Server, both_modes, json, next_json, sphere};

/// Longest wait for an announcement.
const WAIT: Duration = Duration::from_secs(10);

fn ack() -> Value {
    json!({"status": 200, "success": true})
}

fn id(zone: &Value) -> String {
    zone["ZoneID"].as_str().expect("ZoneID is a string").to_owned()
}

fn path(zone_id: &str) -> String {
    format!("/v3/modules/zones/{zone_id}")
}

/// The next `config.changed` announcement, with its IDs sorted so that bulk writes compare
/// regardless of the order they were applied in, and without its revision (checked here to be
/// there).
async fn announced(changes: &mut Subscription) -> Value {
    let mut change = next_json(changes, WAIT).await;
    let revision = change.as_object_mut().and_then(|c| c.remove("Revision"));
    assert!(revision.as_ref().and_then(Value::as_u64).is_some_and(|r| r > 0), "a revision: {revision:?}");
    if let Some(ids) = change["IDs"].as_array_mut() {
        ids.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    change
}

fn zones_change(ids: &[&str]) -> Value {
    let mut ids: Vec<&str> = ids.to_vec();
    ids.sort_unstable();
    json!({"Kind": "zones", "IDs": ids})
}

/// Proves that nothing was announced since the last message read from `changes`: a fresh write
/// is announced next, and announcements arrive in the order they were published.
async fn nothing_was_announced(server: &Server, changes: &mut Subscription) {
    let marker = server.create_zone(sphere("marker", [0.0, 0.0, 0.0], 1.0)).await;
    assert_eq!(announced(changes).await, zones_change(&[&id(&marker)]), "a refused request was announced");
}

/// Creates a zone and reads its announcement from `changes`, so that the announcements read
/// next belong to the writes that follow.
async fn create(server: &Server, changes: &mut Subscription, input: Value) -> Value {
    let zone = server.create_zone(input).await;
    assert_eq!(announced(changes).await, zones_change(&[&id(&zone)]));
    zone
}

async fn list(server: &Server) -> Vec<Value> {
    server.ok(Method::GET, "/v3/modules/zones", None).await.as_array().unwrap().clone()
}

async fn get(server: &Server, zone_id: &str) -> Value {
    server.ok(Method::GET, &path(zone_id), None).await
}

async fn a_zone_created_from_geometry_alone_takes_the_documented_defaults(mode: Mode) {
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
            "CollidingDevices": [], "IsGeometryLocked": false,
        })
    );
    assert_eq!(announced(&mut changes).await, zones_change(&[&zone_id]));
    assert_eq!(get(&server, &zone_id).await, zone);
    server.stop().await;
}

async fn read_only_and_unknown_fields_sent_on_create_and_update_are_ignored(mode: Mode) {
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

async fn zones_are_listed_in_creation_order(mode: Mode) {
    let server = Server::start(mode).await;
    let mut created = Vec::new();
    for name in ["charlie", "alpha", "bravo", "alpha"] {
        created.push(server.create_zone(sphere(name, [0.0, 0.0, 0.0], 1.0)).await);
    }
    assert_eq!(list(&server).await, created);
    server.stop().await;
}

async fn a_zone_is_retrieved_by_its_id_in_any_case(mode: Mode) {
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

async fn an_update_changes_only_the_supplied_fields(mode: Mode) {
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

async fn mac_addresses_are_stored_upper_case_with_colons_and_without_repeats(mode: Mode) {
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

async fn a_deleted_zone_is_gone_and_cannot_be_deleted_again(mode: Mode) {
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

async fn a_batch_create_returns_the_new_zones_in_order(mode: Mode) {
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

async fn a_batch_update_selects_zones_by_id_or_by_a_name_only_one_zone_has(mode: Mode) {
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

async fn a_batch_update_naming_no_zone_is_not_found_and_changes_nothing(mode: Mode) {
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

async fn a_batch_update_by_a_name_two_zones_share_is_refused_and_changes_nothing(mode: Mode) {
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

async fn a_batch_delete_removes_exactly_the_listed_zones(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let zones = four_zones(&server, &mut changes).await;
    let body = json!([id(&zones[0]).to_lowercase(), id(&zones[2]), id(&zones[0])]);
    assert_eq!(server.ok(Method::DELETE, "/v3/modules/zones", Some(body)).await, ack());
    assert_eq!(announced(&mut changes).await, zones_change(&[&id(&zones[0]), &id(&zones[2])]));
    assert_eq!(list(&server).await, vec![zones[1].clone(), zones[3].clone()]);
    server.stop().await;
}

async fn a_batch_delete_with_one_unknown_zone_deletes_nothing(mode: Mode) {
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

async fn zones_are_deactivated_and_activated_by_the_list(mode: Mode) {
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

async fn activating_or_deactivating_with_one_unknown_zone_changes_nothing(mode: Mode) {
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

async fn devices_are_merged_into_and_removed_from_a_device_list(mode: Mode) {
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

/// A listed setting; its DisplayName and Description are the model's words for it.
fn setting(name: &str, value: &str, active: bool, default: &str) -> Value {
    let known: zonecast_model::SettingName = name.parse().unwrap();
    json!({
        "SettingName": name, "SettingValue": value,
        "Description": known.description(), "DisplayName": known.display_name(),
        "IsActive": active, "DefaultValue": default,
    })
}

fn default_settings() -> Vec<Value> {
    vec![
        setting("SiteAlarmMinLevel", "8", false, "8"),
        setting("DeviceAlarmMinLevel", "4", false, "4"),
        setting("ExitToleranceMeters", "0", false, "0"),
        setting("ExitDelayMs", "0", false, "0"),
        setting("EntryDelayMs", "0", false, "0"),
        setting("DeviceTimeoutSeconds", "0", false, "0"),
        setting("DefaultDeviceRadiusMeters", "0", false, "0"),
    ]
}

async fn settings(server: &Server) -> Vec<Value> {
    server.ok(Method::GET, "/v3/modules/zones/settings", None).await.as_array().unwrap().clone()
}

async fn all_seven_settings_are_listed_with_their_defaults(mode: Mode) {
    let server = Server::start(mode).await;
    let answer = server.call(Method::GET, "/v3/modules/zones/settings", Some(zonecast_tests::READ_KEY), None).await;
    assert_eq!(answer.0, reqwest::StatusCode::OK);
    assert_eq!(answer.1, json!(default_settings()));
    server.stop().await;
}

async fn a_setting_is_written_from_a_number_or_a_numeric_string(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let put = |body: Value| server.ok(Method::PUT, "/v3/modules/zones/settings", Some(body));

    assert_eq!(put(json!({"SettingName": "ExitDelayMs", "SettingValue": "500"})).await, ack());
    assert_eq!(announced(&mut changes).await, json!({"Kind": "settings", "IDs": ["ExitDelayMs"]}));
    assert_eq!(put(json!({"SettingName": "ExitToleranceMeters", "SettingValue": 1.5})).await, ack());
    assert_eq!(announced(&mut changes).await, json!({"Kind": "settings", "IDs": ["ExitToleranceMeters"]}));
    // Description and DisplayName belong to the setting, not to the write: sent ones are ignored.
    let with_words = json!({"SettingName": "SiteAlarmMinLevel", "SettingValue": 6, "IsActive": true,
        "Description": "mine", "DisplayName": "mine"});
    assert_eq!(put(with_words).await, ack());
    assert_eq!(announced(&mut changes).await, json!({"Kind": "settings", "IDs": ["SiteAlarmMinLevel"]}));

    let mut expected = default_settings();
    expected[0] = setting("SiteAlarmMinLevel", "6", true, "8");
    expected[2] = setting("ExitToleranceMeters", "1.5", true, "0");
    expected[3] = setting("ExitDelayMs", "500", true, "0");
    assert_eq!(settings(&server).await, expected);

    assert_eq!(
        put(json!({"SettingName": "ExitDelayMs", "SettingValue": 250})).await,
        ack(),
        "a setting can be rewritten"
    );
    expected[3] = setting("ExitDelayMs", "250", true, "0");
    assert_eq!(settings(&server).await, expected);
    server.stop().await;
}

async fn an_inactive_setting_is_listed_as_not_in_force_beside_its_default(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let body = json!({"SettingName": "SiteAlarmMinLevel", "SettingValue": 3, "IsActive": false});
    assert_eq!(server.ok(Method::PUT, "/v3/modules/zones/settings", Some(body)).await, ack());
    assert_eq!(announced(&mut changes).await, json!({"Kind": "settings", "IDs": ["SiteAlarmMinLevel"]}));
    let mut expected = default_settings();
    expected[0] = setting("SiteAlarmMinLevel", "3", false, "8");
    assert_eq!(settings(&server).await, expected);

    // Switching a setting off needs no value.
    let body = json!({"SettingName": "DeviceTimeoutSeconds", "IsActive": false});
    assert_eq!(server.ok(Method::PUT, "/v3/modules/zones/settings", Some(body)).await, ack());
    assert_eq!(announced(&mut changes).await, json!({"Kind": "settings", "IDs": ["DeviceTimeoutSeconds"]}));
    assert_eq!(settings(&server).await, expected);
    server.stop().await;
}

async fn an_unknown_setting_is_not_found_and_an_unparsable_value_is_invalid(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let put = |body: Value, status: u16, kind: &'static str| {
        let server = &server;
        async move {
            server
                .refused(
                    Method::PUT,
                    "/v3/modules/zones/settings",
                    Some(zonecast_tests::WRITE_KEY),
                    Some(body.to_string().into()),
                    status,
                    kind,
                )
                .await
        }
    };
    let message = put(json!({"SettingName": "WarpFactor", "SettingValue": 9}), 404, "not_found").await;
    assert!(message.contains("WarpFactor"), "{message}");
    let message = put(json!({"SettingName": "ExitToleranceMeters", "SettingValue": "far"}), 422, "invalid_data").await;
    assert_eq!(message, "SettingValue: 'far' is not a number");
    let message = put(json!({"SettingName": "ExitDelayMs", "SettingValue": 1.5}), 422, "invalid_data").await;
    assert_eq!(message, "SettingValue: must be a whole number, got 1.5");
    let message = put(json!({"SettingName": "ExitDelayMs"}), 422, "invalid_data").await;
    assert_eq!(message, "SettingValue: is required");
    assert_eq!(settings(&server).await, default_settings());
    nothing_was_announced(&server, &mut changes).await;
    server.stop().await;
}

async fn device_radii_are_merged_and_a_null_removes_one(mode: Mode) {
    let server = Server::start(mode).await;
    let mut changes = server.config_changes().await;
    let put = |body: Value| server.ok(Method::PUT, "/v3/modules/zones/devices/radius", Some(body));
    assert_eq!(put(json!({"aa-bb-cc-dd-ee-01": 1.5, "AA:BB:CC:DD:EE:02": 0})).await, ack());
    assert_eq!(
        announced(&mut changes).await,
        json!({"Kind": "radii", "IDs": ["AA:BB:CC:DD:EE:01", "AA:BB:CC:DD:EE:02"]})
    );
    assert_eq!(put(json!({"aa:bb:cc:dd:ee:01": null, "AA-BB-CC-DD-EE-03": 100})).await, ack());
    assert_eq!(
        announced(&mut changes).await,
        json!({"Kind": "radii", "IDs": ["AA:BB:CC:DD:EE:01", "AA:BB:CC:DD:EE:03"]})
    );
    assert_eq!(put(json!({"AA:BB:CC:DD:EE:09": null})).await, ack(), "removing a radius never set is fine");
    assert_eq!(announced(&mut changes).await, json!({"Kind": "radii", "IDs": ["AA:BB:CC:DD:EE:09"]}));
    server.stop().await;
}

async fn a_reset_is_acknowledged_and_announced_as_a_reset_of_that_zone(mode: Mode) {
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

async fn a_locked_zone_refuses_geometry_changes_until_it_is_unlocked(mode: Mode) {
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

async fn every_geometry_type_is_accepted_with_every_kind_of_zone_action(mode: Mode) {
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

async fn a_timed_zone_keeps_its_window_in_utc_and_needs_an_ordered_one(mode: Mode) {
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

async fn a_batch_create_with_one_bad_zone_creates_none(mode: Mode) {
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

both_modes!(
    a_zone_created_from_geometry_alone_takes_the_documented_defaults,
    read_only_and_unknown_fields_sent_on_create_and_update_are_ignored,
    zones_are_listed_in_creation_order,
    a_zone_is_retrieved_by_its_id_in_any_case,
    an_update_changes_only_the_supplied_fields,
    mac_addresses_are_stored_upper_case_with_colons_and_without_repeats,
    a_deleted_zone_is_gone_and_cannot_be_deleted_again,
    a_batch_create_returns_the_new_zones_in_order,
    a_batch_update_selects_zones_by_id_or_by_a_name_only_one_zone_has,
    a_batch_update_naming_no_zone_is_not_found_and_changes_nothing,
    a_batch_update_by_a_name_two_zones_share_is_refused_and_changes_nothing,
    a_batch_delete_removes_exactly_the_listed_zones,
    a_batch_delete_with_one_unknown_zone_deletes_nothing,
    zones_are_deactivated_and_activated_by_the_list,
    activating_or_deactivating_with_one_unknown_zone_changes_nothing,
    devices_are_merged_into_and_removed_from_a_device_list,
    all_seven_settings_are_listed_with_their_defaults,
    a_setting_is_written_from_a_number_or_a_numeric_string,
    an_inactive_setting_is_listed_as_not_in_force_beside_its_default,
    an_unknown_setting_is_not_found_and_an_unparsable_value_is_invalid,
    device_radii_are_merged_and_a_null_removes_one,
    a_reset_is_acknowledged_and_announced_as_a_reset_of_that_zone,
    a_locked_zone_refuses_geometry_changes_until_it_is_unlocked,
    every_geometry_type_is_accepted_with_every_kind_of_zone_action,
    a_timed_zone_keeps_its_window_in_utc_and_needs_an_ordered_one,
    a_batch_create_with_one_bad_zone_creates_none,
);
