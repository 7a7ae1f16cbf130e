//! Structured logging with `tracing`: text for a terminal, JSON for log shippers.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The filter when `RUST_LOG` is unset: `info`, but the NATS client's line for each of its
/// events (one per message dropped for a slow subscription, under a flood thousands a second)
/// only from warnings up; zonecast logs those events itself, drops at a limited rate.
const DEFAULT_FILTER: &str = "info,async_nats=warn";

/// Installs the global subscriber once; `RUST_LOG` overrides the default filter
/// ([`DEFAULT_FILTER`]).
/// `json` selects one JSON object per line. Text is coloured only when standard output is a
/// terminal and `NO_COLOR` is unset, so a log written to a file or a journal carries no escape
/// codes.
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(true).with_ansi(colour);
    let result = if json { builder.json().try_init() } else { builder.try_init() };
    // A second init (tests composing several services) keeps the first subscriber.
    drop(result);
}
