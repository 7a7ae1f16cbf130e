//! One alarm per condition, and conditions that end: entries into one zone count on one alarm,
//! each exit clears it (`ALARM_CLEARED`), an entry makes it active again, an acknowledged alarm
//! whose condition clears is resolved by zonecast, and an alarm acknowledged after its
//! condition cleared is resolved at once. The next entry after a resolution opens a new alarm.

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_model::{CLEARED_NOTE, RESOLVED_BY_ZONECAST};
use zonecast_tests::{Mode, READ_KEY, Server, eventually};

use super::{WAIT, all_alarms, mac, next_event, path, raise_alarm};

/// The alarm `id` once `done` holds for it.
async fn alarm_once(server: &Server, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let read = eventually(WAIT, || async {
        let (status, alarm) = server.call(Method::GET, &path(id), Some(READ_KEY), None).await;
        (status.is_success() && done(&alarm)).then_some(alarm)
    });
    tokio::time::timeout(WAIT + WAIT, read).await.unwrap_or_else(|_| panic!("alarm {id}: {what}"))
}

pub(crate) async fn entries_into_a_zone_count_on_one_alarm_that_each_exit_clears(mode: Mode) {
    let server = Server::start(mode).await;
    let device = mac(4);
    let first = raise_alarm(&server, 4, 0.0).await;
    let id = first["EventID"].as_str().unwrap().to_owned();
    let alarm = server.ok(Method::GET, &path(&id), None).await;
    assert_eq!((&alarm["Count"], &alarm["Active"], &alarm["ClearedAt"]), (&json!(1), &json!(true), &Value::Null));
    assert_eq!((&alarm["LastEventID"], &alarm["LastRaisedAt"]), (&json!(id), &first["Timestamp"]));

    // Out: the evaluator tells that the condition cleared, and the alarm says so.
    let mut events = server.events().await;
    server.position(&device, [5.0, 0.0, 0.0], Utc::now()).await;
    let (subject, cleared) = next_event(&mut events, |e| e["Type"] == "ALARM_CLEARED").await;
    assert_eq!(subject, format!("{}.events.alarm.cleared.{device}", server.subjects.prefix()));
    assert_eq!(cleared["Category"], "ALARM");
    let content = &cleared["Content"];
    assert_eq!((&content["Type"], &content["ZoneID"]), (&json!("SITE_ALARM"), &first["Content"]["ZoneID"]));
    assert_eq!(content["CollisionID"], first["Content"]["CollisionID"], "the stay that ended");
    let out = alarm_once(&server, &id, "cleared", |a| a["Active"] == false).await;
    assert_eq!((&out["ClearedAt"], &out["State"]), (&cleared["Timestamp"], &json!("open")), "left for a person");

    // In again: counted on the same alarm, active again.
    server.position(&device, [0.0, 0.0, 0.0], Utc::now()).await;
    let (_, again) = next_event(&mut events, |e| e["Type"] == "SITE_ALARM").await;
    assert_ne!(again["EventID"], first["EventID"]);
    let counted = alarm_once(&server, &id, "counted twice", |a| a["Count"] == 2).await;
    assert_eq!((&counted["Active"], &counted["ClearedAt"]), (&json!(true), &Value::Null));
    assert_eq!((&counted["LastEventID"], &counted["LastRaisedAt"]), (&again["EventID"], &again["Timestamp"]));
    assert_eq!((&counted["RaisedAt"], &counted["Event"]), (&first["Timestamp"], &first), "raised by the first");
    assert_eq!(all_alarms(&server).await.as_array().unwrap().len(), 1, "one alarm for the condition");

    // Acknowledged, then out: resolved by zonecast, and published.
    server.ok(Method::POST, &format!("{}/acknowledge", path(&id)), Some(json!({"Note": "on it"}))).await;
    server.position(&device, [5.0, 0.0, 0.0], Utc::now()).await;
    let (_, told) = next_event(&mut events, |e| e["Type"] == "ALARM_RESOLVED").await;
    assert_eq!(
        (&told["Content"]["AlarmID"], &told["Content"]["ResolvedBy"]),
        (&json!(id), &json!(RESOLVED_BY_ZONECAST))
    );
    let resolved = alarm_once(&server, &id, "resolved", |a| a["State"] == "resolved").await;
    assert_eq!(
        (&resolved["ResolvedBy"], &resolved["ResolvedNote"]),
        (&json!(RESOLVED_BY_ZONECAST), &json!(CLEARED_NOTE))
    );
    assert_eq!((&resolved["AcknowledgedNote"], &resolved["Active"]), (&json!("on it"), &json!(false)));

    // The next entry opens a new alarm.
    server.position(&device, [0.0, 0.0, 0.0], Utc::now()).await;
    let (_, third) = next_event(&mut events, |e| e["Type"] == "SITE_ALARM").await;
    let next = alarm_once(&server, third["EventID"].as_str().unwrap(), "opened", |_| true).await;
    assert_eq!((&next["Count"], &next["State"]), (&json!(1), &json!("open")));
    assert_eq!(all_alarms(&server).await.as_array().unwrap().len(), 2);
    let active = server.ok(Method::GET, "/v3/alarms?active=true", None).await;
    assert_eq!(active["Alarms"][0]["AlarmID"], third["EventID"]);
    assert_eq!(active["Alarms"].as_array().unwrap().len(), 1);
    server.stop().await;
}

