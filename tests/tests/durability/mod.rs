//! Delivery through faults, on real processes and a Mosquitto broker the test stops and starts.
//! Distributed: the API, an evaluator and a forwarder, each its own process, on a NATS server
//! (with JetStream) of the test's own and a fresh PostgreSQL database; a forwarder killed with
//! SIGKILL while it holds a backlog, and a forwarder that is not running at all while events
//! are produced, lose nothing. All-in-one: the `zonecast` binary killed with SIGKILL while
//! events wait for a broker delivers them after its restart. Every event reaches the broker
//! once it is back, and any copy carries the same `EventID`. An evaluator killed with SIGKILL
//! and restarted within the position window, and a NATS server restarted while positions wait
//! for an evaluator, lose no accepted position and repeat no event. http-request actions waiting
//! for a retry when the forwarder (or the all-in-one) is killed with SIGKILL reach their
//! receiver after the restart, each with its event's Idempotency-Key. An alarm raised before an
//! evaluator is killed is cleared, and counted on, after its restart.
#![allow(clippy::unwrap_used)]

mod crashes;
mod hooks;
mod site;

use std::sync::atomic::Ordering;

use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::fresh_database;
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::nats::NatsServer;

use hooks::{HOOKED, Seen, cell_with_action, hook_receiver};
use site::{EVENTS, PARTITIONS, Site, WAIT, all_in_one, alternate, cell, devices, every_device_gets};

#[tokio::test]
async fn forwarders_killed_with_a_backlog_or_down_while_events_flow_lose_nothing() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let mut site = Site::start(&nats, &database).await;
    let mut broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let connection = site.api.zone_and_connection(&broker).await;

    // A backlog held by the forwarder while the broker is away, then SIGKILL.
    broker.stop().await;
    site.api.wait_status(&connection, "disconnected", |s| s["connected"] == false).await;
    let macs = devices();
    site.positions(&macs, 1.0).await;
    site.api.wait_status(&connection, "the backlog", |s| s["queued"] == EVENTS).await;
    site.forwarder.kill().await;
    broker.start().await;
    site.forwarder.restart();
    site.forwarder.healthy(&site.api.http, WAIT).await;
    every_device_gets(&mut sub, "ZONE_ENTER", &macs).await;

    // Events produced while no forwarder runs at all.
    site.forwarder.kill().await;
    site.positions(&macs, 100.0).await;
    site.forwarder.restart();
    site.forwarder.healthy(&site.api.http, WAIT).await;
    every_device_gets(&mut sub, "ZONE_EXIT", &macs).await;
    site.api.wait_status(&connection, "everything delivered", |s| s["queued"] == 0 && s["dropped"] == 0).await;
    zonecast_tests::drop_fresh_database(&database).await;
}

#[tokio::test]
async fn the_all_in_one_killed_with_undelivered_events_delivers_them_after_its_restart() {
    let data = tempfile::tempdir().unwrap();
    let (mut zonecast, api) = all_in_one(data.path()).await;
    let mut broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let connection = api.zone_and_connection(&broker).await;

    broker.stop().await;
    api.wait_status(&connection, "disconnected", |s| s["connected"] == false).await;
    let macs = devices();
    let body: Vec<Value> = macs.iter().map(|m| json!({"MAC": m, "Position": [1, 0, 0]})).collect();
    let accepted = api.call(Method::POST, "/v3/positions", Some(Value::Array(body))).await;
    assert_eq!(accepted["accepted"], EVENTS);
    api.wait_status(&connection, "the events waiting", |s| s["queued"] == EVENTS).await;
    zonecast.kill().await;
    broker.start().await;
    zonecast.restart();
    zonecast.healthy(&api.http, WAIT).await;
    every_device_gets(&mut sub, "ZONE_ENTER", &macs).await;
    api.wait_status(&connection, "everything delivered", |s| s["queued"] == 0 && s["dropped"] == 0).await;
}

#[tokio::test]
async fn an_evaluator_killed_and_restarted_within_the_window_loses_no_position_and_repeats_no_enter() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let (mut site, mut events) = Site::with_cell(&nats, &database).await;
    let macs = devices();
    // Each round moves every device across the zone's boundary: in on even rounds, out on odd.
    // The evaluator is killed while it works on round 2, misses rounds 3 to 7, and comes back
    // for the rest: every position is evaluated once, in order.
    const ROUNDS: usize = 12;
    for round in 0..ROUNDS {
        if round == 3 {
            site.evaluator.kill().await;
        }
        if round == 8 {
            site.restart_evaluator().await;
        }
        site.round(&macs, round).await;
    }
    alternate(&site.transitions(&mut events, &macs).await, ROUNDS);
    zonecast_tests::drop_fresh_database(&database).await;
}

