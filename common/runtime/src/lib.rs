//! What every zonecast service needs around its core: configuration, the key material that
//! seals stored secrets and signs tokens, tracing, Prometheus metrics and graceful shutdown.

pub mod auth;
pub mod config;
pub mod http;
pub mod keys;
pub mod metrics;
pub mod ops;
pub mod ratelog;
pub mod serve;
pub mod shutdown;
pub mod start;
pub mod telemetry;

pub use auth::{Auth, AuthError, Principal};
pub use config::{ApiKey, Authority, Client, Config, ConfigError};
pub use keys::{KeyError, Keys};
pub use serve::HttpLimits;
pub use shutdown::Shutdown;
pub use start::{StartError, boot};
pub use zonecast_model::Secret;
