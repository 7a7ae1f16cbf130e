//! Every way a chain is rejected, with the path and message the config API will show in its 422.
#![allow(clippy::unwrap_used)] // a panic is how a test reports failure

use serde_json::{Value, json};
use zonecast_filter::{Bounds, Budget, FilterError, MAX_DEPTH, compile, compile_in};

const MAX_FILTERS: usize = Bounds::DEFAULT.filters_per_chain;

#[track_caller]
fn rejects(chain: Value, path: &str, message: &str) {
    let err = compile(&chain).expect_err("chain should be rejected");
    assert_eq!(err, FilterError { path: path.to_owned(), message: message.to_owned() }, "{chain}");
}

/// A one-filter chain.
#[track_caller]
fn rejects_filter(filter: Value, path: &str, message: &str) {
    rejects(json!([filter]), path, message);
}

#[test]
fn the_error_displays_as_path_colon_message() {
    let err = compile(&json!([{"Type": "foo", "Selector": "a"}])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[0].Type: unknown filter type 'foo' (expected regex, equals, exists, lt, lte, gt, gte)"
    );
}

#[test]
fn a_chain_that_is_not_an_array_is_rejected_without_a_path() {
    rejects(json!({"FilterTemplate": "all"}), "", "must be a JSON array of filters, got object");
    rejects(json!("all"), "", "must be a JSON array of filters, got string");
    let err = compile(&json!(1)).unwrap_err();
    assert_eq!(err.to_string(), "must be a JSON array of filters, got number");
}

#[test]
fn a_filter_that_is_not_an_object_is_rejected() {
    rejects(json!([{"FilterTemplate": "all"}, "dashboard"]), "[1]", "must be a filter object, got string");
    rejects(json!([null]), "[0]", "must be a filter object, got null");
}

#[test]
fn a_filter_with_nothing_to_test_is_rejected() {
    let message = "filter needs FilterTemplate, Type or Children";
    rejects_filter(json!({}), "[0]", message);
    rejects_filter(json!({"Comment": "x", "Invert": false}), "[0]", message);
    rejects_filter(json!({"Children": {}}), "[0]", message);
    rejects_filter(json!({"Children": {"all": []}}), "[0]", message);
    rejects_filter(json!({"FilterTemplate": "all", "Children": {"all": [{}]}}), "[0].Children.all[0]", message);
}

#[test]
fn an_unknown_template_is_rejected() {
    let message =
        "unknown filter template 'zones' (expected dashboard, position_events, zone_events, alarm_events, all)";
    rejects_filter(json!({"FilterTemplate": "zones"}), "[0].FilterTemplate", message);
    rejects_filter(
        json!({"FilterTemplate": ""}),
        "[0].FilterTemplate",
        "unknown filter template '' (expected dashboard, position_events, zone_events, alarm_events, all)",
    );
}

#[test]
fn an_unknown_type_is_rejected() {
    rejects_filter(
        json!({"Selector": "a", "Type": "foo"}),
        "[0].Type",
        "unknown filter type 'foo' (expected regex, equals, exists, lt, lte, gt, gte)",
    );
    rejects_filter(
        json!({"Selector": "a", "Type": "Equals", "Match": "x"}),
        "[0].Type",
        "unknown filter type 'Equals' (expected regex, equals, exists, lt, lte, gt, gte)",
    );
}

#[test]
fn fields_of_the_wrong_json_type_are_rejected() {
    rejects_filter(json!({"FilterTemplate": 1}), "[0].FilterTemplate", "must be a string, got number");
    rejects_filter(json!({"Selector": ["a"], "Type": "exists"}), "[0].Selector", "must be a string, got array");
    rejects_filter(json!({"Selector": "a", "Type": true}), "[0].Type", "must be a string, got bool");
    rejects_filter(json!({"FilterTemplate": "all", "Invert": "true"}), "[0].Invert", "must be a bool, got string");
    rejects_filter(json!({"FilterTemplate": "all", "Invert": 1}), "[0].Invert", "must be a bool, got number");
    rejects_filter(
        json!({"Selector": "a", "Type": "equals", "Match": {"x": 1}}),
        "[0].Match",
        "must be a string, number or bool, got object",
    );
    rejects_filter(
        json!({"Selector": "a", "Type": "regex", "Match": ["x"]}),
        "[0].Match",
        "must be a string, number or bool, got array",
    );
}

#[test]
fn a_bad_selector_is_rejected() {
    for selector in ["", ".", "Source..MAC", ".Source", "Source.", "Content.Position."] {
        rejects_filter(
            json!({"Selector": selector, "Type": "exists"}),
            "[0].Selector",
            &format!(
                "bad selector '{selector}': empty path segment (expected keys joined by dots, e.g. Content.ZoneID)"
            ),
        );
    }
}

#[test]
fn a_type_without_a_selector_is_rejected() {
    rejects_filter(json!({"Type": "equals", "Match": "x"}), "[0].Selector", "Selector is required for Type equals");
    rejects_filter(
        json!({"FilterTemplate": "all", "Type": "exists"}),
        "[0].Selector",
        "Selector is required for Type exists",
    );
}

