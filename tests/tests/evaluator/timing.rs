//! When exits happen: radii, timed zones, exit tolerance and delay, silence, configuration changes.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::{Mode, Server, eventually, next_json, sphere};

use super::{WAIT, colliding, id, is, mac, ms, wait_colliding};

/// Sends `device` at `p`, a little later each time, until an event comes: a configuration
/// write is in force in the evaluator shortly after the API has answered it.
async fn position_until_an_event(
    server: &Server,
    events: &mut zonecast_bus::Subscription,
    device: &str,
    p: [f64; 3],
    t: &mut DateTime<Utc>,
) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        *t += ms(10);
        server.position(device, p, *t).await;
        if let Ok(event) = tokio::time::timeout(Duration::from_millis(250), next_json(events, WAIT)).await {
            return event;
        }
        assert!(tokio::time::Instant::now() < deadline, "no event for {device} at {p:?}");
    }
}

pub(crate) async fn a_radius_write_moves_only_the_device_it_names_in_or_out_of_a_zone(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = id(&server.create_zone(sphere("gate", [0.0, 0.0, 0.0], 1.0)).await);
    let mut events = server.events().await;
    let (a, b) = (mac(21), mac(22));
    let radius = "/v3/modules/zones/devices/radius";
    let mut t = Utc::now();
    // 0.5 m outside the zone: balls of 0.6 m touch it.
    server.ok(Method::PUT, radius, Some(json!({a.clone(): 0.6, b.clone(): 0.6}))).await;
    let enter = position_until_an_event(&server, &mut events, &a, [1.5, 0.0, 0.0], &mut t).await;
    assert!(is("ZONE_ENTER", a.clone())(&enter), "{enter}");
    server.position(&b, [1.5, 0.0, 0.0], t).await;
    let enter = next_json(&mut events, WAIT).await;
    assert!(is("ZONE_ENTER", b.clone())(&enter), "{enter}");
    // a's ball shrinks: its next position takes it out; b, not named, stays inside.
    server.ok(Method::PUT, radius, Some(json!({a.clone(): 0.2}))).await;
    let exit = position_until_an_event(&server, &mut events, &a, [1.5, 0.0, 0.0], &mut t).await;
    assert!(is("ZONE_EXIT", a.clone())(&exit), "{exit}");
    assert_eq!(exit["Content"]["Reason"], "position");
    wait_colliding(&server, &zone, vec![b.clone()]).await;
    server.position(&b, [1.5, 0.0, 0.0], t).await;
    // Removing a's own radius for a default-sized one (1 m) brings it back; b's position before
    // made no event, so the next one is a's.
    server
        .ok(
            Method::PUT,
            "/v3/modules/zones/settings",
            Some(json!({"SettingName": "DefaultDeviceRadiusMeters", "SettingValue": "1"})),
        )
        .await;
    server.ok(Method::PUT, radius, Some(json!({a.clone(): null}))).await;
    let enter = position_until_an_event(&server, &mut events, &a, [1.5, 0.0, 0.0], &mut t).await;
    assert!(is("ZONE_ENTER", a.clone())(&enter), "{enter}");
    let both: BTreeSet<String> = [a, b].into();
    eventually(WAIT, || async {
        (colliding(&server, &zone).await.into_iter().collect::<BTreeSet<_>>() == both).then_some(())
    })
    .await;
    server.stop().await;
}

pub(crate) async fn a_timed_zone_exits_its_devices_at_stop_time_by_the_clock(mode: Mode) {
    let server = Server::start(mode).await;
    let stop: DateTime<Utc> = Utc::now() + ms(800);
    let mut input = sphere("shift", [0.0, 0.0, 0.0], 1.0);
    input["IsTimed"] = json!(true);
    input["StartTime"] = json!(zonecast_model::format_timestamp(&(Utc::now() - chrono::Duration::minutes(1))));
    input["StopTime"] = json!(zonecast_model::format_timestamp(&stop));
    server.create_zone(input).await;
    let mut events = server.events().await;
    let d = mac(3);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    assert_eq!(next_json(&mut events, WAIT).await["Type"], "ZONE_ENTER");
    let exit = next_json(&mut events, WAIT).await;
    assert_eq!(exit["Content"]["Reason"], "window");
    assert_eq!(exit["Content"]["ExitTime"], zonecast_model::format_timestamp(&stop));
    server.stop().await;
}

