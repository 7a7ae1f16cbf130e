//! Many alarms acknowledged and resolved at once, by a list of AlarmIDs or by a filter; each
//! change published as a change of one alarm is, and bad selections refused.

use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::{Mode, READ_KEY, Server, WRITE_KEY, assert_error, eventually};

use super::{WAIT, all_alarms, mac, raise_alarm};

fn states(alarms: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = alarms
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["MAC"].as_str().unwrap().to_owned(), a["State"].as_str().unwrap().to_owned()))
        .collect();
    out.sort();
    out
}

pub(crate) async fn alarms_are_acknowledged_and_resolved_many_at_once_by_ids_or_a_filter(mode: Mode) {
    let server = Server::start(mode).await;
    let mut ids = Vec::new();
    for n in 1..=3 {
        ids.push(raise_alarm(&server, n, f64::from(n) * 10.0).await["EventID"].as_str().unwrap().to_owned());
    }
    let acknowledged =
        server.ok(Method::POST, "/v3/alarms/acknowledge", Some(json!({"AlarmIDs": &ids[..2], "Note": "shift"}))).await;
    assert_eq!(
        (&acknowledged["Changed"], &acknowledged["Unchanged"], &acknowledged["More"]),
        (&json!(2), &json!(0), &json!(false))
    );
    let mut changed: Vec<String> =
        acknowledged["AlarmIDs"].as_array().unwrap().iter().map(|i| i.as_str().unwrap().to_owned()).collect();
    changed.sort();
    let mut expected = ids[..2].to_vec();
    expected.sort();
    assert_eq!(changed, expected);
    let again = server.ok(Method::POST, "/v3/alarms/acknowledge", Some(json!({"AlarmIDs": &ids[..2]}))).await;
    assert_eq!((&again["Changed"], &again["Unchanged"]), (&json!(0), &json!(2)), "acknowledged already");
    let unknown = json!({"AlarmIDs": ["01900000-0000-7000-8000-0000000000FF"]});
    assert_eq!(server.ok(Method::POST, "/v3/alarms/resolve", Some(unknown)).await["Unchanged"], 1);

    // By a filter: the one of device 3, then every acknowledged one.
    let by_device =
        server.ok(Method::POST, "/v3/alarms/resolve", Some(json!({"MAC": mac(3), "Type": "SITE_ALARM"}))).await;
    assert_eq!((&by_device["Changed"], &by_device["AlarmIDs"]), (&json!(1), &json!([ids[2]])));
    let by_state =
        server.ok(Method::POST, "/v3/alarms/resolve", Some(json!({"State": ["acknowledged"], "Note": "done"}))).await;
    assert_eq!(by_state["Changed"], 2);
    let all = all_alarms(&server).await;
    assert_eq!(states(&all), (1..=3).map(|n| (mac(n), "resolved".to_owned())).collect::<Vec<_>>());
    for alarm in all.as_array().unwrap() {
        let note = if alarm["MAC"] == json!(mac(3)) { Value::Null } else { json!("done") };
        assert_eq!(alarm["ResolvedNote"], note, "{alarm}");
    }
    // Each change is an event of its own in the history.
    let history = eventually(WAIT, || async {
        let page = server.ok(Method::GET, "/v3/events?type=ALARM_ACKNOWLEDGED,ALARM_RESOLVED", None).await;
        (page["Events"].as_array().unwrap().len() == 5).then_some(page)
    })
    .await;
    let acks = history["Events"].as_array().unwrap().iter().filter(|e| e["Type"] == "ALARM_ACKNOWLEDGED").count();
    assert_eq!(acks, 2);

    // Refused, and nothing changed.
    let before = all_alarms(&server).await;
    for (body, status, kind, message) in [
        (
            &b"{}"[..],
            422,
            "invalid_data",
            "give AlarmIDs or at least one of ZoneID, MAC, Type, State, RaisedBefore, Active",
        ),
        (br#"{"AlarmIDs": ["x"]}"#, 422, "invalid_data", "AlarmIDs[0]: must be a UUID"),
        (br#"{"Type": "ZONE_ENTER"}"#, 422, "invalid_data", "Type: must be an alarm type"),
        (br#"{"MAC": 5}"#, 422, "invalid_data", "MAC: must be a string, got a number"),
        (br#"{"MAC": "#, 400, "malformed", "request body is not valid JSON"),
    ] {
        let answer = server.raw(Method::POST, "/v3/alarms/resolve", Some(WRITE_KEY), Some(body.to_vec())).await;
        let got = assert_error(&answer, status, kind);
        assert!(got.starts_with(message), "{got}");
    }
    let answer = server
        .raw(Method::POST, "/v3/alarms/acknowledge", Some(READ_KEY), Some(br#"{"MAC": "00:00:00:00:00:01"}"#.to_vec()))
        .await;
    assert_error(&answer, 403, "forbidden");
    let answer = server.raw(Method::POST, "/v3/alarms/acknowledge", None, Some(b"{}".to_vec())).await;
    assert_error(&answer, 401, "unauthorized");
    assert_eq!(all_alarms(&server).await, before);
    server.stop().await;
}
