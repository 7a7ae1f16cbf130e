//! What one request may ask (HTTP bounds, zones, radii, connections) and what compiling a
//! connection's filter chains may take.

use std::time::Duration;

use clap::Args;
use zonecast_model::Limits;

use super::Check;
use crate::config::HttpLimits;

/// The HTTP limits every listener keeps.
#[derive(Args)]
#[command(next_help_heading = "HTTP limits")]
pub struct LimitsArgs {
    /// Largest accepted request body, in bytes (413 past it).
    #[arg(long, env = "ZONECAST_MAX_BODY_BYTES", value_name = "BYTES", default_value = "8388608")]
    pub(super) max_body_bytes: String,
    /// Most connections each HTTP listener holds open at once (1-1000000).
    #[arg(long, env = "ZONECAST_HTTP_MAX_CONNECTIONS", value_name = "N", default_value = "4096")]
    pub(super) http_max_connections: String,
    /// Time a client has to send a request's head; idle and half-sent connections are closed
    /// after it (1-3600000 ms).
    #[arg(long, env = "ZONECAST_HTTP_HEADER_TIMEOUT_MS", value_name = "MS", default_value = "10000")]
    pub(super) http_header_timeout_ms: String,
    /// Time a client has to send a request's body; 408 after it (1-3600000 ms).
    #[arg(long, env = "ZONECAST_HTTP_BODY_TIMEOUT_MS", value_name = "MS", default_value = "30000")]
    pub(super) http_body_timeout_ms: String,
}

impl LimitsArgs {
    /// The HTTP limits.
    pub fn check(&self, c: &mut Check<'_>) -> HttpLimits {
        HttpLimits {
            max_body_bytes: c.parse("max_body_bytes", &self.max_body_bytes, 0),
            max_connections: c.within("http_max_connections", &self.http_max_connections, 1, 1_000_000),
            header_timeout: Duration::from_millis(c.within(
                "http_header_timeout_ms",
                &self.http_header_timeout_ms,
                1,
                3_600_000,
            )),
            body_timeout: Duration::from_millis(c.within(
                "http_body_timeout_ms",
                &self.http_body_timeout_ms,
                1,
                3_600_000,
            )),
        }
    }
}

/// The limits on what clients send to the API (zones, radii, connections).
#[derive(Args)]
#[command(next_help_heading = "Input limits")]
pub struct InputLimitArgs {
    /// Most entries in a zone's DeviceList, on every route that writes it (1-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_DEVICE_LIST", value_name = "N", default_value = "10000")]
    pub(super) limit_device_list: String,
    /// Most entries in a zone's ZoneActions (0-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_ZONE_ACTIONS", value_name = "N", default_value = "10000")]
    pub(super) limit_zone_actions: String,
    /// Most vertices of a polygon zone, not counting a closing vertex (3-1000000); GeometryData
    /// holds at most this many rows plus three.
    #[arg(long, env = "ZONECAST_LIMIT_POLYGON_VERTICES", value_name = "N", default_value = "1000")]
    pub(super) limit_polygon_vertices: String,
    /// Most zones one batch create or update takes (1-100000).
    #[arg(long, env = "ZONECAST_LIMIT_BATCH_ZONES", value_name = "N", default_value = "1000")]
    pub(super) limit_batch_zones: String,
    /// Most devices one radius write names (1-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_RADII_PER_WRITE", value_name = "N", default_value = "10000")]
    pub(super) limit_radii_per_write: String,
    /// Most devices one device import takes, JSON elements or CSV rows (1-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_DEVICES_PER_IMPORT", value_name = "N", default_value = "10000")]
    pub(super) limit_devices_per_import: String,
    /// Longest info-event message, in characters (0-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_INFO_MESSAGE_CHARS", value_name = "N", default_value = "1024")]
    pub(super) limit_info_message_chars: String,
    /// Most topics of one MQTT connection (0-100000).
    #[arg(long, env = "ZONECAST_LIMIT_TOPICS_PER_CONNECTION", value_name = "N", default_value = "100")]
    pub(super) limit_topics_per_connection: String,
}