pub(crate) async fn exit_tolerance_and_exit_delay_hold_the_exit_back(mode: Mode) {
    let server = Server::start(mode).await;
    for (name, value) in [("ExitToleranceMeters", "0.5"), ("ExitDelayMs", "300")] {
        server
            .ok(Method::PUT, "/v3/modules/zones/settings", Some(json!({"SettingName": name, "SettingValue": value})))
            .await;
    }
    let mut changes = server.config_changes().await;
    server.create_zone(sphere("bay", [0.0, 0.0, 0.0], 1.0)).await;
    next_json(&mut changes, WAIT).await;
    let mut events = server.events().await;
    let d = mac(4);
    let t = Utc::now();
    server.position(&d, [0.0, 0.0, 0.0], t).await;
    assert_eq!(next_json(&mut events, WAIT).await["Type"], "ZONE_ENTER");
    server.position(&d, [1.3, 0.0, 0.0], t + ms(10)).await; // within the tolerance: still inside
    server.position(&d, [5.0, 0.0, 0.0], t + ms(20)).await; // out: the exit waits 300 ms
    let exit = next_json(&mut events, WAIT).await;
    assert_eq!(exit["Type"], "ZONE_EXIT");
    assert_eq!(exit["Content"]["ExitTime"], zonecast_model::format_timestamp(&(t + ms(320))), "{exit}");
    server.stop().await;
}

pub(crate) async fn a_silent_device_times_out_of_its_zones(mode: Mode) {
    let server = Server::start(mode).await;
    server
        .ok(
            Method::PUT,
            "/v3/modules/zones/settings",
            Some(json!({"SettingName": "DeviceTimeoutSeconds", "SettingValue": 1})),
        )
        .await;
    let zone = id(&server.create_zone(sphere("cell", [0.0, 0.0, 0.0], 1.0)).await);
    let mut events = server.events().await;
    let d = mac(5);
    let t = Utc::now();
    server.position(&d, [0.0, 0.0, 0.0], t).await;
    assert_eq!(next_json(&mut events, WAIT).await["Type"], "ZONE_ENTER");
    let exit = next_json(&mut events, WAIT).await;
    assert_eq!(exit["Content"]["Reason"], "timeout");
    assert_eq!(exit["Content"]["ExitTime"], zonecast_model::format_timestamp(&(t + ms(1000))));
    wait_colliding(&server, &zone, vec![]).await;
    server.stop().await;
}

pub(crate) async fn configuration_changes_exit_devices_with_their_reason(mode: Mode) {
    let server = Server::start(mode).await;
    let names = ["deactivated", "deleted", "reset", "geometry"];
    let mut zones = Vec::new();
    for name in names {
        zones.push(id(&server.create_zone(sphere(name, [0.0, 0.0, 0.0], 1.0)).await));
    }
    let mut events = server.events().await;
    let d = mac(6);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    for _ in names {
        assert_eq!(next_json(&mut events, WAIT).await["Type"], "ZONE_ENTER");
    }
    for z in &zones {
        wait_colliding(&server, z, vec![d.clone()]).await;
    }
    server.ok(Method::POST, "/v3/modules/zones/deactivate", Some(json!([zones[0]]))).await;
    server.ok(Method::DELETE, &format!("/v3/modules/zones/{}", zones[1]), None).await;
    server.ok(Method::POST, &format!("/v3/modules/zones/{}/reset", zones[2]), None).await;
    server
        .ok(
            Method::PUT,
            &format!("/v3/modules/zones/{}", zones[3]),
            Some(json!({"GeometryData": [[50, 0, 0], [1, 0, 0]]})),
        )
        .await;
    // Each change is announced on its own, but a reload reads the store as it is by then, so
    // one reload may find several of the changes: the exits' order is not fixed, each one's
    // reason is.
    let mut exits = BTreeSet::new();
    for _ in names {
        let exit = next_json(&mut events, WAIT).await;
        assert_eq!(exit["Type"], "ZONE_EXIT");
        exits.insert((
            exit["Content"]["ZoneID"].as_str().map(str::to_owned),
            exit["Content"]["Reason"].as_str().map(str::to_owned),
        ));
    }
    let want: BTreeSet<_> = zones.iter().zip(names).map(|(z, r)| (Some(z.clone()), Some(r.to_owned()))).collect();
    assert_eq!(exits, want);
    wait_colliding(&server, &zones[2], vec![]).await;
    server.stop().await;
}
