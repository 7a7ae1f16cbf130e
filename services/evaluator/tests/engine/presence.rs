//! Entering and leaving: the boundary, radii, exit tolerance and delays, entry delay, silence.

use chrono::Duration;
use serde_json::json;
use zonecast_evaluator::Output;
use zonecast_model::SettingName;

use super::{engine, events, kinds, mac, ms, setting, sphere, step, t0};

pub(crate) fn a_device_entering_and_leaving_a_zone_gives_one_enter_and_one_exit_with_matching_collision_ids() {
    let z = sphere("dock", [0.0, 0.0, 0.0], 1.0);
    let id = zonecast_model::format_id(&z.id);
    let mut e = engine(vec![z], &[], vec![]);
    let d = mac(1);
    assert!(events(&step(&mut e, &d, [5.0, 0.0, 0.0], t0())).is_empty());
    let out = step(&mut e, &d, [0.99, 0.0, 0.0], t0() + ms(100));
    let ev = events(&out);
    assert_eq!(ev.len(), 1);
    let (kind, subject, enter) = &ev[0];
    assert_eq!((kind.as_str(), subject.as_str()), ("ZONE_ENTER", format!("zc.events.zone.{id}.enter").as_str()));
    assert_eq!(enter["ZoneName"], "dock");
    assert_eq!(enter["Alarm"], "log");
    assert_eq!(enter["EntryTime"], "2026-11-21T10:00:00.100Z");
    assert_eq!(enter["Position"], json!([0.99, 0.0, 0.0]));
    assert!(out.iter().any(|o| matches!(o, Output::Entered(c) if c.mac == d)));
    assert!(events(&step(&mut e, &d, [0.5, 0.0, 0.0], t0() + ms(200))).is_empty(), "no second enter while inside");
    let ev = events(&step(&mut e, &d, [1.01, 0.0, 0.0], t0() + ms(300)));
    let (kind, _, exit) = &ev[0];
    assert_eq!(kind, "ZONE_EXIT");
    assert_eq!(exit["CollisionID"], enter["CollisionID"]);
    assert_eq!(exit["Reason"], "position");
    assert_eq!(exit["ExitTime"], "2026-11-21T10:00:00.300Z");
}

pub(crate) fn the_boundary_counts_as_inside() {
    let mut e = engine(vec![sphere("s", [0.0, 0.0, 0.0], 2.0)], &[], vec![]);
    assert_eq!(kinds(&step(&mut e, &mac(1), [2.0, 0.0, 0.0], t0())), ["ZONE_ENTER"]);
}

pub(crate) fn a_device_radius_makes_a_ball_that_collides_before_its_centre_is_inside() {
    let z = sphere("s", [0.0, 0.0, 0.0], 1.0);
    let mut e = engine(vec![z], &[setting(SettingName::DefaultDeviceRadiusMeters, 0.2)], vec![(mac(2), 0.5)]);
    assert_eq!(kinds(&step(&mut e, &mac(1), [1.19, 0.0, 0.0], t0())), ["ZONE_ENTER"], "default radius 0.2");
    assert!(kinds(&step(&mut e, &mac(3), [1.21, 0.0, 0.0], t0())).is_empty());
    assert_eq!(kinds(&step(&mut e, &mac(2), [1.49, 0.0, 0.0], t0())), ["ZONE_ENTER"], "own radius 0.5");
}

pub(crate) fn exit_tolerance_keeps_a_device_inside_until_it_is_farther_out() {
    let mut e =
        engine(vec![sphere("s", [0.0, 0.0, 0.0], 1.0)], &[setting(SettingName::ExitToleranceMeters, 0.5)], vec![]);
    let d = mac(1);
    step(&mut e, &d, [0.0, 0.0, 0.0], t0());
    assert!(kinds(&step(&mut e, &d, [1.49, 0.0, 0.0], t0() + ms(1))).is_empty());
    assert_eq!(kinds(&step(&mut e, &d, [1.51, 0.0, 0.0], t0() + ms(2))), ["ZONE_EXIT"]);
    assert!(kinds(&step(&mut e, &d, [1.2, 0.0, 0.0], t0() + ms(3))).is_empty(), "re-entry needs the region itself");
}

pub(crate) fn exit_delay_waits_and_a_return_cancels_the_exit() {
    let mut e = engine(vec![sphere("s", [0.0, 0.0, 0.0], 1.0)], &[setting(SettingName::ExitDelayMs, 500.0)], vec![]);
    let d = mac(1);
    step(&mut e, &d, [0.0, 0.0, 0.0], t0());
    assert!(kinds(&step(&mut e, &d, [3.0, 0.0, 0.0], t0() + ms(100))).is_empty());
    assert!(kinds(&step(&mut e, &d, [0.5, 0.0, 0.0], t0() + ms(400))).is_empty(), "back in: cancelled");
    assert!(kinds(&step(&mut e, &d, [3.0, 0.0, 0.0], t0() + ms(700))).is_empty());
    assert!(kinds(&step(&mut e, &d, [3.0, 0.0, 0.0], t0() + ms(1100))).is_empty(), "only 400 ms out");
    let out = step(&mut e, &d, [3.0, 0.0, 0.0], t0() + ms(1200));
    assert_eq!(events(&out)[0].2["ExitTime"], "2026-11-21T10:00:01.200Z");
}

