//! Occupancy limits through the API and the bus: MaxOccupancy and MinOccupancy on a zone,
//! counted over the collisions in the store, and their events.

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::{Mode, Server, next_matching, sphere};

use super::{WAIT, id, mac};

fn occupancy(e: &Value) -> bool {
    e["Type"].as_str().is_some_and(|t| t.starts_with("ZONE_OCCUPANCY_"))
}

pub(crate) async fn a_zone_over_its_limit_or_under_its_head_count_raises_occupancy_events(mode: Mode) {
    let server = Server::start(mode).await;
    let mut confined = sphere("confined space", [0.0, 0.0, 0.0], 2.0);
    confined["MaxOccupancy"] = json!(1);
    confined["AlertLevel"] = json!(3);
    let confined = server.create_zone(confined).await;
    assert_eq!((confined["MaxOccupancy"].as_u64(), confined["MinOccupancy"].as_u64()), (Some(1), None));
    let mut muster = sphere("muster point", [50.0, 0.0, 0.0], 3.0);
    muster["MinOccupancy"] = json!(2);
    let muster = id(&server.create_zone(muster).await);
    let mut events = server.events().await;

    let (a, b) = (mac(60), mac(61));
    server.position(&a, [0.0, 0.0, 0.0], Utc::now()).await;
    server.position(&b, [0.5, 0.0, 0.0], Utc::now()).await;
    let over = next_matching(&mut events, WAIT, occupancy).await;
    assert_eq!((over["Category"].as_str(), over["Type"].as_str()), (Some("ZONE"), Some("ZONE_OCCUPANCY_EXCEEDED")));
    let content = &over["Content"];
    assert_eq!(content["ZoneID"], confined["ZoneID"]);
    assert_eq!((content["ZoneName"].as_str(), content["AlertLevel"].as_u64()), (Some("confined space"), Some(3)));
    assert_eq!((content["Count"].as_u64(), content["MaxOccupancy"].as_u64()), (Some(2), Some(1)));
    assert_eq!(over["Source"]["MAC"], Value::Null, "about the zone, not a device");
    server.position(&b, [9.0, 0.0, 0.0], Utc::now()).await;
    let back = next_matching(&mut events, WAIT, occupancy).await;
    assert_eq!((back["Type"].as_str(), back["Content"]["Count"].as_u64()), (Some("ZONE_OCCUPANCY_RESTORED"), Some(1)));

    // The muster point: reaching its head count, then losing it.
    server.position(&a, [50.0, 0.0, 0.0], Utc::now()).await;
    server.position(&b, [50.5, 0.0, 0.0], Utc::now()).await;
    let reached = next_matching(&mut events, WAIT, occupancy).await;
    assert_eq!(reached["Content"]["ZoneID"], muster.as_str());
    assert_eq!(
        (reached["Type"].as_str(), reached["Content"]["Count"].as_u64()),
        (Some("ZONE_OCCUPANCY_RESTORED"), Some(2))
    );
    assert_eq!(reached["Content"]["MinOccupancy"].as_u64(), Some(2));
    server.position(&b, [70.0, 0.0, 0.0], Utc::now()).await;
    let lost = next_matching(&mut events, WAIT, occupancy).await;
    assert_eq!((lost["Type"].as_str(), lost["Content"]["Count"].as_u64()), (Some("ZONE_OCCUPANCY_BELOW"), Some(1)));

    // Over its limit is an alarm about the zone (no device), cleared by the zone's return within
    // its limits; acknowledged after that, zonecast resolves it too.
    let zone_id = confined["ZoneID"].as_str().unwrap();
    let alarms = zonecast_tests::eventually(WAIT, || async {
        let page = server.ok(Method::GET, &format!("/v3/alarms?zone={zone_id}"), None).await;
        let alarms = page["Alarms"].as_array().unwrap().clone();
        (alarms.first().is_some_and(|a| a["Active"] == false)).then_some(alarms)
    })
    .await;
    assert_eq!(alarms[0]["ClearedAt"], back["Timestamp"], "cleared by ZONE_OCCUPANCY_RESTORED");
    assert_eq!(alarms.len(), 1, "{alarms:?}");
    assert_eq!(
        (alarms[0]["AlarmID"].clone(), alarms[0]["Type"].clone()),
        (over["EventID"].clone(), json!("ZONE_OCCUPANCY_EXCEEDED"))
    );
    assert_eq!((alarms[0]["MAC"].clone(), alarms[0]["State"].clone()), (Value::Null, json!("open")));
    let path = format!("/v3/alarms/{}/acknowledge", over["EventID"].as_str().unwrap());
    let acknowledged = server.ok(Method::POST, &path, Some(json!({"Note": "two inside, one leaving"}))).await;
    assert_eq!((&acknowledged["State"], &acknowledged["ResolvedBy"]), (&json!("resolved"), &json!("zonecast")));
    assert_eq!(acknowledged["AcknowledgedNote"], "two inside, one leaving");
    let change = next_matching(&mut events, WAIT, |e| e["Type"] == "ALARM_ACKNOWLEDGED").await;
    assert_eq!(
        (change["Content"]["AlarmID"].clone(), change["Source"]["MAC"].clone()),
        (over["EventID"].clone(), Value::Null)
    );

    let history = server.ok(Method::GET, "/v3/events?type=ZONE_OCCUPANCY_EXCEEDED", None).await;
    let ids: Vec<&Value> = history["Events"].as_array().unwrap().iter().map(|e| &e["EventID"]).collect();
    assert_eq!(ids, [&over["EventID"]]);

    // Limits the zone cannot hold are refused, naming the field.
    let path = format!("/v3/modules/zones/{muster}");
    for (body, field) in [
        (json!({"MaxOccupancy": 1}), "MinOccupancy"),
        (json!({"MinOccupancy": -1}), "MinOccupancy"),
        (json!({"MaxOccupancy": "2"}), "MaxOccupancy"),
        (json!({"MaxOccupancy": 1.5}), "MaxOccupancy"),
    ] {
        let message = server
            .refused(
                Method::PUT,
                &path,
                Some(zonecast_tests::WRITE_KEY),
                Some(body.to_string().into()),
                422,
                "invalid_data",
            )
            .await;
        assert!(message.starts_with(&format!("{field}: ")), "{body}: {message}");
    }
    server.stop().await;
}
