//! Filter chains: compile a connection topic's `FilterChain` JSON once, match events fast.
//!
//! The config API calls [`compile`] when a connection is written and turns a [`FilterError`] into a
//! 422; the forwarder keeps the compiled [`Chain`] and calls [`Chain::matches`] on every event.
//! Everything that can be wrong with a chain is found by [`compile`], so matching never fails: an
//! event either matches or it does not.
//!
//! A chain is a JSON array of filter objects; it matches when every filter matches, and the empty
//! chain (or `null`) matches everything. A filter is
//! `{"FilterTemplate", "Selector", "Type", "Match", "Invert", "Children"}`, every field optional,
//! unknown fields ignored, and a field set to `null` treated as absent:
//!
//! - `FilterTemplate`: `dashboard` (Type `LOCATION_RAW_UPDATE`, `ZONE_ENTER` or `ZONE_EXIT`),
//!   `position_events` (Category `LOCATION`), `zone_events` (Category `ZONE`), `alarm_events`
//!   (Category `ALARM`) or `all`.
//! - `Selector` + `Type` + `Match`: a test on the value the dotted `Selector` points at
//!   (`Content.Position.2`: a numeric segment indexes arrays and is a plain key on objects).
//!   `Type` is `regex`, `equals`, `exists`, `lt`, `lte`, `gt` or `gte`. `regex` and `equals` work
//!   on the value's *string form* (strings as they are, numbers as serde_json prints them, `true`,
//!   `false`, `null`, objects and arrays as compact JSON), so `equals` with Match `5` does not
//!   match `5.0`; the comparisons work on numbers and on strings that parse as numbers.
//!   A selector that does not resolve makes the test fail.
//! - A filter's *own condition* is its template and its test together (both must hold when both
//!   are set). `Invert` negates the own condition only, so an inverted test on a missing path
//!   matches, and `Invert` does not reach into `Children`.
//! - `Children`: `{"all": [...]}` or `{"any": [...]}`; the filter matches when its own condition
//!   holds and all (or at least one) of its children match. A filter with only `Children` is a
//!   plain group.
//!
//! ```
//! use serde_json::json;
//!
//! let chain = zonecast_filter::compile(&json!([
//!     {"FilterTemplate": "zone_events"},
//!     {"Selector": "Content.AlertLevel", "Type": "gte", "Match": 2},
//! ]))?;
//! let event = json!({"Category": "ZONE", "Type": "ZONE_ENTER", "Content": {"AlertLevel": 3}});
//! assert!(chain.matches(&event));
//! # Ok::<(), zonecast_filter::FilterError>(())
//! ```

mod compile;
mod error;
mod matcher;
mod schema;
mod selector;
mod template;
mod value;

pub use compile::{Bounds, Budget, MAX_DEPTH, compile, compile_in};
pub use error::FilterError;
pub use matcher::Chain;
pub use schema::FilterSchema;
