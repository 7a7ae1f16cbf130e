//! Unit tests of payload normalisation: every accepted form and every refusal.
use serde_json::json;

use super::*;

fn now() -> DateTime<Utc> {
    "2026-11-21T10:00:00Z".parse().unwrap()
}

fn ok(v: Value) -> Vec<PositionUpdate> {
    normalize(&v, now()).into_iter().map(|e| e.result.unwrap()).collect()
}

#[test]
fn the_compact_form_is_normalised() {
    let p = &ok(json!({"MAC": "aa-bb-cc-dd-ee-ff", "Position": [1, 2, 3]}))[0];
    assert_eq!(p.mac.as_str(), "AA:BB:CC:DD:EE:FF");
    assert_eq!(p.position, [1.0, 2.0, 3.0]);
    assert_eq!(p.timestamp, now(), "missing Timestamp is the time of receipt");
    let p = &ok(
        json!({"MAC": "aa:bb:cc:dd:ee:ff", "Position": [1, 2, 3], "Timestamp": "2026-11-21T11:00:00+01:00", "Sequence": 4}),
    )[0];
    assert_eq!(p.timestamp, now());
    assert_eq!(p.extra["Sequence"], 4);
}

#[test]
fn events_arrays_and_batches_are_accepted() {
    let event = json!({"Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T09:00:00.500Z",
        "Source": {"MAC": "00:aa:bb:cc:dd:ee", "GatewayURI": "gw1"},
        "Content": {"Position": [1.5, 0, -2], "Velocity": [0, 1, 0], "Orientation": [1, 0, 0, 0]}});
    let p = &ok(event.clone())[0];
    assert_eq!(p.gateway_uri.as_deref(), Some("gw1"));
    assert_eq!(p.extra.len(), 2);
    assert_eq!(ok(json!([event.clone(), {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]}])).len(), 2);
    let batch = json!({"Type": "LOCATION_BATCH_UPDATE", "Content": [event.clone(), event.clone(), event.clone()]});
    assert_eq!(ok(batch).len(), 3);
    let batch = json!({"Type": "LOCATION_BATCH_UPDATE", "Content": {"Updates": [event]}});
    assert_eq!(ok(batch).len(), 1);
}

#[test]
fn each_bad_element_is_rejected_with_its_index_and_reason() {
    let payload = json!([
        {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]},
        {"MAC": "nope", "Position": [0, 0, 0]},
        {"MAC": "00:00:00:00:00:01", "Position": [0, 0]},
        {"MAC": "00:00:00:00:00:01", "Position": [0, "1", 0]},
        {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0], "Timestamp": "soon"},
        {"Type": "ZONE_ENTER"},
        7,
        {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0], "Orientation": [1, 0]},
        {"Type": "LOCATION_BATCH_UPDATE", "Content": [{"MAC": "00:00:00:00:00:02", "Position": [1, 1, 1]}, {"MAC": 5}]},
    ]);
    let results = normalize(&payload, now());
    let rejected: Vec<(usize, Rejection)> =
        results.iter().filter_map(|e| e.result.clone().err().map(|m| (e.index, m))).collect();
    let messages: Vec<String> = rejected.iter().map(|(_, m)| m.to_string()).collect();
    assert_eq!(results.iter().filter(|e| e.result.is_ok()).count(), 2);
    let indexes: Vec<usize> = rejected.iter().map(|(i, _)| *i).collect();
    assert_eq!(indexes, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(messages[0].starts_with("MAC: 'nope' is not a MAC address"), "{}", messages[0]);
    assert_eq!(messages[1], "Position: must be an array of three finite numbers");
    assert_eq!(rejected[1].1, Rejection::field("Position", Problem::NotThreeFinite));
    assert_eq!(messages[3], "Timestamp: 'soon' is not an ISO 8601 time");
    assert!(messages[4].starts_with("Type: 'ZONE_ENTER' is not a position event"));
    assert_eq!(messages[5], "must be a position object (a LOCATION_RAW_UPDATE event or {\"MAC\", \"Position\"})");
    assert_eq!(messages[7], "Content[1]: MAC: must be a string");
    let outcome = crate::Outcome { accepted: 2, rejected: rejected.clone() };
    assert_eq!(
        serde_json::to_value(outcome.answer()).unwrap()["rejected"][0],
        json!({"index": 1, "message": messages[0]})
    );
}

