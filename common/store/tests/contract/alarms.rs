//! Alarms: one per condition (type, device, zone) until it is resolved, each event counted once
//! whatever the copies, cleared when the condition ends whatever order raise and clearing are
//! read in, read back whole, listed newest first a page at a time by state, device, zone, type,
//! activity and age, and changed only from the states a change may start from.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;
use zonecast_model::{
    AlarmChange, AlarmKey, AlarmRecord, AlarmState, AlarmUpdate, CLEARED_NOTE, EventType, Mac, RESOLVED_BY_ZONECAST,
    Shelf, ShelfTarget, StoredAlarm,
};
use zonecast_store::{AlarmChanged, AlarmQuery, Raised, Store, StoreError};

use crate::fixtures::at;

fn mac(i: u8) -> Mac {
    format!("00:00:00:00:00:{i:02X}").parse().unwrap()
}

/// An open alarm `id` of device `device` raised at `raised` ms, in zone 7 unless offline.
fn alarm(id: u128, device: u8, raised: i64, kind: EventType) -> StoredAlarm {
    let zoned = kind != EventType::DeviceOffline;
    StoredAlarm {
        record: AlarmRecord {
            alarm_id: Uuid::from_u128(id),
            kind,
            mac: Some(mac(device)),
            zone_id: zoned.then(|| Uuid::from_u128(7)),
            zone_name: zoned.then(|| "dock 7".to_owned()),
            collision_id: zoned.then(|| Uuid::from_u128(1000 + id)),
            raised_at: at(raised),
            count: 1,
            last_raised_at: at(raised),
            last_event_id: Uuid::from_u128(id),
            active: true,
            cleared_at: None,
            state: AlarmState::Open,
            acknowledged_by: None,
            acknowledged_at: None,
            acknowledged_note: None,
            resolved_by: None,
            resolved_at: None,
            resolved_note: None,
        },
        event: json!({"Type": kind.as_str(), "EventID": Uuid::from_u128(id).to_string(), "Note": "a\u{0}b"}),
    }
}

fn update(change: AlarmChange, by: &str, when: i64, note: Option<&str>) -> AlarmUpdate {
    AlarmUpdate { change, by: by.to_owned(), at: at(when), note: note.map(str::to_owned) }
}

fn ids(alarms: &[StoredAlarm]) -> Vec<u128> {
    alarms.iter().map(|a| a.record.alarm_id.as_u128()).collect()
}

fn query(states: &[AlarmState], limit: usize) -> AlarmQuery {
    AlarmQuery { states: states.to_vec(), limit, ..AlarmQuery::default() }
}

pub(crate) async fn an_alarm_is_recorded_once_and_read_back_whole(store: Arc<dyn Store>) {
    let first = alarm(1, 1, 0, EventType::SiteAlarm);
    assert_eq!(store.record_alarm(&first).await.unwrap(), Raised::Opened);
    assert_eq!(store.get_alarm(first.record.alarm_id).await.unwrap(), first);
    let offline = alarm(2, 2, 5, EventType::DeviceOffline);
    assert_eq!(store.record_alarm(&offline).await.unwrap(), Raised::Opened);
    assert_eq!(store.get_alarm(offline.record.alarm_id).await.unwrap(), offline, "no zone, no stay");

    // A copy of the event changes nothing, not even an alarm changed since.
    store.change_alarm(first.record.alarm_id, &update(AlarmChange::Acknowledge, "ann", 10, None)).await.unwrap();
    assert_eq!(store.record_alarm(&first).await.unwrap(), Raised::Copy, "a copy is not recorded");
    assert_eq!(store.get_alarm(first.record.alarm_id).await.unwrap().record.state, AlarmState::Acknowledged);

    let missing = store.get_alarm(Uuid::from_u128(0xab)).await.unwrap_err();
    assert!(
        matches!(&missing, StoreError::NotFound { what: "alarm", id } if id == "00000000-0000-0000-0000-0000000000AB"),
        "{missing:?}"
    );
}

