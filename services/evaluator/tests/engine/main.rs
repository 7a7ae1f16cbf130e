//! The collision engine's rules, driven with plain data and controlled clocks.
#![allow(clippy::unwrap_used)]

mod dwell;
mod incremental;
mod mobile;
mod order;
mod presence;
mod rules;
mod silence;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_bus::Subjects;
use zonecast_evaluator::catalog::Catalog;
use zonecast_evaluator::{Engine, Output, Ownership};
use zonecast_model::{IdSource, Mac, Setting, SettingName, ZoneInput, ZoneSpec};

fn all() -> Ownership {
    Ownership::range(16, 0, 15)
}

fn t0() -> DateTime<Utc> {
    "2026-11-21T10:00:00Z".parse().unwrap()
}

fn ms(n: i64) -> Duration {
    Duration::milliseconds(n)
}

fn mac(n: u8) -> Mac {
    format!("00:00:00:00:00:{n:02X}").parse().unwrap()
}

fn zone(input: Value) -> ZoneSpec {
    ZoneInput::parse(&input, &zonecast_model::Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap()
}

fn sphere(name: &str, centre: [f64; 3], r: f64) -> ZoneSpec {
    zone(json!({"Name": name, "GeometryType": "sphere", "GeometryData": [centre, [r, 0, 0]]}))
}

fn setting(name: SettingName, value: f64) -> Setting {
    Setting { name, value, active: true }
}

fn engine(zones: Vec<ZoneSpec>, settings: &[Setting], radii: Vec<(Mac, f64)>) -> Engine {
    Engine::new(Catalog::build(zones, settings, radii), 501, all(), IdSource::seeded(1))
}

/// The published events as (Type, subject, Content).
fn events(out: &[Output]) -> Vec<(String, String, Value)> {
    out.iter()
        .filter_map(|o| match o {
            Output::Publish(event) => Some((
                event.kind().to_string(),
                Subjects::new("zc").of_event(event).unwrap(),
                serde_json::to_value(event).unwrap()["Content"].clone(),
            )),
            _ => None,
        })
        .collect()
}

fn kinds(out: &[Output]) -> Vec<String> {
    events(out).into_iter().map(|(k, _, _)| k).collect()
}

fn step(e: &mut Engine, m: &Mac, p: [f64; 3], t: DateTime<Utc>) -> Vec<Output> {
    let mut out = Vec::new();
    e.on_position(m, p, t, None, t, &mut out);
    out
}

/// Registers each check as a test named after it at the top of this binary, its body in the
/// module that owns it.
macro_rules! tests {
    ($($module:ident::$name:ident),* $(,)?) => {
        $(#[test]
        fn $name() {
            $module::$name();
        })*
    };
}

tests!(
    dwell::a_restarted_engine_raises_no_second_dwell_event_and_an_unrecorded_one_again_with_its_event_id,
    dwell::a_stay_past_the_limit_raises_one_dwell_event_with_its_entry_and_dwell,
    dwell::a_stay_that_ends_past_the_limit_before_the_clock_noticed_raises_its_dwell_event_first,
    dwell::dwell_runs_the_actions_bound_to_it_and_not_those_of_entry_and_exit,
    dwell::zones_without_a_limit_raise_no_dwell_event,
    presence::a_device_entering_and_leaving_a_zone_gives_one_enter_and_one_exit_with_matching_collision_ids,
    presence::a_device_radius_makes_a_ball_that_collides_before_its_centre_is_inside,
    presence::a_silent_device_times_out_of_every_zone,
    presence::an_exit_waiting_on_a_delay_set_back_to_zero_fires_once,
    presence::entry_delay_requires_staying_inside,
    presence::exit_delay_fires_by_the_clock_when_the_device_goes_quiet,
    presence::exit_delay_waits_and_a_return_cancels_the_exit,
    presence::exit_tolerance_keeps_a_device_inside_until_it_is_farther_out,
    presence::the_boundary_counts_as_inside,
    presence::the_clock_fires_delays_that_start_after_it_found_none_waiting,
    silence::a_silent_device_goes_offline_once_and_online_with_its_next_position,
    silence::offline_reports_stand_beside_device_timeouts_each_at_its_own_time,
    silence::the_same_silence_reported_again_has_the_same_event_id,
    silence::the_recorded_presence_carries_silences_and_returns_across_a_restart,
    silence::a_device_of_its_own_offline_time_is_reported_after_it_whatever_the_site_says,
    silence::an_offline_rule_counts_the_silence_from_when_it_took_effect,
    rules::a_mobile_zone_follows_its_source_and_captures_a_device_that_stands_still,
    rules::alert_levels_raise_site_and_device_alarms_and_actions_run,
    rules::configuration_changes_emit_the_exits_they_imply,
    rules::devices_of_other_partitions_are_ignored,
    rules::inclusion_policy_and_device_list_decide_who_triggers,
    rules::restored_collisions_give_no_second_enter_and_owed_exits_are_emitted,
    rules::timed_zones_are_live_only_in_their_window_and_exit_at_stop_time_by_the_clock,
    order::a_mobile_zone_source_position_that_arrives_late_does_not_move_the_zone_back,
    order::a_position_older_than_the_last_one_applied_is_skipped_and_makes_no_event,
    order::a_sequence_breaks_ties_between_positions_with_the_same_timestamp,
    order::every_event_has_an_event_id_of_its_own_and_the_http_body_is_the_published_event,
    order::the_same_inputs_and_id_source_give_the_same_events,
    incremental::a_burst_of_changes_applied_together_gives_each_its_reason,
    incremental::a_radius_write_reads_no_other_device_and_applies_to_its_next_position,
    incremental::radius_writes_applied_to_the_devices_they_name_give_what_a_full_reparameterise_gives,
    incremental::settings_and_radii_put_in_force_over_the_same_zones_apply_to_the_next_position,
    incremental::zone_writes_applied_incrementally_give_what_a_full_reload_gives,
    mobile::a_new_mobile_zone_is_placed_at_its_source_last_position_by_its_owner_and_by_the_others_from_its_hint,
    mobile::word_that_a_new_source_was_never_seen_ends_the_wait_and_places_nothing,
);