/// While PostgreSQL is away the evaluator goes on evaluating what it holds and storing the
/// events, but acknowledges nothing: the collisions it cannot write would be behind. Killed
/// then, and restarted once the database is back, it resumes where the collisions stand: the
/// positions it evaluated again cause the same events with the same EventIDs, and every device
/// goes on alternating, with no second exit, no second entry and no stay left open.
#[tokio::test]
async fn an_evaluator_killed_while_the_database_is_away_resumes_where_its_collisions_stand() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let (mut site, mut events) = Site::with_cell(&nats, &database).await;
    let macs = devices();
    const ROUNDS: usize = 10;
    for round in 0..ROUNDS {
        if round == 2 {
            site.positions_done().await;
            zonecast_tests::close_database(&database).await;
        }
        if round == 5 {
            // Every position so far evaluated (their events stored: every device inside), the
            // collisions since round 2 not written (every device outside), and the evaluator
            // trying to write them for several seconds.
            site.evaluator_counts("zonecast_evaluator_positions_total", macs.len() * 5).await;
            site.evaluator_counts("zonecast_evaluator_collision_write_failures_total", 8).await;
            // Meanwhile it reports itself as far behind as its batches have waited (ingest
            // pushes back on that).
            site.evaluator_lag_reaches(2.0).await;
            site.evaluator.kill().await;
            zonecast_tests::reopen_database(&database).await;
            site.restart_evaluator().await;
        }
        site.round(&macs, round).await;
    }
    alternate(&site.transitions(&mut events, &macs).await, ROUNDS);
    zonecast_tests::drop_fresh_database(&database).await;
}

#[tokio::test]
async fn positions_stored_before_a_nats_restart_are_all_evaluated_after_it() {
    let mut nats = NatsServer::start().await;
    let database = fresh_database().await;
    let mut site = Site::start(&nats, &database).await;
    site.api.call(Method::POST, "/v3/modules/zones", Some(cell())).await;
    let macs = devices();
    // Accepted while no evaluator runs: they wait in their streams through the restart.
    site.evaluator.kill().await;
    site.positions(&macs, 1.0).await;
    nats.restart().await;
    let bus = &site.bus;
    zonecast_tests::eventually(WAIT, || async move { bus.is_connected().then_some(()) }).await;
    let mut events = site.bus.subscribe(&site.subjects.events_all()).await.unwrap();
    site.restart_evaluator().await;
    site.positions(&macs, 100.0).await;
    alternate(&site.transitions(&mut events, &macs).await, 2);
    zonecast_tests::drop_fresh_database(&database).await;
}

#[tokio::test]
async fn http_actions_waiting_for_a_retry_when_the_forwarder_is_killed_are_delivered_after_its_restart() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let mut site = Site::start(&nats, &database).await;
    let (url, status, mut hooks) = hook_receiver().await;
    site.api.call(Method::POST, "/v3/modules/zones", Some(cell_with_action(&url))).await;
    let macs: Vec<String> = devices().into_iter().take(HOOKED).collect();
    site.positions(&macs, 1.0).await;
    // Every request has been tried and refused: all of them wait for a retry.
    let mut seen = Seen::default();
    seen.until(&mut hooks, "every request tried", |s| s.bodies.len() == HOOKED).await;
    site.forwarder.kill().await;
    site.forwarder.restart();
    site.forwarder.healthy(&site.api.http, WAIT).await;
    status.store(200, Ordering::SeqCst);
    seen.until(&mut hooks, "every request delivered", |s| s.delivered.len() == HOOKED).await;
    seen.every_device_delivered(&macs);
    zonecast_tests::drop_fresh_database(&database).await;
}

#[tokio::test]
async fn http_actions_waiting_for_a_retry_when_the_all_in_one_is_killed_are_delivered_after_its_restart() {
    let data = tempfile::tempdir().unwrap();
    let (mut zonecast, api) = all_in_one(data.path()).await;
    let (url, status, mut hooks) = hook_receiver().await;
    api.call(Method::POST, "/v3/modules/zones", Some(cell_with_action(&url))).await;
    let macs: Vec<String> = devices().into_iter().take(HOOKED).collect();
    let body: Vec<Value> = macs.iter().map(|m| json!({"MAC": m, "Position": [1, 0, 0]})).collect();
    let accepted = api.call(Method::POST, "/v3/positions", Some(Value::Array(body))).await;
    assert_eq!(accepted["accepted"], HOOKED);
    let mut seen = Seen::default();
    seen.until(&mut hooks, "every request tried", |s| s.bodies.len() == HOOKED).await;
    zonecast.kill().await;
    zonecast.restart();
    zonecast.healthy(&api.http, WAIT).await;
    status.store(200, Ordering::SeqCst);
    seen.until(&mut hooks, "every request delivered", |s| s.delivered.len() == HOOKED).await;
    seen.every_device_delivered(&macs);
}

