//! Dwell limits: one `ZONE_DWELL_EXCEEDED` per stay past its zone's MaxDwellSeconds, found by
//! the clock or by the exit that ends the stay, never again after a restart.

use serde_json::{Value, json};
use zonecast_evaluator::Output;
use zonecast_model::{Collision, Content};

use super::{engine, events, kinds, mac, ms, step, t0, zone};

fn cold_room(limit: serde_json::Value, actions: serde_json::Value) -> zonecast_model::ZoneSpec {
    zone(json!({"Name": "cold room", "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [2, 0, 0]],
        "AlertLevel": 5, "MaxDwellSeconds": limit, "ZoneActions": actions}))
}

fn tick(e: &mut zonecast_evaluator::Engine, at: chrono::DateTime<chrono::Utc>) -> Vec<Output> {
    let mut out = Vec::new();
    e.on_tick(at, &mut out);
    out
}

/// The recorded collisions among `out`.
fn records(out: &[Output]) -> Vec<Collision> {
    out.iter().filter_map(|o| if let Output::Entered(c) = o { Some(c.clone()) } else { None }).collect()
}

pub(crate) fn a_stay_past_the_limit_raises_one_dwell_event_with_its_entry_and_dwell() {
    let z = cold_room(json!(60), json!([]));
    let id = zonecast_model::format_id(&z.id);
    let mut e = engine(vec![z], &[], vec![]);
    let d = mac(1);
    let enter = events(&step(&mut e, &d, [0.5, 0.0, 0.0], t0()));
    assert!(kinds(&tick(&mut e, t0() + ms(59_900))).is_empty(), "not yet at the limit");
    let out = tick(&mut e, t0() + ms(60_050));
    let ev = events(&out);
    assert_eq!(ev.len(), 1, "{ev:?}");
    let (kind, subject, dwell) = &ev[0];
    assert_eq!(
        (kind.as_str(), subject.as_str()),
        ("ZONE_DWELL_EXCEEDED", format!("zc.events.zone.{id}.dwell").as_str())
    );
    assert_eq!(dwell["CollisionID"], enter[0].2["CollisionID"]);
    assert_eq!(dwell["EntryTime"], "2026-11-21T10:00:00.000Z");
    assert_eq!((dwell["DwellSeconds"].as_f64(), dwell["MaxDwellSeconds"].as_f64()), (Some(60.05), Some(60.0)));
    assert_eq!((dwell["ZoneName"].as_str(), dwell["AlertLevel"].as_u64()), (Some("cold room"), Some(5)));
    assert_eq!(dwell["Position"], json!([0.5, 0.0, 0.0]));
    let Some(Output::Publish(event)) = out.iter().find(|o| matches!(o, Output::Publish(_))) else { unreachable!() };
    assert_eq!(zonecast_model::format_timestamp(&event.timestamp), "2026-11-21T10:01:00.000Z", "when it passed");
    assert!(records(&out).iter().all(|c| c.dwell_reported) && records(&out).len() == 1, "the stay is marked");

    assert!(kinds(&tick(&mut e, t0() + ms(120_000))).is_empty(), "once per stay");
    assert!(kinds(&step(&mut e, &d, [0.6, 0.0, 0.0], t0() + ms(130_000))).is_empty());
    // The exit ends the conditions of the stay's device alarm (AlertLevel 5) and of its dwell.
    let exit = events(&step(&mut e, &d, [5.0, 0.0, 0.0], t0() + ms(131_000)));
    let cleared: Vec<(&str, &str, &Value)> =
        exit.iter().skip(1).map(|(k, _, c)| (k.as_str(), c["Type"].as_str().unwrap(), &c["CollisionID"])).collect();
    assert_eq!(exit[0].0, "ZONE_EXIT");
    let stay = &enter[0].2["CollisionID"];
    assert_eq!(cleared, [("ALARM_CLEARED", "DEVICE_ALARM", stay), ("ALARM_CLEARED", "ZONE_DWELL_EXCEEDED", stay)]);
    assert_eq!(exit[1].1, "zc.events.alarm.cleared.00:00:00:00:00:01");
    // A new stay has a limit of its own.
    step(&mut e, &d, [0.5, 0.0, 0.0], t0() + ms(132_000));
    assert_eq!(kinds(&tick(&mut e, t0() + ms(192_000))), ["ZONE_DWELL_EXCEEDED"]);
}

