//! The device registry end to end, as a client sees it: devices written whole and read back by
//! MAC in any spelling, listed a page at a time by group and by text, deleted, and imported in
//! bulk from JSON or CSV, all or nothing. Bad input is refused with a message naming the place
//! and the field, and changes nothing a client can read back.
#![allow(clippy::unwrap_used)]

mod events;
mod import;
mod registry;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use zonecast_tests::{ADMIN_KEY, Server, assert_error, both_modes};

use events::{
    a_device_with_its_own_offline_time_is_reported_offline_after_it,
    events_of_a_registered_device_name_it_and_its_group_and_filters_select_on_the_group,
};
use import::{
    a_csv_import_reads_the_header_and_makes_extra_columns_properties,
    a_json_import_creates_and_replaces_devices_in_one_go,
    an_import_with_one_bad_row_stores_nothing_and_names_the_row_and_field,
};
use registry::{
    a_device_is_created_replaced_and_read_back_by_its_mac_in_any_spelling,
    a_put_with_a_bad_body_or_mac_is_refused_and_changes_nothing,
    devices_are_listed_in_mac_order_a_page_at_a_time_and_by_group_or_text,
    reading_needs_the_read_authority_and_writing_the_write_authority,
    unknown_devices_are_not_found_and_a_deleted_one_is_gone,
};

fn path(mac: &str) -> String {
    format!("/v3/devices/{mac}")
}

/// Sends a request that must be refused with `status` and `kind`, labelled `content_type`,
/// proves that it changed nothing, and returns the error message.
async fn refused(
    server: &Server,
    method: Method,
    path: &str,
    content_type: &str,
    body: impl Into<Vec<u8>>,
    status: u16,
    kind: &str,
) -> String {
    let before = server.snapshot().await;
    let answer = server.send(method.clone(), path, Some(ADMIN_KEY), content_type, Some(body.into())).await;
    let message = assert_error(&answer, status, kind);
    assert_eq!(server.snapshot().await, before, "{method} {path} was refused but changed state");
    message
}

/// Every device, by listing all pages.
async fn all_devices(server: &Server) -> Vec<Value> {
    let answer = server.ok(Method::GET, "/v3/devices?limit=1000", None).await;
    assert_eq!(answer["NextCursor"], Value::Null, "{answer}");
    answer["Devices"].as_array().unwrap().clone()
}

/// Imports `body` labelled `content_type` as admin; the answer must be 200.
async fn import(server: &Server, content_type: &str, body: impl Into<Vec<u8>>) -> Value {
    let answer =
        server.send(Method::POST, "/v3/devices/import", Some(ADMIN_KEY), content_type, Some(body.into())).await;
    assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
    answer.1
}

both_modes!(
    events_of_a_registered_device_name_it_and_its_group_and_filters_select_on_the_group,
    a_device_with_its_own_offline_time_is_reported_offline_after_it,
    a_device_is_created_replaced_and_read_back_by_its_mac_in_any_spelling,
    unknown_devices_are_not_found_and_a_deleted_one_is_gone,
    devices_are_listed_in_mac_order_a_page_at_a_time_and_by_group_or_text,
    a_put_with_a_bad_body_or_mac_is_refused_and_changes_nothing,
    reading_needs_the_read_authority_and_writing_the_write_authority,
    a_json_import_creates_and_replaces_devices_in_one_go,
    a_csv_import_reads_the_header_and_makes_extra_columns_properties,
    an_import_with_one_bad_row_stores_nothing_and_names_the_row_and_field,
);
