//! Who is inside which zone: entering and leaving, every shape, mobile zones, inclusion lists.

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::{Mode, Server, next_json, next_matching, sphere};

use super::{WAIT, id, is, mac, ms, wait_colliding};

pub(crate) async fn entering_and_leaving_a_zone_shows_in_events_and_colliding_devices(mode: Mode) {
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

pub(crate) async fn every_shape_holds_a_point_1_cm_inside_and_not_one_1_cm_outside(mode: Mode) {
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

pub(crate) async fn a_mobile_zone_captures_a_device_standing_still_when_its_source_moves_onto_it(mode: Mode) {
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

pub(crate) async fn inclusion_lists_decide_who_triggers_and_an_exclusion_exits_the_device(mode: Mode) {
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