pub(crate) fn a_stay_that_ends_past_the_limit_before_the_clock_noticed_raises_its_dwell_event_first() {
    let mut e = engine(vec![cold_room(json!(1.5), json!([]))], &[], vec![]);
    let d = mac(1);
    step(&mut e, &d, [0.5, 0.0, 0.0], t0());
    let out = step(&mut e, &d, [5.0, 0.0, 0.0], t0() + ms(1_600));
    assert_eq!(kinds(&out), ["ZONE_DWELL_EXCEEDED", "ZONE_EXIT", "ALARM_CLEARED", "ALARM_CLEARED"]);
    assert_eq!(events(&out)[0].2["DwellSeconds"].as_f64(), Some(1.6));
    // A stay that ends before the limit raises none.
    step(&mut e, &d, [0.5, 0.0, 0.0], t0() + ms(2_000));
    let exit = events(&step(&mut e, &d, [5.0, 0.0, 0.0], t0() + ms(3_400)));
    assert_eq!(
        exit.iter().map(|(k, _, c)| (k.as_str(), c["Type"].as_str())).collect::<Vec<_>>(),
        [("ZONE_EXIT", None), ("ALARM_CLEARED", Some("DEVICE_ALARM"))]
    );
}

pub(crate) fn zones_without_a_limit_raise_no_dwell_event() {
    let mut e = engine(vec![cold_room(json!(null), json!([])), cold_room(json!(0), json!([]))], &[], vec![]);
    step(&mut e, &mac(1), [0.5, 0.0, 0.0], t0());
    assert!(kinds(&tick(&mut e, t0() + ms(86_400_000))).is_empty());
}

pub(crate) fn dwell_runs_the_actions_bound_to_it_and_not_those_of_entry_and_exit() {
    let actions = json!([
        {"type": "info-event", "message": "too long in the cold room", "on": "dwell"},
        {"type": "device-alarm", "on": "dwell"},
        {"type": "info-event", "message": "in or out", "on": "both"},
        {"type": "http-request", "uri": "http://127.0.0.1:9/dwell", "on": "dwell"},
    ]);
    let mut e = engine(vec![cold_room(json!(10), actions)], &[], vec![]);
    let d = mac(1);
    step(&mut e, &d, [0.5, 0.0, 0.0], t0());
    let out = tick(&mut e, t0() + ms(10_000));
    assert_eq!(kinds(&out), ["ZONE_DWELL_EXCEEDED", "ZONE_INFO", "DEVICE_ALARM_COMMAND", "DEVICE_ALARM"]);
    let ev = events(&out);
    assert_eq!(ev[1].2["Message"], "too long in the cold room");
    assert!(ev.iter().skip(1).all(|(_, _, c)| c["CollisionID"] == ev[0].2["CollisionID"]));
    let body = out.iter().find_map(|o| if let Output::Http { event, .. } = o { Some(event) } else { None });
    assert!(matches!(body.map(|e| &e.content), Some(Content::ZoneDwellExceeded(_))), "the request carries the event");
}

pub(crate) fn a_restarted_engine_raises_no_second_dwell_event_and_an_unrecorded_one_again_with_its_event_id() {
    let z = cold_room(json!(30), json!([]));
    let d = mac(1);
    let mut first = engine(vec![z.clone()], &[], vec![]);
    let entered = records(&step(&mut first, &d, [0.5, 0.0, 0.0], t0()));
    let out = tick(&mut first, t0() + ms(30_000));
    let raised = out.iter().find_map(|o| if let Output::Publish(e) = o { Some(e.event_id) } else { None }).unwrap();
    let recorded = records(&out);

    // Restarted from the record written after the event: nothing more for this stay.
    let mut again = engine(vec![z.clone()], &[], vec![]);
    let mut out = Vec::new();
    again.restore(recorded, t0() + ms(40_000), &mut out);
    assert!(kinds(&out).is_empty());
    assert!(kinds(&tick(&mut again, t0() + ms(41_000))).is_empty(), "no second dwell event for the stay");

    // Restarted from the record of the entry (it stopped before the dwell's record was
    // written): the same event again, with the same EventID, which the journal stores once.
    let mut lost = engine(vec![z], &[], vec![]);
    let mut out = Vec::new();
    lost.restore(entered, t0() + ms(40_000), &mut out);
    let out = tick(&mut lost, t0() + ms(41_000));
    assert_eq!(kinds(&out), ["ZONE_DWELL_EXCEEDED"]);
    let Some(Output::Publish(copy)) = out.first() else { unreachable!() };
    assert_eq!(copy.event_id, raised);
}
