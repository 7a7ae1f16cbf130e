//! The collision, setting and radius contract.

use std::sync::Arc;

use uuid::Uuid;
use zonecast_model::{CollidingDevice, Setting, SettingName};
use zonecast_store::{Collision, CollisionMarks, EvaluatorStore, Presence, Store, StoreError};

use super::fixtures::{at, collision, mac, zone};

pub(crate) async fn collisions_are_upserted_and_deleted_in_one_batch(store: Arc<dyn Store>) {
    let (z1, z2) = (zone("one"), zone("two"));
    store.insert_zones(&[z1.clone(), z2.clone()]).await.unwrap();
    let a = collision(z1.id, "00:00:00:00:00:0B", 1);
    let b = collision(z1.id, "00:00:00:00:00:0A", 2);
    let c = collision(z2.id, "00:00:00:00:00:0A", 3);
    store.write_collisions(&[a.clone(), b.clone(), c.clone()], &[], &[], &Default::default()).await.unwrap();
    // The stays of one zone, by MAC, each with the CollisionID and EntryTime written.
    let inside: Vec<CollidingDevice> = vec![b.clone().into(), a.clone().into()];
    assert_eq!(store.colliding_devices(z1.id).await.unwrap(), inside);
    let mut expected = vec![a.clone(), b.clone(), c.clone()];
    expected.sort_by(|x, y| (x.zone_id, &x.mac).cmp(&(y.zone_id, &y.mac)));
    assert_eq!(store.all_collisions().await.unwrap(), expected);

    // Re-entering replaces the stay; exits remove; unknown exits are no-ops.
    let a2 = Collision { collision_id: Uuid::new_v4(), entry_time: at(10), ..a.clone() };
    store
        .write_collisions(
            std::slice::from_ref(&a2),
            &[(z2.id, c.mac.clone()), (z2.id, mac("00:00:00:00:00:FF"))],
            &[],
            &Default::default(),
        )
        .await
        .unwrap();
    let mut expected = vec![a2.clone(), b.clone()];
    expected.sort_by(|x, y| x.mac.cmp(&y.mac));
    assert_eq!(store.all_collisions().await.unwrap(), expected);
    assert!(store.colliding_devices(z2.id).await.unwrap().is_empty());

    // Within one batch the last entry for a pair wins, and a pair both entered and exited is gone.
    let a3 = Collision { collision_id: Uuid::new_v4(), ..a.clone() };
    let d = collision(z2.id, "00:00:00:00:00:0D", 4);
    store
        .write_collisions(&[a2.clone(), a3.clone(), d.clone()], &[(z2.id, d.mac.clone())], &[], &Default::default())
        .await
        .unwrap();
    let all = store.all_collisions().await.unwrap();
    assert!(all.contains(&a3) && !all.contains(&a2) && !all.iter().any(|x| x.mac == d.mac), "{all:?}");
    store.write_collisions(&[], &[], &[], &Default::default()).await.unwrap();

    // A stay's dwell event, once raised, is recorded with it and read back.
    let reported = Collision { dwell_reported: true, ..a3.clone() };
    store.write_collisions(std::slice::from_ref(&reported), &[], &[], &Default::default()).await.unwrap();
    let all = store.all_collisions().await.unwrap();
    assert!(all.contains(&reported) && !all.contains(&a3), "{all:?}");

    // Presence rows are upserted by MAC, the last row of a batch winning, and read back by MAC.
    let seen = |device: &str, ms: i64, offline: bool| Presence { mac: mac(device), last_seen: at(ms), offline };
    let rows =
        [seen("00:00:00:00:00:0B", 5, false), seen("00:00:00:00:00:0A", 6, false), seen("00:00:00:00:00:0B", 7, true)];
    store.write_collisions(&[], &[], &rows, &Default::default()).await.unwrap();
    assert_eq!(
        store.all_presence().await.unwrap(),
        [seen("00:00:00:00:00:0A", 6, false), seen("00:00:00:00:00:0B", 7, true)]
    );
    store.write_collisions(&[], &[], &[seen("00:00:00:00:00:0B", 9, false)], &Default::default()).await.unwrap();
    assert_eq!(store.all_presence().await.unwrap()[1], seen("00:00:00:00:00:0B", 9, false));
}

