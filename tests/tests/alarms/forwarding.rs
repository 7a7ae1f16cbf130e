//! Alarm changes reach MQTT brokers like every event: a connection's topic that takes the
//! `ALARM` category gets the alarm and both of its changes, in order.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::{Mode, Server, eventually};

use super::{path, raise_alarm};

const CONNECTIONS: &str = "/v3/modules/mqtt/connections";

pub(crate) async fn alarm_changes_are_forwarded_to_mqtt_like_every_event(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut subscriber = Subscriber::new(&broker, "site/alarms").await;
    let chain = json!([{"Selector": "Category", "Type": "equals", "Match": "ALARM"}]);
    let connection = json!({"host": "127.0.0.1", "port": broker.port, "TLS": false,
                            "topics": [{"topic": "site/alarms", "FilterChain": chain}]});
    let id = server.ok(Method::POST, CONNECTIONS, Some(connection)).await["ConnectionID"].as_str().unwrap().to_owned();
    eventually(Duration::from_secs(20), || {
        let (server, status) = (&server, format!("{CONNECTIONS}/{id}/status"));
        async move { (server.ok(Method::GET, &status, None).await["connected"] == true).then_some(()) }
    })
    .await;

    let alarm = raise_alarm(&server, 1, 0.0).await;
    let alarm_id = alarm["EventID"].as_str().unwrap().to_owned();
    server.ok(Method::POST, &format!("{}/acknowledge", path(&alarm_id)), Some(json!({"Note": "seen"}))).await;
    server.ok(Method::POST, &format!("{}/resolve", path(&alarm_id)), None).await;

    let got = subscriber
        .until(Duration::from_secs(20), |_, e| {
            e["Type"] == "ALARM_RESOLVED" && e["Content"]["AlarmID"] == json!(alarm_id)
        })
        .await;
    let kinds: Vec<&Value> = got.iter().map(|(_, e)| &e["Type"]).collect();
    assert_eq!(kinds, [&json!("SITE_ALARM"), &json!("ALARM_ACKNOWLEDGED"), &json!("ALARM_RESOLVED")], "{got:?}");
    assert_eq!(got[1].1["Content"]["AcknowledgedNote"], "seen");
    assert!(got[1].1["Content"].get("Event").is_none(), "a change carries the alarm without its event");
    server.stop().await;
}