#[test]
fn the_fast_path_and_the_general_path_agree() {
    let payloads = [
        json!([{"MAC": "aa-bb-cc-dd-ee-01", "Position": [1, 2, 3]}, {"MAC": "AA:BB:CC:DD:EE:02", "Position": [1.5, 0, -2], "Timestamp": "2026-11-21T09:00:00Z"}]),
        json!({"MAC": "aa:bb:cc:dd:ee:03", "Position": [0, 0, 0]}),
        json!([{"MAC": "bad", "Position": [1, 2, 3]}, {"MAC": "aa:bb:cc:dd:ee:04", "Position": [1, 2, 3], "Velocity": [1, 0, 0]}]),
    ];
    for p in payloads {
        let bytes = serde_json::to_vec(&p).unwrap();
        assert_eq!(normalize_bytes(&bytes, now()).unwrap(), normalize(&p, now()), "{p}");
    }
    assert!(normalize_bytes(b"{\"MAC\":", now()).unwrap_err().to_string().starts_with("not valid JSON"));
    assert_eq!(normalize_bytes(b"42", now()).unwrap_err().to_string(), "body must be a JSON object or array");
}

/// `(index, result)` of each element of `text`, read from its bytes; messages of rejects.
fn read(text: &str) -> Vec<(usize, Result<String, String>)> {
    normalize_bytes(text.as_bytes(), now())
        .unwrap()
        .into_iter()
        .map(|e| (e.index, e.result.map(|p| p.mac.as_str().to_owned()).map_err(|r| r.to_string())))
        .collect()
}

#[test]
fn a_number_out_of_range_in_a_compact_element_rejects_that_element_alone() {
    let text = r#"[
        {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]},
        {"MAC": "00:00:00:00:00:02", "Position": [0, 1e400, 0]},
        {"MAC": "00:00:00:00:00:03", "Position": [0, 0, 0], "Velocity": [-1e400, 0, 0]},
        {"MAC": "00:00:00:00:00:04", "Position": [0, 0, 0], "Orientation": [1, 0, 0, 1E+400]},
        {"MAC": "00:00:00:00:00:05", "Position": [0, 0, 0], "Sequence": 1e400},
        {"MAC": "00:00:00:00:00:06", "Position": [0, 0, 0], "Timestamp": -1e400},
        {"MAC": -1e400, "Position": [0, 0, 0]},
        {"MAC": "00:00:00:00:00:08", "Position": [0, 0, 0], "Vendor": {"Battery": [1e400]}},
        {"MAC": "00:00:00:00:00:09", "Position": [1e-400, 2, 3]},
        {"MAC": "00:00:00:00:00:0A", "Position": [0, 0, 0]}
    ]"#;
    let ok = |mac: &str| Ok(mac.to_owned());
    let out = |field: &str| Err(format!("{field}: number out of range"));
    assert_eq!(
        read(text),
        [
            (0, ok("00:00:00:00:00:01")),
            (1, out("Position[1]")),
            (2, out("Velocity[0]")),
            (3, out("Orientation[3]")),
            (4, out("Sequence")),
            (5, out("Timestamp")),
            (6, out("MAC")),
            (7, out("Vendor.Battery[0]")),
            (8, ok("00:00:00:00:00:09")),
            (9, ok("00:00:00:00:00:0A")),
        ]
    );
    let p = normalize_bytes(text.as_bytes(), now()).unwrap().swap_remove(8).result.unwrap();
    assert_eq!(p.position, [0.0, 2.0, 3.0], "a number too small for a double reads as zero");
}

