//! The evaluator seen from outside: positions published on the bus, events taken from the bus
//! and CollidingDevices read through the API, in both deployment modes.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zonecast_tests::{Mode, Server, both_modes, eventually, next_json, next_matching, sphere};

const WAIT: Duration = Duration::from_secs(10);

fn mac(n: u32) -> String {
    format!("00:00:00:00:{:02X}:{:02X}", n >> 8, n & 0xff)
}

fn is(kind: &'static str, device: String) -> impl Fn(&Value) -> bool {
    move |e| e["Type"] == kind && e["Source"]["MAC"] == device.as_str()
}

fn ms(n: i64) -> chrono::Duration {
    chrono::Duration::milliseconds(n)
}

async fn colliding(server: &Server, zone: &str) -> Vec<String> {
    let z = server.ok(Method::GET, &format!("/v3/modules/zones/{zone}"), None).await;
    z["CollidingDevices"].as_array().unwrap().iter().map(|d| d["MAC"].as_str().unwrap().to_owned()).collect()
}

async fn wait_colliding(server: &Server, zone: &str, want: Vec<String>) {
    eventually(WAIT, || async {
        let now = colliding(server, zone).await;
        (now == want).then_some(())
    })
    .await;
}

fn id(zone: &Value) -> String {
    zone["ZoneID"].as_str().unwrap().to_owned()
}

async fn entering_and_leaving_a_zone_shows_in_events_and_colliding_devices(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = id(&server.create_zone(sphere("dock", [10.0, 10.0, 1.0], 2.0)).await);
    let mut events = server.events().await;
    let d = mac(1);
    let t = Utc::now();
    server.position(&d, [12.01, 10.0, 1.0], t).await;
    server.position(&d, [11.99, 10.0, 1.0], t + ms(10)).await;
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(enter["Type"], "ZONE_ENTER", "the 1 cm outside position entered nothing: {enter}");
    assert_eq!(enter["Category"], "ZONE");
    assert_eq!(enter["Source"]["SiteID"], 501);
    assert_eq!(enter["Content"]["ZoneID"], zone.as_str());
    assert_eq!(enter["Content"]["ZoneName"], "dock");
    assert_eq!(enter["Content"]["Position"], json!([11.99, 10.0, 1.0]));
    assert_eq!(enter["Timestamp"], zonecast_model::format_timestamp(&(t + ms(10))));
    wait_colliding(&server, &zone, vec![d.clone()]).await;
    // The stay the API shows is the one the ZONE_ENTER announced, in a single zone and in the list.
    let stay =
        json!([{"CollisionID": enter["Content"]["CollisionID"], "MAC": d, "EntryTime": enter["Content"]["EntryTime"]}]);
    let one = server.ok(Method::GET, &format!("/v3/modules/zones/{zone}"), None).await;
    assert_eq!(one["CollidingDevices"], stay);
    let all = server.ok(Method::GET, "/v3/modules/zones", None).await;
    let listed = all.as_array().unwrap().iter().find(|z| z["ZoneID"] == zone.as_str()).unwrap();
    assert_eq!(listed["CollidingDevices"], stay);
    server.position(&d, [20.0, 10.0, 1.0], t + ms(20)).await;
    let exit = next_matching(&mut events, WAIT, is("ZONE_EXIT", d.clone())).await;
    assert_eq!(exit["Content"]["Reason"], "position");
    assert_eq!(exit["Content"]["CollisionID"], enter["Content"]["CollisionID"]);
    wait_colliding(&server, &zone, vec![]).await;
    server.stop().await;
}

fn add(a: [f64; 3], b: [f64; 3], k: f64) -> [f64; 3] {
    [a[0] + k * b[0], a[1] + k * b[1], a[2] + k * b[2]]
}

fn unit(v: [f64; 3]) -> [f64; 3] {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    [v[0] / n, v[1] / n, v[2] / n]
}

/// Rotations by 30° about z, then a 20° tilt about x.
fn rotated_frame() -> ([f64; 3], [f64; 3], [f64; 3]) {
    let (c, s) = (30f64.to_radians().cos(), 30f64.to_radians().sin());
    let (ct, st) = (20f64.to_radians().cos(), 20f64.to_radians().sin());
    let tilt = |v: [f64; 3]| [v[0], v[1] * ct - v[2] * st, v[1] * st + v[2] * ct];
    (tilt([c, s, 0.0]), tilt([-s, c, 0.0]), tilt([0.0, 0.0, 1.0]))
}

