//! The zone contract: round trips, versions, order, lookups and all-or-nothing batches.

use std::sync::Arc;

use uuid::Uuid;
use zonecast_model::{CollidingDevice, ZoneSpec, format_id};
use zonecast_store::{Store, StoreError, StoredConnection};

use super::fixtures::{assert_not_found, collision, connection, full_zone, names, zone};

pub(crate) async fn the_store_names_its_kind_and_answers_pings(store: Arc<dyn Store>) {
    assert!(["sqlite", "postgres"].contains(&store.kind()));
    store.ping().await.unwrap();
}

pub(crate) async fn zones_round_trip_with_every_field(store: Arc<dyn Store>) {
    let full = full_zone("full");
    let plain = zone("");
    store.insert_zones(&[full.clone(), plain.clone()]).await.unwrap();
    assert_eq!(store.get_zone(full.id).await.unwrap(), full);
    assert_eq!(store.get_zone(plain.id).await.unwrap(), plain);
    assert_eq!(store.list_zones().await.unwrap(), vec![full.clone(), plain.clone()]);

    let mut changed = full.clone();
    changed.name = "renamed".to_owned();
    changed.active = true;
    changed.stop_time = None;
    changed.is_timed = false;
    changed.device_list.clear();
    store.update_zones(&[changed.clone()]).await.unwrap();
    // A write raises the zone's version by one.
    assert_eq!(store.get_zone(full.id).await.unwrap(), ZoneSpec { version: 1, ..changed });
    assert_eq!(store.get_zone(plain.id).await.unwrap(), plain);
}

pub(crate) async fn a_zone_write_from_a_stale_read_is_a_conflict_and_changes_nothing(store: Arc<dyn Store>) {
    let (a, b) = (zone("a"), zone("b"));
    store.insert_zones(&[a.clone(), b.clone()]).await.unwrap();
    // Two writers read version 0; the first write wins and makes version 1.
    let first = ZoneSpec { name: "first".to_owned(), ..a.clone() };
    let second = ZoneSpec { name: "second".to_owned(), ..a.clone() };
    store.update_zones(std::slice::from_ref(&first)).await.unwrap();
    let other = ZoneSpec { name: "b2".to_owned(), ..b.clone() };
    let err = store.update_zones(&[other, second]).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { what: "zone", .. }), "{err:?}");
    assert_eq!(err.to_string(), format!("zone {} was changed by another write", format_id(&a.id)));
    // The batch is all or nothing: b is unchanged too.
    assert_eq!(store.list_zones().await.unwrap(), vec![ZoneSpec { version: 1, ..first.clone() }, b.clone()]);
    // Redone from a fresh read, the write goes through.
    let fresh = store.get_zone(a.id).await.unwrap();
    store.update_zones(&[ZoneSpec { name: "second".to_owned(), ..fresh }]).await.unwrap();
    assert_eq!(store.get_zone(a.id).await.unwrap().version, 2);
    // A missing zone is still not found, not a conflict.
    let ghost = zone("ghost");
    assert_not_found(store.update_zones(std::slice::from_ref(&ghost)).await, "zone", &format_id(&ghost.id));
}

pub(crate) async fn find_zones_answers_those_that_exist(store: Arc<dyn Store>) {
    let (a, b) = (zone("a"), zone("b"));
    store.insert_zones(&[a.clone(), b.clone()]).await.unwrap();
    let mut found = store.find_zones(&[b.id, Uuid::new_v4(), a.id]).await.unwrap();
    found.sort_by_key(|z| z.name.clone());
    assert_eq!(found, vec![a, b]);
    assert!(store.find_zones(&[]).await.unwrap().is_empty());
}

pub(crate) async fn connections_are_added_only_up_to_the_bound(store: Arc<dyn Store>) {
    let (a, b) = (connection(None, "a"), connection(None, "b"));
    store.insert_connection(&a, 1).await.unwrap();
    let err = store.insert_connection(&b, 1).await.unwrap_err();
    assert_eq!(err.to_string(), "at most 1 MQTT connections may exist; delete one first");
    assert_eq!(store.list_connections().await.unwrap().len(), 1);
    store.insert_connection(&b, 2).await.unwrap();
    // Concurrent inserts against one free place: exactly one lands.
    let racers: Vec<StoredConnection> = (0..8).map(|i| connection(None, &format!("r{i}"))).collect();
    let landed = futures::future::join_all(racers.iter().map(|c| store.insert_connection(c, 3))).await;
    assert_eq!(landed.iter().filter(|r| r.is_ok()).count(), 1, "{landed:?}");
    assert_eq!(store.list_connections().await.unwrap().len(), 3);
}

pub(crate) async fn a_zone_is_deleted_at_a_version_only_if_it_is_still_at_it(store: Arc<dyn Store>) {
    let a = zone("a");
    store.insert_zones(std::slice::from_ref(&a)).await.unwrap();
    store.update_zones(std::slice::from_ref(&a)).await.unwrap();
    let err = store.delete_zone_at(a.id, 0).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
    assert_eq!(store.list_zones().await.unwrap().len(), 1);
    store.delete_zone_at(a.id, 1).await.unwrap();
    assert!(store.list_zones().await.unwrap().is_empty());
    assert_not_found(store.delete_zone_at(a.id, 1).await, "zone", &format_id(&a.id));
}

