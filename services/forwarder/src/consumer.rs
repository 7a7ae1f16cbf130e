//! One connection's durable consumer of the event journal: it takes the events the connection
//! has not acknowledged, matches each against the connection's topics, and queues a copy per
//! matching topic in the connection's outbox with a [`Receipt`] that acknowledges the event to
//! the journal once the broker has acknowledged every copy.
//!
//! At most `in_hand` events are held at a time (queued, in flight or waiting for a broker that
//! is away); the rest wait in the journal, so a broker away for an hour holds up nothing but its
//! own connection and costs no memory here. Every replica consumes from the same durable
//! consumer, so replicas share the connection's events; one that stops leaves what it held
//! unacknowledged, and the journal hands it to another (or to its successor) after its ack wait.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;
use zonecast_bus::Journal;
use zonecast_bus::journal::{Ack, Delivery, Kind};
use zonecast_runtime::consume::{self, Take};
use zonecast_runtime::ratelog::RateLimited;

use crate::endpoint::MAX_PAYLOAD;
use crate::link::LinkState;
use crate::outbox::{Message, Receipt};
use crate::router::{BadEvent, Envelope, Head, Route};
use crate::task::Stoppable;

/// The journal consumer of the MQTT connection `id`; every replica uses the same one.
pub fn consumer_name(id: Uuid) -> String {
    zonecast_bus::journal::connection_consumer(id)
}

/// The journal consumer of one connection.
pub struct Consumer;

impl Consumer {
    /// Starts consuming the journal for the connection `id` into `shared`'s outbox, holding at
    /// most `in_hand` events, until stopped or `shutdown`. Stopping it leaves what is in hand in
    /// the outbox.
    pub fn spawn(
        journal: Arc<dyn Journal>,
        id: Uuid,
        shared: Arc<LinkState>,
        in_hand: usize,
        shutdown: &CancellationToken,
    ) -> Stoppable {
        Stoppable::spawn(shutdown, "journal consumer", move |stop| async move {
            let mut router = Router {
                shared,
                counters: Counters::new("zonecast_forwarder_events_total"),
                unreadable_log: RateLimited::new(Duration::from_secs(10)),
            };
            consume::run(journal.as_ref(), Kind::Events, &consumer_name(id), None, in_hand, &stop, &mut router).await;
        })
    }
}

/// Routes the connection's events into its outbox.
struct Router {
    shared: Arc<LinkState>,
    counters: Counters,
    unreadable_log: RateLimited,
}

impl Take for Router {
    type Held = Receipt;

    /// Queues a copy of the event for each topic of the connection it matches. An event that
    /// matches none, cannot be read, or is too large for MQTT (counted as dropped) is
    /// acknowledged at once.
    fn take(&mut self, delivery: Delivery, permit: OwnedSemaphorePermit) -> Option<Arc<Receipt>> {
        let Self { shared, counters, unreadable_log } = self;
        counters.taken.increment(1);
        let routes = shared.routes();
        let (topics, accepted_ms) = match matching(&routes, &delivery.payload) {
            Ok(matched) => matched,
            Err(reason) => {
                counters.bad.increment(1);
                if let Some(held_back) = unreadable_log.allow() {
                    tracing::warn!(%reason, subject = %delivery.subject, held_back, "event not forwarded");
                }
                delivery.ack.ack();
                return None;
            }
        };
        if topics.is_empty() {
            delivery.ack.ack();
            return None;
        }
        counters.routed.increment(topics.len() as u64);
        if delivery.payload.len() > MAX_PAYLOAD {
            topics.iter().for_each(|_| shared.count_dropped());
            delivery.ack.ack();
            return None;
        }
        let receipt = Receipt::new(topics.len(), shared.defer(delivery.ack), permit, accepted_ms);
        for topic in topics {
            shared.push(Message { topic, payload: delivery.payload.clone(), receipt: Some(receipt.clone()) });
        }
        Some(receipt)
    }

    /// The receipt still held takes the newest acknowledgement.
    fn again(&mut self, receipt: &Receipt, ack: Ack) {
        receipt.renew(self.shared.defer(ack));
    }
}

