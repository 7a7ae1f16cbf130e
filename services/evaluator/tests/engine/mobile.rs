//! A new mobile zone placed from its source's last position, by its owner and by the others.

use serde_json::json;
use uuid::Uuid;
use zonecast_evaluator::catalog::Catalog;
use zonecast_evaluator::{Engine, Output, Ownership, SourceHint};
use zonecast_model::{ConfigChanged, ConfigKind, IdSource};

use super::{kinds, mac, ms, step, t0, zone};

pub(crate) fn a_new_mobile_zone_is_placed_at_its_source_last_position_by_its_owner_and_by_the_others_from_its_hint() {
    let low = Ownership::range(16, 0, 7);
    let high = Ownership::range(16, 8, 15);
    let of = |o: &Ownership, skip: u8| (0..=255u8).map(mac).filter(|m| o.owns(m)).nth(usize::from(skip)).unwrap();
    let (source, near_owner, near_other) = (of(&low, 0), of(&low, 1), of(&high, 0));
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

pub(crate) fn word_that_a_new_source_was_never_seen_ends_the_wait_and_places_nothing() {
    let low = Ownership::range(16, 0, 7);
    let high = Ownership::range(16, 8, 15);
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
