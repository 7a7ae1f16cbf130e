//! An alarm's life: raised, acknowledged, resolved, published, listed, and kept across a
//! restart.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use zonecast_tests::{Mode, READ_KEY, Server, WRITE_KEY};

use super::{all_alarms, mac, next_event, path, raise_alarm};

fn ids(page: &Value) -> Vec<String> {
    page["Alarms"].as_array().unwrap().iter().map(|a| a["AlarmID"].as_str().unwrap().to_owned()).collect()
}

pub(crate) async fn an_alarm_raised_by_a_zone_entry_is_acknowledged_then_resolved_and_survives_a_restart(mode: Mode) {
    let server = Server::start(mode).await;
    let event = raise_alarm(&server, 1, 0.0).await;
    let id = event["EventID"].as_str().unwrap().to_owned();

    let open = server.ok(Method::GET, "/v3/alarms?state=open", None).await;
    assert_eq!(open["Alarms"].as_array().unwrap().len(), 1, "{open}");
    let alarm = &open["Alarms"][0];
    let content = &event["Content"];
    assert_eq!(alarm["AlarmID"], json!(id), "the AlarmID is the EventID of the alarm event");
    assert_eq!(
        (&alarm["Type"], &alarm["MAC"], &alarm["State"]),
        (&json!("SITE_ALARM"), &json!(mac(1)), &json!("open"))
    );
    assert_eq!((&alarm["ZoneID"], &alarm["ZoneName"]), (&content["ZoneID"], &content["ZoneName"]));
    assert_eq!((&alarm["CollisionID"], &alarm["RaisedAt"]), (&content["CollisionID"], &event["Timestamp"]));
    assert_eq!(alarm["Event"], event, "the whole event is kept");
    for field in ["AcknowledgedBy", "AcknowledgedAt", "AcknowledgedNote", "ResolvedBy", "ResolvedAt", "ResolvedNote"] {
        assert_eq!(alarm[field], Value::Null, "{field}");
    }
    assert_eq!(server.ok(Method::GET, &path(&id.to_lowercase()), None).await, *alarm, "the AlarmID in any case");

    // Acknowledged with a note, by the write key, and published.
    let mut events = server.events().await;
    let body = json!({"Note": " Anna is on her way "});
    let (status, acknowledged) =
        server.call(Method::POST, &format!("{}/acknowledge", path(&id)), Some(WRITE_KEY), Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{acknowledged}");
    assert_eq!(
        (&acknowledged["State"], &acknowledged["AcknowledgedNote"]),
        (&json!("acknowledged"), &json!("Anna is on her way"))
    );
    let by = acknowledged["AcknowledgedBy"].as_str().unwrap().to_owned();
    assert!(by.starts_with("api-key:") && by.len() == "api-key:".len() + 8, "{by}");
    assert!(!by.contains(WRITE_KEY), "the key itself is never shown");
    assert!(acknowledged["AcknowledgedAt"].is_string() && acknowledged["ResolvedAt"].is_null(), "{acknowledged}");
    assert_eq!(acknowledged["Event"], event);
    let (subject, told) = next_event(&mut events, |e| e["Type"] == "ALARM_ACKNOWLEDGED").await;
    assert_eq!(subject, format!("{}.events.alarm.acknowledged.{}", server.subjects.prefix(), mac(1)));
    assert_eq!((&told["Category"], &told["Source"]["MAC"]), (&json!("ALARM"), &json!(mac(1))));
    assert_ne!(told["EventID"], json!(id), "a change is an event of its own");
    let mut expected = acknowledged.clone();
    expected.as_object_mut().unwrap().remove("Event");
    assert_eq!(told["Content"], expected, "the alarm as stored, without its event");

    assert!(ids(&server.ok(Method::GET, "/v3/alarms?state=open", None).await).is_empty());
    assert_eq!(
        ids(&server.ok(Method::GET, "/v3/alarms?state=acknowledged,resolved", None).await),
        std::slice::from_ref(&id)
    );

    // Resolved without a body, by a client's token this time.
    let token = server.client_token().await;
    let resolved =
        server.http.post(format!("{}{}/resolve", server.base, path(&id))).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resolved.status(), StatusCode::OK);
    let resolved: Value = resolved.json().await.unwrap();
    assert_eq!((&resolved["State"], &resolved["ResolvedBy"]), (&json!("resolved"), &json!(zonecast_tests::CLIENT_ID)));
    assert_eq!((&resolved["ResolvedNote"], &resolved["AcknowledgedBy"]), (&Value::Null, &json!(by)));
    let (subject, told) = next_event(&mut events, |e| e["Type"] == "ALARM_RESOLVED").await;
    assert_eq!(subject, format!("{}.events.alarm.resolved.{}", server.subjects.prefix(), mac(1)));
    assert_eq!(told["Content"]["AlarmID"], json!(id));
    assert_eq!(told["Content"]["State"], "resolved");

    // Both changes are in the event history too.
    let history = server.ok(Method::GET, "/v3/events?type=ALARM_ACKNOWLEDGED,ALARM_RESOLVED", None).await;
    let kinds: Vec<&Value> = history["Events"].as_array().unwrap().iter().map(|e| &e["Type"]).collect();
    assert_eq!(kinds, [&json!("ALARM_ACKNOWLEDGED"), &json!("ALARM_RESOLVED")], "{history}");

    let server = server.restart().await;
    assert_eq!(server.ok(Method::GET, &path(&id), None).await, resolved, "the state survives a restart");
    let all = all_alarms(&server).await;
    assert_eq!(all.as_array().unwrap().len(), 1, "the alarm event read again after the restart adds nothing: {all}");
    let read = server.call(Method::GET, "/v3/alarms", Some(READ_KEY), None).await;
    assert_eq!(read.0, StatusCode::OK, "reading needs only read authority");
    server.stop().await;
}

