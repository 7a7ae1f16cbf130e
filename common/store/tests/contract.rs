//! The Store contract: one suite of behaviours, run against SQLite (a file in a temporary
//! directory) and PostgreSQL (a fresh database per test on `ZONECAST_TEST_DATABASE_URL`).
#![allow(clippy::unwrap_used)] // a panic is how a test reports failure

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;
use uuid::Uuid;
use zonecast_model::{
    CollidingDevice, ConfigChanged, ConfigKind, ConfigOperation, Connection, Mac, Setting, SettingName, Topic,
    ZoneInput, ZoneSpec, format_id,
};
use zonecast_store::{
    ApiStore, CHANGES_KEPT, Collision, ConnectionStatus, EvaluatorStore, ForwarderStore, PgStore, SettingReader,
    SettingWriter, SqliteStore, Store, StoreError, StoredCertificate, StoredConnection, ZoneReader, ZoneWriter,
    postgres,
};

const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const PG_START: &str = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start";

// ---------------------------------------------------------------------------------------------
// Harness

/// A store for one test and what to clean up once the test has passed.
struct Harness {
    store: Arc<dyn Store>,
    cleanup: Cleanup,
}

enum Cleanup {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres { admin_url: String, name: String },
}

fn admin_url() -> String {
    std::env::var("ZONECAST_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_DATABASE_URL.to_owned())
}

async fn sqlite() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("zonecast.db")).unwrap();
    Harness { store: Arc::new(store), cleanup: Cleanup::Sqlite(dir) }
}

/// A fresh PostgreSQL database; fails the test loudly when the server is not running.
async fn fresh_pg_database() -> (String, String) {
    let admin_url = admin_url();
    let name = format!("zonecast_store_{}", Uuid::new_v4().simple());
    match postgres::create_database(&admin_url, &name).await {
        Ok(url) => (url, name),
        Err(e) => panic!(
            "PostgreSQL at ZONECAST_TEST_DATABASE_URL (default {DEFAULT_TEST_DATABASE_URL}) is needed \
             for the PostgreSQL store tests and could not create a database: {e:?}. Start it with: {PG_START}"
        ),
    }
}

async fn pg() -> Harness {
    let (url, name) = fresh_pg_database().await;
    let store = PgStore::connect(&url, 4).await.unwrap();
    Harness { store: Arc::new(store), cleanup: Cleanup::Postgres { admin_url: admin_url(), name } }
}

impl Harness {
    /// Called only when the test body returned: a failed test keeps its database to look at.
    async fn passed(self) {
        drop(self.store);
        match self.cleanup {
            Cleanup::Sqlite(_) => {}
            Cleanup::Postgres { admin_url, name } => {
                if let Err(e) = postgres::drop_database(&admin_url, &name).await {
                    eprintln!("could not drop test database {name}: {e:?}");
                }
            }
        }
    }
}

/// Runs each listed contract test against both stores.
macro_rules! contract {
    ($($test:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    let h = super::sqlite().await;
                    super::$test(h.store.clone()).await;
                    h.passed().await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    let h = super::pg().await;
                    super::$test(h.store.clone()).await;
                    h.passed().await;
                }
            )*
        }
    };
}

contract!(
    the_store_names_its_kind_and_answers_pings,
    zones_round_trip_with_every_field,
    a_zone_write_from_a_stale_read_is_a_conflict_and_changes_nothing,
    a_zone_is_deleted_at_a_version_only_if_it_is_still_at_it,
    connections_are_added_only_up_to_the_bound,
    find_zones_answers_those_that_exist,
    zones_list_in_creation_order,
    get_zones_answers_in_the_requested_order_and_fails_on_the_first_missing,
    unknown_zones_are_not_found_by_their_upper_case_id,
    a_zone_batch_with_a_duplicate_id_inserts_nothing,
    an_update_batch_with_an_unknown_id_changes_nothing,
    a_delete_batch_with_an_unknown_id_deletes_nothing,
    collisions_are_upserted_and_deleted_in_one_batch,
    collisions_for_deleted_zones_are_ignored_and_go_with_their_zone,
    clearing_a_zone_returns_and_removes_only_its_collisions,
    settings_are_upserted_by_name,
    radii_merge_sets_replaces_and_removes,
    find_radii_answers_each_device_asked_once_with_its_own_radius_or_none,
    connections_round_trip_in_creation_order,
    a_connection_must_name_an_existing_certificate_profile,
    a_certificate_profile_in_use_cannot_be_deleted,
    certificate_profiles_round_trip_in_creation_order,
    connection_status_is_kept_per_replica,
    each_service_view_of_one_store_sees_what_the_others_wrote,
    the_change_log_numbers_changes_in_order_and_answers_those_after_a_revision,
    concurrent_appends_to_the_change_log_get_distinct_revisions_without_holes,
    a_reader_further_behind_than_the_log_keeps_is_told_to_read_everything,
);

