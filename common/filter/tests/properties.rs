//! Properties over random events and filters: complementary comparisons, Invert, the empty chain.
#![allow(clippy::unwrap_used)] // a panic is how a test reports failure

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use zonecast_filter::compile;

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[A-Za-z0-9]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A finite number as the event carries it: JSON number or numeric string.
fn numeric_field() -> impl Strategy<Value = (f64, Value)> {
    prop_oneof![
        any::<i32>().prop_map(|n| (f64::from(n), json!(n))),
        (-1e9f64..1e9).prop_map(|x| (x, json!(x))),
        prop::num::f64::NORMAL.prop_map(|x| (x, json!(x))),
        (-1e6f64..1e6).prop_map(|x| (x, json!(x.to_string()))),
    ]
}

/// A threshold, sometimes exactly equal to the value.
fn threshold(value: f64) -> impl Strategy<Value = f64> {
    prop_oneof![Just(value), -1e9f64..1e9, prop::num::f64::NORMAL,]
}

/// Something that looks like a zonecast envelope plus random noise.
fn event() -> impl Strategy<Value = Value> {
    let kinds = prop::sample::select(vec![
        ("LOCATION", "LOCATION_RAW_UPDATE"),
        ("ZONE", "ZONE_ENTER"),
        ("ZONE", "ZONE_EXIT"),
        ("ZONE", "ZONE_INFO"),
        ("ALARM", "SITE_ALARM"),
        ("ALARM", "DEVICE_ALARM"),
        ("OTHER", "OTHER"),
    ]);
    (
        kinds,
        "[0-9A-F]{2}(:[0-9A-F]{2}){5}",
        prop::option::of(any_json()),
        prop::collection::vec(-100f64..100.0, 0..4),
        any_json(),
    )
        .prop_map(|((category, kind), mac, zone_id, position, extra)| {
            let mut content = json!({"Position": position, "Extra": extra});
            if let Some(zone_id) = zone_id {
                content["ZoneID"] = zone_id;
            }
            json!({"Category": category, "Type": kind,
                   "Source": {"MAC": mac, "SiteID": 501}, "Content": content})
        })
}

/// A filter without Children, built only from valid parts.
fn childless_filter() -> impl Strategy<Value = Value> {
    let template = prop::option::of(prop::sample::select(vec![
        "dashboard",
        "position_events",
        "zone_events",
        "alarm_events",
        "all",
    ]));
    let selector = prop::sample::select(vec![
        "Type",
        "Category",
        "Source.MAC",
        "Source.SiteID",
        "Content.ZoneID",
        "Content.Position.0",
        "Content.Position.2",
        "Content.Extra",
        "Content.Missing",
    ]);
    let test = prop::option::of((
        selector,
        prop_oneof![
            Just(("exists", json!(null))),
            prop::sample::select(vec!["ZONE", "^[0-9A-F]{2}:", "[0-9]", "E$", "^$"]).prop_map(|r| ("regex", json!(r))),
            prop_oneof![any_json(), Just(json!("ZONE_ENTER")), Just(json!(501))].prop_filter_map(
                "Match must be a scalar",
                |m| match m {
                    Value::String(_) | Value::Number(_) | Value::Bool(_) => Some(("equals", m)),
                    _ => None,
                }
            ),
            (prop::sample::select(vec!["lt", "lte", "gt", "gte"]), -100f64..100.0).prop_map(|(op, t)| (op, json!(t))),
        ],
    ));
    (template, test).prop_filter("needs a template or a test", |(t, x)| t.is_some() || x.is_some()).prop_map(
        |(template, test)| {
            let mut filter = json!({});
            if let Some(template) = template {
                filter["FilterTemplate"] = json!(template);
            }
            if let Some((selector, (op, matched))) = test {
                filter["Selector"] = json!(selector);
                filter["Type"] = json!(op);
                filter["Match"] = matched;
            }
            filter
        },
    )
}

fn matches(filter: &Value, event: &Value) -> bool {
    compile(&json!([filter])).unwrap().matches(event)
}

/// A chain of one to three filters, each a template (sometimes inverted) or a test.
fn chain() -> impl Strategy<Value = Value> {
    let template = prop::sample::select(vec!["dashboard", "position_events", "zone_events", "alarm_events", "all"]);
    let filter = prop_oneof![
        (template, any::<bool>()).prop_map(|(t, invert)| json!({"FilterTemplate": t, "Invert": invert})),
        "[A-Z]{1,3}".prop_map(|m| json!({"Selector": "Type", "Type": "regex", "Match": m})),
        Just(json!({"Selector": "Content.ZoneID", "Type": "exists"})),
    ];
    prop::collection::vec(filter, 1..4).prop_map(Value::Array)
}

