//! Bulk imports from JSON and CSV.

use reqwest::Method;
use serde_json::Value;
use zonecast_tests::{Mode, Server, json};

use super::{all_devices, import, path, refused};

const JSON: &str = "application/json";
const CSV: &str = "text/csv";

pub(crate) async fn a_json_import_creates_and_replaces_devices_in_one_go(mode: Mode) {
    let server = Server::start(mode).await;
    let old = json!({"Name": "old", "Group": "g", "Properties": {"x": 1}});
    server.ok(Method::PUT, &path("00:00:00:00:00:02"), Some(old)).await;
    let body = json!([
        {"MAC": "00-00-00-00-00-03", "Name": "Cart 3", "Kind": "asset", "Properties": {"rfid": "E200 3412"}},
        {"MAC": "00:00:00:00:00:02", "Name": "Anna", "Group": "staff", "Kind": "person"},
        {"MAC": "00:00:00:00:00:01", "Name": "Forklift", "Group": "fleet", "Kind": "vehicle", "Properties": null},
    ]);
    assert_eq!(import(&server, JSON, body.to_string()).await, json!({"Imported": 3}));
    assert_eq!(
        all_devices(&server).await,
        vec![
            json!({"MAC": "00:00:00:00:00:01", "Name": "Forklift", "Group": "fleet", "Kind": "vehicle", "Properties": {},
                   "OfflineSeconds": null}),
            json!({"MAC": "00:00:00:00:00:02", "Name": "Anna", "Group": "staff", "Kind": "person", "Properties": {},
                   "OfflineSeconds": null}),
            json!({"MAC": "00:00:00:00:00:03", "Name": "Cart 3", "Group": null, "Kind": "asset",
                   "Properties": {"rfid": "E200 3412"}, "OfflineSeconds": null}),
        ]
    );
    assert_eq!(import(&server, JSON, "[]").await, json!({"Imported": 0}), "an empty import is fine");
    assert_eq!(all_devices(&server).await.len(), 3);
    server.stop().await;
}

pub(crate) async fn a_csv_import_reads_the_header_and_makes_extra_columns_properties(mode: Mode) {
    let server = Server::start(mode).await;
    let csv = "mac,Name,Group,Kind,OfflineSeconds,Badge,Note\r\n\
               00-aa-bb-cc-dd-01,\"Forklift, front\",fleet,vehicle,120,,\"says \"\"hi\"\"\nand more\"\r\n\
               \r\n\
               00:AA:BB:CC:DD:02, Anna ,,person,,17,\r\n";
    assert_eq!(import(&server, "text/csv; charset=utf-8", csv).await, json!({"Imported": 2}));
    assert_eq!(
        all_devices(&server).await,
        vec![
            json!({"MAC": "00:AA:BB:CC:DD:01", "Name": "Forklift, front", "Group": "fleet", "Kind": "vehicle",
                   "Properties": {"Note": "says \"hi\"\nand more"}, "OfflineSeconds": 120}),
            json!({"MAC": "00:AA:BB:CC:DD:02", "Name": "Anna", "Group": null, "Kind": "person",
                   "Properties": {"Badge": "17"}, "OfflineSeconds": null}),
        ]
    );
    // Only MAC and Name columns are needed; a row replaces its device whole.
    assert_eq!(import(&server, CSV, "Name,MAC\nAnna B.,00:AA:BB:CC:DD:02\n").await, json!({"Imported": 1}));
    let anna = server.ok(Method::GET, &path("00:AA:BB:CC:DD:02"), None).await;
    assert_eq!(
        anna,
        json!({"MAC": "00:AA:BB:CC:DD:02", "Name": "Anna B.", "Group": null, "Kind": null, "Properties": {},
               "OfflineSeconds": null})
    );
    server.stop().await;
}