pub(crate) fn exit_delay_fires_by_the_clock_when_the_device_goes_quiet() {
    let mut e = engine(vec![sphere("s", [0.0, 0.0, 0.0], 1.0)], &[setting(SettingName::ExitDelayMs, 500.0)], vec![]);
    let d = mac(1);
    step(&mut e, &d, [0.0, 0.0, 0.0], t0());
    step(&mut e, &d, [3.0, 0.0, 0.0], t0() + ms(100));
    let mut out = Vec::new();
    e.on_tick(t0() + ms(599), &mut out);
    assert!(out.is_empty());
    e.on_tick(t0() + ms(600), &mut out);
    assert_eq!(events(&out)[0].2["ExitTime"], "2026-11-21T10:00:00.600Z");
}

pub(crate) fn the_clock_fires_delays_that_start_after_it_found_none_waiting() {
    let mut e = engine(vec![sphere("s", [0.0, 0.0, 0.0], 1.0)], &[setting(SettingName::ExitDelayMs, 500.0)], vec![]);
    let (a, b) = (mac(1), mac(2));
    step(&mut e, &a, [0.0, 0.0, 0.0], t0());
    step(&mut e, &b, [0.0, 0.0, 0.0], t0());
    step(&mut e, &a, [3.0, 0.0, 0.0], t0() + ms(100));
    let mut out = Vec::new();
    e.on_tick(t0() + ms(600), &mut out);
    assert_eq!(kinds(&out), ["ZONE_EXIT"], "a's exit");
    out.clear();
    e.on_tick(t0() + ms(700), &mut out);
    assert!(out.is_empty(), "nothing waits");
    step(&mut e, &b, [3.0, 0.0, 0.0], t0() + ms(800));
    e.on_tick(t0() + ms(1299), &mut out);
    assert!(out.is_empty());
    e.on_tick(t0() + ms(1300), &mut out);
    assert_eq!(events(&out)[0].2["ExitTime"], "2026-11-21T10:00:01.300Z", "b's exit, by the clock alone");
}

pub(crate) fn an_exit_waiting_on_a_delay_set_back_to_zero_fires_once() {
    let mut e = engine(vec![sphere("s", [0.0, 0.0, 0.0], 1.0)], &[setting(SettingName::ExitDelayMs, 500.0)], vec![]);
    let d = mac(1);
    step(&mut e, &d, [0.0, 0.0, 0.0], t0());
    step(&mut e, &d, [3.0, 0.0, 0.0], t0() + ms(100));
    let mut out = Vec::new();
    let settings = zonecast_model::Settings::from_written(&[setting(SettingName::ExitDelayMs, 0.0)]);
    e.reparameterise(settings, vec![], t0() + ms(200), &mut out);
    e.on_tick(t0() + ms(300), &mut out);
    e.on_tick(t0() + ms(400), &mut out);
    assert_eq!(kinds(&out), ["ZONE_EXIT"]);
}

pub(crate) fn entry_delay_requires_staying_inside() {
    let mut e = engine(vec![sphere("s", [0.0, 0.0, 0.0], 1.0)], &[setting(SettingName::EntryDelayMs, 300.0)], vec![]);
    let d = mac(1);
    assert!(kinds(&step(&mut e, &d, [0.0, 0.0, 0.0], t0())).is_empty());
    assert!(kinds(&step(&mut e, &d, [5.0, 0.0, 0.0], t0() + ms(100))).is_empty(), "left before the delay");
    assert!(kinds(&step(&mut e, &d, [0.0, 0.0, 0.0], t0() + ms(200))).is_empty());
    assert!(kinds(&step(&mut e, &d, [0.0, 0.0, 0.0], t0() + ms(400))).is_empty());
    let out = step(&mut e, &d, [0.0, 0.0, 0.0], t0() + ms(500));
    assert_eq!(kinds(&out), ["ZONE_ENTER"]);
    let mut out = Vec::new();
    let d2 = mac(2);
    e.on_position(&d2, [0.0, 0.0, 0.0], t0(), None, t0(), &mut out);
    e.on_tick(t0() + ms(300), &mut out);
    assert_eq!(kinds(&out), ["ZONE_ENTER"], "the clock fires a due entry too");
}

pub(crate) fn a_silent_device_times_out_of_every_zone() {
    let zones = vec![sphere("a", [0.0, 0.0, 0.0], 1.0), sphere("b", [0.5, 0.0, 0.0], 1.0)];
    let mut e = engine(zones, &[setting(SettingName::DeviceTimeoutSeconds, 30.0)], vec![]);
    assert_eq!(kinds(&step(&mut e, &mac(1), [0.2, 0.0, 0.0], t0())).len(), 2);
    let mut out = Vec::new();
    e.on_tick(t0() + Duration::seconds(29), &mut out);
    assert!(out.is_empty());
    e.on_tick(t0() + Duration::seconds(30), &mut out);
    let ev = events(&out);
    assert_eq!(ev.len(), 2);
    assert!(ev.iter().all(|(k, _, c)| k == "ZONE_EXIT" && c["Reason"] == "timeout"));
    assert_eq!(e.device_count(), 0);
}
