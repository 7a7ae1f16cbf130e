//! The Store contract: one suite of behaviours, run against SQLite (a file in a temporary
//! directory) and PostgreSQL (a fresh database per test on `ZONECAST_TEST_DATABASE_URL`).
#![allow(clippy::unwrap_used)] // a panic is how a test reports failure

mod alarms;
mod collisions;
mod connections;
mod devices;
mod fixtures;
mod zones;

use std::sync::Arc;
use std::time::{Duration, Instant};

use uuid::Uuid;
use zonecast_model::{ConfigChanged, ConfigKind, ConfigOperation, Setting, SettingName};
use zonecast_store::{
    CHANGES_KEPT, EvaluatorStore, ForwarderStore, PgStore, SettingReader, SettingWriter, SqliteStore, Store,
    StoreError, ZoneReader, ZoneWriter, postgres,
};

use alarms::{
    a_cleared_condition_clears_its_alarm_whatever_order_they_are_read_in,
    a_shelved_zone_or_device_opens_no_alarm_until_its_shelf_expires_or_is_taken_back,
    alarm_changes_go_forward_only_and_keep_who_when_and_why,
    alarms_are_listed_newest_first_a_page_at_a_time_by_state_device_and_zone,
    an_acknowledged_alarm_whose_condition_cleared_is_resolved_by_zonecast,
    an_alarm_is_recorded_once_and_read_back_whole, concurrent_raises_and_copies_of_one_condition_count_each_event_once,
    of_concurrent_changes_of_an_alarm_exactly_one_wins,
    raises_of_one_condition_count_on_one_alarm_until_it_is_resolved,
    the_alarms_of_a_zone_that_needs_no_acknowledgement_resolve_as_they_clear,
};
use collisions::{
    a_write_at_an_older_epoch_than_the_store_holds_is_refused_whole,
    clearing_a_zone_returns_and_removes_only_its_collisions, collisions_are_upserted_and_deleted_in_one_batch,
    collisions_for_deleted_zones_are_ignored_and_go_with_their_zone,
    find_radii_answers_each_device_asked_once_with_its_own_radius_or_none,
    marks_are_written_with_the_collisions_and_kept_until_set_again,
    occupancy_is_counted_over_every_collision_and_each_change_reported_until_published,
    radii_merge_sets_replaces_and_removes, settings_are_upserted_by_name,
};
use connections::{
    a_certificate_profile_in_use_cannot_be_deleted, a_connection_must_name_an_existing_certificate_profile,
    certificate_profiles_round_trip_in_creation_order, connection_status_is_kept_per_replica,
    connections_round_trip_in_creation_order, each_service_view_of_one_store_sees_what_the_others_wrote,
};
use devices::{
    a_batch_of_devices_is_written_whole_and_the_last_of_a_mac_wins, devices_are_listed_in_mac_order_a_page_at_a_time,
    devices_are_selected_by_group_and_by_name_or_mac_text, devices_round_trip_and_a_put_replaces_the_whole_record,
    unknown_devices_are_not_found_and_a_deleted_one_is_gone,
};
use fixtures::{MIGRATIONS, change, full_zone, zone};
use zones::{
    a_delete_batch_with_an_unknown_id_deletes_nothing, a_zone_batch_with_a_duplicate_id_inserts_nothing,
    a_zone_is_deleted_at_a_version_only_if_it_is_still_at_it,
    a_zone_write_from_a_stale_read_is_a_conflict_and_changes_nothing,
    an_update_batch_with_an_unknown_id_changes_nothing, connections_are_added_only_up_to_the_bound,
    find_zones_answers_those_that_exist, get_zones_answers_in_the_requested_order_and_fails_on_the_first_missing,
    the_store_names_its_kind_and_answers_pings, unknown_zones_are_not_found_by_their_upper_case_id,
    zones_list_in_creation_order, zones_round_trip_with_every_field,
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
    marks_are_written_with_the_collisions_and_kept_until_set_again,
    a_write_at_an_older_epoch_than_the_store_holds_is_refused_whole,
    occupancy_is_counted_over_every_collision_and_each_change_reported_until_published,
    settings_are_upserted_by_name,
    radii_merge_sets_replaces_and_removes,
    find_radii_answers_each_device_asked_once_with_its_own_radius_or_none,
    connections_round_trip_in_creation_order,
    a_connection_must_name_an_existing_certificate_profile,
    a_certificate_profile_in_use_cannot_be_deleted,
    certificate_profiles_round_trip_in_creation_order,
    connection_status_is_kept_per_replica,
    each_service_view_of_one_store_sees_what_the_others_wrote,
    devices_round_trip_and_a_put_replaces_the_whole_record,
    unknown_devices_are_not_found_and_a_deleted_one_is_gone,
    a_batch_of_devices_is_written_whole_and_the_last_of_a_mac_wins,
    devices_are_listed_in_mac_order_a_page_at_a_time,
    devices_are_selected_by_group_and_by_name_or_mac_text,
    the_change_log_numbers_changes_in_order_and_answers_those_after_a_revision,
    concurrent_appends_to_the_change_log_get_distinct_revisions_without_holes,
    a_reader_further_behind_than_the_log_keeps_is_told_to_read_everything,
    an_alarm_is_recorded_once_and_read_back_whole,
    alarm_changes_go_forward_only_and_keep_who_when_and_why,
    of_concurrent_changes_of_an_alarm_exactly_one_wins,
    alarms_are_listed_newest_first_a_page_at_a_time_by_state_device_and_zone,
    raises_of_one_condition_count_on_one_alarm_until_it_is_resolved,
    a_cleared_condition_clears_its_alarm_whatever_order_they_are_read_in,
    an_acknowledged_alarm_whose_condition_cleared_is_resolved_by_zonecast,
    concurrent_raises_and_copies_of_one_condition_count_each_event_once,
    a_shelved_zone_or_device_opens_no_alarm_until_its_shelf_expires_or_is_taken_back,
    the_alarms_of_a_zone_that_needs_no_acknowledgement_resolve_as_they_clear,
);

// ---------------------------------------------------------------------------------------------
// Builders

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
