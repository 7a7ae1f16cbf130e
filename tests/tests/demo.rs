//! The all-in-one's demo site (`--demo`), seen through the HTTP API: its zones are there once, of
//! every shape, with their AlertLevels and states; its devices move and enter zones; the
//! forklift's safety zone follows the forklift and catches the people it passes; its devices are
//! named in the device registry; a restart on the same data keeps the zones and names as they
//! were left and creates again only those deleted.
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use zonecast::demo::{FORKLIFT, zone_id};
use zonecast_tests::sse::Sse;
use zonecast_tests::{Mode, READ_KEY, Server, sphere};

/// The forklift takes about 75 s to go round; people enter zones every second.
const WAIT: Duration = Duration::from_secs(90);
const READER: (&str, &str) = ("X-API-Key", READ_KEY);
const DEMO_ZONES: usize = 36;
/// 290 people and the forklift.
const DEMO_DEVICES: usize = 291;

async fn demo_server() -> Server {
    Server::start_configured(Mode::AllInOne, |config| config.demo = true).await
}

async fn zones(server: &Server) -> Vec<Value> {
    server.ok(Method::GET, "/v3/modules/zones", None).await.as_array().unwrap().clone()
}

fn named<'a>(zones: &'a [Value], name: &str) -> &'a Value {
    zones.iter().find(|z| z["Name"] == name).unwrap_or_else(|| panic!("no zone {name}"))
}

