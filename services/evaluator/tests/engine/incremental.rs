//! Changes applied incrementally give what a full reload gives.

use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;
use zonecast_evaluator::Engine;
use zonecast_evaluator::catalog::Catalog;
use zonecast_model::{ConfigChanged, ConfigKind, ConfigOperation, Mac, Setting, SettingName, ZoneSpec};

use super::{engine, events, kinds, mac, ms, setting, sphere, step, t0, zone};

pub(crate) fn a_burst_of_changes_applied_together_gives_each_its_reason() {
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

pub(crate) fn settings_and_radii_put_in_force_over_the_same_zones_apply_to_the_next_position() {
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

pub(crate) fn radius_writes_applied_to_the_devices_they_name_give_what_a_full_reparameterise_gives() {
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

pub(crate) fn a_radius_write_reads_no_other_device_and_applies_to_its_next_position() {
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

pub(crate) fn zone_writes_applied_incrementally_give_what_a_full_reload_gives() {
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
