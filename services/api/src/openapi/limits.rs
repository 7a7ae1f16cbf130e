//! The limits the OpenAPI document states: list lengths, row counts and sizes the server
//! enforces. The types' schemas mark where each goes (`"x-limit": {"maxItems": "device_list"}`,
//! see `zonecast_model::schema`); [`StatedLimits`] writes the values in force there, in one place.

use schemars::Schema;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::Value;
use zonecast_model::Limits;
use zonecast_model::schema::LIMIT_MARK;

/// Rows of a polygon's GeometryData beside its vertices: a closing vertex, `[h,0,0]`, `[axis]`.
const ROWS_BESIDE_VERTICES: usize = 3;

/// Writes the limits in force in place of the marks of a schema and its subschemas.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatedLimits(pub Limits);

impl StatedLimits {
    /// The value of the limit a mark names.
    fn value(&self, name: &str) -> Option<usize> {
        let l = &self.0;
        Some(match name {
            "device_list" => l.device_list,
            "zone_actions" => l.zone_actions,
            "geometry_rows" => l.polygon_vertices + ROWS_BESIDE_VERTICES,
            "batch_zones" => l.batch_zones,
            "radii_per_write" => l.radii_per_write,
            "devices_per_import" => l.devices_per_import,
            "info_message_chars" => l.info_message_chars,
            "topics_per_connection" => l.topics_per_connection,
            _ => return None,
        })
    }
}

impl Transform for StatedLimits {
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
