//! The HTTP edge every zonecast listener shares (the config API, the ingestor's position input,
//! the operations listener): route tables, credentials, body limits, the one mapping from
//! failures to answers, CORS, the serve loop, health and metrics, and [`launch`]: the service
//! skeleton with its operations listener.

pub mod auth;
pub mod cors;
pub mod edge;
pub mod http;
pub mod ops;
pub mod routes;
pub mod serve;

pub use auth::{Auth, AuthError, Principal};
pub use ops::launch;
