//! Offline and online: DEVICE_OFFLINE after DeviceOfflineSeconds of silence (counted from the
//! rule's start at the earliest), DEVICE_ONLINE and the ALARM_CLEARED of the offline alarm with
//! the next position, and how they stand beside DeviceTimeoutSeconds.

use chrono::Duration;
use serde_json::json;
use zonecast_evaluator::Output;
use zonecast_model::{Presence, SettingName};

use super::{engine, events, kinds, mac, ms, setting, sphere, step, t0};

fn tick(e: &mut zonecast_evaluator::Engine, seconds: i64) -> Vec<Output> {
    let mut out = Vec::new();
    e.on_tick(t0() + Duration::seconds(seconds), &mut out);
    out
}

pub(crate) fn a_silent_device_goes_offline_once_and_online_with_its_next_position() {
    let mut e = engine(vec![], &[setting(SettingName::DeviceOfflineSeconds, 60.0)], vec![]);
    let d = mac(1);
    step(&mut e, &d, [1.0, 2.0, 0.0], t0());
    assert!(tick(&mut e, 59).is_empty());
    let ev = events(&tick(&mut e, 61));
    assert_eq!(ev.len(), 1, "{ev:?}");
    let (kind, subject, offline) = &ev[0];
    assert_eq!((kind.as_str(), subject.as_str()), ("DEVICE_OFFLINE", "zc.events.device.00:00:00:00:00:01.offline"));
    assert_eq!(offline["LastSeen"], "2026-11-21T10:00:00.000Z");
    assert_eq!(offline["SilentSeconds"].as_f64(), Some(60.0));
    assert_eq!(offline["Position"], json!([1.0, 2.0, 0.0]));
    assert!(tick(&mut e, 600).is_empty(), "once per silence");

    let ev = events(&step(&mut e, &d, [3.0, 2.0, 0.0], t0() + Duration::seconds(700)));
    assert_eq!(ev.len(), 2, "{ev:?}");
    let (kind, subject, cleared) = &ev[1];
    assert_eq!((kind.as_str(), subject.as_str()), ("ALARM_CLEARED", "zc.events.alarm.cleared.00:00:00:00:00:01"));
    assert_eq!(cleared, &json!({"Type": "DEVICE_OFFLINE", "ZoneID": null, "ZoneName": null, "CollisionID": null}));
    let (kind, subject, online) = &ev[0];
    assert_eq!((kind.as_str(), subject.as_str()), ("DEVICE_ONLINE", "zc.events.device.00:00:00:00:00:01.online"));
    assert_eq!(online["LastSeen"], "2026-11-21T10:00:00.000Z");
    assert_eq!(online["SilentSeconds"].as_f64(), Some(700.0));
    assert_eq!(online["Position"], json!([3.0, 2.0, 0.0]));
    assert!(kinds(&step(&mut e, &d, [3.5, 2.0, 0.0], t0() + Duration::seconds(701))).is_empty());
    // A new silence is reported again.
    assert_eq!(kinds(&tick(&mut e, 762)), ["DEVICE_OFFLINE"]);
}

pub(crate) fn offline_reports_stand_beside_device_timeouts_each_at_its_own_time() {
    let zones = vec![sphere("a", [0.0, 0.0, 0.0], 1.0)];
    let settings =
        [setting(SettingName::DeviceTimeoutSeconds, 30.0), setting(SettingName::DeviceOfflineSeconds, 120.0)];
    let mut e = engine(zones, &settings, vec![]);
    let d = mac(1);
    assert_eq!(kinds(&step(&mut e, &d, [0.2, 0.0, 0.0], t0())), ["ZONE_ENTER"]);
    let ev = events(&tick(&mut e, 30));
    assert_eq!((ev.len(), ev[0].0.as_str(), ev[0].2["Reason"].as_str()), (1, "ZONE_EXIT", Some("timeout")));
    assert!(tick(&mut e, 90).is_empty(), "the timed-out device is kept, outside every zone");
    assert_eq!(kinds(&tick(&mut e, 120)), ["DEVICE_OFFLINE"]);
    // Back: online first, then the entry its position makes.
    assert_eq!(
        kinds(&step(&mut e, &d, [0.2, 0.0, 0.0], t0() + Duration::seconds(130))),
        ["DEVICE_ONLINE", "ALARM_CLEARED", "ZONE_ENTER"]
    );

    // Without offline reports a timed-out device is forgotten, as before.
    let mut e = engine(vec![sphere("a", [0.0, 0.0, 0.0], 1.0)], &settings[..1], vec![]);
    step(&mut e, &d, [0.2, 0.0, 0.0], t0());
    tick(&mut e, 30);
    assert_eq!(e.device_count(), 0);
}