pub(crate) async fn an_alarm_acknowledged_after_its_condition_cleared_is_resolved_at_once(mode: Mode) {
    let server = Server::start(mode).await;
    let setting = json!({"SettingName": "DeviceOfflineSeconds", "SettingValue": 1});
    server.ok(Method::PUT, "/v3/modules/zones/settings", Some(setting)).await;
    let device = mac(5);
    let mut events = server.events().await;
    server.position(&device, [50.0, 50.0, 0.0], Utc::now()).await;
    let (_, offline) = next_event(&mut events, |e| e["Type"] == "DEVICE_OFFLINE" && e["Source"]["MAC"] == device).await;
    let id = offline["EventID"].as_str().unwrap().to_owned();
    alarm_once(&server, &id, "recorded", |_| true).await;
    // Back: online, and the offline alarm's condition cleared.
    server.position(&device, [50.0, 50.0, 0.0], Utc::now()).await;
    let (_, cleared) = next_event(&mut events, |e| e["Type"] == "ALARM_CLEARED").await;
    assert_eq!(
        cleared["Content"],
        json!({"Type": "DEVICE_OFFLINE", "ZoneID": null, "ZoneName": null, "CollisionID": null})
    );
    alarm_once(&server, &id, "cleared", |a| a["Active"] == false).await;

    let done = server.ok(Method::POST, &format!("{}/acknowledge", path(&id)), Some(json!({"Note": "battery"}))).await;
    assert_eq!((&done["State"], &done["ResolvedBy"]), (&json!("resolved"), &json!(RESOLVED_BY_ZONECAST)));
    assert!(done["AcknowledgedBy"].as_str().unwrap().starts_with("api-key:"), "{done}");
    assert_eq!((&done["AcknowledgedNote"], &done["ResolvedAt"]), (&json!("battery"), &done["AcknowledgedAt"]));
    let (_, acknowledged) = next_event(&mut events, |e| e["Type"] == "ALARM_ACKNOWLEDGED").await;
    let (_, resolved) = next_event(&mut events, |e| e["Type"] == "ALARM_RESOLVED").await;
    assert_eq!((&acknowledged["Content"]["AlarmID"], &resolved["Content"]["AlarmID"]), (&json!(id), &json!(id)));
    server.stop().await;
}

pub(crate) async fn an_alarm_is_cleared_and_counted_on_across_a_restart(mode: Mode) {
    let server = Server::start(mode).await;
    let device = mac(9);
    let first = raise_alarm(&server, 9, 60.0).await;
    let id = first["EventID"].as_str().unwrap().to_owned();
    // Restarted while the device is inside: its exit then clears the alarm raised before.
    let server = server.restart().await;
    let mut events = server.events().await;
    server.position(&device, [65.0, 0.0, 0.0], Utc::now()).await;
    next_event(&mut events, |e| e["Type"] == "ALARM_CLEARED" && e["Source"]["MAC"] == device).await;
    alarm_once(&server, &id, "cleared after the restart", |a| a["Active"] == false).await;
    let server = server.restart().await;
    let mut events = server.events().await;
    server.position(&device, [60.0, 0.0, 0.0], Utc::now()).await;
    next_event(&mut events, |e| e["Type"] == "SITE_ALARM" && e["Source"]["MAC"] == device).await;
    let again = alarm_once(&server, &id, "counted after a second restart", |a| a["Count"] == 2).await;
    assert_eq!(again["Active"], true);
    assert_eq!(all_alarms(&server).await.as_array().unwrap().len(), 1);
    server.stop().await;
}
