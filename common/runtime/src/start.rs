//! Start-up shared by every binary: configuration, tracing, metrics, signals, and the one
//! error a service's start can end in.

use std::fmt::Display;

use crate::Shutdown;
use crate::config::{ConfigError, Load};

/// Why a service could not start: the part that failed and its cause, for operators (causes
/// may name addresses, never secrets).
#[derive(Debug, thiserror::Error)]
#[error("{what}: {cause}")]
pub struct StartError {
    /// The part: `store`, `bus`, `listener`, `keys`, `config`, ...
    pub what: &'static str,
    /// What went wrong.
    pub cause: String,
}

impl StartError {
    /// A failure of `what`.
    pub fn new(what: &'static str, cause: impl Display) -> Self {
        Self { what, cause: cause.to_string() }
    }
}

/// Every binary's first steps: load the binary's configuration from its command line, its
/// environment and its file (printing `--help` or `--version` and exiting when asked),
/// start tracing, install the metrics recorder (so that nothing counted before the first
/// scrape is lost) with `zonecast_build_info` naming the binary, and cancel the returned token
/// on SIGINT/SIGTERM. Must run inside the tokio runtime.
pub fn boot<C: Load>() -> Result<(C, Shutdown), ConfigError> {
    let loaded = match C::from_process() {
        Ok(loaded) => loaded,
        Err(ConfigError::Help(text)) => {
            println!("{}", text.trim_end());
            std::process::exit(0);
        }
        Err(e) => return Err(e),
    };
    crate::telemetry::init(loaded.log_json);
    crate::metrics::build_info(C::BINARY);
    Ok((loaded.config, crate::shutdown::on_signals()))
}