pub(crate) fn the_same_silence_reported_again_has_the_same_event_id() {
    let settings = [setting(SettingName::DeviceOfflineSeconds, 5.0)];
    let id = |late_ms: i64| {
        let mut e = engine(vec![], &settings, vec![]);
        step(&mut e, &mac(1), [0.0, 0.0, 0.0], t0());
        let mut out = Vec::new();
        e.on_tick(t0() + Duration::seconds(5) + ms(late_ms), &mut out);
        offline_id(&out)
    };
    assert_eq!(id(0), id(250), "whenever the clock finds it");
}

fn offline_id(out: &[Output]) -> zonecast_model::EventId {
    out.iter().find_map(|o| if let Output::Publish(e) = o { Some(e.event_id) } else { None }).unwrap()
}

fn presence(out: &[Output]) -> Vec<Presence> {
    out.iter().filter_map(|o| if let Output::Presence(p) = o { Some(p.clone()) } else { None }).collect()
}

pub(crate) fn the_recorded_presence_carries_silences_and_returns_across_a_restart() {
    let settings = [setting(SettingName::DeviceOfflineSeconds, 8.0)];
    let d = mac(1);
    let mut first = engine(vec![], &settings, vec![]);
    let recorded = presence(&step(&mut first, &d, [0.0, 0.0, 0.0], t0()));
    assert_eq!(recorded, [Presence { mac: d.clone(), last_seen: t0(), offline: false }]);
    // Recorded again only once a quarter of the offline time (2 s) has passed.
    assert!(presence(&step(&mut first, &d, [0.0, 0.0, 0.0], t0() + ms(1_000))).is_empty());
    assert_eq!(presence(&step(&mut first, &d, [0.0, 0.0, 0.0], t0() + ms(2_000))).len(), 1);
    let out = tick(&mut first, 10);
    let went = offline_id(&out);
    let offline = presence(&out);
    assert_eq!(offline, [Presence { mac: d.clone(), last_seen: t0() + ms(2_000), offline: true }]);

    // Restarted from the offline record: no second report, and the return is reported.
    let mut again = engine(vec![], &settings, vec![]);
    again.restore_presence(offline, t0() + Duration::seconds(20));
    assert!(tick(&mut again, 60).is_empty());
    let back = events(&step(&mut again, &d, [1.0, 0.0, 0.0], t0() + Duration::seconds(61)));
    assert_eq!(back[0].0, "DEVICE_ONLINE");
    assert_eq!(back[0].2["LastSeen"], "2026-11-21T10:00:02.000Z");

    // Restarted from the record of its position (it stopped before the offline record was
    // written): reported offline no earlier than it can have gone silent, with the same EventID.
    let mut lost = engine(vec![], &settings, vec![]);
    lost.restore_presence(
        vec![Presence { mac: d.clone(), last_seen: t0() + ms(2_000), offline: false }],
        t0() + Duration::seconds(5),
    );
    assert!(tick(&mut lost, 11).is_empty(), "its last position may have been 2 s after the one recorded");
    let out = tick(&mut lost, 12);
    assert_eq!(kinds(&out), ["DEVICE_OFFLINE"]);
    assert_eq!(offline_id(&out), went);

    // With offline reports off, nothing is restored.
    let mut off = engine(vec![], &[], vec![]);
    off.restore_presence(vec![Presence { mac: d, last_seen: t0(), offline: true }], t0());
    assert_eq!(off.device_count(), 0);
}

