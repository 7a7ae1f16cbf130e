//! `Limits`: how much one request may ask of the service, in one place. Configuration fills it
//! (each field has a `ZONECAST_LIMIT_*` setting), the validation at the edge reads it, and the
//! API's documentation can show it.

use std::time::Duration;

use zonecast_filter::Bounds;

/// The bounds on what clients send, checked at the edge before the work they bound. Every
/// refusal is a 422 (413 for a body too large to parse) whose message names the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most entries in a zone's `DeviceList`, on every route that writes it (a whole list, or
    /// devices added to one).
    pub device_list: usize,
    /// Most entries in a zone's `ZoneActions`.
    pub zone_actions: usize,
    /// Most vertices of a polygon zone, not counting a closing vertex; `GeometryData` holds at
    /// most this many rows plus three (closing vertex, height, axis).
    pub polygon_vertices: usize,
    /// Most zones one batch create or update takes.
    pub batch_zones: usize,
    /// Most devices one radius write (`PUT …/devices/radius`) names.
    pub radii_per_write: usize,
    /// Most devices one import (`POST /v3/devices/import`) takes, JSON elements or CSV rows.
    pub devices_per_import: usize,
    /// Longest info-event `message`, in characters.
    pub info_message_chars: usize,
    /// Most `topics` of one MQTT connection.
    pub topics_per_connection: usize,
    /// Most filters in one `FilterChain`, counting children at every depth.
    pub filters_per_chain: usize,
    /// Most filters in all the chains of one connection together (topics × filters).
    pub filters_per_connection: usize,
    /// Most distinct regexes one connection uses; a pattern used by several filters or topics
    /// is compiled once and shared.
    pub regexes_per_connection: usize,
    /// Largest compiled form of one regex, in bytes.
    pub regex_bytes: usize,
    /// Most bytes all of one connection's compiled regexes take together.
    pub regex_total_bytes: usize,
    /// Most milliseconds compiling all of one connection's regexes may take together.
    pub regex_compile_ms: u64,
}

impl Limits {
    /// The defaults.
    pub const DEFAULT: Self = Self {
        device_list: 10_000,
        zone_actions: 10_000,
        polygon_vertices: 1_000,
        batch_zones: 1_000,
        radii_per_write: 10_000,
        devices_per_import: 10_000,
        info_message_chars: 1_024,
        topics_per_connection: 100,
        filters_per_chain: Bounds::DEFAULT.filters_per_chain,
        filters_per_connection: Bounds::DEFAULT.filters_per_connection,
        regexes_per_connection: Bounds::DEFAULT.regexes,
        regex_bytes: Bounds::DEFAULT.regex_bytes,
        regex_total_bytes: Bounds::DEFAULT.regex_total_bytes,
        regex_compile_ms: Bounds::DEFAULT.regex_compile.as_millis() as u64,
    };

    /// Most `GeometryData` rows: a polygon of [`Limits::polygon_vertices`], a closing vertex,
    /// its height and its axis.
    pub fn geometry_rows(&self) -> usize {
        self.polygon_vertices.saturating_add(3)
    }

    /// The longest list or object any of these limits lets through; a body's lists are bounded
    /// far above it before the body is parsed at all.
    pub fn longest_list(&self) -> usize {
        [
            self.device_list,
            self.zone_actions,
            self.geometry_rows(),
            self.batch_zones,
            self.radii_per_write,
            self.devices_per_import,
            self.topics_per_connection,
            self.filters_per_chain,
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }

    /// What compiling one connection's filter chains may spend.
    pub fn filter_bounds(&self) -> Bounds {
        Bounds {
            filters_per_chain: self.filters_per_chain,
            filters_per_connection: self.filters_per_connection,
            regexes: self.regexes_per_connection,
            regex_bytes: self.regex_bytes,
            regex_total_bytes: self.regex_total_bytes,
            regex_compile: Duration::from_millis(self.regex_compile_ms),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_bounds_are_the_filter_crates_defaults_unless_configured() {
        assert_eq!(Limits::DEFAULT.filter_bounds(), Bounds::DEFAULT);
        let limits = Limits { regex_compile_ms: 250, filters_per_chain: 7, ..Limits::DEFAULT };
        assert_eq!(limits.filter_bounds().regex_compile, Duration::from_millis(250));
        assert_eq!(limits.filter_bounds().filters_per_chain, 7);
    }

    #[test]
    fn the_longest_list_follows_the_largest_list_limit() {
        assert_eq!(Limits::DEFAULT.longest_list(), 10_000);
        assert_eq!(Limits { polygon_vertices: 50_000, ..Limits::DEFAULT }.longest_list(), 50_003);
    }
}