pub(crate) async fn collisions_for_deleted_zones_are_ignored_and_go_with_their_zone(store: Arc<dyn Store>) {
    let (kept, gone) = (zone("kept"), zone("gone"));
    store.insert_zones(&[kept.clone(), gone.clone()]).await.unwrap();
    let k = collision(kept.id, "00:00:00:00:00:01", 0);
    store
        .write_collisions(&[k.clone(), collision(gone.id, "00:00:00:00:00:02", 0)], &[], &[], &Default::default())
        .await
        .unwrap();
    store.delete_zones(&[gone.id]).await.unwrap();
    assert_eq!(store.all_collisions().await.unwrap(), vec![k.clone()]);
    assert!(store.colliding_devices(gone.id).await.unwrap().is_empty());
    // A late batch from the evaluator still naming the deleted zone: its rows are skipped.
    let late = collision(gone.id, "00:00:00:00:00:03", 1);
    let fresh = collision(kept.id, "00:00:00:00:00:04", 1);
    store
        .write_collisions(&[late, fresh.clone()], &[(gone.id, mac("00:00:00:00:00:02"))], &[], &Default::default())
        .await
        .unwrap();
    assert_eq!(store.all_collisions().await.unwrap(), vec![k, fresh]);
}

pub(crate) async fn marks_are_written_with_the_collisions_and_kept_until_set_again(store: Arc<dyn Store>) {
    assert_eq!(store.collision_marks().await.unwrap(), CollisionMarks::default());
    let z = zone("marked");
    store.insert_zones(std::slice::from_ref(&z)).await.unwrap();
    let first =
        CollisionMarks { partitions: vec![(3, 17), (0, 5)], through: vec![(0, at(1))], ..CollisionMarks::default() };
    let inside = collision(z.id, "00:00:00:00:00:01", 1);
    store.write_collisions(std::slice::from_ref(&inside), &[], &[], &first).await.unwrap();
    let mut expected =
        CollisionMarks { partitions: vec![(0, 5), (3, 17)], through: vec![(0, at(1))], ..CollisionMarks::default() };
    assert_eq!(store.collision_marks().await.unwrap(), expected);
    assert_eq!(expected.partition(3), Some(17));
    assert_eq!(expected.partition(1), None);
    // Marks alone are written too; a partition not named keeps its mark.
    store
        .write_collisions(
            &[],
            &[],
            &[],
            &CollisionMarks { partitions: vec![(3, 40)], through: vec![], ..CollisionMarks::default() },
        )
        .await
        .unwrap();
    expected.partitions[1].1 = 40;
    assert_eq!(store.collision_marks().await.unwrap(), expected);
    // With an exit: both in one transaction.
    store
        .write_collisions(
            &[],
            &[(z.id, inside.mac.clone())],
            &[],
            &CollisionMarks { partitions: vec![(0, 9)], through: vec![(8, at(2))], ..CollisionMarks::default() },
        )
        .await
        .unwrap();
    expected = CollisionMarks {
        partitions: vec![(0, 9), (3, 40)],
        through: vec![(0, at(1)), (8, at(2))],
        ..CollisionMarks::default()
    };
    assert_eq!(store.collision_marks().await.unwrap(), expected);
    assert_eq!(expected.through_all(), Some(at(1)), "the earliest evaluator's");
    assert!(store.all_collisions().await.unwrap().is_empty());
}

