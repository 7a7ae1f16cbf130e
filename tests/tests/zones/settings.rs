//! The settings and device radii, listed and written.

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::{Mode, Server, json};

use super::{ack, announced, nothing_was_announced};

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
        setting("DeviceOfflineSeconds", "0", false, "0"),
    ]
}

async fn settings(server: &Server) -> Vec<Value> {
    server.ok(Method::GET, "/v3/modules/zones/settings", None).await.as_array().unwrap().clone()
}

pub(crate) async fn every_setting_is_listed_with_its_default(mode: Mode) {
    let server = Server::start(mode).await;
    let answer = server.call(Method::GET, "/v3/modules/zones/settings", Some(zonecast_tests::READ_KEY), None).await;
    assert_eq!(answer.0, reqwest::StatusCode::OK);
    assert_eq!(answer.1, json!(default_settings()));
    server.stop().await;
}

pub(crate) async fn a_setting_is_written_from_a_number_or_a_numeric_string(mode: Mode) {
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

pub(crate) async fn an_inactive_setting_is_listed_as_not_in_force_beside_its_default(mode: Mode) {
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

pub(crate) async fn an_unknown_setting_is_not_found_and_an_unparsable_value_is_invalid(mode: Mode) {
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

pub(crate) async fn device_radii_are_merged_and_a_null_removes_one(mode: Mode) {
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