/// (zone input, a point 1 cm inside, a point 1 cm outside) for each shape, with rotated and tilted axes.
fn shape_cases() -> Vec<(Value, [f64; 3], [f64; 3])> {
    let (al, aw, ah) = rotated_frame();
    let o = [100.0, 100.0, 2.0];
    let cuboid_mid = add(add(o, al, 2.0), aw, 1.5);
    let (c45, s45) = (45f64.to_radians().cos(), 45f64.to_radians().sin());
    let (sl, sw) = ([c45, s45, 0.0], [-s45, c45, 0.0]);
    let bl = [200.0, 200.0, 0.0];
    let axis = unit([1.0, 0.0, 1.0]);
    let perp = [0.0, 1.0, 0.0];
    let co = [300.0, 300.0, 0.0];
    vec![
        (
            json!({"GeometryType": "sphere", "GeometryData": [[50, 50, 5], [2, 0, 0]]}),
            [51.99, 50.0, 5.0],
            [52.01, 50.0, 5.0],
        ),
        (
            json!({"GeometryType": "circle", "GeometryData": [[60, 60, 0], [1, 0, 0]]}),
            [60.99, 60.0, 100.0],
            [61.01, 60.0, -50.0],
        ),
        (
            // Axes given with non-unit lengths: they are normalised.
            json!({"GeometryType": "cuboid", "GeometryData": [o, [4, 3, 2], [al[0] * 3.0, al[1] * 3.0, al[2] * 3.0], aw, [ah[0] * 0.5, ah[1] * 0.5, ah[2] * 0.5]]}),
            add(cuboid_mid, ah, 1.99),
            add(cuboid_mid, ah, 2.01),
        ),
        (
            json!({"GeometryType": "square", "GeometryData": [bl, [4, 2, 0], [sl[0], sl[1], 0], [sw[0], sw[1], 0]]}),
            add(add(bl, sl, 3.99), sw, 1.0),
            add(add(bl, sl, 4.01), sw, 1.0),
        ),
        (
            json!({"GeometryType": "cylinder", "GeometryData": [co, [1, 0, 1], [3, 1, 0]]}),
            add(add(co, axis, 1.5), perp, 0.99),
            add(add(co, axis, 1.5), perp, 1.01),
        ),
        (
            // An L-shaped (non-convex) prism: the notch is outside.
            json!({"GeometryType": "polygon", "GeometryData": [[400, 400, 0], [404, 400, 0], [404, 402, 0], [402, 402, 0], [402, 404, 0], [400, 404, 0], [2, 0, 0], [0, 0, 1]]}),
            [401.99, 403.0, 1.0],
            [402.01, 403.0, 1.0],
        ),
    ]
}

async fn every_shape_holds_a_point_1_cm_inside_and_not_one_1_cm_outside(mode: Mode) {
    let server = Server::start(mode).await;
    let mut events = server.events().await;
    let t = Utc::now();
    for (i, (input, inside, outside)) in shape_cases().into_iter().enumerate() {
        let kind = input["GeometryType"].clone();
        let zone = id(&server.create_zone(input).await);
        let d = mac(100 + i as u32);
        server.position(&d, outside, t).await;
        server.position(&d, inside, t + ms(5)).await;
        let enter = next_matching(&mut events, WAIT, |e| e["Source"]["MAC"] == d.as_str()).await;
        assert_eq!(enter["Type"], "ZONE_ENTER", "{kind}: {enter}");
        assert_eq!(enter["Content"]["ZoneID"], zone.as_str(), "{kind}");
        assert_eq!(
            enter["Timestamp"],
            zonecast_model::format_timestamp(&(t + ms(5))),
            "{kind}: entered at the inside point"
        );
        server.position(&d, outside, t + ms(10)).await;
        let exit = next_matching(&mut events, WAIT, |e| e["Source"]["MAC"] == d.as_str()).await;
        assert_eq!(exit["Type"], "ZONE_EXIT", "{kind}: 1 cm outside is outside");
    }
    server.stop().await;
}

async fn a_mobile_zone_captures_a_device_standing_still_when_its_source_moves_onto_it(mode: Mode) {
    let server = Server::start(mode).await;
    let forklift = mac(0xF00);
    let zone = id(&server
        .create_zone(
            json!({"Name": "forklift", "GeometryType": "cylinder", "GeometryData": [[0, 0, 0], [0, 0, 1], [2, 1.5, 0]],
            "MobileOriginSource": forklift.to_lowercase()}),
        )
        .await);
    let mut events = server.events().await;
    let worker = mac(7);
    let t = Utc::now();
    server.position(&worker, [50.0, 50.0, 1.0], t).await;
    server.position(&forklift, [40.0, 50.0, 1.0], t + ms(10)).await;
    server.position(&forklift, [49.0, 50.0, 1.0], t + ms(20)).await;
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(enter["Type"], "ZONE_ENTER", "{enter}");
    assert_eq!(enter["Source"]["MAC"], worker.as_str(), "only the standing worker, never the source itself");
    assert_eq!(enter["Content"]["ZoneID"], zone.as_str());
    server.position(&forklift, [60.0, 50.0, 1.0], t + ms(30)).await;
    let exit = next_json(&mut events, WAIT).await;
    assert_eq!((exit["Type"].as_str(), exit["Source"]["MAC"].as_str()), (Some("ZONE_EXIT"), Some(worker.as_str())));
    server.stop().await;
}

