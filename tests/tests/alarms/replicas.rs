//! Two API replicas on one database and one NATS: both record alarms from the one durable
//! consumer (each alarm once), and of concurrent acknowledgements of one alarm through both
//! exactly one wins and is published.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use zonecast_runtime::Shutdown;
use zonecast_tests::{ADMIN_KEY, Mode, Server, WRITE_KEY};

use super::{all_alarms, next_event, path, raise_alarm};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_api_replicas_record_each_alarm_once_and_of_concurrent_changes_one_wins() {
    let server = Server::start(Mode::Distributed).await;
    let second_stop = Shutdown::new();
    let second = zonecast_api::launch(server.config.api(), second_stop.clone()).await.expect("a second API starts");
    let second_base = format!("http://{}", second.addr.expect("the second API listens"));

    let mut ids = Vec::new();
    for n in 1..=4 {
        ids.push(raise_alarm(&server, n, f64::from(n) * 10.0).await["EventID"].as_str().unwrap().to_owned());
    }
    let listed = |base: String| {
        let http = server.http.clone();
        async move {
            let answer = http.get(format!("{base}/v3/alarms")).header("X-API-Key", ADMIN_KEY).send().await.unwrap();
            answer.json::<Value>().await.unwrap()["Alarms"].clone()
        }
    };
    let through_second = listed(second_base.clone()).await;
    assert_eq!(through_second, all_alarms(&server).await, "both replicas answer from the one store");
    assert_eq!(through_second.as_array().unwrap().len(), ids.len(), "each alarm once: {through_second}");

    // Eight acknowledgements of one alarm at once, half through each replica.
    let mut events = server.events().await;
    let id = ids[0].clone();
    let tries = (0..8).map(|i| {
        let base = if i % 2 == 0 { server.base.clone() } else { second_base.clone() };
        let (http, url) = (server.http.clone(), format!("{base}{}/acknowledge", path(&id)));
        tokio::spawn(async move {
            let body = json!({"Note": format!("try {i}")});
            http.post(url).header("X-API-Key", WRITE_KEY).json(&body).send().await.unwrap().status()
        })
    });
    let statuses: Vec<StatusCode> = futures::future::join_all(tries).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::OK).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CONFLICT).count(), 7, "{statuses:?}");

    // One acknowledgement published: the resolution that follows comes after exactly one.
    server.ok(Method::POST, &format!("{}/resolve", path(&id)), None).await;
    let mut acknowledged = 0;
    loop {
        let (_, event) = next_event(&mut events, |e| e["Type"].as_str().is_some_and(|t| t.starts_with("ALARM_"))).await;
        if event["Type"] == "ALARM_RESOLVED" {
            break;
        }
        acknowledged += 1;
        assert_eq!(event["Content"]["AlarmID"], json!(id));
    }
    assert_eq!(acknowledged, 1);

    second_stop.cancel();
    second.stopped().await.unwrap();
    server.stop().await;
}
