//! The request of an `http-request` zone action, as the evaluator stores it in the journal and
//! the forwarder sends it.

use serde::{Deserialize, Serialize};

use crate::{ActionSecret, Event};

/// One request to send, as the journal stores it (JSON): the action's secret stays sealed, so
/// encoding fails for a secret that is not (a secret in clear is never written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRequest {
    /// Target URI.
    pub uri: String,
    /// HTTP method.
    pub method: String,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The event, sent as the JSON body.
    pub event: Event,
    /// The action's sealed secret, when its requests are signed.
    pub secret: Option<ActionSecret>,
}