#[test]
fn a_number_out_of_range_in_an_event_rejects_that_event_alone() {
    let event = |mac: &str, content: &str| {
        format!(
            r#"{{"Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T09:00:00Z",
            "Source": {{"MAC": "{mac}", "GatewayURI": "gw1"}}, "Content": {content}}}"#
        )
    };
    let text = format!(
        "[{}, {}, {}, {}, {}, {}]",
        event("00:00:00:00:00:01", r#"{"Position": [1, 2, 3]}"#),
        event("00:00:00:00:00:02", r#"{"Position": [1, 2, -1e400]}"#),
        event("00:00:00:00:00:03", r#"{"Position": [1, 2, 3], "Velocity": [0, 1e400, 0]}"#),
        event("00:00:00:00:00:04", r#"{"Position": [1, 2, 3], "Orientation": [-1e400, 0, 0, 0], "Sequence": 3}"#),
        event("00:00:00:00:00:05", r#"{"Position": [1, 2, 3], "Sequence": 1e400}"#),
        event("00:00:00:00:00:06", r#"{"Position": [1, 2, 3], "Sequence": 7}"#),
    );
    let out = |field: &str| Err(format!("{field}: number out of range"));
    assert_eq!(
        read(&text),
        [
            (0, Ok("00:00:00:00:00:01".to_owned())),
            (1, out("Content.Position[2]")),
            (2, out("Content.Velocity[1]")),
            (3, out("Content.Orientation[0]")),
            (4, out("Content.Sequence")),
            (5, Ok("00:00:00:00:00:06".to_owned())),
        ]
    );
    let text = format!("[{}]", event("00:00:00:00:00:07", r#"{"Position": [1, 2, 3]}"#).replace("\"gw1\"", "1e400"));
    assert_eq!(read(&text), [(0, out("Source.GatewayURI"))]);
}

#[test]
fn in_a_mixed_array_an_unreadable_batch_item_spoils_only_itself() {
    let text = r#"[
        {"Type": "LOCATION_RAW_UPDATE", "Source": {"MAC": "00:00:00:00:00:01"}, "Content": {"Position": [1, 2, 3]}},
        {"MAC": "00:00:00:00:00:02", "Position": [1e400, 0, 0]},
        {"Type": "LOCATION_BATCH_UPDATE", "Content": [
            {"MAC": "00:00:00:00:00:03", "Position": [0, 0, 0]},
            {"Type": "LOCATION_RAW_UPDATE", "Source": {"MAC": "00:00:00:00:00:04"}, "Content": {"Position": [0, -1e400, 0]}},
            {"MAC": "nope", "Position": [0, 0, 0]}]},
        {"Type": "LOCATION_BATCH_UPDATE", "Content": {"Updates": [
            {"MAC": "00:00:00:00:00:05", "Position": [0, 0, 1e400]},
            {"MAC": "00:00:00:00:00:06", "Position": [0, 0, 0]}]}},
        {"Type": "LOCATION_BATCH_UPDATE", "Received": 1e400, "Content": [{"MAC": "00:00:00:00:00:07", "Position": [0, 0, 0]}]},
        {"Type": "LOCATION_BATCH_UPDATE", "Content": [{"MAC": "00:00:00:00:00:08", "Position": [0, 0, 0]}], "Content": 1e400},
        [1e400],
        1e400,
        {"MAC": "00:00:00:00:00:09", "Position": [0, 0, 0]}
    ]"#;
    let out = read(text);
    let ok = |mac: &str| Ok(mac.to_owned());
    assert_eq!(
        out[..4],
        [
            (0, ok("00:00:00:00:00:01")),
            (1, Err("Position[0]: number out of range".into())),
            (2, ok("00:00:00:00:00:03")),
            (2, Err("Content[1]: Content.Position[1]: number out of range".into()))
        ]
    );
    assert!(out[4].1.as_ref().unwrap_err().starts_with("Content[2]: MAC: 'nope'"), "{:?}", out[4]);
    assert_eq!(
        out[5..],
        [
            (3, Err("Content[0]: Position[2]: number out of range".into())),
            (3, ok("00:00:00:00:00:06")),
            (4, Err("Received: number out of range".into())),
            (5, Err("Content: number out of range".into())),
            (6, Err("[0]: number out of range".into())),
            (7, Err("number out of range".into())),
            (8, ok("00:00:00:00:00:09")),
        ]
    );
}

#[test]
fn a_single_object_with_a_number_out_of_range_is_rejected_as_element_zero() {
    let bad_mac = read(r#"{"MAC": "nope", "Position": [0, 0, 0]}"#);
    assert_eq!(bad_mac.len(), 1);
    assert_eq!(bad_mac[0].0, 0, "a single bad object is element 0");
    let out = |field: &str| Err(format!("{field}: number out of range"));
    assert_eq!(read(r#"{"MAC": "00:00:00:00:00:01", "Position": [0, 0, 1e400]}"#), [(0, out("Position[2]"))]);
    assert_eq!(
        read(
            r#" {"Type": "LOCATION_RAW_UPDATE", "Source": {"MAC": "00:00:00:00:00:01"}, "Content": {"Position": [0, 0, 0], "Velocity": [-1e400, 0, 0]}}"#
        ),
        [(0, out("Content.Velocity[0]"))]
    );
    // In a single batch the list numbers the elements.
    let batch = r#"{"Type": "LOCATION_BATCH_UPDATE", "Content": [
        {"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]},
        {"MAC": "00:00:00:00:00:02", "Position": [0, 0, 0], "Sequence": -1e400},
        {"MAC": "00:00:00:00:00:03", "Position": [0, 0, 0]}]}"#;
    assert_eq!(
        read(batch),
        [(0, Ok("00:00:00:00:00:01".into())), (1, out("Sequence")), (2, Ok("00:00:00:00:00:03".into()))]
    );
    let huge = format!(r#"{{"MAC": "00:00:00:00:00:01", "Position": [0, 0, 1{}]}}"#, "0".repeat(400));
    assert_eq!(read(&huge), [(0, out("Position[2]"))], "an integer beyond a double is out of range too");
}

#[test]
fn a_body_that_is_not_json_is_still_refused_whole() {
    for text in
        ["[{\"MAC\": \"00:00:00:00:00:01\", \"Position\": [0, 0, 1e400]}", "1e400", "[1e400,]", "{\"a\": 1e400} x"]
    {
        let reason = normalize_bytes(text.as_bytes(), now()).unwrap_err().to_string();
        assert!(reason.starts_with("not valid JSON"), "{text}: {reason}");
    }
    assert!(normalize_bytes(b"[1e400, \xff]", now()).is_err());
}

use proptest::prelude::Strategy as _;

fn items_ok() -> &'static str {
    r#"{"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]}"#
}

proptest::proptest! {
    #[test]
    fn every_element_of_any_json_array_is_accounted_for(items in proptest::collection::vec(
        proptest::prop_oneof![
            proptest::strategy::Just(json!({"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]})),
            proptest::strategy::Just(json!({"MAC": "x"})),
            proptest::strategy::Just(json!(null)),
            proptest::strategy::Just(json!("text")),
            (-1e6f64..1e6).prop_map(|x| json!({"MAC": "00:00:00:00:00:02", "Position": [x, x, x]})),
        ], 0..40)) {
        let results = normalize(&Value::Array(items.clone()), now());
        proptest::prop_assert_eq!(results.len(), items.len());
        for (i, e) in results.iter().enumerate() {
            proptest::prop_assert_eq!(e.index, i);
        }
    }

    #[test]
    fn every_element_of_any_array_is_accounted_for_even_when_some_do_not_read(items in proptest::collection::vec(
        proptest::prop_oneof![
            proptest::strategy::Just(r#"{"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0]}"#),
            proptest::strategy::Just(r#"{"MAC": "00:00:00:00:00:01", "Position": [0, 0, 1e400]}"#),
            proptest::strategy::Just(r#"{"MAC": "00:00:00:00:00:01", "Position": [0, 0, 0], "Sequence": -1e400}"#),
            proptest::strategy::Just(r#"{"MAC": "x"}"#),
            proptest::strategy::Just("1e400"),
            proptest::strategy::Just("null"),
        ], 0..40)) {
        let text = format!("[{}]", items.join(","));
        let results = normalize_bytes(text.as_bytes(), now()).unwrap();
        proptest::prop_assert_eq!(results.len(), items.len());
        for ((i, e), item) in results.iter().enumerate().zip(&items) {
            proptest::prop_assert_eq!(e.index, i);
            proptest::prop_assert_eq!(e.result.is_ok(), *item == items_ok(), "{}", item);
        }
    }
}
