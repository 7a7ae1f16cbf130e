//! Where each setting came from (flag, variable or file key), and the variable every setting
//! has: how problems name a setting as the operator wrote it.

use std::collections::HashMap;

/// How each setting was given, to name it in problems as the operator wrote it.
#[derive(Debug, Default)]
pub(super) struct Origins(HashMap<String, String>);

impl Origins {
    /// Setting `id` was given as `origin` (`--flag`, the variable, or the file's key).
    pub(super) fn given(&mut self, id: &str, origin: String) {
        self.0.insert(id.to_owned(), origin);
    }

    /// The name of setting `id`: its flag, its variable or its file key; the variable when it
    /// came from nowhere (a default, or a requirement not met).
    pub(super) fn name(&self, id: &str) -> String {
        self.0.get(id).cloned().unwrap_or_else(|| env_name(id))
    }
}

/// `ZONECAST_` and the setting's id in upper case: every setting follows this rule (a unit
/// test holds each binary to it), which also makes the id its key in the file.
pub fn env_name(id: &str) -> String {
    format!("ZONECAST_{}", id.to_ascii_uppercase())
}