pub(crate) async fn a_write_at_an_older_epoch_than_the_store_holds_is_refused_whole(store: Arc<dyn Store>) {
    let z = zone("fenced");
    store.insert_zones(std::slice::from_ref(&z)).await.unwrap();
    let at = |partition: u32, epoch: u64, mark: u64| CollisionMarks {
        partitions: vec![(partition, mark)],
        epochs: vec![(partition, epoch), (9, 1)],
        ..CollisionMarks::default()
    };
    // The first owner writes at epoch 4.
    let first = collision(z.id, "00:00:00:00:00:01", 1);
    store.write_collisions(std::slice::from_ref(&first), &[], &[], &at(2, 4, 10)).await.unwrap();
    // A new owner fences it: epochs alone.
    let fence = CollisionMarks { epochs: vec![(2, 7)], ..CollisionMarks::default() };
    store.write_collisions(&[], &[], &[], &fence).await.unwrap();
    // The old owner's next write is refused whole: no collision, no mark, no epoch changes.
    let stale = collision(z.id, "00:00:00:00:00:02", 1);
    let refused =
        store.write_collisions(std::slice::from_ref(&stale), &[(z.id, first.mac.clone())], &[], &at(2, 4, 11)).await;
    assert!(matches!(refused, Err(StoreError::Fenced { ref partitions }) if partitions == &[2]), "{refused:?}");
    assert_eq!(store.all_collisions().await.unwrap(), vec![first.clone()]);
    let marks = store.collision_marks().await.unwrap();
    assert_eq!((marks.partition(2), marks.epoch(2), marks.epoch(9)), (Some(10), Some(7), Some(1)));
    // The new owner writes at its epoch; an epoch never goes back.
    store.write_collisions(&[], &[(z.id, first.mac.clone())], &[], &at(2, 7, 12)).await.unwrap();
    store
        .write_collisions(&[], &[], &[], &CollisionMarks { epochs: vec![(2, 5)], ..CollisionMarks::default() })
        .await
        .unwrap_err();
    let marks = store.collision_marks().await.unwrap();
    assert_eq!((marks.partition(2), marks.epoch(2)), (Some(12), Some(7)));
    assert!(store.all_collisions().await.unwrap().is_empty());
}

pub(crate) async fn clearing_a_zone_returns_and_removes_only_its_collisions(store: Arc<dyn Store>) {
    let (z1, z2) = (zone("one"), zone("two"));
    store.insert_zones(&[z1.clone(), z2.clone()]).await.unwrap();
    let a = collision(z1.id, "00:00:00:00:00:02", 5);
    let b = collision(z1.id, "00:00:00:00:00:01", 6);
    let other = collision(z2.id, "00:00:00:00:00:01", 7);
    store.write_collisions(&[a.clone(), b.clone(), other.clone()], &[], &[], &Default::default()).await.unwrap();
    assert_eq!(store.clear_collisions(z1.id).await.unwrap(), vec![b, a]);
    assert!(store.colliding_devices(z1.id).await.unwrap().is_empty());
    assert_eq!(store.all_collisions().await.unwrap(), vec![other]);
    assert!(store.clear_collisions(z1.id).await.unwrap().is_empty());
    // The zone itself stays.
    assert_eq!(store.get_zone(z1.id).await.unwrap(), z1);
}

pub(crate) async fn settings_are_upserted_by_name(store: Arc<dyn Store>) {
    assert!(store.list_settings().await.unwrap().is_empty());
    let radius = Setting { name: SettingName::DefaultDeviceRadiusMeters, value: 0.35, active: true };
    let site = Setting { name: SettingName::SiteAlarmMinLevel, value: 9.0, active: true };
    store.put_setting(&radius).await.unwrap();
    store.put_setting(&site).await.unwrap();
    // Listed in SettingName::ALL order, whatever the write order.
    assert_eq!(store.list_settings().await.unwrap(), vec![site, radius]);
    let site_off = Setting { value: 3.0, active: false, ..site };
    store.put_setting(&site_off).await.unwrap();
    assert_eq!(store.list_settings().await.unwrap(), vec![site_off, radius]);
}

pub(crate) async fn radii_merge_sets_replaces_and_removes(store: Arc<dyn Store>) {
    assert!(store.list_radii().await.unwrap().is_empty());
    let (a, b, c) = (mac("00:00:00:00:00:0A"), mac("00:00:00:00:00:0B"), mac("00:00:00:00:00:0C"));
    store.merge_radii(&[(b.clone(), Some(0.5)), (a.clone(), Some(1.25)), (c.clone(), None)]).await.unwrap();
    assert_eq!(store.list_radii().await.unwrap(), vec![(a.clone(), 1.25), (b.clone(), 0.5)]);
    store
        .merge_radii(&[(a.clone(), None), (b.clone(), Some(2.0)), (c.clone(), Some(0.1)), (c.clone(), Some(0.2))])
        .await
        .unwrap();
    assert_eq!(store.list_radii().await.unwrap(), vec![(b.clone(), 2.0), (c.clone(), 0.2)]);
    store.merge_radii(&[]).await.unwrap();
    store.merge_radii(&[(b.clone(), None), (c, None)]).await.unwrap();
    assert!(store.list_radii().await.unwrap().is_empty());
}