#[test]
fn a_selector_or_match_without_a_type_is_rejected() {
    rejects_filter(json!({"Selector": "Source.MAC"}), "[0].Type", "Type is required when Selector is set");
    rejects_filter(
        json!({"FilterTemplate": "all", "Selector": "a", "Match": "x"}),
        "[0].Type",
        "Type is required when Selector is set",
    );
    rejects_filter(json!({"FilterTemplate": "all", "Match": "x"}), "[0].Type", "Type is required when Match is set");
}

#[test]
fn a_missing_match_is_rejected_except_for_exists() {
    for op in ["regex", "equals", "lt", "lte", "gt", "gte"] {
        rejects_filter(json!({"Selector": "a", "Type": op}), "[0].Match", &format!("Match is required for {op}"));
        rejects_filter(
            json!({"Selector": "a", "Type": op, "Match": null}),
            "[0].Match",
            &format!("Match is required for {op}"),
        );
    }
    assert!(compile(&json!([{"Selector": "a", "Type": "exists"}])).is_ok());
}

#[test]
fn a_regex_that_does_not_compile_is_rejected_with_the_reason() {
    rejects_filter(
        json!({"Selector": "a", "Type": "regex", "Match": "(unclosed"}),
        "[0].Match",
        "invalid regex: unclosed group",
    );
    rejects_filter(
        json!({"Selector": "a", "Type": "regex", "Match": "a{2,1}"}),
        "[0].Match",
        "invalid regex: invalid repetition count range, the start must be <= the end",
    );
}

#[test]
fn a_multi_line_regex_error_is_reduced_to_its_reason() {
    rejects_filter(
        json!({"Selector": "a", "Type": "regex", "Match": "a\nb("}),
        "[0].Match",
        "invalid regex: unclosed group",
    );
}

#[test]
fn a_non_numeric_match_for_a_comparison_is_rejected() {
    for op in ["lt", "lte", "gt", "gte"] {
        for bad in [json!("ten"), json!(true), json!(""), json!("NaN"), json!("inf"), json!(" 1")] {
            rejects_filter(
                json!({"Selector": "a", "Type": op, "Match": bad}),
                "[0].Match",
                &format!("Match must be a number for {op}"),
            );
        }
    }
}

#[test]
fn invert_on_a_filter_with_only_children_is_rejected() {
    rejects_filter(
        json!({"Invert": true, "Children": {"all": [{"FilterTemplate": "all"}]}}),
        "[0].Invert",
        "Invert needs a FilterTemplate or Type to negate (it does not apply to Children)",
    );
}

#[test]
fn children_of_the_wrong_shape_are_rejected() {
    rejects_filter(
        json!({"FilterTemplate": "all", "Children": [{"FilterTemplate": "all"}]}),
        "[0].Children",
        r#"must be an object with all or any (e.g. {"all": [...]}), got array"#,
    );
    rejects_filter(
        json!({"FilterTemplate": "all", "Children": {"all": {"FilterTemplate": "all"}}}),
        "[0].Children.all",
        "must be an array of filters, got object",
    );
    rejects_filter(
        json!({"FilterTemplate": "all", "Children": {"any": null}}),
        "[0].Children.any",
        "must be an array of filters, got null",
    );
}

#[test]
fn children_with_both_or_other_keys_are_rejected() {
    rejects_filter(
        json!({"FilterTemplate": "all", "Children": {"all": [], "any": []}}),
        "[0].Children",
        "use either all or any, not both",
    );
    rejects_filter(
        json!({"FilterTemplate": "all", "Children": {"one": []}}),
        "[0].Children.one",
        "unknown key 'one' (expected all or any)",
    );
}

#[test]
fn an_empty_any_is_rejected() {
    rejects_filter(
        json!({"FilterTemplate": "all", "Children": {"any": []}}),
        "[0].Children.any",
        "any needs at least one filter",
    );
}

#[test]
fn errors_inside_children_name_the_full_path() {
    rejects(
        json!([
            {"FilterTemplate": "all"},
            {"Children": {"all": [
                {"FilterTemplate": "dashboard"},
                {"Children": {"any": [{"Selector": "a", "Type": "lt", "Match": "high"}]}},
            ]}},
        ]),
        "[1].Children.all[1].Children.any[0].Match",
        "Match must be a number for lt",
    );
}

#[test]
fn nesting_deeper_than_sixteen_levels_is_rejected() {
    let mut filter = json!({"FilterTemplate": "all"});
    for _ in 0..MAX_DEPTH {
        filter = json!({"Children": {"any": [filter]}});
    }
    let path = format!("[0]{}", ".Children.any[0]".repeat(MAX_DEPTH));
    rejects(json!([filter]), &path, "filters are nested deeper than 16 levels");
}

