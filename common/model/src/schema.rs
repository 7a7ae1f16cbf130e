//! What the JSON Schemas of the API's types share. Request bodies are read from JSON by hand
//! (with the rules of [`crate::Invalid`]) into the types whose schemas state what they accept,
//! and then made into the domain types; response types derive theirs from their `Serialize` form.
//!
//! Limits that are configuration rather than rules (list lengths, row counts) are not written
//! into the schemas here: a schema carries a mark, `"x-limit": {"maxItems": "device_list"}`,
//! naming the keyword and a field of [`crate::Limits`] (`geometry_rows` stands for
//! `polygon_vertices` plus the closing vertex, height and axis rows), and the OpenAPI generator
//! puts the values in force in their place.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// Key of the mark that stands for a configurable limit.
pub const LIMIT_MARK: &str = "x-limit";

/// An upper-case UUID as every response writes IDs (`ZoneID`, `ConnectionID`, …).
pub struct UpperUuid;

impl JsonSchema for UpperUuid {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UpperUuid".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "uuid",
            "pattern": "^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$",
        })
    }
}

/// A UUID as a client may send it (any case), or `""` for none.
pub struct UuidOrEmpty;

impl JsonSchema for UuidOrEmpty {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UuidOrEmpty".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [{"type": "string", "format": "uuid"}, {"const": ""}]})
    }
}

/// An ISO 8601 time a client sends: RFC 3339 with a zone, or `""` for none.
pub struct TimeOrEmpty;

impl JsonSchema for TimeOrEmpty {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TimeOrEmpty".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [{"type": "string", "format": "date-time", "examples": ["2026-11-21T10:00:00.000Z"]}, {"const": ""}],
        })
    }
}

/// Removes `format` (schemars gives `u64` the format `uint64`, which would cap a value the
/// API takes without upper bound).
pub(crate) fn unbounded(schema: &mut Schema) {
    schema.remove("format");
}