pub(crate) async fn alarm_changes_go_forward_only_and_keep_who_when_and_why(store: Arc<dyn Store>) {
    let (a, b) = (alarm(1, 1, 0, EventType::DeviceAlarm), alarm(2, 1, 1, EventType::ZoneDwellExceeded));
    store.record_alarm(&a).await.unwrap();
    store.record_alarm(&b).await.unwrap();
    let id = a.record.alarm_id;

    let AlarmChanged::Changed(acknowledged) =
        store.change_alarm(id, &update(AlarmChange::Acknowledge, "ann", 10, Some("on my way"))).await.unwrap()
    else {
        panic!("an open alarm is acknowledged");
    };
    let r = &acknowledged.record;
    assert_eq!(
        (r.state, r.acknowledged_by.as_deref(), r.acknowledged_at),
        (AlarmState::Acknowledged, Some("ann"), Some(at(10)))
    );
    assert_eq!((r.acknowledged_note.as_deref(), &r.resolved_by), (Some("on my way"), &None));
    assert_eq!(acknowledged.event, a.event, "the event stays as raised");

    let again = store.change_alarm(id, &update(AlarmChange::Acknowledge, "bob", 11, None)).await.unwrap();
    assert_eq!(again, AlarmChanged::Refused(acknowledged.clone()), "acknowledged once, by the first");

    let AlarmChanged::Changed(resolved) =
        store.change_alarm(id, &update(AlarmChange::Resolve, "bob", 20, Some("moved the pallet"))).await.unwrap()
    else {
        panic!("an acknowledged alarm is resolved");
    };
    let r = &resolved.record;
    assert_eq!((r.state, r.resolved_by.as_deref(), r.resolved_at), (AlarmState::Resolved, Some("bob"), Some(at(20))));
    assert_eq!((r.acknowledged_by.as_deref(), r.resolved_note.as_deref()), (Some("ann"), Some("moved the pallet")));
    for change in [AlarmChange::Acknowledge, AlarmChange::Resolve] {
        let refused = store.change_alarm(id, &update(change, "eve", 30, None)).await.unwrap();
        assert_eq!(refused, AlarmChanged::Refused(resolved.clone()), "{change:?} of a resolved alarm");
    }
    assert_eq!(store.get_alarm(id).await.unwrap(), resolved);

    // Open → resolved at once.
    let direct = store.change_alarm(b.record.alarm_id, &update(AlarmChange::Resolve, "cy", 40, None)).await.unwrap();
    let AlarmChanged::Changed(direct) = direct else { panic!("an open alarm is resolved") };
    assert_eq!((direct.record.state, direct.record.acknowledged_by), (AlarmState::Resolved, None));

    let unknown = store.change_alarm(Uuid::from_u128(9), &update(AlarmChange::Resolve, "x", 1, None)).await;
    assert!(matches!(unknown, Err(StoreError::NotFound { what: "alarm", .. })), "{unknown:?}");
}

pub(crate) async fn of_concurrent_changes_of_an_alarm_exactly_one_wins(store: Arc<dyn Store>) {
    let a = alarm(1, 1, 0, EventType::SiteAlarm);
    store.record_alarm(&a).await.unwrap();
    let tries = (0..8).map(|i| {
        let store = store.clone();
        let by = format!("operator {i}");
        tokio::spawn(async move {
            store.change_alarm(Uuid::from_u128(1), &update(AlarmChange::Acknowledge, &by, i, None)).await.unwrap()
        })
    });
    let outcomes = futures::future::join_all(tries).await;
    let won: Vec<String> = outcomes
        .into_iter()
        .filter_map(|o| match o.unwrap() {
            AlarmChanged::Changed(a) => a.record.acknowledged_by,
            AlarmChanged::Refused(_) => None,
        })
        .collect();
    assert_eq!(won.len(), 1, "{won:?}");
    assert_eq!(store.get_alarm(Uuid::from_u128(1)).await.unwrap().record.acknowledged_by.as_ref(), won.first());
}

