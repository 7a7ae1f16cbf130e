//! Matching semantics through the public API: templates, types, selectors, Invert, Children.
#![allow(clippy::unwrap_used)] // a panic is how a test reports failure

use serde_json::{Value, json};
use zonecast_filter::{Chain, compile};

fn chain(filters: Value) -> Chain {
    compile(&filters).unwrap()
}

/// A single-filter chain.
fn one(filter: Value) -> Chain {
    chain(json!([filter]))
}

fn position() -> Value {
    json!({
        "Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE",
        "Timestamp": "2026-11-21T10:00:00.000Z", "LocalTimestamp": "2026-11-21T10:00:00.004Z",
        "Source": {"MAC": "00:AA:BB:CC:DD:EE", "GatewayURI": null, "SiteID": 501},
        "Content": {"Position": [1.5, -2.0, 0.25], "Sequence": 42, "Velocity": [0, 0, 0]}
    })
}

fn zone(kind: &str) -> Value {
    json!({
        "Category": "ZONE", "Type": kind,
        "Source": {"MAC": "00:AA:BB:CC:DD:EE", "GatewayURI": null, "SiteID": 501},
        "Content": {"ZoneID": 17, "ZoneName": "Dock 3", "AlertLevel": 2, "Alarm": "site",
                    "CollisionID": "c-1", "Position": [1, 2, 3]}
    })
}

fn alarm() -> Value {
    json!({
        "Category": "ALARM", "Type": "SITE_ALARM",
        "Source": {"MAC": "00:AA:BB:CC:DD:EE", "SiteID": 501},
        "Content": {"ZoneID": "17", "ZoneName": "Dock 3", "AlertLevel": "3"}
    })
}

fn all_events() -> Vec<Value> {
    vec![
        position(),
        zone("ZONE_ENTER"),
        zone("ZONE_EXIT"),
        zone("ZONE_INFO"),
        alarm(),
        json!({"Category": "ALARM", "Type": "DEVICE_ALARM"}),
    ]
}

