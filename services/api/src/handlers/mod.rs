//! Operation handlers: parse at the edge, call the store, announce, answer. Each is called by
//! [`crate::dispatch`].

pub(crate) mod alarms;
pub(crate) mod certificates;
pub(crate) mod cluster;
pub(crate) mod connections;
pub(crate) mod devices;
pub(crate) mod history;
pub(crate) mod settings;
pub(crate) mod shelves;
pub(crate) mod stream;
pub(crate) mod system;
pub(crate) mod versions;
pub(crate) mod visits;
pub(crate) mod zones;

use uuid::Uuid;

use crate::error::ApiError;

/// A JSON array element that names an item by UUID; 404 when it is text that is not a UUID,
/// 422 when it is not text.
fn element_id(v: &serde_json::Value, index: usize, what: &'static str) -> Result<Uuid, ApiError> {
    match v.as_str() {
        Some(s) => s.parse::<Uuid>().map_err(|_| ApiError::NotFound(format!("{what} {s} not found"))),
        None => Err(ApiError::Invalid(format!("[{index}]: must be a {what} ID string"))),
    }
}
