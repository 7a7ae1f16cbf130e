//! Order and identity: late and tied positions, event IDs, the same inputs giving the same events.

use serde_json::json;
use zonecast_evaluator::Output;
use zonecast_model::SettingName;

use super::{engine, kinds, mac, ms, setting, sphere, step, t0, zone};

pub(crate) fn a_position_older_than_the_last_one_applied_is_skipped_and_makes_no_event() {
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

pub(crate) fn a_sequence_breaks_ties_between_positions_with_the_same_timestamp() {
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

pub(crate) fn a_mobile_zone_source_position_that_arrives_late_does_not_move_the_zone_back() {
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

pub(crate) fn every_event_has_an_event_id_of_its_own_and_the_http_body_is_the_published_event() {
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

pub(crate) fn the_same_inputs_and_id_source_give_the_same_events() {
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