/// The counters of what the forwarder takes (events from the journal, positions from the
/// bus), registered once.
pub(crate) struct Counters {
    /// Events or positions taken.
    pub taken: metrics::Counter,
    /// (message, topic) matches.
    pub routed: metrics::Counter,
    /// Payloads that are no event.
    pub bad: metrics::Counter,
}

impl Counters {
    /// Counting what is taken in `taken`.
    pub(crate) fn new(taken: &'static str) -> Self {
        Self {
            taken: metrics::counter!(taken),
            routed: metrics::counter!("zonecast_forwarder_routed_total"),
            bad: metrics::counter!("zonecast_forwarder_bad_messages_total"),
        }
    }
}

/// The topics of `routes` whose chains `payload` matches, in order, and when the position that
/// caused the event was accepted (Unix milliseconds, the time of its `EventID`). The event's
/// Category, Type and EventID are read first: when they decide every chain (template-only
/// chains, the common case) the event is never parsed whole.
fn matching(routes: &[Route], payload: &[u8]) -> Result<(Vec<Arc<str>>, Option<u64>), BadEvent> {
    if routes.is_empty() {
        return Ok((Vec::new(), None));
    }
    let accepted = |id: Option<&str>| {
        id.and_then(|id| id.parse().ok()).and_then(|id| zonecast_model::lag::accepted_ms(zonecast_model::EventId(id)))
    };
    if let Some(head) = Head::parse(payload) {
        let (category, kind) = head.kind();
        let decided: Option<Vec<bool>> = routes.iter().map(|r| r.chain.decide(category, kind)).collect();
        if let Some(decided) = decided {
            let topics = routes.iter().zip(decided).filter(|(_, take)| *take).map(|(r, _)| r.topic.clone()).collect();
            return Ok((topics, accepted(head.event_id())));
        }
    }
    let event = Envelope::parse(payload)?;
    let (category, kind) = event.kind();
    let topics = routes
        .iter()
        .filter(|r| r.chain.admits(category, kind) && r.chain.matches(event.tree()))
        .map(|r| r.topic.clone())
        .collect();
    Ok((topics, accepted(event.tree().get("EventID").and_then(serde_json::Value::as_str))))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn route(topic: &str, chain: serde_json::Value) -> Route {
        Route { topic: Arc::from(topic), chain: zonecast_filter::compile(&chain).unwrap() }
    }

    /// What the whole tree decides: every route whose chain matches the parsed event.
    fn by_tree(routes: &[Route], payload: &[u8]) -> Vec<Arc<str>> {
        let event: serde_json::Value = serde_json::from_slice(payload).unwrap();
        routes.iter().filter(|r| r.chain.matches(&event)).map(|r| r.topic.clone()).collect()
    }

    #[test]
    fn events_are_routed_alike_from_their_head_and_from_their_tree() {
        let id = zonecast_model::EventId::generate(chrono::Utc::now());
        let enter = json!({"Category": "ZONE", "Type": "ZONE_ENTER", "EventID": id.to_string(),
                           "Source": {"MAC": "00:00:00:00:00:01"}, "Content": {"ZoneID": "Z", "AlertLevel": 9}});
        let alarm = json!({"Category": "ALARM", "Type": "SITE_ALARM", "Source": {"MAC": "00:00:00:00:00:02"}});
        let templates = [route("zones", json!([{"FilterTemplate": "zone_events"}])), route("all", json!([]))];
        let tested = [
            route("zones", json!([{"FilterTemplate": "zone_events"}])),
            route("high", json!([{"Selector": "Content.AlertLevel", "Type": "gte", "Match": 8}])),
        ];
        for event in [&enter, &alarm] {
            let payload = serde_json::to_vec(event).unwrap();
            for routes in [&templates[..], &tested[..]] {
                let (topics, _) = matching(routes, &payload).unwrap();
                assert_eq!(topics, by_tree(routes, &payload), "{event} on {}", routes.len());
            }
        }
        let payload = serde_json::to_vec(&enter).unwrap();
        let expected = zonecast_model::lag::accepted_ms(id);
        assert!(expected.is_some());
        assert_eq!(matching(&templates, &payload).unwrap().1, expected, "from the head");
        assert_eq!(matching(&tested, &payload).unwrap().1, expected, "from the tree");
        assert!(matching(&templates, b"[1, 2]").is_err(), "no object: refused as before");
        assert!(matching(&templates, b"{\"Category\": ").is_err());
    }
}