pub(crate) async fn alarms_are_listed_newest_first_a_page_at_a_time_by_state_device_and_zone(store: Arc<dyn Store>) {
    // Raised at 0, 10, 10, 20, 30 ms; 2 and 3 at the same instant (ties: greater AlarmID first).
    let raised = [(1, 1, 0), (2, 2, 10), (3, 3, 10), (4, 2, 20), (5, 5, 30)];
    for (id, device, when) in raised {
        let kind = if id == 4 { EventType::DeviceOffline } else { EventType::SiteAlarm };
        store.record_alarm(&alarm(id, device, when, kind)).await.unwrap();
    }
    store.change_alarm(Uuid::from_u128(3), &update(AlarmChange::Acknowledge, "a", 40, None)).await.unwrap();
    store.change_alarm(Uuid::from_u128(5), &update(AlarmChange::Resolve, "a", 41, None)).await.unwrap();

    assert_eq!(ids(&store.list_alarms(&query(&[], 10)).await.unwrap()), [5, 4, 3, 2, 1]);
    let mut seen = Vec::new();
    let mut after: Option<(DateTime<Utc>, Uuid)> = None;
    loop {
        let page = store.list_alarms(&AlarmQuery { after, ..query(&[], 2) }).await.unwrap();
        seen.extend(ids(&page));
        match page.last() {
            Some(last) if page.len() == 2 => after = Some((last.record.raised_at, last.record.alarm_id)),
            _ => break,
        }
    }
    assert_eq!(seen, [5, 4, 3, 2, 1], "pages follow each other, ties included");

    assert_eq!(ids(&store.list_alarms(&query(&[AlarmState::Open], 10)).await.unwrap()), [4, 2, 1]);
    let taken = store.list_alarms(&query(&[AlarmState::Acknowledged, AlarmState::Resolved], 10)).await.unwrap();
    assert_eq!(ids(&taken), [5, 3]);
    let of_device = AlarmQuery { mac: Some(mac(2)), ..query(&[], 10) };
    assert_eq!(ids(&store.list_alarms(&of_device).await.unwrap()), [4, 2]);
    let of_type = AlarmQuery { kind: Some(EventType::DeviceOffline), ..query(&[], 10) };
    assert_eq!(ids(&store.list_alarms(&of_type).await.unwrap()), [4]);
    let older = AlarmQuery { raised_before: Some(at(20)), ..query(&[], 10) };
    assert_eq!(ids(&store.list_alarms(&older).await.unwrap()), [3, 2, 1]);
    store.clear_alarm(&alarm(2, 2, 0, EventType::SiteAlarm).record.key(), at(15)).await.unwrap();
    let cleared = AlarmQuery { active: Some(false), ..query(&[], 10) };
    assert_eq!(ids(&store.list_alarms(&cleared).await.unwrap()), [2]);
    let active = AlarmQuery { active: Some(true), ..query(&[AlarmState::Open], 10) };
    assert_eq!(ids(&store.list_alarms(&active).await.unwrap()), [4, 1]);
    let of_zone = AlarmQuery { zone: Some(Uuid::from_u128(7)), ..query(&[AlarmState::Open], 10) };
    assert_eq!(ids(&store.list_alarms(&of_zone).await.unwrap()), [2, 1], "the offline alarm has no zone");
    assert!(
        store.list_alarms(&AlarmQuery { zone: Some(Uuid::from_u128(8)), ..query(&[], 10) }).await.unwrap().is_empty()
    );
}

/// The key of the site alarm of device `device` in zone 7.
fn site_key(device: u8) -> AlarmKey {
    AlarmKey { kind: EventType::SiteAlarm, mac: Some(mac(device)), zone_id: Some(Uuid::from_u128(7)) }
}

