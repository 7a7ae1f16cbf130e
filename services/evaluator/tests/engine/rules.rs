//! Zone rules: timed windows, inclusion, alert levels and actions, configuration changes, mobile
//! zones, restored collisions and partitions.

use chrono::Duration;
use serde_json::json;
use uuid::Uuid;
use zonecast_evaluator::catalog::Catalog;
use zonecast_evaluator::{Engine, Output, Ownership};
use zonecast_model::{Collision, ConfigChanged, ConfigKind, ConfigOperation, EventType, IdSource, ZoneSpec};

use super::{engine, events, kinds, mac, ms, sphere, step, t0, zone};

pub(crate) fn timed_zones_are_live_only_in_their_window_and_exit_at_stop_time_by_the_clock() {
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

pub(crate) fn inclusion_policy_and_device_list_decide_who_triggers() {
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

pub(crate) fn alert_levels_raise_site_and_device_alarms_and_actions_run() {
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
        ["ZONE_EXIT", "ALARM_CLEARED", "ZONE_ENTER", "DEVICE_ALARM_COMMAND", "DEVICE_ALARM"],
        "the site alarm's condition cleared; one device alarm, not two"
    );
    assert_eq!(events(&out)[1].2["Type"], "SITE_ALARM");
    assert!(
        out.iter().any(|o| matches!(o, Output::Http { event, .. } if event.kind() == EventType::ZoneExit)),
        "on: both"
    );
    assert_eq!(events(&out)[3].1, "zc.devices.00:00:00:00:00:01.alarm");
}

pub(crate) fn configuration_changes_emit_the_exits_they_imply() {
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

pub(crate) fn a_mobile_zone_follows_its_source_and_captures_a_device_that_stands_still() {
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

pub(crate) fn restored_collisions_give_no_second_enter_and_owed_exits_are_emitted() {
    let a = sphere("a", [0.0, 0.0, 0.0], 1.0);
    let mut b = sphere("b", [0.0, 0.0, 0.0], 1.0);
    b.active = false;
    let dev = mac(1);
    let collision = |z: &ZoneSpec| Collision {
        zone_id: z.id,
        mac: dev.clone(),
        collision_id: Uuid::new_v4(),
        entry_time: t0(),
        dwell_reported: false,
    };
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

pub(crate) fn devices_of_other_partitions_are_ignored() {
    let z = sphere("s", [0.0, 0.0, 0.0], 1.0);
    let dev = mac(1);
    let p = dev.partition(16);
    let mut mine =
        Engine::new(Catalog::build(vec![z.clone()], &[], vec![]), 1, Ownership::range(16, p, p), IdSource::seeded(1));
    let other = if p == 0 { 1 } else { 0 };
    let mut theirs =
        Engine::new(Catalog::build(vec![z], &[], vec![]), 1, Ownership::range(16, other, other), IdSource::seeded(2));
    assert_eq!(kinds(&step(&mut mine, &dev, [0.0, 0.0, 0.0], t0())).len(), 1);
    assert!(kinds(&step(&mut theirs, &dev, [0.0, 0.0, 0.0], t0())).is_empty());
}