pub(crate) async fn alarms_are_listed_newest_first_a_page_at_a_time_and_by_device_and_zone(mode: Mode) {
    let server = Server::start(mode).await;
    let mut raised = Vec::new();
    for n in 1..=3 {
        let event = raise_alarm(&server, n, f64::from(n) * 10.0).await;
        raised.push((event["EventID"].as_str().unwrap().to_owned(), event));
    }
    // Raised one after the other: newest first.
    let newest_first: Vec<String> = raised.iter().rev().map(|(id, _)| id.clone()).collect();
    let all = server.ok(Method::GET, "/v3/alarms", None).await;
    assert_eq!(ids(&all), newest_first);

    let mut seen = Vec::new();
    let mut page = server.ok(Method::GET, "/v3/alarms?limit=2", None).await;
    seen.extend(ids(&page));
    let cursor = page["NextCursor"].as_str().unwrap().to_owned();
    page = server.ok(Method::GET, &format!("/v3/alarms?limit=2&cursor={cursor}"), None).await;
    seen.extend(ids(&page));
    assert_eq!(page["NextCursor"], Value::Null);
    assert_eq!(seen, newest_first, "pages follow each other");

    let of_device = server.ok(Method::GET, &format!("/v3/alarms?mac={}", mac(2).replace(':', "-")), None).await;
    assert_eq!(ids(&of_device), [raised[1].0.clone()]);
    let zone = raised[2].1["Content"]["ZoneID"].as_str().unwrap().to_owned();
    let of_zone = server.ok(Method::GET, &format!("/v3/alarms?zone={zone}&state=open"), None).await;
    assert_eq!(ids(&of_zone), [raised[2].0.clone()]);
    server.stop().await;
}

pub(crate) async fn a_device_gone_offline_raises_an_alarm_without_a_zone_that_is_resolved_at_once(mode: Mode) {
    let server = Server::start(mode).await;
    let setting = json!({"SettingName": "DeviceOfflineSeconds", "SettingValue": 1});
    server.ok(Method::PUT, "/v3/modules/zones/settings", Some(setting)).await;
    let mut events = server.events().await;
    server.position(&mac(3), [50.0, 50.0, 0.0], chrono::Utc::now()).await;
    let (_, offline) = next_event(&mut events, |e| e["Type"] == "DEVICE_OFFLINE" && e["Source"]["MAC"] == mac(3)).await;
    let id = offline["EventID"].as_str().unwrap().to_owned();
    let alarm = zonecast_tests::eventually(super::WAIT, || {
        let (server, id) = (&server, id.clone());
        async move {
            let (status, alarm) = server.call(Method::GET, &path(&id), Some(READ_KEY), None).await;
            (status == StatusCode::OK).then_some(alarm)
        }
    })
    .await;
    assert_eq!(
        (&alarm["Type"], &alarm["State"], &alarm["Event"]),
        (&json!("DEVICE_OFFLINE"), &json!("open"), &offline)
    );
    for field in ["ZoneID", "ZoneName", "CollisionID"] {
        assert_eq!(alarm[field], Value::Null, "{field}: an offline device is in no zone");
    }

    // Open → resolved at once: nobody acknowledged it.
    let resolved = server.ok(Method::POST, &format!("{}/resolve", path(&id)), Some(json!({"Note": "battery"}))).await;
    assert_eq!((&resolved["State"], &resolved["ResolvedNote"]), (&json!("resolved"), &json!("battery")));
    assert_eq!((&resolved["AcknowledgedBy"], &resolved["AcknowledgedAt"]), (&Value::Null, &Value::Null));
    let (subject, told) = next_event(&mut events, |e| e["Type"] == "ALARM_RESOLVED").await;
    assert_eq!(subject, format!("{}.events.alarm.resolved.{}", server.subjects.prefix(), mac(3)));
    assert_eq!(told["Content"]["ZoneID"], Value::Null);
    server.stop().await;
}
