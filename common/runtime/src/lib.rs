//! What every zonecast service is built on: configuration, the key material that seals stored
//! secrets and signs tokens, the service skeleton, presence and lag reports, retry schedules,
//! tracing, Prometheus metrics and graceful shutdown. The HTTP edge is `zonecast-http`.

pub mod applier;
pub mod backoff;
pub mod config;
pub mod consume;
pub mod keys;
pub mod lag;
pub mod metrics;
pub mod presence;
pub mod ratelog;
pub mod service;
pub mod shutdown;
pub mod start;
pub mod telemetry;

pub use config::{ApiKey, Authority, Client, ConfigError, HttpConfig, HttpLimits, Load};
pub use keys::{KeyError, Keys};
pub use service::Running;
pub use shutdown::Shutdown;
pub use start::{StartError, boot};
pub use zonecast_model::{Limits, Secret};