fn id(zone: &Value) -> String {
    zone["ZoneID"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_site_has_zones_of_every_shape_level_and_state_with_fixed_ids() {
    let server = demo_server().await;
    let zones = zones(&server).await;
    assert_eq!(zones.len(), DEMO_ZONES);
    for zone in &zones {
        assert!(id(zone).starts_with("64656D6F-0000-4000-8000-"), "{zone}");
    }
    let shapes: HashSet<&str> = zones.iter().map(|z| z["GeometryType"].as_str().unwrap()).collect();
    assert_eq!(shapes, HashSet::from(["sphere", "cuboid", "cylinder", "polygon", "circle", "square"]));
    let levels: HashSet<u64> = zones.iter().map(|z| z["AlertLevel"].as_u64().unwrap()).collect();
    assert!(levels.len() >= 6 && levels.contains(&9) && levels.contains(&0), "{levels:?}");
    let inactive: Vec<&Value> = zones.iter().filter(|z| z["Active"] == false).collect();
    assert_eq!(inactive.len(), 1);
    assert_eq!(inactive[0]["Name"], "Mezzanine (closed)");
    let locked: Vec<&Value> = zones.iter().filter(|z| z["IsGeometryLocked"] == true).collect();
    assert_eq!(locked.len(), 1);
    assert_eq!(locked[0]["Name"], "Fire exit");
    let mobile: Vec<&Value> = zones.iter().filter(|z| !z["MobileOriginSource"].is_null()).collect();
    assert_eq!(mobile.len(), 1);
    assert_eq!(mobile[0]["MobileOriginSource"], FORKLIFT);
    // The conveyor rises: its length axis is not square to its height axis.
    let conveyor = &named(&zones, "Conveyor")["GeometryData"];
    let dot: f64 = (0..3).map(|k| conveyor[2][k].as_f64().unwrap() * conveyor[4][k].as_f64().unwrap()).sum();
    assert!(dot.abs() > 0.1, "{conveyor}");
    server.stop().await;
}

/// Follows the position stream until every device has been seen at two places, the forklift
/// among them; answers how many devices were seen.
async fn until_every_device_moved(server: &Server, devices: usize) -> usize {
    let mut stream = Sse::open(server, "/v3/positions/stream", "", &[READER]).await;
    let mut first: HashMap<String, Value> = HashMap::new();
    let mut moved: HashSet<String> = HashSet::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while moved.len() < devices {
        assert!(tokio::time::Instant::now() < deadline, "{} of {devices} devices moved within {WAIT:?}", moved.len());
        let frame = stream.event(WAIT).await;
        for p in frame.json().as_array().unwrap() {
            let mac = p["MAC"].as_str().unwrap().to_owned();
            match first.get(&mac) {
                Some(at) if *at != p["Position"] => {
                    moved.insert(mac);
                }
                Some(_) => {}
                None => {
                    first.insert(mac, p["Position"].clone());
                }
            }
        }
    }
    assert!(moved.contains(FORKLIFT));
    first.len()
}

/// Follows the event stream until a person has entered some zone and a person has entered the
/// forklift's safety zone; answers those two events.
async fn until_entries(server: &Server, forklift_zone: &str) -> (Value, Value) {
    let mut stream = Sse::open(server, "/v3/events/stream", "type=ZONE_ENTER", &[READER]).await;
    let (mut any, mut forklift) = (None, None);
    let deadline = tokio::time::Instant::now() + WAIT;
    while any.is_none() || forklift.is_none() {
        assert!(tokio::time::Instant::now() < deadline, "no entry into the forklift's zone within {WAIT:?}");
        let event = stream.event(WAIT).await.json();
        assert_eq!(event["Type"], "ZONE_ENTER");
        if event["Content"]["ZoneID"] == forklift_zone {
            assert_ne!(event["Source"]["MAC"], FORKLIFT, "the forklift never enters its own zone");
            forklift = Some(event);
        } else {
            any.get_or_insert(event);
        }
    }
    (any.unwrap(), forklift.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_devices_move_and_enter_zones_and_the_forklift_zone_catches_people() {
    let server = demo_server().await;
    let zones = zones(&server).await;
    let forklift_zone = id(named(&zones, "Forklift safety"));
    let (seen, (entry, caught)) =
        tokio::join!(until_every_device_moved(&server, 291), until_entries(&server, &forklift_zone));
    assert_eq!(seen, 291, "the demo has 290 people and a forklift");
    assert!(zones.iter().any(|z| z["ZoneID"] == entry["Content"]["ZoneID"]), "{entry}");
    assert!(caught["Source"]["MAC"].as_str().unwrap().starts_with("02:DE:40:00:"), "{caught}");
    // The zone list shows the occupants the events announced.
    let occupied = zonecast_tests::eventually(WAIT, || async {
        let zones = server.ok(Method::GET, "/v3/modules/zones", None).await;
        let occupied = zones
            .as_array()?
            .iter()
            .filter(|z| z["CollidingDevices"].as_array().is_some_and(|d| !d.is_empty()))
            .count();
        (occupied > 0).then_some(occupied)
    })
    .await;
    assert!(occupied > 0);
    server.stop().await;
}

/// Every device in the registry (one page holds them all).
async fn devices(server: &Server) -> Vec<Value> {
    let page = server.ok(Method::GET, "/v3/devices?limit=1000", None).await;
    assert_eq!(page["NextCursor"], Value::Null);
    page["Devices"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_devices_are_named_after_their_jobs_in_the_registry() {
    let server = demo_server().await;
    let devices = devices(&server).await;
    assert_eq!(devices.len(), DEMO_DEVICES);
    let forklift = devices.iter().find(|d| d["MAC"] == FORKLIFT).unwrap();
    assert_eq!(
        (&forklift["Name"], &forklift["Group"], &forklift["Kind"]),
        (&json!("Forklift"), &json!("vehicles"), &json!("vehicle"))
    );
    let mut groups: HashMap<&str, usize> = HashMap::new();
    for device in &devices {
        *groups.entry(device["Group"].as_str().unwrap()).or_default() += 1;
    }
    let expected =
        HashMap::from([("pickers", 150), ("runners", 80), ("packers", 40), ("technicians", 20), ("vehicles", 1)]);
    assert_eq!(groups, expected);
    let names: HashSet<&str> = devices.iter().map(|d| d["Name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), DEMO_DEVICES, "every name is its device's own");
    assert!(names.contains("Picker 1") && names.contains("Picker 150") && names.contains("Technician 20"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_the_demo_keeps_its_zones_and_names_as_left_and_creates_only_the_deleted_ones() {
    let server = demo_server().await;
    let before = zones(&server).await;
    let dock = id(named(&before, "Dock 1"));
    let chute = id(named(&before, "Chute"));
    server.ok(Method::POST, "/v3/modules/zones/deactivate", Some(json!([dock]))).await;
    server.ok(Method::DELETE, &format!("/v3/modules/zones/{chute}"), None).await;
    let mine = id(&server.create_zone(sphere("Mine", [1.0, 1.0, 1.0], 1.0)).await);
    let picker = "02:DE:40:00:00:00";
    server.ok(Method::PUT, &format!("/v3/devices/{picker}"), Some(json!({"Name": "Ana"}))).await;
    server.ok(Method::DELETE, &format!("/v3/devices/{FORKLIFT}"), None).await;

    let server = server.restart().await;
    let devices = devices(&server).await;
    assert_eq!(devices.len(), DEMO_DEVICES);
    let name = |mac: &str| devices.iter().find(|d| d["MAC"] == mac).unwrap()["Name"].clone();
    assert_eq!(name(picker), "Ana", "a renamed demo device keeps its name");
    assert_eq!(name(FORKLIFT), "Forklift", "a deleted one is named again");
    let after = zones(&server).await;
    assert_eq!(after.len(), DEMO_ZONES + 1, "{after:?}");
    let ids: HashSet<String> = after.iter().map(id).collect();
    assert_eq!(ids.len(), after.len(), "a zone is listed twice");
    assert!(ids.contains(&mine));
    for n in 1..=DEMO_ZONES as u8 {
        assert!(ids.contains(&zonecast_model::format_id(&zone_id(n))), "demo zone {n} is missing");
    }
    assert_eq!(named(&after, "Dock 1")["Active"], false, "a change to a demo zone is kept");
    assert_eq!(id(named(&after, "Chute")), chute, "a deleted demo zone comes back with its ZoneID");
    let unchanged: Vec<&Value> = before.iter().filter(|z| z["Name"] != "Dock 1").collect();
    for zone in unchanged {
        let now = after.iter().find(|z| z["ZoneID"] == zone["ZoneID"]).unwrap();
        assert_eq!(now["GeometryData"], zone["GeometryData"]);
        assert_eq!(now["IsGeometryLocked"], zone["IsGeometryLocked"]);
    }
    server.stop().await;
}
