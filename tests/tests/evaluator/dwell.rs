//! Dwell limits through the API and the bus: `MaxDwellSeconds` on a zone, its
//! `ZONE_DWELL_EXCEEDED` and actions, the event history, and no second event after a restart.

use chrono::Utc;
use reqwest::Method;
use serde_json::json;
use zonecast_tests::{Mode, Server, next_json, next_matching, sphere};

use super::{WAIT, id, mac, wait_colliding};

pub(crate) async fn a_stay_past_max_dwell_raises_one_dwell_event_even_across_a_restart(mode: Mode) {
    let server = Server::start(mode).await;
    let mut input = sphere("cold room", [0.0, 0.0, 0.0], 2.0);
    input["MaxDwellSeconds"] = json!(0.5);
    input["ZoneActions"] = json!([{"type": "info-event", "message": "too long in the cold room", "on": "dwell"}]);
    let created = server.create_zone(input).await;
    assert_eq!(created["MaxDwellSeconds"], json!(0.5));
    let zone = id(&created);
    let mut events = server.events().await;
    let d = mac(40);
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let enter = next_json(&mut events, WAIT).await;
    assert_eq!(enter["Type"], "ZONE_ENTER");
    let dwell = next_json(&mut events, WAIT).await;
    assert_eq!((dwell["Category"].as_str(), dwell["Type"].as_str()), (Some("ZONE"), Some("ZONE_DWELL_EXCEEDED")));
    let content = &dwell["Content"];
    assert_eq!(content["CollisionID"], enter["Content"]["CollisionID"]);
    assert_eq!(content["EntryTime"], enter["Content"]["EntryTime"]);
    assert_eq!(content["MaxDwellSeconds"], json!(0.5));
    assert!(content["DwellSeconds"].as_f64().unwrap() >= 0.5, "{content}");
    let info = next_json(&mut events, WAIT).await;
    assert_eq!(
        (info["Type"].as_str(), info["Content"]["Message"].as_str()),
        (Some("ZONE_INFO"), Some("too long in the cold room"))
    );
    assert_eq!(info["Content"]["CollisionID"], enter["Content"]["CollisionID"]);
    let history = server.ok(Method::GET, "/v3/events?type=ZONE_DWELL_EXCEEDED", None).await;
    assert_eq!(history["Events"].as_array().unwrap().len(), 1, "{history}");
    assert_eq!(history["Events"][0]["EventID"], dwell["EventID"]);
    drop(events);

    let server = server.restart().await;
    let mut events = server.events().await;
    wait_colliding(&server, &zone, vec![d.clone()]).await;
    server.position(&d, [0.5, 0.0, 0.0], Utc::now()).await;
    server.position(&d, [9.0, 0.0, 0.0], Utc::now()).await;
    let first = next_json(&mut events, WAIT).await;
    assert_eq!(first["Type"], "ZONE_EXIT", "no second dwell event for the stay after the restart: {first}");
    assert_eq!(first["Content"]["CollisionID"], enter["Content"]["CollisionID"]);
    let history = server.ok(Method::GET, "/v3/events?type=ZONE_DWELL_EXCEEDED", None).await;
    assert_eq!(history["Events"].as_array().unwrap().len(), 1, "{history}");

    // A new stay raises its own, and clearing the limit raises none for the next.
    server.position(&d, [0.0, 0.0, 0.0], Utc::now()).await;
    let again = next_matching(&mut events, WAIT, |e| e["Type"] == "ZONE_DWELL_EXCEEDED").await;
    assert_ne!(again["Content"]["CollisionID"], enter["Content"]["CollisionID"]);
    server.ok(Method::PUT, &format!("/v3/modules/zones/{zone}"), Some(json!({"MaxDwellSeconds": null}))).await;
    let message = server
        .refused(
            Method::PUT,
            &format!("/v3/modules/zones/{zone}"),
            Some(zonecast_tests::WRITE_KEY),
            Some(br#"{"MaxDwellSeconds": -1}"#.to_vec()),
            422,
            "invalid_data",
        )
        .await;
    assert!(message.starts_with("MaxDwellSeconds: "), "{message}");
    let zone = server.ok(Method::GET, &format!("/v3/modules/zones/{zone}"), None).await;
    assert_eq!(zone["MaxDwellSeconds"], json!(null));
    server.stop().await;
}