async fn inclusion_lists_decide_who_triggers_and_an_exclusion_exits_the_device(mode: Mode) {
    let server = Server::start(mode).await;
    let (a, b) = (mac(1), mac(2));
    let mut input = sphere("listed only", [0.0, 0.0, 0.0], 1.0);
    input["InclusionPolicy"] = json!("none");
    input["DeviceList"] = json!([a]);
    let only = id(&server.create_zone(input).await);
    let open = id(&server.create_zone(sphere("everyone", [10.0, 0.0, 0.0], 1.0)).await);
    let mut events = server.events().await;
    let t = Utc::now();
    server.position(&b, [0.0, 0.0, 0.0], t).await;
    server.position(&a, [0.0, 0.0, 0.0], t).await;
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(
        (enter["Source"]["MAC"].as_str(), enter["Content"]["ZoneID"].as_str()),
        (Some(a.as_str()), Some(only.as_str()))
    );
    server.position(&b, [10.0, 0.0, 0.0], t + ms(10)).await;
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(
        (enter["Source"]["MAC"].as_str(), enter["Content"]["ZoneID"].as_str()),
        (Some(b.as_str()), Some(open.as_str()))
    );
    server.ok(Method::POST, &format!("/v3/modules/zones/{open}/devices"), Some(json!([b]))).await;
    let exit = next_json(&mut events, WAIT).await;
    assert_eq!((exit["Type"].as_str(), exit["Content"]["Reason"].as_str()), (Some("ZONE_EXIT"), Some("excluded")));
    server.stop().await;
}

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