pub(crate) async fn raises_of_one_condition_count_on_one_alarm_until_it_is_resolved(store: Arc<dyn Store>) {
    assert_eq!(store.record_alarm(&alarm(1, 1, 0, EventType::SiteAlarm)).await.unwrap(), Raised::Opened);
    assert_eq!(store.record_alarm(&alarm(2, 1, 10, EventType::SiteAlarm)).await.unwrap(), Raised::Counted);
    assert_eq!(store.record_alarm(&alarm(2, 1, 10, EventType::SiteAlarm)).await.unwrap(), Raised::Copy);
    // Read late: it counts, but is not the latest.
    assert_eq!(store.record_alarm(&alarm(3, 1, 5, EventType::SiteAlarm)).await.unwrap(), Raised::Counted);
    let one = store.get_alarm(Uuid::from_u128(1)).await.unwrap().record;
    assert_eq!((one.count, one.raised_at, one.last_raised_at), (3, at(0), at(10)));
    assert_eq!(one.last_event_id, Uuid::from_u128(2));
    assert_eq!(ids(&store.list_alarms(&query(&[], 10)).await.unwrap()), [1], "one alarm for the condition");

    // Another device, type or zone is another condition.
    assert_eq!(store.record_alarm(&alarm(4, 2, 20, EventType::SiteAlarm)).await.unwrap(), Raised::Opened);
    assert_eq!(store.record_alarm(&alarm(5, 1, 20, EventType::DeviceAlarm)).await.unwrap(), Raised::Opened);
    let mut elsewhere = alarm(6, 1, 20, EventType::SiteAlarm);
    elsewhere.record.zone_id = Some(Uuid::from_u128(8));
    assert_eq!(store.record_alarm(&elsewhere).await.unwrap(), Raised::Opened);

    // Acknowledged, it still counts; resolved, the next raise opens a new alarm.
    store.change_alarm(Uuid::from_u128(1), &update(AlarmChange::Acknowledge, "ann", 30, None)).await.unwrap();
    assert_eq!(store.record_alarm(&alarm(7, 1, 31, EventType::SiteAlarm)).await.unwrap(), Raised::Counted);
    store.change_alarm(Uuid::from_u128(1), &update(AlarmChange::Resolve, "ann", 32, None)).await.unwrap();
    assert_eq!(store.record_alarm(&alarm(8, 1, 40, EventType::SiteAlarm)).await.unwrap(), Raised::Opened);
    assert_eq!(store.record_alarm(&alarm(7, 1, 31, EventType::SiteAlarm)).await.unwrap(), Raised::Copy);
    let resolved = store.get_alarm(Uuid::from_u128(1)).await.unwrap().record;
    assert_eq!((resolved.count, resolved.state), (4, AlarmState::Resolved));
    assert_eq!(store.get_alarm(Uuid::from_u128(8)).await.unwrap().record.count, 1);
}

pub(crate) async fn a_cleared_condition_clears_its_alarm_whatever_order_they_are_read_in(store: Arc<dyn Store>) {
    store.record_alarm(&alarm(1, 1, 0, EventType::SiteAlarm)).await.unwrap();
    let cleared = store.clear_alarm(&site_key(1), at(5)).await.unwrap().expect("the alarm is cleared");
    assert_eq!((cleared.record.active, cleared.record.cleared_at), (false, Some(at(5))));
    assert_eq!(cleared.record.state, AlarmState::Open, "a cleared alarm nobody acknowledged stays for a person");
    assert_eq!(store.get_alarm(Uuid::from_u128(1)).await.unwrap(), cleared);
    assert_eq!(store.clear_alarm(&site_key(1), at(5)).await.unwrap(), None, "a copy changes nothing");

    // Raised again: active again, counted on the same alarm.
    store.record_alarm(&alarm(2, 1, 10, EventType::SiteAlarm)).await.unwrap();
    let again = store.get_alarm(Uuid::from_u128(1)).await.unwrap().record;
    assert_eq!((again.count, again.active, again.cleared_at), (2, true, None));
    // A clearing older than the latest raise leaves it active.
    assert_eq!(store.clear_alarm(&site_key(1), at(8)).await.unwrap(), None);

    // The clearing read first: the alarm its older event raises is recorded cleared.
    assert_eq!(store.clear_alarm(&site_key(2), at(30)).await.unwrap(), None, "no alarm to clear yet");
    store.record_alarm(&alarm(3, 2, 20, EventType::SiteAlarm)).await.unwrap();
    let late = store.get_alarm(Uuid::from_u128(3)).await.unwrap().record;
    assert_eq!((late.active, late.cleared_at), (false, Some(at(30))));
    store.record_alarm(&alarm(4, 2, 40, EventType::SiteAlarm)).await.unwrap();
    assert!(store.get_alarm(Uuid::from_u128(3)).await.unwrap().record.active, "raised after the clearing");

    let offline = alarm(5, 3, 0, EventType::DeviceOffline);
    store.record_alarm(&offline).await.unwrap();
    let back = store.clear_alarm(&offline.record.key(), at(1)).await.unwrap().expect("online again");
    assert!(!back.record.active);
}

