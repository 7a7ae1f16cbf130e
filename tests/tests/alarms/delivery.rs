//! What the recording of alarms from the event journal guarantees: a copy of an alarm event
//! changes nothing, and an alarm raised while the database is away is recorded once it is back.

use reqwest::{Method, StatusCode};
use serde_json::json;
use zonecast_bus::journal::Record;
use zonecast_tests::{Mode, READ_KEY, Server, close_database, eventually, reopen_database};

use super::{WAIT, all_alarms, mac, next_event, path, raise_alarm};

pub(crate) async fn a_copy_of_an_alarm_event_changes_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let event = raise_alarm(&server, 1, 0.0).await;
    let id = event["EventID"].as_str().unwrap().to_owned();
    let acknowledged = server.ok(Method::POST, &format!("{}/acknowledge", path(&id)), None).await;

    // The same event again, under another record id so that the journal does not drop it as a
    // duplicate, then a marker alarm after it: once the marker is recorded, so was the copy.
    let mut events = server.events().await;
    let subject = format!("{}.events.alarm.site.{}", server.subjects.prefix(), mac(1));
    let copy = Record { subject, payload: serde_json::to_vec(&event).unwrap().into(), id: format!("{id}:copy") };
    server.journal().append(vec![copy]).await.unwrap();
    next_event(&mut events, |e| e["EventID"] == json!(id)).await;
    raise_alarm(&server, 2, 10.0).await;

    let all = all_alarms(&server).await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    assert_eq!(server.ok(Method::GET, &path(&id), None).await, acknowledged, "the copy changed nothing");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alarm_raised_while_the_database_is_away_is_recorded_once_it_is_back() {
    let server = Server::start(Mode::Distributed).await;
    let database = server.database_url.clone().unwrap();
    raise_alarm(&server, 1, 0.0).await;
    let mut zone = zonecast_tests::sphere("keep out 2", [10.0, 0.0, 0.0], 1.0);
    zone["AlertLevel"] = json!(9);
    server.create_zone(zone).await;

    close_database(&database).await;
    let mut events = server.events().await;
    server.position(&mac(2), [10.0, 0.0, 0.0], chrono::Utc::now()).await;
    let (_, alarm) = next_event(&mut events, |e| e["Type"] == "SITE_ALARM" && e["Source"]["MAC"] == mac(2)).await;
    let id = alarm["EventID"].as_str().unwrap().to_owned();
    let away = server.call(Method::GET, "/v3/alarms", Some(READ_KEY), None).await;
    assert!(away.0.is_server_error(), "the alarms cannot be read meanwhile: {} {}", away.0, away.1);

    reopen_database(&database).await;
    let recorded = eventually(WAIT * 3, || {
        let (server, id) = (&server, id.clone());
        async move {
            let (status, alarm) = server.call(Method::GET, &path(&id), Some(READ_KEY), None).await;
            (status == StatusCode::OK).then_some(alarm)
        }
    })
    .await;
    assert_eq!((&recorded["State"], &recorded["Event"]), (&json!("open"), &alarm));
    assert_eq!(all_alarms(&server).await.as_array().unwrap().len(), 2, "each alarm once");
    server.stop().await;
}
