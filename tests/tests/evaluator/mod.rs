//! The evaluator seen from outside: positions published on the bus, events taken from the bus
//! and CollidingDevices read through the API, in both deployment modes.
#![allow(clippy::unwrap_used)]

mod actions;
mod dwell;
mod occupancy;
mod shapes;
mod silence;
mod timing;

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::{Server, both_modes, eventually};

use actions::{
    after_a_restart_a_device_that_stayed_inside_gets_no_second_enter, alert_levels_raise_site_and_device_alarms,
    an_http_request_action_posts_the_triggering_event_to_its_uri, malformed_position_messages_are_counted_and_skipped,
};
use dwell::a_stay_past_max_dwell_raises_one_dwell_event_even_across_a_restart;
use occupancy::a_zone_over_its_limit_or_under_its_head_count_raises_occupancy_events;
use shapes::{
    a_mobile_zone_captures_a_device_standing_still_when_its_source_moves_onto_it,
    entering_and_leaving_a_zone_shows_in_events_and_colliding_devices,
    every_shape_holds_a_point_1_cm_inside_and_not_one_1_cm_outside,
    inclusion_lists_decide_who_triggers_and_an_exclusion_exits_the_device,
};
use silence::{
    a_silent_device_is_reported_offline_and_online_again_across_a_restart,
    the_offline_setting_refuses_what_it_cannot_hold,
};
use timing::{
    a_radius_write_moves_only_the_device_it_names_in_or_out_of_a_zone, a_silent_device_times_out_of_its_zones,
    a_timed_zone_exits_its_devices_at_stop_time_by_the_clock, configuration_changes_exit_devices_with_their_reason,
    exit_tolerance_and_exit_delay_hold_the_exit_back,
};

const WAIT: Duration = Duration::from_secs(10);

fn mac(n: u32) -> String {
    format!("00:00:00:00:{:02X}:{:02X}", n >> 8, n & 0xff)
}

fn is(kind: &'static str, device: String) -> impl Fn(&Value) -> bool {
    move |e| e["Type"] == kind && e["Source"]["MAC"] == device.as_str()
}

fn ms(n: i64) -> chrono::Duration {
    chrono::Duration::milliseconds(n)
}

async fn colliding(server: &Server, zone: &str) -> Vec<String> {
    let z = server.ok(Method::GET, &format!("/v3/modules/zones/{zone}"), None).await;
    z["CollidingDevices"].as_array().unwrap().iter().map(|d| d["MAC"].as_str().unwrap().to_owned()).collect()
}

async fn wait_colliding(server: &Server, zone: &str, want: Vec<String>) {
    eventually(WAIT, || async {
        let now = colliding(server, zone).await;
        (now == want).then_some(())
    })
    .await;
}

fn id(zone: &Value) -> String {
    zone["ZoneID"].as_str().unwrap().to_owned()
}

both_modes!(
    entering_and_leaving_a_zone_shows_in_events_and_colliding_devices,
    every_shape_holds_a_point_1_cm_inside_and_not_one_1_cm_outside,
    a_mobile_zone_captures_a_device_standing_still_when_its_source_moves_onto_it,
    inclusion_lists_decide_who_triggers_and_an_exclusion_exits_the_device,
    a_radius_write_moves_only_the_device_it_names_in_or_out_of_a_zone,
    a_timed_zone_exits_its_devices_at_stop_time_by_the_clock,
    exit_tolerance_and_exit_delay_hold_the_exit_back,
    a_silent_device_times_out_of_its_zones,
    configuration_changes_exit_devices_with_their_reason,
    alert_levels_raise_site_and_device_alarms,
    an_http_request_action_posts_the_triggering_event_to_its_uri,
    after_a_restart_a_device_that_stayed_inside_gets_no_second_enter,
    malformed_position_messages_are_counted_and_skipped,
    a_stay_past_max_dwell_raises_one_dwell_event_even_across_a_restart,
    a_silent_device_is_reported_offline_and_online_again_across_a_restart,
    the_offline_setting_refuses_what_it_cannot_hold,
    a_zone_over_its_limit_or_under_its_head_count_raises_occupancy_events,
);
