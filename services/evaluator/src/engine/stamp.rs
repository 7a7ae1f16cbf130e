//! Events stamped from their contents: the envelope of one site, with an EventID drawn from
//! the engine's [`IdSource`].

use zonecast_model::{Content, Event, EventId, EventSource, IdSource, Mac};

use crate::catalog::Catalog;

use super::state::At;

/// Stamps event contents into events of one site, drawing their IDs.
pub(super) struct Stamp<'a> {
    pub(super) ids: &'a mut IdSource,
    pub(super) site_id: i64,
    /// Where the device registry's names come from.
    pub(super) catalog: &'a Catalog,
}

impl Stamp<'_> {
    /// `content` about `mac`, happened at `at.ts`, produced at `at.now`.
    pub(super) fn event(&mut self, mac: &Mac, at: At, content: Content) -> Event {
        Event {
            event_id: EventId(self.ids.next(at.now)),
            timestamp: at.ts,
            local_timestamp: at.now,
            source: EventSource { mac: Some(mac.clone()), gateway_uri: None, site_id: self.site_id },
            content,
            device: self.catalog.name(mac).cloned(),
        }
    }
}