/// Which of `all_events()` a chain lets through, by Type.
fn passing(chain: &Chain) -> Vec<String> {
    all_events().iter().filter(|e| chain.matches(e)).map(|e| e["Type"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn an_empty_chain_matches_everything() {
    for empty in [json!([]), json!(null)] {
        let chain = chain(empty);
        assert!(chain.is_empty());
        assert_eq!(passing(&chain).len(), all_events().len());
        assert!(chain.matches(&json!(null)));
        assert!(chain.matches(&json!("not an event")));
    }
    assert!(Chain::default().matches(&position()));
    assert!(Chain::default().is_empty());
}

#[test]
fn a_chain_with_filters_is_not_empty() {
    assert!(!one(json!({"FilterTemplate": "all"})).is_empty());
}

#[test]
fn the_dashboard_template_passes_raw_updates_enters_and_exits() {
    let chain = one(json!({"FilterTemplate": "dashboard"}));
    assert_eq!(passing(&chain), ["LOCATION_RAW_UPDATE", "ZONE_ENTER", "ZONE_EXIT"]);
}

#[test]
fn the_position_events_template_passes_the_location_category() {
    let chain = one(json!({"FilterTemplate": "position_events"}));
    assert_eq!(passing(&chain), ["LOCATION_RAW_UPDATE"]);
}

#[test]
fn the_zone_events_template_passes_the_zone_category() {
    let chain = one(json!({"FilterTemplate": "zone_events"}));
    assert_eq!(passing(&chain), ["ZONE_ENTER", "ZONE_EXIT", "ZONE_INFO"]);
}

#[test]
fn the_alarm_events_template_passes_the_alarm_category() {
    let chain = one(json!({"FilterTemplate": "alarm_events"}));
    assert_eq!(passing(&chain), ["SITE_ALARM", "DEVICE_ALARM"]);
}

#[test]
fn the_all_template_passes_everything() {
    let chain = one(json!({"FilterTemplate": "all"}));
    assert_eq!(passing(&chain).len(), all_events().len());
    assert!(chain.matches(&json!({})));
}

#[test]
fn templates_do_not_match_events_without_category_or_type() {
    for template in ["dashboard", "position_events", "zone_events", "alarm_events"] {
        let chain = one(json!({"FilterTemplate": template}));
        assert!(!chain.matches(&json!({})), "{template}");
        assert!(!chain.matches(&json!([1, 2])), "{template}");
    }
}

#[test]
fn a_template_with_a_test_needs_both_to_hold() {
    let chain = one(json!({"FilterTemplate": "zone_events",
                           "Selector": "Content.Position.0", "Type": "equals", "Match": 1}));
    assert!(chain.matches(&zone("ZONE_ENTER")));
    // Position.0 is 1.5 here, and the category is wrong anyway.
    assert!(!chain.matches(&position()));
    let mut moved = zone("ZONE_EXIT");
    moved["Content"]["Position"][0] = json!(9);
    assert!(!chain.matches(&moved));
}

#[test]
fn every_filter_of_a_chain_must_match() {
    let chain = chain(json!([
        {"FilterTemplate": "zone_events"},
        {"Selector": "Type", "Type": "equals", "Match": "ZONE_EXIT"},
    ]));
    assert_eq!(passing(&chain), ["ZONE_EXIT"]);
}

#[test]
fn regex_matches_anywhere_in_the_string_form() {
    let chain = one(json!({"Selector": "Source.MAC", "Type": "regex", "Match": "BB:CC"}));
    assert!(chain.matches(&position()));
    let chain = one(json!({"Selector": "Source.MAC", "Type": "regex", "Match": "^BB:CC"}));
    assert!(!chain.matches(&position()));
    let chain = one(json!({"Selector": "Source.MAC", "Type": "regex", "Match": "(?i)^00:aa:"}));
    assert!(chain.matches(&position()));
}

#[test]
fn regex_sees_numbers_and_structures_as_text() {
    let chain = one(json!({"Selector": "Content.ZoneID", "Type": "regex", "Match": "^1[0-9]$"}));
    assert!(chain.matches(&zone("ZONE_ENTER")));
    assert!(chain.matches(&alarm()));
    let chain = one(json!({"Selector": "Content.Position", "Type": "regex", "Match": r"^\[1,2,3\]$"}));
    assert!(chain.matches(&zone("ZONE_ENTER")));
    let chain = one(json!({"Selector": "Source.GatewayURI", "Type": "regex", "Match": "^null$"}));
    assert!(chain.matches(&position()));
}

#[test]
fn regex_match_may_be_a_number() {
    let chain = one(json!({"Selector": "Content.Sequence", "Type": "regex", "Match": 42}));
    assert!(chain.matches(&position()));
    let chain = one(json!({"Selector": "Content.Sequence", "Type": "regex", "Match": 7}));
    assert!(!chain.matches(&position()));
}

#[test]
fn equals_compares_string_forms() {
    let cases = [
        ("Source.MAC", json!("00:AA:BB:CC:DD:EE"), true),
        ("Source.MAC", json!("00:aa:bb:cc:dd:ee"), false),
        ("Source.MAC", json!("00:AA"), false),
        ("Source.SiteID", json!(501), true),
        ("Source.SiteID", json!("501"), true),
        ("Source.SiteID", json!(502), false),
        ("Source.GatewayURI", json!("null"), true),
        ("Content.Position.3", json!("null"), false),
        ("Content.Position.0", json!(1.5), true),
        ("Content.Position.0", json!("1.5"), true),
        ("Content.Position.1", json!(-2), false),
        ("Content.Position.1", json!("-2.0"), true),
    ];
    for (selector, expected, outcome) in cases {
        let chain = one(json!({"Selector": selector, "Type": "equals", "Match": expected}));
        assert_eq!(chain.matches(&position()), outcome, "{selector} equals {expected}");
    }
}

#[test]
fn equals_on_bools_uses_true_and_false() {
    let event = json!({"Content": {"Active": true}});
    let yes = one(json!({"Selector": "Content.Active", "Type": "equals", "Match": true}));
    let text = one(json!({"Selector": "Content.Active", "Type": "equals", "Match": "true"}));
    let no = one(json!({"Selector": "Content.Active", "Type": "equals", "Match": false}));
    assert!(yes.matches(&event));
    assert!(text.matches(&event));
    assert!(!no.matches(&event));
}

#[test]
fn equals_on_an_object_uses_its_compact_json() {
    let event = json!({"Content": {"Meta": {"a": 1, "b": [true, null]}}});
    let chain = one(json!({"Selector": "Content.Meta", "Type": "equals",
                           "Match": r#"{"a":1,"b":[true,null]}"#}));
    assert!(chain.matches(&event));
}

#[test]
fn exists_needs_the_path_to_resolve_and_ignores_match() {
    let chain = one(json!({"Selector": "Content.ZoneID", "Type": "exists", "Match": [1]}));
    assert_eq!(passing(&chain), ["ZONE_ENTER", "ZONE_EXIT", "ZONE_INFO", "SITE_ALARM"]);
    let chain = one(json!({"Selector": "Source.GatewayURI", "Type": "exists"}));
    assert!(chain.matches(&position()), "a null value exists");
    let chain = one(json!({"Selector": "Content.Position.2", "Type": "exists"}));
    assert!(chain.matches(&position()));
    let chain = one(json!({"Selector": "Content.Position.3", "Type": "exists"}));
    assert!(!chain.matches(&position()));
}

#[test]
fn comparisons_hold_on_numbers() {
    let event = position(); // Position.0 = 1.5
    let cases = [
        ("lt", 2.0, true),
        ("lt", 1.5, false),
        ("lt", 1.0, false),
        ("lte", 1.5, true),
        ("lte", 1.0, false),
        ("gt", 1.0, true),
        ("gt", 1.5, false),
        ("gt", 2.0, false),
        ("gte", 1.5, true),
        ("gte", 2.0, false),
    ];
    for (op, threshold, outcome) in cases {
        let chain = one(json!({"Selector": "Content.Position.0", "Type": op, "Match": threshold}));
        assert_eq!(chain.matches(&event), outcome, "1.5 {op} {threshold}");
    }
}

#[test]
fn comparisons_take_numeric_strings_on_both_sides() {
    // AlertLevel is the string "3" in the alarm event.
    let chain = one(json!({"Selector": "Content.AlertLevel", "Type": "gte", "Match": "2.5"}));
    assert!(chain.matches(&alarm()));
    let chain = one(json!({"Selector": "Content.AlertLevel", "Type": "lt", "Match": "1e1"}));
    assert!(chain.matches(&alarm()));
    let chain = one(json!({"Selector": "Content.AlertLevel", "Type": "gt", "Match": 3}));
    assert!(!chain.matches(&alarm()));
}

#[test]
fn comparisons_do_not_match_values_that_are_not_numbers() {
    for value in [json!("Dock 3"), json!(true), json!(null), json!([1]), json!({"a": 1}), json!("NaN")] {
        let event = json!({"Content": {"V": value}});
        for op in ["lt", "lte", "gt", "gte"] {
            let chain = one(json!({"Selector": "Content.V", "Type": op, "Match": 0}));
            assert!(!chain.matches(&event), "{value} {op} 0");
        }
    }
}

#[test]
fn comparisons_use_negative_and_large_numbers() {
    let event = json!({"v": -1e300, "w": u64::MAX});
    assert!(one(json!({"Selector": "v", "Type": "lt", "Match": -1e299})).matches(&event));
    assert!(one(json!({"Selector": "w", "Type": "gt", "Match": 1e19})).matches(&event));
}

#[test]
fn array_indexes_reach_into_positions() {
    let event = position(); // [1.5, -2.0, 0.25]
    assert!(one(json!({"Selector": "Content.Position.1", "Type": "lt", "Match": 0})).matches(&event));
    assert!(one(json!({"Selector": "Content.Position.2", "Type": "equals", "Match": 0.25})).matches(&event));
    assert!(!one(json!({"Selector": "Content.Position.9", "Type": "gte", "Match": -1e9})).matches(&event));
}

#[test]
fn numeric_segments_are_keys_on_objects() {
    let event = json!({"Content": {"Tags": {"0": "first"}}});
    assert!(one(json!({"Selector": "Content.Tags.0", "Type": "equals", "Match": "first"})).matches(&event));
}

#[test]
fn a_missing_path_matches_nothing() {
    for op in ["regex", "equals", "exists", "lt", "lte", "gt", "gte"] {
        for selector in ["Content.Nope", "Nope.Deeper", "Source.MAC.x", "Content.Position.3", "Content.Position.first"]
        {
            let chain = one(json!({"Selector": selector, "Type": op, "Match": "0"}));
            assert!(!chain.matches(&position()), "{selector} {op}");
        }
    }
}

#[test]
fn invert_negates_a_test() {
    let chain = one(json!({"Selector": "Type", "Type": "equals", "Match": "ZONE_INFO", "Invert": true}));
    assert_eq!(passing(&chain), ["LOCATION_RAW_UPDATE", "ZONE_ENTER", "ZONE_EXIT", "SITE_ALARM", "DEVICE_ALARM"]);
}

#[test]
fn invert_false_is_the_same_as_no_invert() {
    let chain = one(json!({"Selector": "Type", "Type": "equals", "Match": "ZONE_INFO", "Invert": false}));
    assert_eq!(passing(&chain), ["ZONE_INFO"]);
}

#[test]
fn invert_negates_a_template() {
    let chain = one(json!({"FilterTemplate": "zone_events", "Invert": true}));
    assert_eq!(passing(&chain), ["LOCATION_RAW_UPDATE", "SITE_ALARM", "DEVICE_ALARM"]);
}

#[test]
fn invert_negates_a_template_and_test_together() {
    // not (zone event and ZONE_EXIT)
    let chain = one(json!({"FilterTemplate": "zone_events", "Selector": "Type", "Type": "equals",
                           "Match": "ZONE_EXIT", "Invert": true}));
    assert_eq!(passing(&chain), ["LOCATION_RAW_UPDATE", "ZONE_ENTER", "ZONE_INFO", "SITE_ALARM", "DEVICE_ALARM"]);
}

#[test]
fn an_inverted_test_on_a_missing_path_matches() {
    let chain = one(json!({"Selector": "Content.ZoneID", "Type": "exists", "Invert": true}));
    assert_eq!(passing(&chain), ["LOCATION_RAW_UPDATE", "DEVICE_ALARM"]);
    let chain = one(json!({"Selector": "Content.Nope", "Type": "equals", "Match": "x", "Invert": true}));
    assert!(chain.matches(&position()));
}

#[test]
fn children_all_must_all_match() {
    let chain = one(json!({"FilterTemplate": "zone_events", "Children": {"all": [
        {"Selector": "Content.AlertLevel", "Type": "gte", "Match": 2},
        {"Selector": "Type", "Type": "regex", "Match": "ENTER|EXIT"},
    ]}}));
    assert_eq!(passing(&chain), ["ZONE_ENTER", "ZONE_EXIT"]);
}

#[test]
fn children_any_needs_one_match() {
    let chain = one(json!({"Children": {"any": [
        {"FilterTemplate": "alarm_events"},
        {"Selector": "Type", "Type": "equals", "Match": "ZONE_INFO"},
    ]}}));
    assert_eq!(passing(&chain), ["ZONE_INFO", "SITE_ALARM", "DEVICE_ALARM"]);
}

#[test]
fn empty_or_null_children_add_nothing() {
    for children in [json!({}), json!(null), json!({"all": []})] {
        let chain = one(json!({"FilterTemplate": "position_events", "Children": children}));
        assert_eq!(passing(&chain), ["LOCATION_RAW_UPDATE"], "{children}");
    }
}

#[test]
fn own_condition_and_children_must_both_hold() {
    let chain = one(json!({"FilterTemplate": "position_events", "Children": {"any": [
        {"FilterTemplate": "zone_events"},
    ]}}));
    assert!(passing(&chain).is_empty());
}

#[test]
fn invert_does_not_reach_into_children() {
    // not a zone event, and (any) an alarm: alarms pass; positions fail the children.
    let chain = one(json!({"FilterTemplate": "zone_events", "Invert": true, "Children": {"any": [
        {"FilterTemplate": "alarm_events"},
    ]}}));
    assert_eq!(passing(&chain), ["SITE_ALARM", "DEVICE_ALARM"]);
}

#[test]
fn children_nest_all_inside_any_inside_all() {
    // dashboard events where (the zone is 17 and the level at least 2) or the MAC starts 00:AA.
    let chain = one(json!({"FilterTemplate": "dashboard", "Children": {"all": [
        {"Children": {"any": [
            {"Children": {"all": [
                {"Selector": "Content.ZoneID", "Type": "equals", "Match": 17},
                {"Selector": "Content.AlertLevel", "Type": "gte", "Match": 2},
            ]}},
            {"Selector": "Source.MAC", "Type": "regex", "Match": "^00:AA"},
        ]}},
    ]}}));
    assert_eq!(passing(&chain), ["LOCATION_RAW_UPDATE", "ZONE_ENTER", "ZONE_EXIT"]);

    let mut other_mac = position();
    other_mac["Source"]["MAC"] = json!("11:22:33:44:55:66");
    assert!(!chain.matches(&other_mac));
    let mut low_level = zone("ZONE_ENTER");
    low_level["Source"]["MAC"] = json!("11:22:33:44:55:66");
    assert!(chain.matches(&low_level));
    low_level["Content"]["AlertLevel"] = json!(1);
    assert!(!chain.matches(&low_level));
}

#[test]
fn sixteen_levels_of_nesting_compile_and_match() {
    let mut filter = json!({"Selector": "Type", "Type": "equals", "Match": "ZONE_ENTER"});
    for _ in 1..zonecast_filter::MAX_DEPTH {
        filter = json!({"Children": {"all": [filter]}});
    }
    let chain = one(filter);
    assert_eq!(passing(&chain), ["ZONE_ENTER"]);
}

#[test]
fn unknown_fields_and_null_fields_are_ignored() {
    let chain = one(json!({"FilterTemplate": "alarm_events", "Comment": "alarms only",
                           "Selector": null, "Type": null, "Match": null, "Invert": null, "Children": null}));
    assert_eq!(passing(&chain), ["SITE_ALARM", "DEVICE_ALARM"]);
}

#[test]
fn a_chain_can_be_built_with_try_from() {
    let chain = Chain::try_from(&json!([{"FilterTemplate": "alarm_events"}])).unwrap();
    assert!(chain.matches(&alarm()));
    assert!(Chain::try_from(&json!({})).is_err());
}

#[test]
fn a_compiled_chain_can_be_cloned_and_shared_across_threads() {
    let chain = one(json!({"Selector": "Source.MAC", "Type": "regex", "Match": "^00:"}));
    let copy = chain.clone();
    let handle = std::thread::spawn(move || copy.matches(&position()));
    assert!(handle.join().unwrap());
    assert!(chain.matches(&position()));
}

#[test]
fn admits_rules_out_only_what_a_top_level_template_excludes() {
    let zones = compile(&json!([{"FilterTemplate": "zone_events"}])).unwrap();
    assert!(zones.admits(Some("ZONE"), Some("ZONE_ENTER")));
    assert!(!zones.admits(Some("LOCATION"), Some("LOCATION_RAW_UPDATE")));
    let dashboard =
        compile(&json!([{"FilterTemplate": "dashboard"}, {"Selector": "Source.MAC", "Type": "exists"}])).unwrap();
    assert!(dashboard.admits(Some("LOCATION"), Some("LOCATION_RAW_UPDATE")));
    assert!(!dashboard.admits(Some("ALARM"), Some("SITE_ALARM")));
    let inverted = compile(&json!([{"FilterTemplate": "zone_events", "Invert": true}])).unwrap();
    assert!(inverted.admits(Some("ZONE"), Some("ZONE_ENTER")), "an inverted template decides nothing alone");
    let test_only = compile(&json!([{"Selector": "Content.ZoneID", "Type": "exists"}])).unwrap();
    assert!(test_only.admits(Some("LOCATION"), None));
    assert!(compile(&json!([])).unwrap().admits(None, None), "the empty chain takes everything");
}

#[test]
fn templates_alone_are_decided_from_category_and_type_and_tests_are_not() {
    let zones = compile(&json!([{"FilterTemplate": "zone_events"}])).unwrap();
    assert_eq!(zones.decide(Some("ZONE"), Some("ZONE_ENTER")), Some(true));
    assert_eq!(zones.decide(Some("LOCATION"), Some("LOCATION_RAW_UPDATE")), Some(false));
    let inverted = compile(&json!([{"FilterTemplate": "zone_events", "Invert": true}])).unwrap();
    assert_eq!(inverted.decide(Some("ZONE"), Some("ZONE_EXIT")), Some(false));
    assert_eq!(inverted.decide(None, None), Some(true), "an event without a Category is no zone event");
    let nested = compile(&json!([{"FilterTemplate": "all", "Children": {"any": [
        {"FilterTemplate": "alarm_events"}, {"FilterTemplate": "zone_events"}]}}]))
    .unwrap();
    assert_eq!(nested.decide(Some("ALARM"), Some("SITE_ALARM")), Some(true));
    assert_eq!(nested.decide(Some("LOCATION"), Some("LOCATION_RAW_UPDATE")), Some(false));
    let tested =
        compile(&json!([{"FilterTemplate": "zone_events"}, {"Selector": "Content.ZoneID", "Type": "exists"}])).unwrap();
    assert_eq!(tested.decide(Some("ZONE"), Some("ZONE_ENTER")), None, "the test must read the event");
    assert_eq!(tested.decide(Some("ALARM"), Some("SITE_ALARM")), Some(false), "the template rules it out alone");
    assert_eq!(compile(&json!([])).unwrap().decide(None, None), Some(true));
}
