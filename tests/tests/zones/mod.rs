//! Every zone operation end to end, as a client sees it: what each write answers, what reads
//! back afterwards, and what each write announces on `config.changed`. Refused writes, bulk
//! ones included, change nothing and announce nothing.
#![allow(clippy::unwrap_used)]

mod batch;
mod settings;
mod shapes;
mod single;

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use zonecast_bus::Subscription;
use zonecast_tests::{Server, both_modes, json, next_json, sphere};

use batch::{
    a_batch_create_returns_the_new_zones_in_order, a_batch_create_with_one_bad_zone_creates_none,
    a_batch_delete_removes_exactly_the_listed_zones, a_batch_delete_with_one_unknown_zone_deletes_nothing,
    a_batch_update_by_a_name_two_zones_share_is_refused_and_changes_nothing,
    a_batch_update_naming_no_zone_is_not_found_and_changes_nothing,
    a_batch_update_selects_zones_by_id_or_by_a_name_only_one_zone_has,
    activating_or_deactivating_with_one_unknown_zone_changes_nothing,
    devices_are_merged_into_and_removed_from_a_device_list, zones_are_deactivated_and_activated_by_the_list,
};
use settings::{
    a_setting_is_written_from_a_number_or_a_numeric_string,
    an_inactive_setting_is_listed_as_not_in_force_beside_its_default,
    an_unknown_setting_is_not_found_and_an_unparsable_value_is_invalid, device_radii_are_merged_and_a_null_removes_one,
    every_setting_is_listed_with_its_default,
};
use shapes::{
    a_locked_zone_refuses_geometry_changes_until_it_is_unlocked,
    a_timed_zone_keeps_its_window_in_utc_and_needs_an_ordered_one,
    every_geometry_type_is_accepted_with_every_kind_of_zone_action,
};
use single::{
    a_deleted_zone_is_gone_and_cannot_be_deleted_again, a_reset_is_acknowledged_and_announced_as_a_reset_of_that_zone,
    a_zone_created_from_geometry_alone_takes_the_documented_defaults, a_zone_is_retrieved_by_its_id_in_any_case,
    an_update_changes_only_the_supplied_fields, mac_addresses_are_stored_upper_case_with_colons_and_without_repeats,
    read_only_and_unknown_fields_sent_on_create_and_update_are_ignored, zones_are_listed_in_creation_order,
};

/// Longest wait for an announcement.
const WAIT: Duration = Duration::from_secs(10);

fn ack() -> Value {
    json!({"status": 200, "success": true})
}

fn id(zone: &Value) -> String {
    zone["ZoneID"].as_str().expect("ZoneID is a string").to_owned()
}

fn path(zone_id: &str) -> String {
    format!("/v3/modules/zones/{zone_id}")
}

/// The next `config.changed` announcement, with its IDs sorted so that bulk writes compare
/// regardless of the order they were applied in, and without its revision (checked here to be
/// there).
async fn announced(changes: &mut Subscription) -> Value {
    let mut change = next_json(changes, WAIT).await;
    let revision = change.as_object_mut().and_then(|c| c.remove("Revision"));
    assert!(revision.as_ref().and_then(Value::as_u64).is_some_and(|r| r > 0), "a revision: {revision:?}");
    if let Some(ids) = change["IDs"].as_array_mut() {
        ids.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    change
}

fn zones_change(ids: &[&str]) -> Value {
    let mut ids: Vec<&str> = ids.to_vec();
    ids.sort_unstable();
    json!({"Kind": "zones", "IDs": ids})
}

/// Proves that nothing was announced since the last message read from `changes`: a fresh write
/// is announced next, and announcements arrive in the order they were published.
async fn nothing_was_announced(server: &Server, changes: &mut Subscription) {
    let marker = server.create_zone(sphere("marker", [0.0, 0.0, 0.0], 1.0)).await;
    assert_eq!(announced(changes).await, zones_change(&[&id(&marker)]), "a refused request was announced");
}

/// Creates a zone and reads its announcement from `changes`, so that the announcements read
/// next belong to the writes that follow.
async fn create(server: &Server, changes: &mut Subscription, input: Value) -> Value {
    let zone = server.create_zone(input).await;
    assert_eq!(announced(changes).await, zones_change(&[&id(&zone)]));
    zone
}

async fn list(server: &Server) -> Vec<Value> {
    server.ok(Method::GET, "/v3/modules/zones", None).await.as_array().unwrap().clone()
}

async fn get(server: &Server, zone_id: &str) -> Value {
    server.ok(Method::GET, &path(zone_id), None).await
}

both_modes!(
    a_zone_created_from_geometry_alone_takes_the_documented_defaults,
    read_only_and_unknown_fields_sent_on_create_and_update_are_ignored,
    zones_are_listed_in_creation_order,
    a_zone_is_retrieved_by_its_id_in_any_case,
    an_update_changes_only_the_supplied_fields,
    mac_addresses_are_stored_upper_case_with_colons_and_without_repeats,
    a_deleted_zone_is_gone_and_cannot_be_deleted_again,
    a_batch_create_returns_the_new_zones_in_order,
    a_batch_update_selects_zones_by_id_or_by_a_name_only_one_zone_has,
    a_batch_update_naming_no_zone_is_not_found_and_changes_nothing,
    a_batch_update_by_a_name_two_zones_share_is_refused_and_changes_nothing,
    a_batch_delete_removes_exactly_the_listed_zones,
    a_batch_delete_with_one_unknown_zone_deletes_nothing,
    zones_are_deactivated_and_activated_by_the_list,
    activating_or_deactivating_with_one_unknown_zone_changes_nothing,
    devices_are_merged_into_and_removed_from_a_device_list,
    every_setting_is_listed_with_its_default,
    a_setting_is_written_from_a_number_or_a_numeric_string,
    an_inactive_setting_is_listed_as_not_in_force_beside_its_default,
    an_unknown_setting_is_not_found_and_an_unparsable_value_is_invalid,
    device_radii_are_merged_and_a_null_removes_one,
    a_reset_is_acknowledged_and_announced_as_a_reset_of_that_zone,
    a_locked_zone_refuses_geometry_changes_until_it_is_unlocked,
    every_geometry_type_is_accepted_with_every_kind_of_zone_action,
    a_timed_zone_keeps_its_window_in_utc_and_needs_an_ordered_one,
    a_batch_create_with_one_bad_zone_creates_none,
);
