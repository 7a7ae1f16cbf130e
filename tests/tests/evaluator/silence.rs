//! Offline and online through the API and the bus: DeviceOfflineSeconds, DEVICE_OFFLINE and
//! DEVICE_ONLINE, and a silence that goes on across a restart.

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::{Mode, Server, eventually, next_json, sphere};

use super::{WAIT, mac};

/// The DEVICE_OFFLINE events of `device` in the event history.
async fn offline_reports(server: &Server, device: &str) -> Vec<Value> {
    let page = server.ok(Method::GET, "/v3/events?type=DEVICE_OFFLINE", None).await;
    page["Events"].as_array().unwrap().iter().filter(|e| e["Source"]["MAC"] == device).cloned().collect()
}

pub(crate) async fn a_silent_device_is_reported_offline_and_online_again_across_a_restart(mode: Mode) {
    let server = Server::start(mode).await;
    let setting = json!({"SettingName": "DeviceOfflineSeconds", "SettingValue": 2});
    server.ok(Method::PUT, "/v3/modules/zones/settings", Some(setting)).await;
    let mut events = server.events().await;
    let d = mac(50);
    let t = Utc::now();
    server.position(&d, [1.0, 2.0, 0.0], t).await;
    let offline = next_json(&mut events, WAIT).await;
    assert_eq!((offline["Category"].as_str(), offline["Type"].as_str()), (Some("DEVICE"), Some("DEVICE_OFFLINE")));
    assert_eq!(offline["Source"]["MAC"], d.as_str());
    assert_eq!(offline["Content"]["LastSeen"], zonecast_model::format_timestamp(&t));
    assert_eq!(offline["Content"]["SilentSeconds"], json!(2.0));
    assert_eq!(offline["Content"]["Position"], json!([1.0, 2.0, 0.0]));
    assert_eq!(offline["Timestamp"], zonecast_model::format_timestamp(&(t + chrono::Duration::seconds(2))));
    // A second device reports just before the restart (into a locker, whose entry tells that
    // its position was evaluated) and stays silent across it.
    server.create_zone(sphere("locker", [20.0, 0.0, 0.0], 1.0)).await;
    let quiet = mac(51);
    let last = Utc::now();
    server.position(&quiet, [20.0, 0.0, 0.0], last).await;
    assert_eq!(next_json(&mut events, WAIT).await["Type"], "ZONE_ENTER");
    drop(events);

    let server = server.restart().await;
    let mut events = server.events().await;
    let back = Utc::now();
    server.position(&d, [3.0, 2.0, 0.0], back).await;
    let online = next_json(&mut events, WAIT).await;
    assert_eq!(online["Type"], "DEVICE_ONLINE", "reported online, not offline again: {online}");
    assert_eq!(online["Source"]["MAC"], d.as_str());
    assert_eq!(online["Content"]["LastSeen"], zonecast_model::format_timestamp(&t));
    assert_eq!(online["Content"]["Position"], json!([3.0, 2.0, 0.0]));
    assert_eq!(offline_reports(&server, &d).await.len(), 1, "one report of the first silence");
    // The silence that began before the restart is reported once, from the Timestamp of the
    // position before it (not from the restart).
    let reports = eventually(WAIT, || async {
        let reports = offline_reports(&server, &quiet).await;
        (!reports.is_empty()).then_some(reports)
    })
    .await;
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0]["Content"]["LastSeen"], zonecast_model::format_timestamp(&last));
    server.stop().await;
}

pub(crate) async fn the_offline_setting_refuses_what_it_cannot_hold(mode: Mode) {
    let server = Server::start(mode).await;
    for (value, rule) in
        [(json!(-1), "between 0 and 604800"), (json!(1.5), "whole number"), (json!(604_801), "between")]
    {
        let body = json!({"SettingName": "DeviceOfflineSeconds", "SettingValue": value}).to_string();
        let message = server
            .refused(
                Method::PUT,
                "/v3/modules/zones/settings",
                Some(zonecast_tests::WRITE_KEY),
                Some(body.into()),
                422,
                "invalid_data",
            )
            .await;
        assert!(message.contains(rule), "{message}");
    }
    server.stop().await;
}
