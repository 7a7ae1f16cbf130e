//! Alarms a person can acknowledge, end to end as a client sees them: an alarm event raised by
//! a zone entry becomes an open alarm of `GET /v3/alarms`, is acknowledged with a note and
//! resolved, each change published on the bus as an event of its own, and the state survives a
//! restart; later entries count on the same alarm, each exit clears it, and an acknowledged
//! alarm whose condition cleared is resolved by zonecast; many are changed at once; a shelved
//! zone or device opens none; the changes reach MQTT brokers like every event. A device gone offline raises an
//! alarm without a zone. A copy of an alarm event changes nothing, and an alarm raised while the
//! database is away is recorded once it is back. Two API replicas record each alarm once, and of
//! concurrent changes of one alarm through both exactly one wins. Bad input is refused with a
//! message naming what is wrong, and changes nothing.
#![allow(clippy::unwrap_used)]

mod bulk;
mod conditions;
mod delivery;
mod forwarding;
mod lifecycle;
mod refusals;
mod replicas;
mod shelving;

use std::time::Duration;

use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use zonecast_bus::Subscription;
use zonecast_tests::{Server, both_modes, eventually, sphere};

use bulk::alarms_are_acknowledged_and_resolved_many_at_once_by_ids_or_a_filter;
use conditions::{
    an_alarm_acknowledged_after_its_condition_cleared_is_resolved_at_once,
    an_alarm_is_cleared_and_counted_on_across_a_restart, entries_into_a_zone_count_on_one_alarm_that_each_exit_clears,
};
use delivery::a_copy_of_an_alarm_event_changes_nothing;
use forwarding::alarm_changes_are_forwarded_to_mqtt_like_every_event;
use lifecycle::{
    a_device_gone_offline_raises_an_alarm_without_a_zone_that_is_resolved_at_once,
    alarms_are_listed_newest_first_a_page_at_a_time_and_by_device_and_zone,
    an_alarm_raised_by_a_zone_entry_is_acknowledged_then_resolved_and_survives_a_restart,
};
use refusals::{
    a_second_change_that_cannot_follow_the_first_is_a_conflict_and_changes_nothing,
    bad_alarm_requests_are_refused_with_a_clear_error_and_change_nothing,
};
use shelving::a_shelved_zone_or_device_opens_no_alarm_while_its_events_still_flow;

/// How long an event or a recorded alarm may take.
const WAIT: Duration = Duration::from_secs(10);

/// The MAC of test device `n`.
fn mac(n: u32) -> String {
    format!("00:00:00:00:A1:{n:02X}")
}

fn path(id: &str) -> String {
    format!("/v3/alarms/{id}")
}

/// The next event of `events` whose JSON satisfies `wanted`, with the subject it came on.
async fn next_event(events: &mut Subscription, wanted: impl Fn(&Value) -> bool) -> (String, Value) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let message =
            tokio::time::timeout(left, events.next()).await.expect("the event within the wait").expect("stream open");
        let value: Value = serde_json::from_slice(&message.payload).unwrap();
        if wanted(&value) {
            return (message.subject, value);
        }
    }
}

/// Makes a keep-out zone (AlertLevel 9: a site alarm on entry) at `x` and walks device `n` into
/// it; returns the `SITE_ALARM` event, once its alarm can be read back.
async fn raise_alarm(server: &Server, n: u32, x: f64) -> Value {
    let mut zone = sphere(&format!("keep out {n}"), [x, 0.0, 0.0], 1.0);
    zone["AlertLevel"] = json!(9);
    server.create_zone(zone).await;
    let mut events = server.events().await;
    server.position(&mac(n), [x, 0.0, 0.0], chrono::Utc::now()).await;
    let (_, alarm) = next_event(&mut events, |e| e["Type"] == "SITE_ALARM" && e["Source"]["MAC"] == mac(n)).await;
    let id = alarm["EventID"].as_str().unwrap().to_owned();
    eventually(WAIT, || {
        let id = id.clone();
        async move {
            server
                .call(Method::GET, &path(&id), Some(zonecast_tests::READ_KEY), None)
                .await
                .0
                .is_success()
                .then_some(())
        }
    })
    .await;
    alarm
}

/// Every alarm, newest first.
async fn all_alarms(server: &Server) -> Value {
    let page = server.ok(Method::GET, "/v3/alarms?limit=1000", None).await;
    assert_eq!(page["NextCursor"], Value::Null, "{page}");
    page["Alarms"].clone()
}

both_modes!(
    an_alarm_raised_by_a_zone_entry_is_acknowledged_then_resolved_and_survives_a_restart,
    alarms_are_listed_newest_first_a_page_at_a_time_and_by_device_and_zone,
    bad_alarm_requests_are_refused_with_a_clear_error_and_change_nothing,
    a_second_change_that_cannot_follow_the_first_is_a_conflict_and_changes_nothing,
    a_copy_of_an_alarm_event_changes_nothing,
    alarm_changes_are_forwarded_to_mqtt_like_every_event,
    a_device_gone_offline_raises_an_alarm_without_a_zone_that_is_resolved_at_once,
    entries_into_a_zone_count_on_one_alarm_that_each_exit_clears,
    an_alarm_acknowledged_after_its_condition_cleared_is_resolved_at_once,
    alarms_are_acknowledged_and_resolved_many_at_once_by_ids_or_a_filter,
    a_shelved_zone_or_device_opens_no_alarm_while_its_events_still_flow,
    an_alarm_is_cleared_and_counted_on_across_a_restart,
);