pub(crate) async fn an_import_with_one_bad_row_stores_nothing_and_names_the_row_and_field(mode: Mode) {
    let server = Server::start(mode).await;
    server.ok(Method::PUT, &path("00:00:00:00:00:01"), Some(json!({"Name": "kept"}))).await;
    let import = "/v3/devices/import";
    let good = |i: u8| json!({"MAC": format!("00:00:00:00:00:{i:02X}"), "Name": format!("new {i}")});
    let json_refusal = |body: Value, status: u16, kind: &'static str| {
        let server = &server;
        async move { refused(server, Method::POST, import, JSON, body.to_string(), status, kind).await }
    };
    let cases = [
        (json!([good(1), good(2), {"MAC": "nope", "Name": "x"}]), "[2].MAC: 'nope' is not a MAC address"),
        (json!([good(1), {"Name": "x"}]), "[1].MAC: is required"),
        (json!([good(1), {"MAC": 5, "Name": "x"}]), "[1].MAC: must be a string, got a number"),
        (json!([good(2), {"MAC": "00:00:00:00:00:03"}]), "[1].Name: is required"),
        (
            json!([good(2), {"MAC": "00:00:00:00:00:03", "Name": "n".repeat(257)}]),
            "[1].Name: must be 1 to 256 characters",
        ),
        (
            json!([good(2), {"MAC": "00:00:00:00:00:03", "Name": "x", "Group": 7}]),
            "[1].Group: must be a string, got a number",
        ),
        (json!([good(2), 5]), "[1]: must be an object, got a number"),
        (json!([good(2), good(1), good(2)]), "[2].MAC: 00:00:00:00:00:02 is also at [0]"),
    ];
    for (body, expected) in cases {
        let message = json_refusal(body.clone(), 422, "invalid_data").await;
        assert!(message.starts_with(expected), "{body}\n  message: {message}\n expected: {expected}…");
    }
    let message = json_refusal(json!({"MAC": "00:00:00:00:00:02", "Name": "x"}), 400, "malformed").await;
    assert_eq!(message, "request body must be a JSON array");

    let good_rows = "MAC,Name,Group\n00:00:00:00:00:01,new 1,g\n00:00:00:00:00:02,new 2,g\n";
    let cases = [
        (format!("{good_rows}00:00:00:00:00:0G,bad,g\n"), "line 4: MAC: '00:00:00:00:00:0G' is not a MAC address"),
        (format!("{good_rows}00:00:00:00:00:03,,g\n"), "line 4: Name: is required"),
        (format!("{good_rows}00:00:00:00:00:03,x,{}\n", "g".repeat(257)), "line 4: Group: must be 1 to 256 characters"),
        (format!("{good_rows}00:00:00:00:00:03,x\n"), "line 4: has 2 fields, the header has 3"),
        (format!("{good_rows}00-00-00-00-00-01,again,g\n"), "line 4: MAC: 00:00:00:00:00:01 is also on line 2"),
        ("MAC,Group\n00:00:00:00:00:01,g\n".to_owned(), "line 1: the header has no Name column"),
        (format!("{good_rows}\"00:00:00:00:00:03,x\n"), "line 4: a quoted field is not closed"),
        (format!("{good_rows}00:00:00:00:00:03,x\"y,g\n"), "line 4: a quote inside an unquoted field"),
        (String::new(), "the CSV has no header row (e.g. MAC,Name,Group,Kind,OfflineSeconds)"),
    ];
    for (body, expected) in cases {
        let message = refused(&server, Method::POST, import, CSV, body.clone(), 422, "invalid_data").await;
        assert!(message.starts_with(expected), "{body}\n  message: {message}\n expected: {expected}…");
    }
    let latin1 = b"MAC,Name\n00:00:00:00:00:03,J\xfcrgen\n".to_vec();
    let message = refused(&server, Method::POST, import, CSV, latin1, 400, "malformed").await;
    assert_eq!(message, "request body is not UTF-8 CSV");
    // CSV sent as JSON is read as JSON.
    let message = refused(&server, Method::POST, import, JSON, good_rows, 400, "malformed").await;
    assert!(message.starts_with("request body is not valid JSON"), "{message}");
    let names: Vec<Value> = all_devices(&server).await.iter().map(|d| d["Name"].clone()).collect();
    assert_eq!(names, [json!("kept")]);
    server.stop().await;
}
