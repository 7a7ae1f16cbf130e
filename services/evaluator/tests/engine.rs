//! The collision engine's rules, driven with plain data and controlled clocks.
#![allow(clippy::unwrap_used)]

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_bus::Subjects;
use zonecast_evaluator::catalog::Catalog;
use zonecast_evaluator::{Engine, Output, Ownership, SourceHint};
use zonecast_model::{
    Collision, ConfigChanged, ConfigKind, ConfigOperation, EventType, IdSource, Mac, Setting, SettingName, ZoneInput,
    ZoneSpec,
};

const ALL: Ownership = Ownership { count: 16, lo: 0, hi: 15 };

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
    Engine::new(Catalog::build(zones, settings, radii), 501, ALL, IdSource::seeded(1))
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

#[test]
fn a_device_entering_and_leaving_a_zone_gives_one_enter_and_one_exit_with_matching_collision_ids() {
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

#[test]
fn the_boundary_counts_as_inside() {
    let mut e = engine(vec![sphere("s", [0.0, 0.0, 0.0], 2.0)], &[], vec![]);
    assert_eq!(kinds(&step(&mut e, &mac(1), [2.0, 0.0, 0.0], t0())), ["ZONE_ENTER"]);
}

#[test]
fn a_device_radius_makes_a_ball_that_collides_before_its_centre_is_inside() {
    let z = sphere("s", [0.0, 0.0, 0.0], 1.0);
    let mut e = engine(vec![z], &[setting(SettingName::DefaultDeviceRadiusMeters, 0.2)], vec![(mac(2), 0.5)]);
    assert_eq!(kinds(&step(&mut e, &mac(1), [1.19, 0.0, 0.0], t0())), ["ZONE_ENTER"], "default radius 0.2");
    assert!(kinds(&step(&mut e, &mac(3), [1.21, 0.0, 0.0], t0())).is_empty());
    assert_eq!(kinds(&step(&mut e, &mac(2), [1.49, 0.0, 0.0], t0())), ["ZONE_ENTER"], "own radius 0.5");
}

#[test]
fn exit_tolerance_keeps_a_device_inside_until_it_is_farther_out() {
    let mut e =
        engine(vec![sphere("s", [0.0, 0.0, 0.0], 1.0)], &[setting(SettingName::ExitToleranceMeters, 0.5)], vec![]);
    let d = mac(1);
    step(&mut e, &d, [0.0, 0.0, 0.0], t0());
    assert!(kinds(&step(&mut e, &d, [1.49, 0.0, 0.0], t0() + ms(1))).is_empty());
    assert_eq!(kinds(&step(&mut e, &d, [1.51, 0.0, 0.0], t0() + ms(2))), ["ZONE_EXIT"]);
    assert!(kinds(&step(&mut e, &d, [1.2, 0.0, 0.0], t0() + ms(3))).is_empty(), "re-entry needs the region itself");
}

#[test]
fn exit_delay_waits_and_a_return_cancels_the_exit() {
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

#[test]
fn exit_delay_fires_by_the_clock_when_the_device_goes_quiet() {
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

#[test]
fn entry_delay_requires_staying_inside() {
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

#[test]
fn a_silent_device_times_out_of_every_zone() {
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

#[test]
fn timed_zones_are_live_only_in_their_window_and_exit_at_stop_time_by_the_clock() {
    let z = zone(json!({"GeometryType": "circle", "GeometryData": [[0, 0, 0], [1, 0, 0]], "IsTimed": true,
        "StartTime": "2026-11-21T10:00:00Z", "StopTime": "2026-11-21T10:01:00Z"}));
    let mut e = engine(vec![z], &[], vec![]);
    assert!(kinds(&step(&mut e, &mac(1), [0.0, 0.0, 50.0], t0() - ms(1))).is_empty(), "before StartTime");
    assert_eq!(kinds(&step(&mut e, &mac(1), [0.0, 0.0, 50.0], t0())), ["ZONE_ENTER"], "2D zone, any z");
    let mut out = Vec::new();
    e.on_tick(t0() + Duration::seconds(59), &mut out);
    assert!(out.is_empty());
    e.on_tick(t0() + Duration::seconds(61), &mut out);
    let ev = events(&out);
    assert_eq!(
        (ev[0].2["Reason"].as_str(), ev[0].2["ExitTime"].as_str()),
        (Some("window"), Some("2026-11-21T10:01:00.000Z"))
    );
}

#[test]
fn inclusion_policy_and_device_list_decide_who_triggers() {
    let only = zone(json!({"GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]],
        "InclusionPolicy": "none", "DeviceList": ["00:00:00:00:00:01"]}));
    let except = zone(
        json!({"GeometryType": "sphere", "GeometryData": [[10, 0, 0], [1, 0, 0]], "DeviceList": ["00:00:00:00:00:01"]}),
    );
    let mut e = engine(vec![only, except], &[], vec![]);
    assert_eq!(kinds(&step(&mut e, &mac(1), [0.0, 0.0, 0.0], t0())), ["ZONE_ENTER"]);
    assert!(kinds(&step(&mut e, &mac(2), [0.0, 0.0, 0.0], t0())).is_empty());
    assert!(
        kinds(&step(&mut e, &mac(1), [10.0, 0.0, 0.0], t0())).len() == 1,
        "exit from `only`, no entry into `except`"
    );
    assert_eq!(kinds(&step(&mut e, &mac(2), [10.0, 0.0, 0.0], t0())), ["ZONE_ENTER"]);
}

#[test]
fn alert_levels_raise_site_and_device_alarms_and_actions_run() {
    let site = zone(json!({"GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]], "AlertLevel": 9,
        "ZoneActions": [{"type": "info-event", "message": "hello"}, {"type": "http-request", "uri": "http://127.0.0.1:9/x", "on": "both"}]}));
    let device = zone(json!({"GeometryType": "sphere", "GeometryData": [[10, 0, 0], [1, 0, 0]], "AlertLevel": 5,
        "ZoneActions": [{"type": "device-alarm"}]}));
    let mut e = engine(vec![site, device], &[], vec![]);
    let d = mac(1);
    let out = step(&mut e, &d, [0.0, 0.0, 0.0], t0());
    assert_eq!(kinds(&out), ["ZONE_ENTER", "SITE_ALARM", "ZONE_INFO"]);
    assert_eq!(events(&out)[1].1, "zc.events.alarm.site.00:00:00:00:00:01");
    assert_eq!(events(&out)[2].2["Message"], "hello");
    assert!(out.iter().any(|o| matches!(o, Output::Http { event, .. } if event.kind() == EventType::ZoneEnter)));
    let out = step(&mut e, &d, [10.0, 0.0, 0.0], t0());
    assert_eq!(
        kinds(&out),
        ["ZONE_EXIT", "ZONE_ENTER", "DEVICE_ALARM_COMMAND", "DEVICE_ALARM"],
        "one device alarm, not two"
    );
    assert!(
        out.iter().any(|o| matches!(o, Output::Http { event, .. } if event.kind() == EventType::ZoneExit)),
        "on: both"
    );
    assert_eq!(events(&out)[2].1, "zc.devices.00:00:00:00:00:01.alarm");
}

#[test]
fn configuration_changes_emit_the_exits_they_imply() {
    let a = sphere("a", [0.0, 0.0, 0.0], 1.0);
    let b = sphere("b", [0.0, 0.0, 0.0], 1.0);
    let c = sphere("c", [0.0, 0.0, 0.0], 1.0);
    let d = sphere("d", [0.0, 0.0, 0.0], 1.0);
    let g = sphere("g", [0.0, 0.0, 0.0], 1.0);
    let mut e = engine(vec![a.clone(), b.clone(), c.clone(), d.clone(), g.clone()], &[], vec![]);
    let dev = mac(1);
    assert_eq!(kinds(&step(&mut e, &dev, [0.0, 0.0, 0.0], t0())).len(), 5);
    let mut b2 = b.clone();
    b2.active = false;
    let mut c2 = c.clone();
    c2.device_list = vec![dev.clone()];
    let mut g2 = g.clone();
    g2.geometry_data = vec![[50.0, 0.0, 0.0], [1.0, 0.0, 0.0]];
    let change = ConfigChanged {
        kind: ConfigKind::Zones,
        ids: vec![zonecast_model::format_id(&d.id)],
        operation: Some(ConfigOperation::Reset),
        revision: 0,
    };
    let mut out = Vec::new();
    e.reload(Catalog::build(vec![b2, c2, d.clone(), g2], &[], vec![]), &[change], t0(), &mut out);
    let mut reasons: Vec<(String, String)> = events(&out)
        .into_iter()
        .map(|(_, _, c)| (c["ZoneName"].as_str().unwrap().to_owned(), c["Reason"].as_str().unwrap().to_owned()))
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        [("a", "deleted"), ("b", "deactivated"), ("c", "excluded"), ("d", "reset"), ("g", "geometry")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(out.iter().filter(|o| matches!(o, Output::Exited { .. })).count(), 5);
}

#[test]
fn a_mobile_zone_follows_its_source_and_captures_a_device_that_stands_still() {
    let forklift = mac(0xF0);
    let m =
        zone(json!({"Name": "around forklift", "GeometryType": "sphere", "GeometryData": [[100, 100, 0], [2, 0, 0]],
        "MobileOriginSource": forklift.as_str()}));
    let mut e = engine(vec![m], &[], vec![]);
    let worker = mac(1);
    assert!(kinds(&step(&mut e, &worker, [10.0, 0.0, 0.0], t0())).is_empty(), "no source position yet: holds nobody");
    assert!(
        kinds(&step(&mut e, &worker, [100.0, 100.0, 0.0], t0())).is_empty(),
        "the configured place is not where it is"
    );
    assert!(
        kinds(&step(&mut e, &forklift, [0.0, 0.0, 0.0], t0())).is_empty(),
        "the source never collides with its own zone"
    );
    let out = step(&mut e, &forklift, [9.0, 0.0, 0.0], t0() + ms(100));
    assert!(kinds(&out).is_empty(), "worker is at (100,100) now");
    step(&mut e, &worker, [10.0, 0.0, 0.0], t0() + ms(150));
    let out = step(&mut e, &forklift, [9.5, 0.0, 0.0], t0() + ms(200));
    assert!(kinds(&out).is_empty(), "already inside since its own position");
    let out = step(&mut e, &forklift, [20.0, 0.0, 0.0], t0() + ms(300));
    assert_eq!(events(&out)[0].2["Reason"], "position", "the zone moved away from the standing worker");
    let out = step(&mut e, &forklift, [11.0, 0.0, 0.0], t0() + ms(400));
    assert_eq!(kinds(&out), ["ZONE_ENTER"], "moved back onto the standing worker");
    assert_eq!(events(&out)[0].2["EntryTime"], "2026-11-21T10:00:00.400Z");
}

#[test]
fn restored_collisions_give_no_second_enter_and_owed_exits_are_emitted() {
    let a = sphere("a", [0.0, 0.0, 0.0], 1.0);
    let mut b = sphere("b", [0.0, 0.0, 0.0], 1.0);
    b.active = false;
    let dev = mac(1);
    let collision =
        |z: &ZoneSpec| Collision { zone_id: z.id, mac: dev.clone(), collision_id: Uuid::new_v4(), entry_time: t0() };
    let mut e = engine(vec![a.clone(), b.clone()], &[], vec![]);
    let mut out = Vec::new();
    e.restore(vec![collision(&a), collision(&b)], t0() + ms(10), &mut out);
    let ev = events(&out);
    assert_eq!(ev.len(), 1);
    assert_eq!((ev[0].2["ZoneName"].as_str(), ev[0].2["Reason"].as_str()), (Some("b"), Some("deactivated")));
    assert!(kinds(&step(&mut e, &dev, [0.1, 0.0, 0.0], t0() + ms(20))).is_empty(), "stayed inside: no duplicate enter");
    let ev = events(&step(&mut e, &dev, [5.0, 0.0, 0.0], t0() + ms(30)));
    assert_eq!(ev[0].0, "ZONE_EXIT");
    assert_eq!(ev[0].2["EntryTime"], "2026-11-21T10:00:00.000Z", "the restored entry time");
}

#[test]
fn devices_of_other_partitions_are_ignored() {
    let z = sphere("s", [0.0, 0.0, 0.0], 1.0);
    let dev = mac(1);
    let p = dev.partition(16);
    let mut mine = Engine::new(
        Catalog::build(vec![z.clone()], &[], vec![]),
        1,
        Ownership { count: 16, lo: p, hi: p },
        IdSource::seeded(1),
    );
    let other = if p == 0 { 1 } else { 0 };
    let mut theirs = Engine::new(
        Catalog::build(vec![z], &[], vec![]),
        1,
        Ownership { count: 16, lo: other, hi: other },
        IdSource::seeded(2),
    );
    assert_eq!(kinds(&step(&mut mine, &dev, [0.0, 0.0, 0.0], t0())).len(), 1);
    assert!(kinds(&step(&mut theirs, &dev, [0.0, 0.0, 0.0], t0())).is_empty());
}

#[test]
fn a_position_older_than_the_last_one_applied_is_skipped_and_makes_no_event() {
    let mut e = engine(vec![sphere("dock", [0.0, 0.0, 0.0], 1.0)], &[], vec![]);
    let d = mac(1);
    let mut out = Vec::new();
    // In: enter at t0+10.
    assert!(e.on_position(&d, [0.0, 0.0, 0.0], t0() + ms(10), None, t0(), &mut out));
    assert_eq!(kinds(&out), ["ZONE_ENTER"]);
    // Out at t0+30: exit.
    out.clear();
    assert!(e.on_position(&d, [5.0, 0.0, 0.0], t0() + ms(30), None, t0(), &mut out));
    assert_eq!(kinds(&out), ["ZONE_EXIT"]);
    // A position measured at t0+20 arrives late: not applied, no false enter/exit pair.
    out.clear();
    assert!(!e.on_position(&d, [0.0, 0.0, 0.0], t0() + ms(20), None, t0(), &mut out));
    assert!(out.is_empty(), "{:?}", kinds(&out));
    // The same Timestamp again is applied (no Sequence to tell them apart).
    assert!(e.on_position(&d, [5.0, 0.0, 0.0], t0() + ms(30), None, t0(), &mut out));
    assert!(out.is_empty());
}

#[test]
fn a_sequence_breaks_ties_between_positions_with_the_same_timestamp() {
    let mut e = engine(vec![sphere("dock", [0.0, 0.0, 0.0], 1.0)], &[], vec![]);
    let d = mac(2);
    let t = t0() + ms(50);
    let mut out = Vec::new();
    assert!(e.on_position(&d, [0.0, 0.0, 0.0], t, Some(7), t0(), &mut out));
    assert_eq!(kinds(&out), ["ZONE_ENTER"]);
    out.clear();
    assert!(!e.on_position(&d, [5.0, 0.0, 0.0], t, Some(6), t0(), &mut out), "lower Sequence, same time");
    assert!(!e.on_position(&d, [5.0, 0.0, 0.0], t, Some(7), t0(), &mut out), "a repeat");
    assert!(out.is_empty());
    // A later Timestamp wins even with a lower Sequence: tags wrap and restart it.
    assert!(e.on_position(&d, [5.0, 0.0, 0.0], t + ms(1), Some(0), t0(), &mut out));
    assert_eq!(kinds(&out), ["ZONE_EXIT"]);
}

#[test]
fn a_mobile_zone_source_position_that_arrives_late_does_not_move_the_zone_back() {
    let source = mac(100);
    let mut input = json!({"Name": "forklift", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]]});
    input["MobileOriginSource"] = json!(source.as_str());
    let mut e = engine(vec![zone(input)], &[], vec![]);
    let d = mac(3);
    let mut out = Vec::new();
    // The device stands at 10,0,0; the source drives there at t0+20, after being at 0,0,0.
    e.on_position(&d, [10.0, 0.0, 0.0], t0(), None, t0(), &mut out);
    e.on_position(&source, [10.0, 0.0, 0.0], t0() + ms(20), None, t0(), &mut out);
    assert_eq!(kinds(&out), ["ZONE_ENTER"]);
    out.clear();
    // The source's older position (t0+10, far away) arrives late: the zone stays put.
    assert!(!e.on_position(&source, [0.0, 0.0, 0.0], t0() + ms(10), None, t0(), &mut out));
    assert!(out.is_empty(), "{:?}", kinds(&out));
}

#[test]
fn a_burst_of_changes_applied_together_gives_each_its_reason() {
    let p = sphere("p", [0.0, 0.0, 0.0], 1.0);
    let q = sphere("q", [0.0, 0.0, 0.0], 1.0);
    let r = sphere("r", [0.0, 0.0, 0.0], 1.0);
    let mut e = engine(vec![p.clone(), q.clone(), r.clone()], &[], vec![]);
    let dev = mac(1);
    assert_eq!(kinds(&step(&mut e, &dev, [0.0, 0.0, 0.0], t0())).len(), 3);
    let reset = |z: &ZoneSpec| ConfigChanged {
        kind: ConfigKind::Zones,
        ids: vec![zonecast_model::format_id(&z.id)],
        operation: Some(ConfigOperation::Reset),
        revision: 0,
    };
    let renamed = ConfigChanged {
        kind: ConfigKind::Zones,
        ids: vec![zonecast_model::format_id(&r.id)],
        operation: None,
        revision: 0,
    };
    let mut out = Vec::new();
    // Two resets and a plain write, queued together, read in one reload.
    e.reload(
        Catalog::build(vec![p.clone(), q.clone(), r.clone()], &[], vec![]),
        &[reset(&p), renamed, reset(&q)],
        t0(),
        &mut out,
    );
    let mut reasons: Vec<(String, String)> = events(&out)
        .into_iter()
        .map(|(_, _, c)| (c["ZoneName"].as_str().unwrap().to_owned(), c["Reason"].as_str().unwrap().to_owned()))
        .collect();
    reasons.sort();
    assert_eq!(reasons, [("p", "reset"), ("q", "reset")].map(|(a, b)| (a.to_owned(), b.to_owned())));
}

#[test]
fn settings_and_radii_put_in_force_over_the_same_zones_apply_to_the_next_position() {
    let mut e = engine(vec![sphere("dock", [0.0, 0.0, 0.0], 1.0)], &[], vec![]);
    let d = mac(1);
    assert!(kinds(&step(&mut e, &d, [1.5, 0.0, 0.0], t0())).is_empty(), "0.5 m outside, radius 0");
    let mut out = Vec::new();
    let settings = zonecast_model::Settings::from_written(&[Setting {
        name: SettingName::DefaultDeviceRadiusMeters,
        value: 0.6,
        active: true,
    }]);
    e.reparameterise(settings, vec![], t0(), &mut out);
    assert!(out.is_empty());
    assert_eq!(e.catalog().zones.len(), 1, "the zones stay");
    assert_eq!(kinds(&step(&mut e, &d, [1.5, 0.0, 0.0], t0() + ms(10))), ["ZONE_ENTER"], "a 0.6 m ball touches it");
    // A radius of its own, smaller, and the device is out again.
    e.reparameterise(zonecast_model::Settings::default(), vec![(d.clone(), 0.2)], t0(), &mut out);
    assert_eq!(kinds(&step(&mut e, &d, [1.5, 0.0, 0.0], t0() + ms(20))), ["ZONE_EXIT"]);
}

#[test]
fn radius_writes_applied_to_the_devices_they_name_give_what_a_full_reparameterise_gives() {
    let forklift = mac(9);
    let mobile = zone(json!({"Name": "around", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]],
        "MobileOriginSource": forklift.as_str()}));
    let zones = vec![sphere("dock", [0.0, 0.0, 0.0], 1.0), mobile];
    let settings = [setting(SettingName::DefaultDeviceRadiusMeters, 0.2)];
    let mut full = engine(zones.clone(), &settings, vec![(mac(3), 0.5)]);
    let mut incremental = engine(zones, &settings, vec![(mac(3), 0.5)]);
    let mut radii: std::collections::BTreeMap<Mac, f64> = [(mac(3), 0.5)].into_iter().collect();
    // Each write: the radii it changes, then the positions that follow it.
    let writes: Vec<Vec<(Mac, Option<f64>)>> = vec![
        vec![(mac(1), Some(0.6))],
        vec![(mac(2), Some(3.0)), (mac(3), None)],
        vec![(mac(1), None), (mac(2), Some(0.1))],
        vec![(mac(4), Some(0.0))],
    ];
    let mut t = t0();
    let drive = |full: &mut Engine, incremental: &mut Engine, t: DateTime<Utc>, x: f64| {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for m in [mac(1), mac(2), mac(3), mac(4)] {
            a.extend(step(full, &m, [x, 0.0, 0.0], t));
            b.extend(step(incremental, &m, [x, 0.0, 0.0], t));
        }
        // The forklift's zone moves next to the devices: the query margin is the largest radius.
        let p = [x + 3.5, 0.0, 0.0];
        a.extend(step(full, &forklift, p, t + ms(1)));
        b.extend(step(incremental, &forklift, p, t + ms(1)));
        full.on_tick(t + ms(2), &mut a);
        incremental.on_tick(t + ms(2), &mut b);
        assert_eq!(a, b, "the same events at {t}");
        kinds(&a)
    };
    let mut seen = drive(&mut full, &mut incremental, t, 1.4);
    for (i, write) in writes.into_iter().enumerate() {
        t += ms(100);
        for (m, r) in &write {
            match r {
                Some(r) => radii.insert(m.clone(), *r),
                None => radii.remove(m),
            };
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let all: Vec<(Mac, f64)> = radii.iter().map(|(m, r)| (m.clone(), *r)).collect();
        full.reparameterise(zonecast_model::Settings::from_written(&settings), all, t, &mut a);
        incremental.apply_radii(write, t, &mut b);
        assert_eq!(a, b, "the write itself");
        assert_eq!(full.catalog().max_radius, incremental.catalog().max_radius, "after write {i}");
        for n in 1..=4 {
            assert_eq!(full.catalog().radius(&mac(n)), incremental.catalog().radius(&mac(n)));
        }
        for x in [1.4, 0.5, 1.7] {
            t += ms(10);
            seen.extend(drive(&mut full, &mut incremental, t, x));
        }
    }
    assert!(seen.iter().any(|k| k == "ZONE_ENTER") && seen.iter().any(|k| k == "ZONE_EXIT"), "{seen:?}");
    assert_eq!(full.device_count(), incremental.device_count());
}

#[test]
fn a_radius_write_reads_no_other_device_and_applies_to_its_next_position() {
    let mut e = engine(vec![sphere("dock", [0.0, 0.0, 0.0], 1.0)], &[], vec![(mac(2), 0.6)]);
    let (a, b) = (mac(1), mac(2));
    assert!(kinds(&step(&mut e, &a, [1.5, 0.0, 0.0], t0())).is_empty(), "0.5 m outside, radius 0");
    assert_eq!(kinds(&step(&mut e, &b, [1.5, 0.0, 0.0], t0())), ["ZONE_ENTER"], "own radius 0.6");
    let mut out = Vec::new();
    e.apply_radii(vec![(a.clone(), Some(0.6))], t0() + ms(5), &mut out);
    assert!(out.is_empty());
    assert_eq!(e.catalog().radius(&b), 0.6, "a device the write does not name keeps its radius");
    assert_eq!(e.catalog().max_radius, 0.6);
    assert_eq!(kinds(&step(&mut e, &a, [1.5, 0.0, 0.0], t0() + ms(10))), ["ZONE_ENTER"], "a 0.6 m ball touches it");
    e.apply_radii(vec![(b.clone(), None), (a.clone(), Some(0.2))], t0() + ms(15), &mut out);
    assert!(out.is_empty());
    assert_eq!(e.catalog().max_radius, 0.2, "the largest radius is gone");
    assert_eq!(kinds(&step(&mut e, &b, [1.5, 0.0, 0.0], t0() + ms(20))), ["ZONE_EXIT"], "back to the default 0");
    assert_eq!(kinds(&step(&mut e, &a, [1.5, 0.0, 0.0], t0() + ms(20))), ["ZONE_EXIT"]);
}

#[test]
fn zone_writes_applied_incrementally_give_what_a_full_reload_gives() {
    let (a, b, c) =
        (sphere("a", [0.0, 0.0, 0.0], 1.0), sphere("b", [0.0, 0.0, 0.0], 1.0), sphere("c", [9.0, 0.0, 0.0], 1.0));
    let mut e = engine(vec![a.clone(), b.clone(), c.clone()], &[], vec![]);
    let dev = mac(1);
    assert_eq!(kinds(&step(&mut e, &dev, [0.0, 0.0, 0.0], t0())), ["ZONE_ENTER", "ZONE_ENTER"]);
    // b is deleted, c moved onto the device, a new zone d added; a is not touched.
    let mut c2 = c.clone();
    c2.geometry_data = vec![[0.5, 0.0, 0.0], [1.0, 0.0, 0.0]];
    let d = sphere("d", [0.0, 0.0, 0.0], 2.0);
    let touched: foldhash::HashSet<Uuid> = [b.id, c.id, d.id].into_iter().collect();
    let change = ConfigChanged {
        kind: ConfigKind::Zones,
        ids: touched.iter().map(zonecast_model::format_id).collect(),
        operation: None,
        revision: 0,
    };
    let mut out = Vec::new();
    e.apply_zones(vec![d.clone(), c2.clone()], &touched, &[change], t0(), &mut out);
    let exits: Vec<(String, String)> = events(&out)
        .into_iter()
        .map(|(_, _, c)| (c["ZoneName"].as_str().unwrap().to_owned(), c["Reason"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(exits, [("b".to_owned(), "deleted".to_owned())]);
    let names: Vec<&str> = e.catalog().zones.iter().map(|z| z.spec.name.as_str()).collect();
    assert_eq!(names, ["a", "c", "d"], "a kept, c replaced in its place, d added, b gone");
    assert_eq!(e.catalog().zones[1].spec.geometry_data, c2.geometry_data);
    // The next position sees the patched scene: it enters c (moved) and d (new), stays in a.
    let mut entered = kinds(&step(&mut e, &dev, [0.0, 0.0, 0.0], t0() + ms(10)));
    entered.sort();
    assert_eq!(entered, ["ZONE_ENTER", "ZONE_ENTER"]);
}

#[test]
fn every_event_has_an_event_id_of_its_own_and_the_http_body_is_the_published_event() {
    let z = zone(json!({"GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]], "AlertLevel": 9,
        "ZoneActions": [{"type": "info-event"}, {"type": "device-alarm"}, {"type": "http-request", "uri": "http://127.0.0.1:9/x", "on": "both"}]}));
    let mut e = engine(vec![z], &[], vec![]);
    let d = mac(1);
    let mut out = step(&mut e, &d, [0.0, 0.0, 0.0], t0());
    out.extend(step(&mut e, &d, [5.0, 0.0, 0.0], t0() + ms(10)));
    let published: Vec<&zonecast_model::Event> =
        out.iter().filter_map(|o| if let Output::Publish(e) = o { Some(e) } else { None }).collect();
    let mut ids: Vec<_> = published.iter().map(|e| e.event_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), published.len(), "one EventID per event");
    for o in &out {
        if let Output::Http { event, .. } = o {
            assert!(published.contains(&event), "the body is the published {} itself, EventID included", event.kind());
        }
    }
    let enter = serde_json::to_value(published[0]).unwrap();
    assert_eq!(enter["EventID"].as_str().unwrap(), published[0].event_id.to_string());
    assert_eq!(published[0].event_id.uuid().get_version_num(), 7);
}

#[test]
fn the_same_inputs_and_id_source_give_the_same_events() {
    let zones = vec![sphere("a", [0.0, 0.0, 0.0], 1.0), sphere("b", [0.5, 0.0, 0.0], 1.0)];
    let run = || {
        let mut e = engine(zones.clone(), &[setting(SettingName::ExitDelayMs, 100.0)], vec![]);
        let mut out = Vec::new();
        for (i, x) in [0.0, 0.3, 3.0, 3.0, 0.2].into_iter().enumerate() {
            for m in [mac(1), mac(2), mac(3)] {
                out.extend(step(&mut e, &m, [x, 0.0, 0.0], t0() + ms(60 * i as i64)));
            }
        }
        e.on_tick(t0() + ms(1000), &mut out);
        out
    };
    assert_eq!(run(), run());
}

#[test]
fn a_new_mobile_zone_is_placed_at_its_source_last_position_by_its_owner_and_by_the_others_from_its_hint() {
    let low = Ownership { count: 16, lo: 0, hi: 7 };
    let high = Ownership { count: 16, lo: 8, hi: 15 };
    let of = |o: Ownership, skip: u8| (0..=255u8).map(mac).filter(|m| o.owns(m)).nth(usize::from(skip)).unwrap();
    let (source, near_owner, near_other) = (of(low, 0), of(low, 1), of(high, 0));
    let mut owner = Engine::new(Catalog::build(vec![], &[], vec![]), 501, low, IdSource::seeded(1));
    let mut other = Engine::new(Catalog::build(vec![], &[], vec![]), 501, high, IdSource::seeded(2));
    // The source reports while it has no mobile zone yet; its owner keeps the position.
    step(&mut owner, &source, [50.0, 0.0, 0.0], t0());
    let m = zone(json!({"Name": "forklift", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [2, 0, 0]],
        "MobileOriginSource": source.as_str()}));
    let touched: foldhash::HashSet<Uuid> = [m.id].into_iter().collect();
    let change = ConfigChanged {
        kind: ConfigKind::Zones,
        ids: vec![zonecast_model::format_id(&m.id)],
        operation: None,
        revision: 1,
    };
    let mut out = Vec::new();
    other.apply_zones(vec![m.clone()], &touched, std::slice::from_ref(&change), t0() + ms(5), &mut out);
    assert!(other.awaiting_sources(), "the zone's source belongs to another evaluator that has not said where it is");
    let mut out = Vec::new();
    owner.apply_zones(vec![m], &touched, &[change], t0() + ms(10), &mut out);
    let hints: Vec<SourceHint> =
        out.into_iter().filter_map(|o| if let Output::Source(h) = o { Some(h) } else { None }).collect();
    assert_eq!(hints.len(), 1);
    assert_eq!(hints[0].last.as_ref().map(|f| (f.position, f.timestamp)), Some(([50.0, 0.0, 0.0], t0())));
    assert_eq!(kinds(&step(&mut owner, &near_owner, [51.0, 0.0, 0.0], t0() + ms(20))), ["ZONE_ENTER"]);
    // The hint goes over the bus as JSON.
    let hint: SourceHint = serde_json::from_slice(&serde_json::to_vec(&hints[0]).unwrap()).unwrap();
    let mut out = Vec::new();
    other.on_source_hint(hint, t0() + ms(30), &mut out);
    assert!(!other.awaiting_sources());
    assert_eq!(kinds(&step(&mut other, &near_other, [49.0, 0.0, 0.0], t0() + ms(40))), ["ZONE_ENTER"]);
    // An older word about the source does not move the zone back.
    let stale = SourceHint {
        mac: source.clone(),
        last: Some(zonecast_model::PositionFix {
            mac: source.clone(),
            position: [0.0, 0.0, 0.0],
            timestamp: t0() - ms(1),
            sequence: None,
            event_id: None,
        }),
    };
    let mut out = Vec::new();
    other.on_source_hint(stale, t0() + ms(50), &mut out);
    assert!(kinds(&out).is_empty(), "the worker stays inside: {:?}", kinds(&out));
}

#[test]
fn word_that_a_new_source_was_never_seen_ends_the_wait_and_places_nothing() {
    let low = Ownership { count: 16, lo: 0, hi: 7 };
    let high = Ownership { count: 16, lo: 8, hi: 15 };
    let source = (0..=255u8).map(mac).find(|m| low.owns(m)).unwrap();
    let worker = (0..=255u8).map(mac).find(|m| high.owns(m)).unwrap();
    let mut other = Engine::new(Catalog::build(vec![], &[], vec![]), 501, high, IdSource::seeded(2));
    let m = zone(json!({"Name": "forklift", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [2, 0, 0]],
        "MobileOriginSource": source.as_str()}));
    let touched: foldhash::HashSet<Uuid> = [m.id].into_iter().collect();
    let mut out = Vec::new();
    other.apply_zones(vec![m], &touched, &[], t0(), &mut out);
    assert!(other.awaiting_sources());
    other.on_source_hint(SourceHint { mac: source, last: None }, t0(), &mut out);
    assert!(!other.awaiting_sources());
    assert!(kinds(&step(&mut other, &worker, [0.0, 0.0, 0.0], t0() + ms(10))).is_empty(), "the zone is nowhere yet");
}