// ---------------------------------------------------------------------------------------------
// Builders

fn change(kind: ConfigKind, id: &str) -> ConfigChanged {
    ConfigChanged { kind, ids: vec![id.into()], operation: None, revision: 0 }
}

fn mac(s: &str) -> Mac {
    s.parse().unwrap()
}

/// Schema steps each dialect has (`migrations/<dialect>/V<n>__*.sql`).
const MIGRATIONS: usize = 3;

fn at(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_795_000_000_000 + ms).unwrap()
}

/// A zone with every field set away from its default.
fn full_zone(name: &str) -> ZoneSpec {
    let input = json!({
        "Name": name,
        "GeometryType": "cuboid",
        "GeometryData": [[1.5, -2.25, 0.1], [4, 3, 2.5], [1, 1, 0], [-1, 1, 0], [0, 0, 1]],
        "AlertLevel": 7,
        "Active": false,
        "InclusionPolicy": "none",
        "DeviceList": ["00:aa:bb:cc:dd:01", "00-AA-BB-CC-DD-02"],
        "ZoneActions": [
            {"type": "info-event", "message": "hello ünïcode", "on": "both"},
            {"type": "device-alarm", "on": "exit"},
            {"type": "http-request", "uri": "https://example.com/hook?a=1", "method": "put",
             "headers": {"X-Token": "t"}, "on": "enter"}
        ],
        "IsTimed": true,
        "StartTime": "2026-11-21T10:00:00.123Z",
        "StopTime": "2026-11-22T10:00:00.000Z",
        "MobileOriginSource": "00:AA:BB:CC:DD:FF"
    });
    let spec = ZoneInput::parse(&input, &zonecast_model::Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap();
    ZoneSpec { is_geometry_locked: true, ..spec }
}

/// A minimal zone.
fn zone(name: &str) -> ZoneSpec {
    let input = json!({"Name": name, "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]]});
    ZoneInput::parse(&input, &zonecast_model::Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap()
}

fn collision(zone: Uuid, device: &str, ms: i64) -> Collision {
    Collision { zone_id: zone, mac: mac(device), collision_id: Uuid::new_v4(), entry_time: at(ms) }
}

fn certificate(name: &str) -> StoredCertificate {
    StoredCertificate { id: Uuid::new_v4(), name: name.to_owned(), sealed: vec![0, 1, 2, 255, 0] }
}

fn connection(profile: Option<Uuid>, host: &str) -> StoredConnection {
    StoredConnection {
        connection: Connection {
            id: Uuid::new_v4(),
            host: host.to_owned(),
            port: 8883,
            tls: profile.is_some(),
            certificate_profile_id: profile,
            username: Some("forwarder".to_owned()),
            has_password: true,
            topics: vec![Topic {
                topic: "site/1/zones".to_owned(),
                filter_chain: json!([{"field": "EventType", "equals": "ZONE_ENTER"}]),
            }],
        },
        password_sealed: Some(vec![9, 8, 7, 0, 6]),
    }
}

fn status(connection_id: Uuid, replica: &str, forwarded: u64, ms: i64) -> ConnectionStatus {
    ConnectionStatus {
        connection_id,
        replica: replica.to_owned(),
        connected: true,
        last_error: None,
        forwarded,
        dropped: 1,
        queued: 2,
        updated_at: at(ms),
    }
}

fn names(zones: &[ZoneSpec]) -> Vec<&str> {
    zones.iter().map(|z| z.name.as_str()).collect()
}

#[track_caller]
fn assert_not_found(result: Result<impl std::fmt::Debug, StoreError>, what: &str, id: &str) {
    match result {
        Err(StoreError::NotFound { what: w, id: i }) => {
            assert_eq!((w, i.as_str()), (what, id));
        }
        other => panic!("expected NotFound {{ {what}, {id} }}, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The contract

async fn the_store_names_its_kind_and_answers_pings(store: Arc<dyn Store>) {
    assert!(["sqlite", "postgres"].contains(&store.kind()));
    store.ping().await.unwrap();
}

async fn zones_round_trip_with_every_field(store: Arc<dyn Store>) {
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

async fn a_zone_write_from_a_stale_read_is_a_conflict_and_changes_nothing(store: Arc<dyn Store>) {
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

async fn find_zones_answers_those_that_exist(store: Arc<dyn Store>) {
    let (a, b) = (zone("a"), zone("b"));
    store.insert_zones(&[a.clone(), b.clone()]).await.unwrap();
    let mut found = store.find_zones(&[b.id, Uuid::new_v4(), a.id]).await.unwrap();
    found.sort_by_key(|z| z.name.clone());
    assert_eq!(found, vec![a, b]);
    assert!(store.find_zones(&[]).await.unwrap().is_empty());
}

async fn connections_are_added_only_up_to_the_bound(store: Arc<dyn Store>) {
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

async fn a_zone_is_deleted_at_a_version_only_if_it_is_still_at_it(store: Arc<dyn Store>) {
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

async fn zones_list_in_creation_order(store: Arc<dyn Store>) {
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

async fn get_zones_answers_in_the_requested_order_and_fails_on_the_first_missing(store: Arc<dyn Store>) {
    let zones: Vec<ZoneSpec> = ["a", "b", "c"].into_iter().map(zone).collect();
    store.insert_zones(&zones).await.unwrap();
    let got = store.get_zones(&[zones[2].id, zones[0].id, zones[2].id]).await.unwrap();
    assert_eq!(names(&got), ["c", "a", "c"]);
    assert!(store.get_zones(&[]).await.unwrap().is_empty());
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    assert_not_found(store.get_zones(&[zones[0].id, first, second]).await, "zone", &format_id(&first));
}

async fn unknown_zones_are_not_found_by_their_upper_case_id(store: Arc<dyn Store>) {
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

async fn a_zone_batch_with_a_duplicate_id_inserts_nothing(store: Arc<dyn Store>) {
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

async fn an_update_batch_with_an_unknown_id_changes_nothing(store: Arc<dyn Store>) {
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

async fn a_delete_batch_with_an_unknown_id_deletes_nothing(store: Arc<dyn Store>) {
    let zones: Vec<ZoneSpec> = ["a", "b", "c"].into_iter().map(zone).collect();
    store.insert_zones(&zones).await.unwrap();
    let inside = collision(zones[0].id, "00:00:00:00:00:01", 0);
    store.write_collisions(std::slice::from_ref(&inside), &[]).await.unwrap();
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

async fn collisions_are_upserted_and_deleted_in_one_batch(store: Arc<dyn Store>) {
    let (z1, z2) = (zone("one"), zone("two"));
    store.insert_zones(&[z1.clone(), z2.clone()]).await.unwrap();
    let a = collision(z1.id, "00:00:00:00:00:0B", 1);
    let b = collision(z1.id, "00:00:00:00:00:0A", 2);
    let c = collision(z2.id, "00:00:00:00:00:0A", 3);
    store.write_collisions(&[a.clone(), b.clone(), c.clone()], &[]).await.unwrap();
    // The stays of one zone, by MAC, each with the CollisionID and EntryTime written.
    let inside: Vec<CollidingDevice> = vec![b.clone().into(), a.clone().into()];
    assert_eq!(store.colliding_devices(z1.id).await.unwrap(), inside);
    let mut expected = vec![a.clone(), b.clone(), c.clone()];
    expected.sort_by(|x, y| (x.zone_id, &x.mac).cmp(&(y.zone_id, &y.mac)));
    assert_eq!(store.all_collisions().await.unwrap(), expected);

    // Re-entering replaces the stay; exits remove; unknown exits are no-ops.
    let a2 = Collision { collision_id: Uuid::new_v4(), entry_time: at(10), ..a.clone() };
    store
        .write_collisions(std::slice::from_ref(&a2), &[(z2.id, c.mac.clone()), (z2.id, mac("00:00:00:00:00:FF"))])
        .await
        .unwrap();
    let mut expected = vec![a2.clone(), b.clone()];
    expected.sort_by(|x, y| x.mac.cmp(&y.mac));
    assert_eq!(store.all_collisions().await.unwrap(), expected);
    assert!(store.colliding_devices(z2.id).await.unwrap().is_empty());

    // Within one batch the last entry for a pair wins, and a pair both entered and exited is gone.
    let a3 = Collision { collision_id: Uuid::new_v4(), ..a.clone() };
    let d = collision(z2.id, "00:00:00:00:00:0D", 4);
    store.write_collisions(&[a2.clone(), a3.clone(), d.clone()], &[(z2.id, d.mac.clone())]).await.unwrap();
    let all = store.all_collisions().await.unwrap();
    assert!(all.contains(&a3) && !all.contains(&a2) && !all.iter().any(|x| x.mac == d.mac), "{all:?}");
    store.write_collisions(&[], &[]).await.unwrap();
}

async fn collisions_for_deleted_zones_are_ignored_and_go_with_their_zone(store: Arc<dyn Store>) {
    let (kept, gone) = (zone("kept"), zone("gone"));
    store.insert_zones(&[kept.clone(), gone.clone()]).await.unwrap();
    let k = collision(kept.id, "00:00:00:00:00:01", 0);
    store.write_collisions(&[k.clone(), collision(gone.id, "00:00:00:00:00:02", 0)], &[]).await.unwrap();
    store.delete_zones(&[gone.id]).await.unwrap();
    assert_eq!(store.all_collisions().await.unwrap(), vec![k.clone()]);
    assert!(store.colliding_devices(gone.id).await.unwrap().is_empty());
    // A late batch from the evaluator still naming the deleted zone: its rows are skipped.
    let late = collision(gone.id, "00:00:00:00:00:03", 1);
    let fresh = collision(kept.id, "00:00:00:00:00:04", 1);
    store.write_collisions(&[late, fresh.clone()], &[(gone.id, mac("00:00:00:00:00:02"))]).await.unwrap();
    assert_eq!(store.all_collisions().await.unwrap(), vec![k, fresh]);
}

async fn clearing_a_zone_returns_and_removes_only_its_collisions(store: Arc<dyn Store>) {
    let (z1, z2) = (zone("one"), zone("two"));
    store.insert_zones(&[z1.clone(), z2.clone()]).await.unwrap();
    let a = collision(z1.id, "00:00:00:00:00:02", 5);
    let b = collision(z1.id, "00:00:00:00:00:01", 6);
    let other = collision(z2.id, "00:00:00:00:00:01", 7);
    store.write_collisions(&[a.clone(), b.clone(), other.clone()], &[]).await.unwrap();
    assert_eq!(store.clear_collisions(z1.id).await.unwrap(), vec![b, a]);
    assert!(store.colliding_devices(z1.id).await.unwrap().is_empty());
    assert_eq!(store.all_collisions().await.unwrap(), vec![other]);
    assert!(store.clear_collisions(z1.id).await.unwrap().is_empty());
    // The zone itself stays.
    assert_eq!(store.get_zone(z1.id).await.unwrap(), z1);
}

async fn settings_are_upserted_by_name(store: Arc<dyn Store>) {
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

async fn radii_merge_sets_replaces_and_removes(store: Arc<dyn Store>) {
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

async fn find_radii_answers_each_device_asked_once_with_its_own_radius_or_none(store: Arc<dyn Store>) {
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

async fn connections_round_trip_in_creation_order(store: Arc<dyn Store>) {
    let profile = certificate("ca");
    store.insert_certificate(&profile).await.unwrap();
    let tls = connection(Some(profile.id), "broker-b.example");
    let mut plain = connection(None, "broker-a.example");
    plain.password_sealed = None;
    plain.connection.has_password = false;
    plain.connection.username = None;
    store.insert_connection(&tls, 100).await.unwrap();
    store.insert_connection(&plain, 100).await.unwrap();
    assert_eq!(store.list_connections().await.unwrap(), vec![tls.clone(), plain.clone()]);
    assert_eq!(store.get_connection(tls.connection.id).await.unwrap(), tls);

    let mut changed = tls.clone();
    changed.connection.tls = false;
    changed.connection.certificate_profile_id = None;
    changed.connection.port = 1883;
    changed.password_sealed = Some(vec![1, 2, 3]);
    assert_eq!(store.update_connection(&changed, false).await.unwrap(), changed);
    assert_eq!(store.get_connection(tls.connection.id).await.unwrap(), changed);
    assert_eq!(store.list_connections().await.unwrap(), vec![changed.clone(), plain.clone()]);

    // An update that keeps the password keeps the one stored at that moment, even if it read
    // none (a concurrent write set it): the password is not part of what it replaces.
    let mut renamed = changed.clone();
    renamed.connection.host = "renamed".to_owned();
    renamed.password_sealed = None;
    renamed.connection.has_password = false;
    let kept = store.update_connection(&renamed, true).await.unwrap();
    assert_eq!((kept.password_sealed.as_deref(), kept.connection.has_password), (Some(&[1u8, 2, 3][..]), true));
    assert_eq!(kept.connection.host, "renamed");
    let changed = kept;

    let missing = connection(None, "nowhere");
    let id = format_id(&missing.connection.id);
    assert_not_found(store.get_connection(missing.connection.id).await, "connection", &id);
    assert_not_found(store.update_connection(&missing, false).await, "connection", &id);
    assert_not_found(store.delete_connection(missing.connection.id).await, "connection", &id);
    assert!(store.insert_connection(&plain, 100).await.is_err(), "duplicate id");

    store.delete_connection(plain.connection.id).await.unwrap();
    assert_eq!(store.list_connections().await.unwrap(), vec![changed]);
    // Debug shows the size of the sealed password, never its bytes.
    let debug = format!("{tls:?}");
    assert!(debug.contains("password_sealed_len: Some(5)") && !debug.contains("[9, 8, 7"), "{debug}");
}

async fn a_connection_must_name_an_existing_certificate_profile(store: Arc<dyn Store>) {
    let missing = Uuid::new_v4();
    let c = connection(Some(missing), "broker");
    match store.insert_connection(&c, 100).await {
        Err(StoreError::Reference { field, what, id }) => {
            assert_eq!((field, what, id), ("CertificateProfileID", "certificate profile", format_id(&missing)));
        }
        other => panic!("expected Reference, got {other:?}"),
    }
    let err = store.insert_connection(&c, 100).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("CertificateProfileID: certificate profile {} does not exist", format_id(&missing))
    );
    assert!(store.list_connections().await.unwrap().is_empty());

    let profile = certificate("ca");
    store.insert_certificate(&profile).await.unwrap();
    let ok = connection(Some(profile.id), "broker");
    store.insert_connection(&ok, 100).await.unwrap();
    let mut bad = ok.clone();
    bad.connection.certificate_profile_id = Some(missing);
    bad.connection.host = "elsewhere".to_owned();
    assert!(matches!(
        store.update_connection(&bad, false).await,
        Err(StoreError::Reference { field: "CertificateProfileID", .. })
    ));
    assert_eq!(store.get_connection(ok.connection.id).await.unwrap(), ok);
}

async fn a_certificate_profile_in_use_cannot_be_deleted(store: Arc<dyn Store>) {
    let profile = certificate("ca");
    store.insert_certificate(&profile).await.unwrap();
    let user = connection(Some(profile.id), "broker");
    store.insert_connection(&user, 100).await.unwrap();
    store.put_connection_status(&status(user.connection.id, "fwd-1", 3, 0)).await.unwrap();
    match store.delete_certificate(profile.id).await {
        Err(StoreError::InUse { what, id, by }) => {
            assert_eq!(what, "certificate profile");
            assert_eq!(id, format_id(&profile.id));
            assert_eq!(by, format!("connection {}", format_id(&user.connection.id)));
        }
        other => panic!("expected InUse, got {other:?}"),
    }
    assert_eq!(store.get_certificate(profile.id).await.unwrap(), profile);
    store.delete_connection(user.connection.id).await.unwrap();
    assert!(store.connection_status(user.connection.id).await.unwrap().is_empty());
    store.delete_certificate(profile.id).await.unwrap();
    assert!(store.list_certificates().await.unwrap().is_empty());
}

async fn certificate_profiles_round_trip_in_creation_order(store: Arc<dyn Store>) {
    let (b, a) = (certificate("b"), certificate("a"));
    store.insert_certificate(&b).await.unwrap();
    store.insert_certificate(&a).await.unwrap();
    assert_eq!(store.list_certificates().await.unwrap(), vec![(b.id, "b".to_owned()), (a.id, "a".to_owned())]);
    assert_eq!(store.get_certificate(a.id).await.unwrap(), a);
    assert!(store.insert_certificate(&a).await.is_err(), "duplicate id");

    let b2 = StoredCertificate { name: "b2".to_owned(), sealed: vec![42; 3000], ..b.clone() };
    store.update_certificate(&b2).await.unwrap();
    assert_eq!(store.get_certificate(b.id).await.unwrap(), b2);
    let debug = format!("{b2:?}");
    assert!(debug.contains("sealed_len: 3000") && !debug.contains("42, 42"), "{debug}");

    let ghost = certificate("ghost");
    let id = format_id(&ghost.id);
    assert_not_found(store.get_certificate(ghost.id).await, "certificate profile", &id);
    assert_not_found(store.update_certificate(&ghost).await, "certificate profile", &id);
    assert_not_found(store.delete_certificate(ghost.id).await, "certificate profile", &id);

    store.delete_certificate(b.id).await.unwrap();
    assert_eq!(store.list_certificates().await.unwrap(), vec![(a.id, "a".to_owned())]);
}

async fn connection_status_is_kept_per_replica(store: Arc<dyn Store>) {
    let c = connection(None, "broker");
    store.insert_connection(&c, 100).await.unwrap();
    let id = c.connection.id;
    assert!(store.connection_status(id).await.unwrap().is_empty());

    let r2 = status(id, "fwd-2", 10, 1);
    let r1 = ConnectionStatus {
        connected: false,
        last_error: Some("connection refused".to_owned()),
        ..status(id, "fwd-1", 0, 2)
    };
    store.put_connection_status(&r2).await.unwrap();
    store.put_connection_status(&r1).await.unwrap();
    assert_eq!(store.connection_status(id).await.unwrap(), vec![r1.clone(), r2.clone()]);

    let r1b = ConnectionStatus { connected: true, last_error: None, forwarded: 5, queued: 0, updated_at: at(3), ..r1 };
    store.put_connection_status(&r1b).await.unwrap();
    assert_eq!(store.connection_status(id).await.unwrap(), vec![r1b, r2]);

    // Huge counters saturate instead of wrapping.
    let huge = ConnectionStatus { forwarded: u64::MAX, ..status(id, "fwd-3", 0, 4) };
    store.put_connection_status(&huge).await.unwrap();
    let rows = store.connection_status(id).await.unwrap();
    assert_eq!(rows.last().map(|s| s.forwarded), Some(i64::MAX as u64));

    // A status for a deleted connection is ignored.
    let gone = Uuid::new_v4();
    store.put_connection_status(&status(gone, "fwd-1", 1, 5)).await.unwrap();
    assert!(store.connection_status(gone).await.unwrap().is_empty());
}

/// The compositions hand one opened store to every service as that service's view.
async fn each_service_view_of_one_store_sees_what_the_others_wrote(store: Arc<dyn Store>) {
    let api: Arc<dyn ApiStore> = store.clone();
    let evaluator: Arc<dyn EvaluatorStore> = store.clone();
    let forwarder: Arc<dyn ForwarderStore> = store;
    assert_eq!([evaluator.kind(), forwarder.kind()], [api.kind(); 2]);
    api.ping().await.unwrap();
    evaluator.ping().await.unwrap();
    forwarder.ping().await.unwrap();

    let z = zone("seen by all");
    api.insert_zones(std::slice::from_ref(&z)).await.unwrap();
    assert_eq!(evaluator.list_zones().await.unwrap(), vec![z.clone()]);
    let inside = collision(z.id, "00:AA:BB:CC:DD:01", 1);
    evaluator.write_collisions(std::slice::from_ref(&inside), &[]).await.unwrap();
    assert_eq!(api.colliding_devices(z.id).await.unwrap(), vec![CollidingDevice::from(inside)]);

    let c = connection(None, "broker");
    api.insert_connection(&c, 100).await.unwrap();
    assert_eq!(forwarder.list_connections().await.unwrap(), vec![c.clone()]);
    let row = status(c.connection.id, "fwd-1", 3, 2);
    forwarder.put_connection_status(&row).await.unwrap();
    assert_eq!(api.connection_status(c.connection.id).await.unwrap(), vec![row]);
}

// ---------------------------------------------------------------------------------------------
// Dialect-specific behaviour

#[tokio::test]
async fn a_reopened_sqlite_file_keeps_its_data_and_migrates_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dirs/zonecast.db");
    let z = full_zone("persisted");
    {
        let store = SqliteStore::open(&path).unwrap();
        store.insert_zones(std::slice::from_ref(&z)).await.unwrap();
        store.put_setting(&Setting { name: SettingName::ExitDelayMs, value: 500.0, active: true }).await.unwrap();
    }
    assert!(path.exists());
    for _ in 0..2 {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.list_zones().await.unwrap(), vec![z.clone()]);
        assert_eq!(store.list_settings().await.unwrap().len(), 1);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let applied: i64 = conn.query_row("SELECT count(*) FROM zonecast_migrations", [], |r| r.get(0)).unwrap();
    assert_eq!(applied as usize, MIGRATIONS);
    // Two stores on one file at once (e.g. a CLI next to the server) both work.
    let (s1, s2) = (SqliteStore::open(&path).unwrap(), SqliteStore::open(&path).unwrap());
    s1.insert_zones(&[zone("from s1")]).await.unwrap();
    assert_eq!(s2.list_zones().await.unwrap().len(), 2);
}

#[tokio::test]
async fn open_without_a_database_url_uses_the_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data/zonecast.db");
    let store = zonecast_store::open(None, zonecast_store::DEFAULT_POOL_SIZE, &path).await.unwrap();
    assert_eq!(store.kind(), "sqlite");
    store.ping().await.unwrap();
    assert!(path.exists());
    let blank = zonecast_store::open(Some("  "), zonecast_store::DEFAULT_POOL_SIZE, &path).await.unwrap();
    assert_eq!(blank.kind(), "sqlite");
}

#[tokio::test]
async fn open_with_a_database_url_uses_postgres() {
    let (url, name) = fresh_pg_database().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unused.db");
    let store = zonecast_store::open(Some(&url), zonecast_store::DEFAULT_POOL_SIZE, &path).await.unwrap();
    assert_eq!(store.kind(), "postgres");
    store.ping().await.unwrap();
    assert!(!path.exists());
    Harness { store, cleanup: Cleanup::Postgres { admin_url: admin_url(), name } }.passed().await;
}

/// Connections the server holds open to database `name` (this query's own is to another one).
async fn connections_to(name: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(&admin_url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let row = client.query_one("SELECT count(*) FROM pg_stat_activity WHERE datname = $1", &[&name]).await.unwrap();
    row.get(0)
}

#[tokio::test]
async fn the_configured_pool_bounds_the_connections_to_postgres() {
    for pool in [1, 3] {
        let (url, name) = fresh_pg_database().await;
        let path = tempfile::tempdir().unwrap().path().join("unused.db");
        let store = zonecast_store::open(Some(&url), pool, &path).await.unwrap();
        // Many requests at once: a pool lets each wait for a connection rather than open another.
        let reads = futures::future::join_all((0..32).map(|_| store.list_zones())).await;
        assert!(reads.iter().all(Result::is_ok));
        let held = connections_to(&name).await;
        assert!(held >= 1 && held <= pool as i64, "pool {pool}: {held} connections held");
        Harness { store, cleanup: Cleanup::Postgres { admin_url: admin_url(), name } }.passed().await;
    }
}

#[tokio::test]
async fn replicas_starting_together_migrate_a_fresh_database_once() {
    let (url, name) = fresh_pg_database().await;
    let (a, b, c, d) = tokio::join!(
        PgStore::connect(&url, 2),
        PgStore::connect(&url, 2),
        PgStore::connect(&url, 2),
        PgStore::connect(&url, 2)
    );
    let stores = [a.unwrap(), b.unwrap(), c.unwrap(), d.unwrap()];
    let z = zone("shared");
    stores[0].insert_zones(std::slice::from_ref(&z)).await.unwrap();
    for s in &stores {
        assert_eq!(s.list_zones().await.unwrap(), vec![z.clone()]);
    }
    // And a later start finds nothing to do.
    let again = PgStore::connect(&url, 1).await.unwrap();
    assert_eq!(again.list_zones().await.unwrap(), vec![z]);
    let (client, driver) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(driver);
    let applied: i64 = client.query_one("SELECT count(*) FROM zonecast_migrations", &[]).await.unwrap().get(0);
    assert_eq!(applied as usize, MIGRATIONS);
    drop(client);
    drop(stores);
    Harness { store: Arc::new(again), cleanup: Cleanup::Postgres { admin_url: admin_url(), name } }.passed().await;
}

#[tokio::test]
async fn connecting_to_a_closed_port_fails_quickly_as_unavailable_without_the_password() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let started = Instant::now();
    let err = PgStore::connect(&format!("postgres://zonecast:hunter2@127.0.0.1:{port}/zonecast"), 2).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    match &err {
        StoreError::Unavailable(reason) => {
            assert!(reason.contains(&format!("127.0.0.1:{port}")), "{reason}");
            assert!(reason.to_lowercase().contains("refused"), "{reason}");
            assert!(!reason.contains("hunter2"), "{reason}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert_eq!(err.to_string(), "store unavailable");
}

#[tokio::test]
async fn database_names_outside_lower_case_letters_digits_and_underscores_are_refused() {
    assert!(postgres::create_database(&admin_url(), "Bad-Name").await.is_err());
}

async fn the_change_log_numbers_changes_in_order_and_answers_those_after_a_revision(store: Arc<dyn Store>) {
    assert_eq!(store.revision().await.unwrap(), 0);
    assert_eq!(store.changes_since(0).await.unwrap(), Some(Vec::new()));
    let reset = ConfigChanged { operation: Some(ConfigOperation::Reset), ..change(ConfigKind::Zones, "Z1") };
    assert_eq!(store.log_change(&reset).await.unwrap(), 1);
    assert_eq!(store.log_change(&change(ConfigKind::Radii, "00:AA:BB:CC:DD:EE")).await.unwrap(), 2);
    assert_eq!(store.log_change(&change(ConfigKind::Connections, "C1")).await.unwrap(), 3);
    assert_eq!(store.revision().await.unwrap(), 3);
    // Each view that applies changes reads them.
    let evaluator: Arc<dyn EvaluatorStore> = store.clone();
    let since_one = evaluator.changes_since(1).await.unwrap().unwrap();
    assert_eq!(
        since_one.iter().map(|c| (c.revision, c.kind)).collect::<Vec<_>>(),
        [(2, ConfigKind::Radii), (3, ConfigKind::Connections)]
    );
    let forwarder: Arc<dyn ForwarderStore> = store.clone();
    let all = forwarder.changes_since(0).await.unwrap().unwrap();
    assert_eq!(all[0], ConfigChanged { revision: 1, ..reset });
    assert_eq!(forwarder.changes_since(3).await.unwrap(), Some(Vec::new()));
}

async fn concurrent_appends_to_the_change_log_get_distinct_revisions_without_holes(store: Arc<dyn Store>) {
    let changes: Vec<ConfigChanged> = (0..40).map(|i| change(ConfigKind::Zones, &format!("Z{i}"))).collect();
    let mut revisions: Vec<u64> = futures::future::join_all(changes.iter().map(|c| store.log_change(c)))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    revisions.sort_unstable();
    assert_eq!(revisions, (1..=40).collect::<Vec<u64>>());
    let logged = store.changes_since(0).await.unwrap().unwrap();
    assert_eq!(logged.iter().map(|c| c.revision).collect::<Vec<_>>(), revisions);
    let mut ids: Vec<String> = logged.into_iter().flat_map(|c| c.ids).collect();
    ids.sort_unstable();
    let mut expected: Vec<String> = changes.into_iter().flat_map(|c| c.ids).collect();
    expected.sort_unstable();
    assert_eq!(ids, expected);
}

async fn a_reader_further_behind_than_the_log_keeps_is_told_to_read_everything(store: Arc<dyn Store>) {
    for i in 0..CHANGES_KEPT + 5 {
        store.log_change(&change(ConfigKind::Settings, &format!("S{i}"))).await.unwrap();
    }
    assert_eq!(store.revision().await.unwrap(), CHANGES_KEPT + 5);
    // The oldest five were pruned: a reader that applied up to 2 has missed some for good.
    assert_eq!(store.changes_since(2).await.unwrap(), None);
    assert_eq!(store.changes_since(0).await.unwrap(), None);
    let kept = store.changes_since(5).await.unwrap().unwrap();
    assert_eq!(kept.len() as u64, CHANGES_KEPT);
    assert_eq!(kept.first().map(|c| c.revision), Some(6));
}