/// Positions that leave the stream before a stopped evaluator comes back are skipped, and the
/// skip is counted: the stream here keeps 1 MiB, and far more is stored while the evaluator is
/// down. The newest positions are still evaluated.
#[tokio::test]
async fn positions_that_left_the_window_while_the_evaluator_was_away_are_counted_as_skipped() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let small = zonecast_bus::PositionSettings { max_bytes: 1 << 20, ..Default::default() };
    let mut site = Site::start_with(&nats, &database, small).await;
    site.api.call(Method::POST, "/v3/modules/zones", Some(cell())).await;
    let macs = devices();
    // The evaluator has followed every partition and written the marks of a first batch: the
    // store knows where it stands, so what leaves the stream while it is away shows as a gap.
    // Killed before that, it would come back with no mark, start at the oldest message kept,
    // and have no gap to count.
    site.positions(&macs, 100.0).await;
    site.positions_done().await;
    site.evaluator.kill().await;
    // About 12 MiB in messages of ~40 KiB (four partitions of ~10 KiB): most of them leave.
    for round in 0..300 {
        site.positions(&macs, if round % 2 == 0 { 100.0 } else { 1.0 }).await;
    }
    let mut events = site.bus.subscribe(&site.subjects.events_all()).await.unwrap();
    site.restart_evaluator().await;
    // The last round put every device inside: each enters.
    let by_device = site.transitions(&mut events, &macs).await;
    for (mac, events) in &by_device {
        assert_eq!(events.last().map(|e| e["Type"].clone()), Some(json!("ZONE_ENTER")), "{mac}: {events:?}");
    }
    let skipped = site.evaluator_counter("zonecast_evaluator_position_batches_skipped_total").await;
    // The stream kept some 25 of the 300 messages; each partition counts those it missed.
    assert!(skipped >= f64::from(PARTITIONS) * 150.0, "{skipped} batches counted as skipped");
    zonecast_tests::drop_fresh_database(&database).await;
}

/// An evaluator SIGKILLed while a device is inside a keep-out zone, the device leaving while it
/// is away: restarted, it clears the alarm the entry raised (`ALARM_CLEARED` of the stay), and
/// the next entry counts on that alarm rather than opening another.
#[tokio::test]
async fn an_alarm_raised_before_an_evaluator_is_killed_is_cleared_and_counted_on_after_its_restart() {
    let nats = NatsServer::start().await;
    let database = fresh_database().await;
    let (mut site, _) = Site::with_cell(&nats, &database).await;
    let mut keep_out = cell();
    keep_out["AlertLevel"] = json!(9);
    site.api.call(Method::POST, "/v3/modules/zones", Some(keep_out)).await;
    let device = vec!["00:00:00:00:D5:01".to_owned()];

    site.round(&device, 0).await;
    let raised = zonecast_tests::eventually(WAIT, || async {
        let all = alarms(&site.api).await;
        (all.len() == 1).then(|| all[0].clone())
    })
    .await;
    assert_eq!((&raised["Active"], &raised["Count"]), (&json!(true), &json!(1)));

    site.evaluator.kill().await;
    site.round(&device, 1).await;
    site.restart_evaluator().await;
    let cleared = zonecast_tests::eventually(WAIT, || async {
        let all = alarms(&site.api).await;
        (all.len() == 1 && all[0]["Active"] == false).then(|| all[0].clone())
    })
    .await;
    assert_eq!(cleared["AlarmID"], raised["AlarmID"]);
    assert_eq!(cleared["State"], "open", "cleared, left for a person");

    site.round(&device, 2).await;
    let counted = zonecast_tests::eventually(WAIT, || async {
        let all = alarms(&site.api).await;
        (all.len() == 1 && all[0]["Count"] == 2).then(|| all[0].clone())
    })
    .await;
    assert_eq!((&counted["AlarmID"], &counted["Active"]), (&raised["AlarmID"], &json!(true)));
    zonecast_tests::drop_fresh_database(&database).await;
}

/// Every alarm, as `api` lists it.
async fn alarms(api: &site::Api) -> Vec<Value> {
    api.call(Method::GET, "/v3/alarms", None).await["Alarms"].as_array().unwrap().clone()
}
