//! The API's errors are the shared HTTP edge's: one mapping from failures to status, error kind
//! and message, for every listener ([`zonecast_http::http::HttpError`]).

pub use zonecast_http::http::HttpError as ApiError;
