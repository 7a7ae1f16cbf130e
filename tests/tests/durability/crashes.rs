//! The all-in-one killed with SIGKILL again and again while positions stream in: whatever the
//! moment, the event journal and the collisions agree after the restart. Every stay the
//! journal opened is closed by the exit its device's last position implies, and no exit
//! comes without its entry.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::site::{Api, WAIT, all_in_one, cell, devices};

/// Times the all-in-one is killed.
const KILLS: usize = 5;

/// Posts a round of positions of every device, in or out of the cell by turns, again and again
/// until `stop`; each round is posted until it is accepted (the service may be down). Counts
/// the rounds accepted.
async fn stream(api: Arc<Api>, macs: Vec<String>, rounds: Arc<AtomicUsize>, stop: Arc<AtomicBool>) {
    let mut round = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let x = if round.is_multiple_of(2) { 1.0 } else { 100.0 };
        let body: Vec<Value> = macs.iter().map(|m| json!({"MAC": m, "Position": [x, 0, 0]})).collect();
        let accepted = api
            .http
            .post(format!("{}/v3/positions", api.base))
            .header("X-API-Key", super::site::KEY)
            .json(&body)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if accepted {
            round += 1;
            rounds.store(round, Ordering::Relaxed);
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await; // sleep-ok: pacing retries while the service restarts
        }
    }
}

/// The zone events of the journal, by device, in journal order, each once.
async fn journaled(api: &Api) -> BTreeMap<String, Vec<Value>> {
    let mut by_device: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v3/events?type=ZONE_ENTER&type=ZONE_EXIT&limit=1000&cursor={c}"),
            None => "/v3/events?type=ZONE_ENTER&type=ZONE_EXIT&limit=1000".to_owned(),
        };
        let page = api.call(Method::GET, &path, None).await;
        for event in page["Events"].as_array().unwrap() {
            if seen.insert(event["EventID"].as_str().unwrap().to_owned()) {
                let mac = event["Source"]["MAC"].as_str().unwrap().to_owned();
                by_device.entry(mac).or_default().push(event.clone());
            }
        }
        match page["NextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return by_device,
        }
    }
}

#[tokio::test]
async fn the_all_in_one_killed_at_any_moment_leaves_no_stay_open_and_no_exit_without_entry() {
    let data = tempfile::tempdir().unwrap();
    let (mut zonecast, api) = all_in_one(data.path()).await;
    let api = Arc::new(api);
    let zone = api.call(Method::POST, "/v3/modules/zones", Some(cell())).await;
    let zone = zone["ZoneID"].as_str().unwrap().to_owned();
    let macs = devices();
    let (rounds, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let load = tokio::spawn(stream(api.clone(), macs.clone(), rounds.clone(), stop.clone()));
    for kill in 1..=KILLS {
        // Killed after a few more rounds each time: mid-stream, wherever the service is.
        let (rounds, due) = (&rounds, kill * 7);
        zonecast_tests::eventually(WAIT, || async move { (rounds.load(Ordering::Relaxed) >= due).then_some(()) }).await;
        zonecast.kill().await;
        zonecast.restart();
        zonecast.healthy(&api.http, WAIT).await;
    }
    stop.store(true, Ordering::Relaxed);
    load.await.unwrap();
    // Every device parked outside: each stay the journal holds must be closed.
    let body: Vec<Value> = macs.iter().map(|m| json!({"MAC": m, "Position": [100, 0, 0]})).collect();
    api.call(Method::POST, "/v3/positions", Some(Value::Array(body))).await;
    let api_ref = &api;
    let path = format!("/v3/modules/zones/{zone}");
    let path = &path;
    zonecast_tests::eventually(WAIT, || async move {
        let zone = api_ref.call(Method::GET, path, None).await;
        zone["CollidingDevices"].as_array().is_some_and(Vec::is_empty).then_some(())
    })
    .await;
    let by_device = journaled(&api).await;
    assert!(!by_device.is_empty(), "no zone event journaled");
    for (mac, events) in &by_device {
        let kinds: Vec<&str> = events.iter().map(|e| e["Type"].as_str().unwrap()).collect();
        for (i, pair) in events.chunks(2).enumerate() {
            assert_eq!(pair[0]["Type"], "ZONE_ENTER", "{mac}: event {} is no entry: {kinds:?}", 2 * i);
            let exit = pair.get(1).unwrap_or_else(|| panic!("{mac}: a stay left open: {kinds:?}"));
            assert_eq!(exit["Type"], "ZONE_EXIT", "{mac}: {kinds:?}");
            assert_eq!(exit["Content"]["CollisionID"], pair[0]["Content"]["CollisionID"], "{mac}: {pair:?}");
        }
    }
}
