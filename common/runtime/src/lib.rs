//! What every zonecast service is built on: configuration, the key material that seals stored
//! secrets and signs tokens, the HTTP edge every listener shares (route tables, the error
//! mapping, health and metrics), the service skeleton, tracing, Prometheus metrics and graceful
//! shutdown.

pub mod applier;
pub mod auth;
pub mod backoff;
pub mod config;
pub mod cors;
pub mod edge;
pub mod http;
pub mod keys;
pub mod lag;
pub mod metrics;
pub mod ops;
pub mod presence;
pub mod ratelog;
pub mod routes;
pub mod serve;
pub mod service;
pub mod shutdown;
pub mod start;
pub mod telemetry;

pub use auth::{Auth, AuthError, Principal};
pub use config::{
    ApiConfig, ApiKey, Authority, Client, Config, ConfigError, EvaluatorConfig, ForwarderConfig, HttpConfig,
    IngestorConfig, Load,
};
pub use keys::{KeyError, Keys};
pub use serve::HttpLimits;
pub use service::Running;
pub use shutdown::Shutdown;
pub use start::{StartError, boot};
pub use zonecast_model::{Limits, Secret};
