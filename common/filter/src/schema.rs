//! The JSON Schema of a filter as [`crate::compile`] reads it, for the API's OpenAPI document.
//! Every field is optional and may be `null`; unknown fields are ignored, except in `Children`.
//! The rules that span fields (a `Type` needs a `Selector`, a regex must compile, a numeric
//! `Type` needs a numeric `Match`) are the compiler's, answered with 422.

use schemars::JsonSchema;

use crate::template::Template;

/// One filter of a `FilterChain`.
///
/// A filter tests its `FilterTemplate`, its `Selector`/`Type`/`Match` test, or both (`Invert`
/// negates them), and its `Children`; it needs at least one of the three.
#[derive(JsonSchema)]
#[schemars(rename = "Filter")]
#[allow(dead_code)]
pub struct FilterSchema {
    /// A named preset standing for a condition on the event's `Category` or `Type`.
    #[schemars(rename = "FilterTemplate", skip_serializing_if = "Option::is_none")]
    template: Option<Template>,
    /// Dotted path into the event; a numeric segment indexes an array (`Content.Position.2`).
    #[schemars(rename = "Selector", skip_serializing_if = "Option::is_none", length(min = 1))]
    selector: Option<String>,
    /// How the selected value is tested.
    #[schemars(rename = "Type", skip_serializing_if = "Option::is_none")]
    kind: Option<TypeName>,
    /// The pattern, value or number the test compares with (`exists` takes none).
    #[schemars(rename = "Match", skip_serializing_if = "Option::is_none")]
    matches: Option<MatchValue>,
    /// Negates the filter's own condition (not its children).
    #[schemars(rename = "Invert", skip_serializing_if = "Option::is_none")]
    invert: Option<bool>,
    /// Nested filters: all of them, or at least one of them, must match too.
    #[schemars(rename = "Children", skip_serializing_if = "Option::is_none")]
    children: Option<ChildrenSchema>,
}

/// `{}`, `{"all": [Filter…]}` or `{"any": [Filter…]}` (one of the two).
#[derive(JsonSchema)]
#[schemars(rename = "FilterChildren", deny_unknown_fields, extend("maxProperties" = 1))]
#[allow(dead_code)]
struct ChildrenSchema {
    /// Every one must match.
    #[schemars(skip_serializing_if = "Option::is_none")]
    all: Option<Vec<FilterSchema>>,
    /// At least one must match.
    #[schemars(skip_serializing_if = "Option::is_none", length(min = 1))]
    any: Option<Vec<FilterSchema>>,
}

/// A filter `Type`.
#[derive(Clone, Copy, JsonSchema)]
#[schemars(rename_all = "lowercase")]
pub(crate) enum TypeName {
    /// Rust regex on the value's string form; anchor with `^…$`.
    Regex,
    /// String form equal to `Match`.
    Equals,
    /// The selected path exists.
    Exists,
    /// Less than `Match` (numbers, or strings holding numbers).
    Lt,
    /// At most `Match`.
    Lte,
    /// More than `Match`.
    Gt,
    /// At least `Match`.
    Gte,
}

impl TypeName {
    /// The accepted names, for error messages.
    pub(crate) const NAMES: &'static str = "regex, equals, exists, lt, lte, gt, gte";

    /// Every type, in the order of [`TypeName::NAMES`].
    const ALL: [Self; 7] = [Self::Regex, Self::Equals, Self::Exists, Self::Lt, Self::Lte, Self::Gt, Self::Gte];

    /// Parses a type name (exact, lower case).
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// The name as a filter writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Regex => "regex",
            Self::Equals => "equals",
            Self::Exists => "exists",
            Self::Lt => "lt",
            Self::Lte => "lte",
            Self::Gt => "gt",
            Self::Gte => "gte",
        }
    }
}

/// A `Match` value: a string, number or boolean, compared by its string form or as a number.
#[derive(JsonSchema)]
#[schemars(untagged)]
#[allow(dead_code)]
enum MatchValue {
    Text(String),
    Number(f64),
    Flag(bool),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Value, json};

    use super::*;

    fn names(schema: &Value) -> Vec<String> {
        let variants = schema["oneOf"].as_array().cloned().unwrap_or_else(|| vec![schema.clone()]);
        variants
            .iter()
            .flat_map(|v| v["enum"].as_array().cloned().unwrap_or_else(|| vec![v["const"].clone()]))
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn every_documented_template_and_type_compiles() {
        let templates = names(&schemars::schema_for!(Template).to_value());
        assert_eq!(templates.len(), 5);
        for name in templates {
            crate::compile(&json!([{"FilterTemplate": name}])).unwrap();
        }
        let types = names(&schemars::schema_for!(TypeName).to_value());
        assert_eq!(types.len(), 7);
        for name in types {
            crate::compile(&json!([{"Selector": "Content.AlertLevel", "Type": name, "Match": 1}])).unwrap();
        }
    }
}