pub(crate) async fn zones_list_in_creation_order(store: Arc<dyn Store>) {
    assert!(store.list_zones().await.unwrap().is_empty());
    let batch: Vec<ZoneSpec> = ["c", "a", "b"].into_iter().map(zone).collect();
    store.insert_zones(&batch).await.unwrap();
    store.insert_zones(&[zone("0")]).await.unwrap();
    store.insert_zones(&[]).await.unwrap();
    assert_eq!(names(&store.list_zones().await.unwrap()), ["c", "a", "b", "0"]);
    // Updating and deleting keep the order of the rest.
    let mut a = batch[1].clone();
    a.name = "a2".to_owned();
    store.update_zones(&[a]).await.unwrap();
    store.delete_zones(&[batch[0].id]).await.unwrap();
    store.insert_zones(&[zone("z")]).await.unwrap();
    assert_eq!(names(&store.list_zones().await.unwrap()), ["a2", "b", "0", "z"]);
}

pub(crate) async fn get_zones_answers_in_the_requested_order_and_fails_on_the_first_missing(store: Arc<dyn Store>) {
    let zones: Vec<ZoneSpec> = ["a", "b", "c"].into_iter().map(zone).collect();
    store.insert_zones(&zones).await.unwrap();
    let got = store.get_zones(&[zones[2].id, zones[0].id, zones[2].id]).await.unwrap();
    assert_eq!(names(&got), ["c", "a", "c"]);
    assert!(store.get_zones(&[]).await.unwrap().is_empty());
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    assert_not_found(store.get_zones(&[zones[0].id, first, second]).await, "zone", &format_id(&first));
}

pub(crate) async fn unknown_zones_are_not_found_by_their_upper_case_id(store: Arc<dyn Store>) {
    let id = Uuid::new_v4();
    let upper = format_id(&id);
    assert_eq!(upper, upper.to_ascii_uppercase());
    assert_not_found(store.get_zone(id).await, "zone", &upper);
    let err = store.get_zone(id).await.unwrap_err();
    assert_eq!(err.to_string(), format!("zone {upper} not found"));
    let mut ghost = zone("ghost");
    ghost.id = id;
    assert_not_found(store.update_zones(&[ghost]).await, "zone", &upper);
    assert_not_found(store.delete_zones(&[id]).await, "zone", &upper);
    assert!(store.colliding_devices(id).await.unwrap().is_empty());
    assert!(store.clear_collisions(id).await.unwrap().is_empty());
}

pub(crate) async fn a_zone_batch_with_a_duplicate_id_inserts_nothing(store: Arc<dyn Store>) {
    let existing = zone("existing");
    store.insert_zones(std::slice::from_ref(&existing)).await.unwrap();
    let mut dup = zone("dup");
    dup.id = existing.id;
    let err = store.insert_zones(&[zone("new"), dup]).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
    assert_eq!(err.to_string(), "store error");
    // Duplicates within one batch are refused as well.
    let twin = zone("twin");
    assert!(store.insert_zones(&[twin.clone(), twin]).await.is_err());
    assert_eq!(store.list_zones().await.unwrap(), vec![existing.clone()]);
    assert_eq!(store.get_zone(existing.id).await.unwrap().name, "existing");
}

pub(crate) async fn an_update_batch_with_an_unknown_id_changes_nothing(store: Arc<dyn Store>) {
    let zones: Vec<ZoneSpec> = ["a", "b"].into_iter().map(zone).collect();
    store.insert_zones(&zones).await.unwrap();
    let mut a = zones[0].clone();
    a.name = "changed".to_owned();
    let mut ghost = zone("ghost");
    let missing = Uuid::new_v4();
    ghost.id = missing;
    assert_not_found(store.update_zones(&[a.clone(), ghost]).await, "zone", &format_id(&missing));
    assert_eq!(store.list_zones().await.unwrap(), zones);
    store.update_zones(&[a.clone()]).await.unwrap();
    assert_eq!(names(&store.list_zones().await.unwrap()), ["changed", "b"]);
}

pub(crate) async fn a_delete_batch_with_an_unknown_id_deletes_nothing(store: Arc<dyn Store>) {
    let zones: Vec<ZoneSpec> = ["a", "b", "c"].into_iter().map(zone).collect();
    store.insert_zones(&zones).await.unwrap();
    let inside = collision(zones[0].id, "00:00:00:00:00:01", 0);
    store.write_collisions(std::slice::from_ref(&inside), &[], &[], &Default::default()).await.unwrap();
    let missing = Uuid::new_v4();
    assert_not_found(store.delete_zones(&[zones[0].id, missing, zones[1].id]).await, "zone", &format_id(&missing));
    assert_eq!(store.list_zones().await.unwrap(), zones);
    assert_eq!(store.colliding_devices(zones[0].id).await.unwrap(), [CollidingDevice::from(inside)]);
    // Deleting the same zone twice in one batch: the second finds it gone.
    assert_not_found(store.delete_zones(&[zones[2].id, zones[2].id]).await, "zone", &format_id(&zones[2].id));
    assert_eq!(store.list_zones().await.unwrap().len(), 3);
    store.delete_zones(&[zones[0].id, zones[1].id]).await.unwrap();
    assert_eq!(names(&store.list_zones().await.unwrap()), ["c"]);
}
