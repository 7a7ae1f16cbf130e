//! Registered devices named in their events: the `Device` object with the registry's name and
//! group, a filter chain selecting on the group, and a rename or delete in force at once.

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::sse::url_encoded;
use zonecast_tests::{Mode, Server, next_json, sphere};

use super::path;

const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) async fn events_of_a_registered_device_name_it_and_its_group_and_filters_select_on_the_group(mode: Mode) {
    let server = Server::start(mode).await;
    server.create_zone(sphere("dock", [0.0, 0.0, 0.0], 2.0)).await;
    let (forklift, visitor) = ("0A:00:00:00:00:01", "0A:00:00:00:00:02");
    let record = json!({"Name": "Forklift 3", "Group": "forklifts", "Kind": "vehicle"});
    server.ok(Method::PUT, &path(forklift), Some(record)).await;
    let mut events = server.events().await;
    server.position(forklift, [0.0, 0.0, 0.0], Utc::now()).await;
    let named = next_json(&mut events, WAIT).await;
    assert_eq!(named["Type"], "ZONE_ENTER");
    assert_eq!(named["Device"], json!({"Name": "Forklift 3", "Group": "forklifts"}));
    server.position(visitor, [0.5, 0.0, 0.0], Utc::now()).await;
    let unnamed = next_json(&mut events, WAIT).await;
    assert_eq!(unnamed["Source"]["MAC"], visitor);
    assert!(unnamed.get("Device").is_none(), "an unregistered device's event has no Device: {unnamed}");

    let chain = url_encoded(r#"[{"Selector": "Device.Group", "Type": "equals", "Match": "forklifts"}]"#);
    let page = server.ok(Method::GET, &format!("/v3/events?filter={chain}"), None).await;
    let macs: Vec<&Value> = page["Events"].as_array().unwrap().iter().map(|e| &e["Source"]["MAC"]).collect();
    assert_eq!(macs, [&json!(forklift)]);

    // Renamed, out of its group: the next event says so; deleted, the next names nobody.
    server.ok(Method::PUT, &path(forklift), Some(json!({"Name": "Forklift 4"}))).await;
    server.position(forklift, [9.0, 0.0, 0.0], Utc::now()).await;
    let exit = next_json(&mut events, WAIT).await;
    assert_eq!(exit["Type"], "ZONE_EXIT");
    assert_eq!(exit["Device"], json!({"Name": "Forklift 4", "Group": null}));
    server.ok(Method::DELETE, &path(forklift), None).await;
    server.position(forklift, [0.0, 0.0, 0.0], Utc::now()).await;
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(enter["Type"], "ZONE_ENTER");
    assert!(enter.get("Device").is_none(), "{enter}");
    server.stop().await;
}

pub(crate) async fn a_device_with_its_own_offline_time_is_reported_offline_after_it(mode: Mode) {
    let server = Server::start(mode).await;
    let (tag, other) = ("0A:00:00:00:00:03", "0A:00:00:00:00:04");
    let record = json!({"Name": "Asset tag 7", "Kind": "asset", "OfflineSeconds": 1});
    server.ok(Method::PUT, &path(tag), Some(record)).await;
    let mut events = server.events().await;
    let t = Utc::now();
    server.position(tag, [0.0, 0.0, 0.0], t).await;
    server.position(other, [0.0, 0.0, 0.0], t).await;
    // The site reports nobody offline (DeviceOfflineSeconds is 0): only the tag is.
    let offline = next_json(&mut events, WAIT).await;
    assert_eq!((offline["Type"].as_str(), offline["Source"]["MAC"].as_str()), (Some("DEVICE_OFFLINE"), Some(tag)));
    assert_eq!(offline["Content"]["SilentSeconds"], json!(1.0));
    assert_eq!(offline["Device"], json!({"Name": "Asset tag 7", "Group": null}));
    server.position(tag, [1.0, 0.0, 0.0], Utc::now()).await;
    let online = next_json(&mut events, WAIT).await;
    assert_eq!((online["Type"].as_str(), online["Source"]["MAC"].as_str()), (Some("DEVICE_ONLINE"), Some(tag)));
    server.stop().await;
}