pub(crate) fn a_device_of_its_own_offline_time_is_reported_after_it_whatever_the_site_says() {
    use zonecast_evaluator::catalog::Registered;
    use zonecast_model::DeviceTag;
    let own = |seconds| Registered { tag: DeviceTag { name: "Anna".into(), group: None }, offline_seconds: seconds };
    let (anna, other) = (mac(1), mac(2));
    let mut e = engine(vec![], &[], vec![]);
    e.apply_names(vec![(anna.clone(), Some(own(Some(5))))], t0());
    step(&mut e, &anna, [0.0, 0.0, 0.0], t0());
    step(&mut e, &other, [0.0, 0.0, 0.0], t0());
    assert!(tick(&mut e, 4).is_empty());
    let out = tick(&mut e, 5);
    let ev = events(&out);
    assert_eq!(ev.len(), 1, "only the device with its own time: {ev:?}");
    assert_eq!((ev[0].0.as_str(), ev[0].2["SilentSeconds"].as_f64()), ("DEVICE_OFFLINE", Some(5.0)));
    assert!(tick(&mut e, 3600).is_empty(), "the other follows the site, which reports nobody");

    // Its own time wins over the site's; taken away, the site's applies.
    let mut e = engine(vec![], &[setting(SettingName::DeviceOfflineSeconds, 60.0)], vec![]);
    e.apply_names(vec![(anna.clone(), Some(own(Some(600))))], t0());
    step(&mut e, &anna, [0.0, 0.0, 0.0], t0());
    step(&mut e, &other, [0.0, 0.0, 0.0], t0());
    assert_eq!(
        events(&tick(&mut e, 60)).iter().map(|(_, _, c)| c["SilentSeconds"].clone()).collect::<Vec<_>>(),
        [json!(60.0)]
    );
    // The site's rule applies to her from the moment her own is taken away, not before.
    e.apply_names(vec![(anna.clone(), Some(own(None)))], t0() + Duration::seconds(61));
    assert!(tick(&mut e, 120).is_empty());
    let ev = events(&tick(&mut e, 121));
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].1, "zc.events.device.00:00:00:00:00:01.offline");
}

pub(crate) fn an_offline_rule_counts_the_silence_from_when_it_took_effect() {
    let mut e = engine(vec![], &[], vec![]);
    let (quiet, later) = (mac(1), mac(2));
    step(&mut e, &quiet, [0.0, 0.0, 0.0], t0());
    // Eight seconds, set three and a half minutes into the silence.
    let set_at = t0() + Duration::seconds(220);
    let settings = zonecast_model::Settings::from_written(&[setting(SettingName::DeviceOfflineSeconds, 8.0)]);
    let mut out = Vec::new();
    e.reparameterise(settings, vec![], set_at, &mut out);
    assert!(kinds(&out).is_empty());
    assert!(tick(&mut e, 227).is_empty(), "no alarm dated before the rule");
    step(&mut e, &later, [0.0, 0.0, 0.0], t0() + Duration::seconds(225));
    let out = tick(&mut e, 228);
    let ev = events(&out);
    assert_eq!(ev.len(), 1, "{ev:?}");
    let Some(Output::Publish(offline)) = out.first() else { panic!("the offline event first: {out:?}") };
    assert_eq!(offline.timestamp, set_at + Duration::seconds(8), "silent for 8 s of the rule");
    assert_eq!(ev[0].2["LastSeen"], "2026-11-21T10:00:00.000Z", "its last position, as it was");
    assert_eq!(kinds(&tick(&mut e, 233)), ["DEVICE_OFFLINE"], "a device seen after the rule: from its position");
}
