//! Start-up shared by every service: one crypto provider, configuration, tracing, signals, and
//! the one error a service's start can end in.

use std::fmt::Display;

use crate::{Config, ConfigError, Shutdown};

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

/// Every binary's first steps: install ring as the only rustls crypto provider, load the
/// configuration from the environment, start tracing, install the metrics recorder (so that
/// nothing counted before the first scrape is lost), and cancel the returned token on
/// SIGINT/SIGTERM. Must run inside the tokio runtime.
pub fn boot() -> Result<(Config, Shutdown), ConfigError> {
    // Ignored when a provider is installed already (the same one).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = Config::from_env()?;
    crate::telemetry::init(config.log_json);
    crate::metrics::handle();
    Ok((config, crate::shutdown::on_signals()))
}