pub(crate) async fn an_acknowledged_alarm_whose_condition_cleared_is_resolved_by_zonecast(store: Arc<dyn Store>) {
    // Acknowledged, then cleared.
    store.record_alarm(&alarm(1, 1, 0, EventType::SiteAlarm)).await.unwrap();
    store.change_alarm(Uuid::from_u128(1), &update(AlarmChange::Acknowledge, "ann", 1, None)).await.unwrap();
    let resolved = store.clear_alarm(&site_key(1), at(5)).await.unwrap().expect("cleared").record;
    assert_eq!((resolved.state, resolved.resolved_by.as_deref()), (AlarmState::Resolved, Some(RESOLVED_BY_ZONECAST)));
    assert_eq!((resolved.resolved_at, resolved.resolved_note.as_deref()), (Some(at(5)), Some(CLEARED_NOTE)));
    assert_eq!(resolved.acknowledged_by.as_deref(), Some("ann"));
    assert_eq!(store.record_alarm(&alarm(2, 1, 10, EventType::SiteAlarm)).await.unwrap(), Raised::Opened);

    // Cleared, then acknowledged.
    store.record_alarm(&alarm(3, 2, 0, EventType::SiteAlarm)).await.unwrap();
    store.clear_alarm(&site_key(2), at(5)).await.unwrap();
    let changed =
        store.change_alarm(Uuid::from_u128(3), &update(AlarmChange::Acknowledge, "bob", 9, Some("seen"))).await;
    let AlarmChanged::Changed(done) = changed.unwrap() else { panic!("an open alarm is acknowledged") };
    let r = &done.record;
    assert_eq!(
        (r.state, r.acknowledged_by.as_deref(), r.acknowledged_note.as_deref()),
        (AlarmState::Resolved, Some("bob"), Some("seen"))
    );
    assert_eq!((r.resolved_by.as_deref(), r.resolved_at), (Some(RESOLVED_BY_ZONECAST), Some(at(9))));
    assert_eq!(store.record_alarm(&alarm(4, 2, 10, EventType::SiteAlarm)).await.unwrap(), Raised::Opened);
}

pub(crate) async fn concurrent_raises_and_copies_of_one_condition_count_each_event_once(store: Arc<dyn Store>) {
    // Eight events of one condition, each recorded twice at once (a copy delivered to another
    // replica), and a clearing between them.
    let tries = (1..=8u128).flat_map(|id| [id, id]).map(|id| {
        let store = store.clone();
        tokio::spawn(async move { store.record_alarm(&alarm(id, 1, 10 * id as i64, EventType::SiteAlarm)).await })
    });
    let key = site_key(1);
    let clearing = store.clear_alarm(&key, at(45));
    let (outcomes, cleared) = futures::future::join(futures::future::join_all(tries), clearing).await;
    cleared.unwrap();
    let outcomes: Vec<Raised> = outcomes.into_iter().map(|o| o.unwrap().unwrap()).collect();
    assert_eq!(outcomes.iter().filter(|r| **r == Raised::Copy).count(), 8, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|r| **r == Raised::Opened).count(), 1, "{outcomes:?}");
    let all = store.list_alarms(&query(&[], 10)).await.unwrap();
    assert_eq!(all.len(), 1, "one alarm for the condition");
    let r = &all[0].record;
    assert_eq!((r.count, r.last_raised_at, r.last_event_id), (8, at(80), Uuid::from_u128(8)));
    assert!(r.active, "raised after the clearing");
}