#[test]
fn more_than_256_filters_are_rejected() {
    let ok: Vec<Value> = (0..MAX_FILTERS).map(|_| json!({"FilterTemplate": "all"})).collect();
    assert!(compile(&Value::Array(ok.clone())).is_ok());

    let mut flat = ok.clone();
    flat.push(json!({"FilterTemplate": "all"}));
    rejects(Value::Array(flat), "[256]", "chain has more than 256 filters");

    // Children count too.
    let mut nested = ok[..MAX_FILTERS - 1].to_vec();
    nested.push(json!({"FilterTemplate": "all", "Children": {"all": [{"FilterTemplate": "all"}]}}));
    rejects(Value::Array(nested), "[255].Children.all[0]", "chain has more than 256 filters");
}

#[test]
fn the_first_problem_in_chain_order_is_reported() {
    rejects(
        json!([{"FilterTemplate": "nope"}, {"Type": "nope"}]),
        "[0].FilterTemplate",
        "unknown filter template 'nope' (expected dashboard, position_events, zone_events, alarm_events, all)",
    );
}

#[test]
fn a_regex_that_compiles_too_large_is_refused_before_it_takes_memory() {
    // Unicode \w repeated 200 times compiles to megabytes; its ASCII form is small.
    rejects_filter(
        json!({"Selector": "Source.MAC", "Type": "regex", "Match": "\\w{200}"}),
        "[0].Match",
        "regex is too large when compiled (at most 256 KiB); shorten its repetitions or use ASCII classes such as (?-u:\\w)",
    );
    compile(&json!([{"Selector": "Source.MAC", "Type": "regex", "Match": "(?-u:\\w){200}"}])).unwrap();
}

#[test]
fn one_budget_compiles_a_pattern_once_and_holds_at_most_its_bound_of_distinct_regexes() {
    let mut budget = Budget::default();
    let same =
        json!([{"Selector": "a", "Type": "regex", "Match": "^x"}, {"Selector": "b", "Type": "regex", "Match": "^x"}]);
    for _ in 0..(2 * Bounds::DEFAULT.regexes) {
        compile_in(&same, &mut budget).unwrap();
    }
    assert_eq!(budget.regexes(), 1);
    let distinct = |i: usize| json!([{"Selector": "a", "Type": "regex", "Match": format!("^y{i}$")}]);
    for i in 1..Bounds::DEFAULT.regexes {
        compile_in(&distinct(i), &mut budget).unwrap();
    }
    let err = compile_in(&distinct(0), &mut budget).unwrap_err();
    assert_eq!(err.to_string(), "[0].Match: a connection may use at most 128 distinct regexes");
}

fn budget(change: impl FnOnce(&mut Bounds)) -> Budget {
    let mut bounds = Bounds::DEFAULT;
    change(&mut bounds);
    Budget::new(bounds)
}

#[test]
fn the_filters_of_all_a_connections_chains_are_bounded_together() {
    let mut budget = budget(|b| b.filters_per_connection = 5);
    let three =
        json!([{"FilterTemplate": "all"}, {"FilterTemplate": "all", "Children": {"all": [{"FilterTemplate": "all"}]}}]);
    compile_in(&three, &mut budget).unwrap();
    let err = compile_in(&three, &mut budget).unwrap_err();
    assert_eq!(err.to_string(), "[1].Children.all[0]: the connection's chains hold more than 5 filters together");
}

#[test]
fn the_compiled_size_of_all_a_connections_regexes_is_bounded_together() {
    // Each pattern alone is well within the per-pattern bound; together they are not.
    let mut budget = budget(|b| b.regex_total_bytes = 64 * 1024);
    let chain = |i: usize| json!([{"Selector": "a", "Type": "regex", "Match": format!("^[a-z]{{8}}{i}$")}]);
    let err = (0..128)
        .find_map(|i| compile_in(&chain(i), &mut budget).err())
        .expect("the budget runs out before 128 patterns");
    assert_eq!(
        err.to_string(),
        "[0].Match: the connection's regexes take more than 64 KiB compiled together; use fewer or smaller ones"
    );
    assert!(budget.regex_bytes() <= 64 * 1024, "{} bytes kept", budget.regex_bytes());
    assert!(budget.regexes() >= 2, "only {} patterns fitted", budget.regexes());
}

#[test]
fn compiling_a_connections_regexes_past_the_time_budget_is_refused() {
    let mut budget = budget(|b| b.regex_compile = std::time::Duration::ZERO);
    let err = compile_in(&json!([{"Selector": "a", "Type": "regex", "Match": "^a+$"}]), &mut budget).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[0].Match: the connection's regexes took more than 0 ms to compile; use fewer or simpler ones"
    );
}

#[test]
fn a_configured_per_pattern_bound_is_named_in_the_refusal() {
    let mut budget = budget(|b| b.regex_bytes = 8 * 1024);
    let err = compile_in(&json!([{"Selector": "a", "Type": "regex", "Match": "\\w{20}"}]), &mut budget).unwrap_err();
    assert!(err.to_string().starts_with("[0].Match: regex is too large when compiled (at most 8 KiB)"), "{err}");
}