proptest! {
    #[test]
    fn admits_never_refuses_an_event_the_chain_matches(event in event(), chain in chain()) {
        let compiled = compile(&chain).unwrap();
        let category = event["Category"].as_str();
        let kind = event["Type"].as_str();
        if compiled.matches(&event) {
            prop_assert!(compiled.admits(category, kind), "{chain} matches {event} but does not admit it");
        }
    }

    #[test]
    fn a_verdict_from_category_and_type_is_the_chains_own(event in event(), chain in chain()) {
        let compiled = compile(&chain).unwrap();
        if let Some(verdict) = compiled.decide(event["Category"].as_str(), event["Type"].as_str()) {
            prop_assert_eq!(verdict, compiled.matches(&event), "{} on {}", chain, event);
        }
    }

    #[test]
    fn lt_and_gte_are_complementary_on_numeric_fields(
        (event, (value, field)) in (event(), numeric_field()),
        t in prop::num::f64::NORMAL,
    ) {
        for threshold in [t, value] {
            let mut event = event.clone();
            event["Content"]["Value"] = field.clone();
            let filter = |op: &str| json!({"Selector": "Content.Value", "Type": op, "Match": threshold});
            let lt = matches(&filter("lt"), &event);
            let gte = matches(&filter("gte"), &event);
            let lte = matches(&filter("lte"), &event);
            let gt = matches(&filter("gt"), &event);
            prop_assert_ne!(lt, gte);
            prop_assert_ne!(lte, gt);
            prop_assert_eq!(lt, value < threshold);
            prop_assert_eq!(lte, value <= threshold);
        }
    }

    #[test]
    fn comparisons_agree_with_f64_on_array_elements(
        position in prop::collection::vec(numeric_field(), 1..5),
        index in 0usize..5,
        t in threshold(0.0),
    ) {
        let values: Vec<Value> = position.iter().map(|(_, v)| v.clone()).collect();
        let event = json!({"Content": {"Position": values}});
        let selector = format!("Content.Position.{index}");
        let lt = matches(&json!({"Selector": selector, "Type": "lt", "Match": t}), &event);
        let gte = matches(&json!({"Selector": selector, "Type": "gte", "Match": t}), &event);
        match position.get(index) {
            Some((value, _)) => {
                prop_assert_eq!(lt, *value < t);
                prop_assert_ne!(lt, gte);
            }
            None => prop_assert!(!lt && !gte, "a missing index matches neither"),
        }
    }

    #[test]
    fn a_threshold_equal_to_the_value_matches_lte_and_gte_only(
        (value, field) in numeric_field(),
    ) {
        let event = json!({"v": field});
        let filter = |op: &str| json!({"Selector": "v", "Type": op, "Match": value});
        prop_assert!(matches(&filter("lte"), &event));
        prop_assert!(matches(&filter("gte"), &event));
        prop_assert!(!matches(&filter("lt"), &event));
        prop_assert!(!matches(&filter("gt"), &event));
    }

    #[test]
    fn invert_always_negates_a_childless_filter(filter in childless_filter(), event in event()) {
        let mut inverted = filter.clone();
        inverted["Invert"] = json!(true);
        prop_assert_ne!(matches(&filter, &event), matches(&inverted, &event));
    }

    #[test]
    fn invert_negates_a_childless_filter_on_any_json(filter in childless_filter(), event in any_json()) {
        let mut inverted = filter.clone();
        inverted["Invert"] = json!(true);
        prop_assert_ne!(matches(&filter, &event), matches(&inverted, &event));
    }

    #[test]
    fn an_empty_chain_matches_everything(event in prop_oneof![event(), any_json()]) {
        prop_assert!(compile(&json!([])).unwrap().matches(&event));
        prop_assert!(compile(&Value::Null).unwrap().matches(&event));
    }

    #[test]
    fn a_chain_matches_when_each_of_its_filters_does(
        filters in prop::collection::vec(childless_filter(), 0..5),
        event in event(),
    ) {
        let chain = compile(&Value::Array(filters.clone())).unwrap();
        let each = filters.iter().all(|f| matches(f, &event));
        prop_assert_eq!(chain.matches(&event), each);
    }

    #[test]
    fn any_children_match_when_one_child_does(
        children in prop::collection::vec(childless_filter(), 1..5),
        event in event(),
    ) {
        let group = json!({"Children": {"any": children.clone()}});
        let one = children.iter().any(|f| matches(f, &event));
        prop_assert_eq!(matches(&group, &event), one);
    }

    #[test]
    fn compile_never_panics_on_random_json(chain in any_json(), event in any_json()) {
        if let Ok(chain) = compile(&chain) {
            let _ = chain.matches(&event);
        }
        let _ = compile(&json!([chain]));
    }
}