pub(crate) async fn find_radii_answers_each_device_asked_once_with_its_own_radius_or_none(store: Arc<dyn Store>) {
    let (a, b, c) = (mac("00:00:00:00:00:0A"), mac("00:00:00:00:00:0B"), mac("00:00:00:00:00:0C"));
    assert!(store.find_radii(&[]).await.unwrap().is_empty());
    assert_eq!(store.find_radii(std::slice::from_ref(&a)).await.unwrap(), vec![(a.clone(), None)]);
    store.merge_radii(&[(a.clone(), Some(0.5)), (b.clone(), Some(1.25))]).await.unwrap();
    assert_eq!(
        store.find_radii(&[c.clone(), a.clone(), c.clone()]).await.unwrap(),
        vec![(a.clone(), Some(0.5)), (c.clone(), None)],
        "sorted, once each, and only those asked"
    );
    store.merge_radii(&[(a.clone(), None), (c.clone(), Some(0.0))]).await.unwrap();
    assert_eq!(
        store.find_radii(&[a.clone(), b.clone(), c.clone()]).await.unwrap(),
        vec![(a, None), (b, Some(1.25)), (c, Some(0.0))]
    );
    // The evaluator's view reads them too.
    let evaluator: Arc<dyn EvaluatorStore> = store.clone();
    assert_eq!(evaluator.find_radii(&[mac("00:00:00:00:00:0B")]).await.unwrap().len(), 1);
}

pub(crate) async fn occupancy_is_counted_over_every_collision_and_each_change_reported_until_published(
    store: Arc<dyn Store>,
) {
    use zonecast_store::{OccupancyLimits, OccupancyState};
    let (dock, gone) = (zone("dock"), zone("gone"));
    store.insert_zones(std::slice::from_ref(&dock)).await.unwrap();
    let cap = OccupancyLimits { zone: dock.id, max: Some(1), min: None };
    let unknown = OccupancyLimits { zone: gone.id, max: Some(1), min: None };
    let now = at(0);
    assert!(store.count_occupancy(&[cap, unknown], now).await.unwrap().is_empty(), "within: nothing to report");
    // Two devices written by two evaluators: the count is over both.
    let (a, b) = (collision(dock.id, "00:00:00:00:00:01", 1), collision(dock.id, "00:00:00:00:00:02", 2));
    store.write_collisions(std::slice::from_ref(&a), &[], &[], &Default::default()).await.unwrap();
    store.write_collisions(std::slice::from_ref(&b), &[], &[], &Default::default()).await.unwrap();
    let changes = store.count_occupancy(&[cap], at(5)).await.unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let above = &changes[0];
    assert_eq!(
        (above.state, above.count, above.generation, above.changed_at, above.fresh),
        (OccupancyState::Above, 2, 1, at(5), true)
    );
    // Not published yet: answered again (and only once), however often the zone is counted, as
    // found by an earlier count.
    let again = store.count_occupancy(&[cap], at(6)).await.unwrap();
    assert_eq!(again, [zonecast_store::OccupancyChange { fresh: false, ..above.clone() }]);
    store.occupancy_published(dock.id, 1).await.unwrap();
    assert!(store.count_occupancy(&[cap], at(7)).await.unwrap().is_empty());
    store.write_collisions(&[], &[(dock.id, b.mac.clone())], &[], &Default::default()).await.unwrap();
    let back = store.count_occupancy(&[cap], at(8)).await.unwrap();
    assert_eq!(
        back.iter().map(|c| (c.state, c.count, c.generation)).collect::<Vec<_>>(),
        [(OccupancyState::Within, 1, 2)]
    );
    // Without limits the state is forgotten: set again, it starts afresh.
    store.count_occupancy(&[OccupancyLimits { zone: dock.id, max: None, min: None }], at(9)).await.unwrap();
    let again =
        store.count_occupancy(&[OccupancyLimits { zone: dock.id, max: Some(0), min: None }], at(10)).await.unwrap();
    assert_eq!(again.iter().map(|c| (c.state, c.generation)).collect::<Vec<_>>(), [(OccupancyState::Above, 1)]);
}