impl InputLimitArgs {
    /// Sets the input limits of `limits`.
    pub fn check(&self, c: &mut Check<'_>, limits: &mut Limits) {
        limits.device_list = c.within("limit_device_list", &self.limit_device_list, 1, 1_000_000);
        limits.zone_actions = c.within("limit_zone_actions", &self.limit_zone_actions, 0, 1_000_000);
        limits.polygon_vertices = c.within("limit_polygon_vertices", &self.limit_polygon_vertices, 3, 1_000_000);
        limits.batch_zones = c.within("limit_batch_zones", &self.limit_batch_zones, 1, 100_000);
        limits.radii_per_write = c.within("limit_radii_per_write", &self.limit_radii_per_write, 1, 1_000_000);
        limits.devices_per_import = c.within("limit_devices_per_import", &self.limit_devices_per_import, 1, 1_000_000);
        limits.info_message_chars = c.within("limit_info_message_chars", &self.limit_info_message_chars, 0, 1_000_000);
        limits.topics_per_connection =
            c.within("limit_topics_per_connection", &self.limit_topics_per_connection, 0, 100_000);
    }
}

/// The limits on compiling a connection's filter chains: the API checks them when a
/// connection is written, the forwarder when it builds its routes.
#[derive(Args)]
#[command(next_help_heading = "Filter chain limits")]
pub struct FilterLimitArgs {
    /// Most filters in one FilterChain, counting children at every depth (1-1000000).
    #[arg(long, env = "ZONECAST_LIMIT_FILTERS_PER_CHAIN", value_name = "N", default_value = "256")]
    pub(super) limit_filters_per_chain: String,
    /// Most filters in all the chains of one connection together, a bound on topics × filters
    /// (1-100000000).
    #[arg(long, env = "ZONECAST_LIMIT_FILTERS_PER_CONNECTION", value_name = "N", default_value = "25600")]
    pub(super) limit_filters_per_connection: String,
    /// Most distinct regexes one connection uses; each is compiled once and shared (0-100000).
    #[arg(long, env = "ZONECAST_LIMIT_REGEXES_PER_CONNECTION", value_name = "N", default_value = "128")]
    pub(super) limit_regexes_per_connection: String,
    /// Largest compiled form of one regex, in bytes (1024-1073741824).
    #[arg(long, env = "ZONECAST_LIMIT_REGEX_BYTES", value_name = "BYTES", default_value = "262144")]
    pub(super) limit_regex_bytes: String,
    /// Most bytes all of one connection's compiled regexes take together (1024-68719476736).
    #[arg(long, env = "ZONECAST_LIMIT_REGEX_TOTAL_BYTES", value_name = "BYTES", default_value = "8388608")]
    pub(super) limit_regex_total_bytes: String,
    /// Most time compiling all of one connection's regexes may take together (1-600000 ms).
    #[arg(long, env = "ZONECAST_LIMIT_REGEX_COMPILE_MS", value_name = "MS", default_value = "2000")]
    pub(super) limit_regex_compile_ms: String,
}

impl FilterLimitArgs {
    /// Sets the filter chain limits of `limits`.
    pub fn check(&self, c: &mut Check<'_>, limits: &mut Limits) {
        limits.filters_per_chain = c.within("limit_filters_per_chain", &self.limit_filters_per_chain, 1, 1_000_000);
        limits.filters_per_connection =
            c.within("limit_filters_per_connection", &self.limit_filters_per_connection, 1, 100_000_000);
        limits.regexes_per_connection =
            c.within("limit_regexes_per_connection", &self.limit_regexes_per_connection, 0, 100_000);
        limits.regex_bytes = c.within("limit_regex_bytes", &self.limit_regex_bytes, 1024, 1 << 30);
        limits.regex_total_bytes = c.within("limit_regex_total_bytes", &self.limit_regex_total_bytes, 1024, 1 << 36);
        limits.regex_compile_ms = c.within("limit_regex_compile_ms", &self.limit_regex_compile_ms, 1, 600_000);
    }
}

/// Every limit, from both groups.
pub fn all_limits(input: &InputLimitArgs, filter: &FilterLimitArgs, c: &mut Check<'_>) -> Limits {
    let mut limits = Limits::default();
    input.check(c, &mut limits);
    filter.check(c, &mut limits);
    limits
}