pub(crate) async fn a_shelved_zone_or_device_opens_no_alarm_until_its_shelf_expires_or_is_taken_back(
    store: Arc<dyn Store>,
) {
    let zone = ShelfTarget::Zone(Uuid::from_u128(7));
    let device = ShelfTarget::Device(mac(2));
    let shelf = |target: ShelfTarget, from: i64, until: i64| {
        let input = zonecast_model::ShelveInput { seconds: 1, note: Some("ladder".into()) };
        Shelf { until: at(until), ..Shelf::new(target, input, "ann".into(), at(from)) }
    };
    store.shelve(&shelf(zone.clone(), 10, 20)).await.unwrap();
    store.shelve(&shelf(device.clone(), 10, 30)).await.unwrap();
    assert_eq!(store.list_shelves(at(15)).await.unwrap().len(), 2);
    assert_eq!(store.list_shelves(at(25)).await.unwrap(), [shelf(device.clone(), 10, 30)], "the zone's expired");

    // The zone's: any device in it; the device's: any zone; before and after: counted.
    assert_eq!(store.record_alarm(&alarm(1, 1, 5, EventType::SiteAlarm)).await.unwrap(), Raised::Opened);
    assert_eq!(store.record_alarm(&alarm(2, 1, 12, EventType::SiteAlarm)).await.unwrap(), Raised::Shelved);
    assert_eq!(store.record_alarm(&alarm(3, 3, 12, EventType::ZoneDwellExceeded)).await.unwrap(), Raised::Shelved);
    assert_eq!(store.record_alarm(&alarm(4, 2, 25, EventType::DeviceOffline)).await.unwrap(), Raised::Shelved);
    assert_eq!(store.record_alarm(&alarm(5, 1, 20, EventType::SiteAlarm)).await.unwrap(), Raised::Counted);
    assert_eq!(store.get_alarm(Uuid::from_u128(1)).await.unwrap().record.count, 2, "the shelved raise not counted");
    assert!(matches!(store.get_alarm(Uuid::from_u128(2)).await, Err(StoreError::NotFound { .. })));

    // Taken back: the device's alarms open again; a shelf taken back or expired is no more.
    assert!(store.unshelve(&device, at(26)).await.unwrap());
    assert!(!store.unshelve(&device, at(27)).await.unwrap(), "taken back already");
    assert!(!store.unshelve(&zone, at(27)).await.unwrap(), "expired");
    assert_eq!(store.record_alarm(&alarm(6, 2, 28, EventType::DeviceOffline)).await.unwrap(), Raised::Opened);
    let late = alarm(7, 2, 25, EventType::DeviceAlarm);
    assert_eq!(store.record_alarm(&late).await.unwrap(), Raised::Shelved, "raised while shelved, read after");
    assert!(store.list_shelves(at(27)).await.unwrap().is_empty());
    // A new shelving of a target replaces its shelf.
    store.shelve(&shelf(zone.clone(), 40, 50)).await.unwrap();
    store.shelve(&shelf(zone.clone(), 41, 60)).await.unwrap();
    assert_eq!(store.list_shelves(at(45)).await.unwrap(), [shelf(zone, 41, 60)]);
}

pub(crate) async fn the_alarms_of_a_zone_that_needs_no_acknowledgement_resolve_as_they_clear(store: Arc<dyn Store>) {
    let quiet = zonecast_model::ZoneSpec { alarms_need_acknowledgement: false, ..crate::fixtures::zone("corridor") };
    store.insert_zones(std::slice::from_ref(&quiet)).await.unwrap();
    let mut raised = alarm(1, 1, 0, EventType::SiteAlarm);
    raised.record.zone_id = Some(quiet.id);
    store.record_alarm(&raised).await.unwrap();
    let key = raised.record.key();
    let done = store.clear_alarm(&key, at(5)).await.unwrap().expect("cleared").record;
    assert_eq!(
        (done.state, done.resolved_by.as_deref(), done.acknowledged_by),
        (AlarmState::Resolved, Some(RESOLVED_BY_ZONECAST), None)
    );
    // A zone of the default waits for a person.
    store.record_alarm(&alarm(2, 1, 0, EventType::SiteAlarm)).await.unwrap();
    let kept = store.clear_alarm(&site_key(1), at(5)).await.unwrap().expect("cleared").record;
    assert_eq!(kept.state, AlarmState::Open);
}
