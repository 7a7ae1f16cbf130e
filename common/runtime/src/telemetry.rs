//! Structured logging with `tracing`: text for a terminal, JSON for log shippers.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber once; `RUST_LOG` overrides the default `info` filter.
/// `json` selects one JSON object per line.
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(true);
    let result = if json { builder.json().try_init() } else { builder.try_init() };
    // A second init (tests composing several services) keeps the first subscriber.
    drop(result);
}
