//! Shelving: a zone or a device shelved for a while opens no alarm, though its events still
//! flow; the shelf is listed, taken back, and bad requests are refused.

use chrono::Utc;
use reqwest::Method;
use serde_json::json;
use zonecast_tests::{Mode, READ_KEY, Server, WRITE_KEY, assert_error, sphere};

use super::{all_alarms, mac, next_event, path, raise_alarm};

pub(crate) async fn a_shelved_zone_or_device_opens_no_alarm_while_its_events_still_flow(mode: Mode) {
    let server = Server::start(mode).await;
    let mut zone = sphere("ladder bay", [0.0, 0.0, 0.0], 1.0);
    zone["AlertLevel"] = json!(9);
    let zone_id = server.create_zone(zone).await["ZoneID"].as_str().unwrap().to_owned();
    let shelve = format!("/v3/modules/zones/{zone_id}/shelve");
    let shelf = server.ok(Method::POST, &shelve, Some(json!({"Seconds": 3600, "Note": "ladder work"}))).await;
    assert_eq!(
        (&shelf["ZoneID"], &shelf["MAC"], &shelf["Note"]),
        (&json!(zone_id), &json!(null), &json!("ladder work"))
    );
    assert!(shelf["ShelvedBy"].as_str().unwrap().starts_with("api-key:"), "{shelf}");

    // Shelved: the entry's events flow, no alarm opens.
    let device = mac(6);
    let mut events = server.events().await;
    server.position(&device, [0.0, 0.0, 0.0], Utc::now()).await;
    let (_, shelved) = next_event(&mut events, |e| e["Type"] == "SITE_ALARM").await;
    server.position(&device, [5.0, 0.0, 0.0], Utc::now()).await;
    next_event(&mut events, |e| e["Type"] == "ZONE_EXIT").await;
    let listed = server.ok(Method::GET, "/v3/alarms/shelves", None).await;
    assert_eq!(listed, json!([shelf]));
    server.ok(Method::DELETE, &shelve, None).await;
    assert!(server.ok(Method::GET, "/v3/alarms/shelves", None).await.as_array().unwrap().is_empty());

    // Taken back: the next entry opens an alarm, and the shelved one never did.
    server.position(&device, [0.0, 0.0, 0.0], Utc::now()).await;
    let (_, raised) = next_event(&mut events, |e| e["Type"] == "SITE_ALARM").await;
    let id = raised["EventID"].as_str().unwrap().to_owned();
    let alarm = zonecast_tests::eventually(super::WAIT, || async {
        let (status, alarm) = server.call(Method::GET, &path(&id), Some(READ_KEY), None).await;
        status.is_success().then_some(alarm)
    })
    .await;
    assert_eq!(alarm["Count"], 1, "the shelved entry counted on nothing: {alarm}");
    let shelved_id = shelved["EventID"].as_str().unwrap();
    assert_eq!(server.call(Method::GET, &path(shelved_id), Some(READ_KEY), None).await.0.as_u16(), 404);

    // A device shelved: its entries into any zone open no alarm.
    let other = mac(7);
    let device_shelf = format!("/v3/devices/{}/shelve", other.replace(':', "-"));
    server.ok(Method::POST, &device_shelf, Some(json!({"Seconds": 60}))).await;
    let listed = server.ok(Method::GET, "/v3/alarms/shelves", None).await;
    assert_eq!((&listed[0]["MAC"], &listed[0]["ZoneID"]), (&json!(other), &json!(null)));
    let before = all_alarms(&server).await;
    raise_shelved(&server, &mut events, &other).await;
    server.ok(Method::DELETE, &device_shelf, None).await;
    let answer = server.raw(Method::DELETE, &device_shelf, Some(WRITE_KEY), None).await;
    assert_eq!(assert_error(&answer, 404, "not_found"), format!("device {other} is not shelved"));
    let after_entry = raise_alarm(&server, 8, 20.0).await;
    let all = all_alarms(&server).await;
    assert_eq!(all.as_array().unwrap().len(), before.as_array().unwrap().len() + 1, "only the unshelved one: {all}");
    assert_eq!(all[0]["AlarmID"], after_entry["EventID"]);

    // Refused, and nothing shelved.
    for (p, body, status, kind, message) in [
        (&shelve, &b"{}"[..], 422, "invalid_data", "Seconds: is required"),
        (&shelve, br#"{"Seconds": 0}"#, 422, "invalid_data", "Seconds: must be between 1 and 604800, got 0"),
        (&shelve, br#"{"Seconds": 604801}"#, 422, "invalid_data", "Seconds: must be between 1 and 604800"),
        (&shelve, br#"{"Seconds": "1"}"#, 422, "invalid_data", "Seconds: must be an integer"),
        (&shelve, br#"{"Seconds": "#, 400, "malformed", "request body is not valid JSON"),
        (
            &"/v3/modules/zones/01900000-0000-7000-8000-0000000000FF/shelve".to_owned(),
            br#"{"Seconds": 5}"#,
            404,
            "not_found",
            "zone",
        ),
        (&"/v3/devices/xyz/shelve".to_owned(), br#"{"Seconds": 5}"#, 422, "invalid_data", "MAC: "),
    ] {
        let answer = server.raw(Method::POST, p, Some(WRITE_KEY), Some(body.to_vec())).await;
        let got = assert_error(&answer, status, kind);
        assert!(got.starts_with(message), "{p}: {got}");
    }
    let answer = server.raw(Method::POST, &shelve, Some(READ_KEY), Some(br#"{"Seconds": 5}"#.to_vec())).await;
    assert_error(&answer, 403, "forbidden");
    assert!(server.ok(Method::GET, "/v3/alarms/shelves", None).await.as_array().unwrap().is_empty());
    server.stop().await;
}

/// Walks `device`, shelved, into a new keep-out zone and out again; waits for its alarm event.
async fn raise_shelved(server: &Server, events: &mut zonecast_bus::Subscription, device: &str) {
    let mut zone = sphere("keep out shelved", [40.0, 0.0, 0.0], 1.0);
    zone["AlertLevel"] = json!(9);
    server.create_zone(zone).await;
    server.position(device, [40.0, 0.0, 0.0], Utc::now()).await;
    next_event(events, |e| e["Type"] == "SITE_ALARM" && e["Source"]["MAC"] == device).await;
}
