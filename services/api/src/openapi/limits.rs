//! The limits the OpenAPI document states: list lengths, row counts and sizes that the server
//! enforces. The types' schemas mark where each goes (`"x-limit": {"maxItems": "list"}`, see
//! `zonecast_model::schema`); [`Limits`] writes the values in force there, in one place, so that
//! configured limits can be passed in.

use schemars::Schema;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::Value;
use zonecast_model::schema::LIMIT_MARK;

/// The limits in force, by the names the schemas mark them with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `list`: entries of a DeviceList, of ZoneActions, of a MAC list body.
    pub list: usize,
    /// `rows`: GeometryData rows.
    pub rows: usize,
    /// `topics`: topics of one connection.
    pub topics: usize,
    /// `message_chars`: characters of an info-event message.
    pub message_chars: usize,
    /// `radii_per_write`: entries of one device radius write.
    pub radii_per_write: usize,
    /// `zones_per_batch`: zones of one batch create or update.
    pub zones_per_batch: usize,
}

impl Limits {
    /// The limits the server enforces now.
    pub const fn current() -> Self {
        Self {
            list: zonecast_model::MAX_LIST,
            rows: zonecast_model::MAX_ROWS,
            topics: zonecast_model::MAX_TOPICS,
            message_chars: zonecast_model::MAX_MESSAGE_CHARS,
            radii_per_write: zonecast_model::MAX_RADII_PER_WRITE,
            zones_per_batch: crate::handlers::zones::MAX_ZONES_PER_BATCH,
        }
    }

    /// The value of the limit `name`.
    fn value(&self, name: &str) -> Option<usize> {
        Some(match name {
            "list" => self.list,
            "rows" => self.rows,
            "topics" => self.topics,
            "message_chars" => self.message_chars,
            "radii_per_write" => self.radii_per_write,
            "zones_per_batch" => self.zones_per_batch,
            _ => return None,
        })
    }
}

impl Transform for Limits {
    /// Replaces every mark with its keywords and values; a mark naming an unknown limit stays,
    /// for the document's tests to find.
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(Value::Object(marks)) = schema.get(LIMIT_MARK).cloned() {
            let resolved: Option<Vec<(String, usize)>> =
                marks.iter().map(|(keyword, name)| Some((keyword.clone(), self.value(name.as_str()?)?))).collect();
            if let Some(resolved) = resolved {
                schema.remove(LIMIT_MARK);
                for (keyword, value) in resolved {
                    schema.insert(keyword, value.into());
                }
            }
        }
        transform_subschemas(self, schema);
    }
}