async fn a_radius_write_moves_only_the_device_it_names_in_or_out_of_a_zone(mode: Mode) {
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

async fn a_timed_zone_exits_its_devices_at_stop_time_by_the_clock(mode: Mode) {
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

async fn exit_tolerance_and_exit_delay_hold_the_exit_back(mode: Mode) {
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

async fn a_silent_device_times_out_of_its_zones(mode: Mode) {
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

async fn configuration_changes_exit_devices_with_their_reason(mode: Mode) {
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

async fn alert_levels_raise_site_and_device_alarms(mode: Mode) {
    let server = Server::start(mode).await;
    let mut site = sphere("crane", [0.0, 0.0, 0.0], 1.0);
    // Levels have no upper bound; any level from SiteAlarmMinLevel (8) up raises a site alarm.
    site["AlertLevel"] = json!(u64::MAX);
    let mut device = sphere("edge", [10.0, 0.0, 0.0], 1.0);
    device["AlertLevel"] = json!(5);
    server.create_zone(site).await;
    let edge = id(&server.create_zone(device).await);
    let mut events = server.events().await;
    let mut commands = server.bus.subscribe(&server.subjects.device_alarm_command(&mac(8))).await.unwrap();
    let d = mac(8);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(enter["Content"]["Alarm"], "site");
    assert_eq!(enter["Content"]["AlertLevel"], json!(u64::MAX));
    let alarm = next_json(&mut events, WAIT).await;
    assert_eq!((alarm["Category"].as_str(), alarm["Type"].as_str()), (Some("ALARM"), Some("SITE_ALARM")));
    assert_eq!(alarm["Content"]["CollisionID"], enter["Content"]["CollisionID"]);
    server.position(&d, [10.0, 0.0, 0.0], Utc::now()).await;
    let alarm = next_matching(&mut events, WAIT, |e| e["Type"] == "DEVICE_ALARM").await;
    assert_eq!(alarm["Content"]["ZoneID"], edge.as_str());
    let command = next_json(&mut commands, WAIT).await;
    assert_eq!(command["Content"]["ZoneID"], edge.as_str());
    server.stop().await;
}

/// A one-shot HTTP receiver: the body of the first request, answered 200.
async fn receiver() -> (String, tokio::sync::oneshot::Receiver<(String, Value)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let (head, body) = loop {
            let n = socket.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).into_owned();
            if let Some(split) = text.find("\r\n\r\n") {
                let head = text[..split].to_owned();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if buf.len() >= split + 4 + length {
                    break (head, serde_json::from_slice(&buf[split + 4..split + 4 + length]).unwrap());
                }
            }
        };
        socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await.unwrap();
        let _ = tx.send((head, body));
    });
    (url, rx)
}

async fn an_http_request_action_posts_the_triggering_event_to_its_uri(mode: Mode) {
    let server = Server::start(mode).await;
    let (url, received) = receiver().await;
    let mut input = sphere("gate", [0.0, 0.0, 0.0], 1.0);
    input["ZoneActions"] = json!([{"type": "http-request", "uri": url, "headers": {"X-Site": "north"}}]);
    let zone = id(&server.create_zone(input).await);
    let d = mac(9);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let (head, body) = tokio::time::timeout(WAIT, received).await.unwrap().unwrap();
    assert!(head.starts_with("POST /hook "), "{head}");
    assert!(head.to_ascii_lowercase().contains("x-site: north"), "{head}");
    assert_eq!(body["Type"], "ZONE_ENTER");
    assert_eq!(body["Content"]["ZoneID"], zone.as_str());
    assert_eq!(body["Source"]["MAC"], d.as_str());
    server.stop().await;
}

async fn after_a_restart_a_device_that_stayed_inside_gets_no_second_enter(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = id(&server.create_zone(sphere("room", [0.0, 0.0, 0.0], 2.0)).await);
    let mut events = server.events().await;
    let d = mac(10);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let enter = next_json(&mut events, WAIT).await;
    wait_colliding(&server, &zone, vec![d.clone()]).await;
    drop(events);
    let server = server.restart().await;
    let mut events = server.events().await;
    assert_eq!(colliding(&server, &zone).await, vec![d.clone()], "collisions survive the restart");
    server.position(&d, [0.5, 0.0, 0.0], Utc::now()).await;
    server.position(&d, [9.0, 0.0, 0.0], Utc::now()).await;
    let first = next_json(&mut events, WAIT).await;
    assert_eq!(first["Type"], "ZONE_EXIT", "no duplicate enter after the restart: {first}");
    assert_eq!(first["Content"]["CollisionID"], enter["Content"]["CollisionID"]);
    server.stop().await;
}

async fn malformed_position_messages_are_counted_and_skipped(mode: Mode) {
    let server = Server::start(mode).await;
    server.create_zone(sphere("z", [0.0, 0.0, 0.0], 1.0)).await;
    let mut events = server.events().await;
    let d = mac(11);
    let parsed: zonecast_model::Mac = d.parse().unwrap();
    let bad: [&[u8]; 4] = [
        b"not json",
        br#"{"Type": "LOCATION_RAW_UPDATE"}"#,
        br#"{"Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T10:00:00Z", "Source": {"MAC": "zz"}, "Content": {"Position": [0, 0, 0]}}"#,
        br#"{"Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T10:00:00Z", "Source": {"MAC": "00:00:00:00:00:0B"}, "Content": {"Position": [0, "x", 0]}}"#,
    ];
    for payload in bad {
        server.position_bytes(&parsed, payload).await;
    }
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    assert_eq!(next_json(&mut events, WAIT).await["Type"], "ZONE_ENTER", "the evaluator went on after bad messages");
    let (_, metrics) = server.raw(Method::GET, "/metrics", Some(zonecast_tests::READ_KEY), None).await;
    let text = metrics.as_str().unwrap();
    let count: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("zonecast_evaluator_bad_messages_total "))
        .map(|v| v.trim().parse().unwrap())
        .expect("bad message counter exported");
    assert!(count >= 4.0, "{count}");
    server.stop().await;
}

both_modes!(
    entering_and_leaving_a_zone_shows_in_events_and_colliding_devices,
    every_shape_holds_a_point_1_cm_inside_and_not_one_1_cm_outside,
    a_mobile_zone_captures_a_device_standing_still_when_its_source_moves_onto_it,
    inclusion_lists_decide_who_triggers_and_an_exclusion_exits_the_device,
    a_radius_write_moves_only_the_device_it_names_in_or_out_of_a_zone,
    a_timed_zone_exits_its_devices_at_stop_time_by_the_clock,
    exit_tolerance_and_exit_delay_hold_the_exit_back,
    a_silent_device_times_out_of_its_zones,
    configuration_changes_exit_devices_with_their_reason,
    alert_levels_raise_site_and_device_alarms,
    an_http_request_action_posts_the_triggering_event_to_its_uri,
    after_a_restart_a_device_that_stayed_inside_gets_no_second_enter,
    malformed_position_messages_are_counted_and_skipped,
);
