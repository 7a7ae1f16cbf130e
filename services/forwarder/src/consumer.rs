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

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;
use zonecast_bus::Journal;
use zonecast_bus::journal::Delivery;
use zonecast_bus::journal::Kind;
use zonecast_runtime::ratelog::RateLimited;

use crate::endpoint::MAX_PAYLOAD;
use crate::link::LinkState;
use crate::outbox::{Message, Receipt};
use crate::router::{BadEvent, Envelope, Head, Route};
use crate::task::Stoppable;
use zonecast_runtime::backoff::Backoff;

/// The journal consumer of the MQTT connection `id`; every replica uses the same one.
pub fn consumer_name(id: Uuid) -> String {
    zonecast_bus::journal::connection_consumer(id)
}

/// How often the events held (waiting for a broker that is away or slow) are reported to the
/// journal as in progress: well within JetStream's ack wait (10 s), so none of them is handed
/// out again while this replica holds it.
const PROGRESS_EVERY: Duration = Duration::from_secs(3);

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
        Stoppable::spawn(shutdown, "journal consumer", move |stop| {
            run(journal, consumer_name(id), shared, in_hand.max(1), stop)
        })
    }
}

async fn run(journal: Arc<dyn Journal>, name: String, shared: Arc<LinkState>, in_hand: usize, stop: CancellationToken) {
    let permits = Arc::new(Semaphore::new(in_hand));
    let mut held: HashMap<u64, Weak<Receipt>> = HashMap::new();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
    let mut fail_log = RateLimited::new(Duration::from_secs(30));
    let mut unreadable_log = RateLimited::new(Duration::from_secs(10));
    let counters = Counters::new("zonecast_forwarder_events_total");
    let mut progress = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    progress.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    'open: loop {
        let opened = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            opened = journal.consume(Kind::Events, &name, in_hand) => opened,
        };
        let mut deliveries = match opened {
            Ok(deliveries) => {
                backoff.reset();
                deliveries
            }
            Err(e) => {
                if let Some(held_back) = fail_log.allow() {
                    tracing::warn!(consumer = %name, error = %e, held_back, "event journal unavailable; will retry");
                }
                tokio::select! {
                    biased;
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(backoff.next_delay()) => continue,
                }
            }
        };
        loop {
            let permit = tokio::select! {
                biased;
                () = stop.cancelled() => break 'open,
                _ = progress.tick() => {
                    in_progress(&held);
                    continue;
                }
                permit = permits.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break 'open,
                },
            };
            let delivery = loop {
                tokio::select! {
                    biased;
                    () = stop.cancelled() => break 'open,
                    _ = progress.tick() => in_progress(&held),
                    delivery = deliveries.next() => break delivery,
                }
            };
            let Some(delivery) = delivery else {
                // The journal ended the stream (connection lost, consumer opened again): open
                // it again after a pause.
                tokio::select! {
                    biased;
                    () = stop.cancelled() => break 'open,
                    () = tokio::time::sleep(backoff.next_delay()) => continue 'open,
                }
            };
            route(delivery, permit, &shared, &mut held, &counters, &mut unreadable_log);
            if held.len() > 2 * in_hand {
                held.retain(|_, receipt| receipt.strong_count() > 0);
            }
        }
    }
}

/// Tells the journal that every event still held is in progress.
fn in_progress(held: &HashMap<u64, Weak<Receipt>>) {
    held.values().filter_map(Weak::upgrade).for_each(|receipt| receipt.progress());
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

/// Queues a copy of the event for each topic of the connection it matches. An event that
/// matches none, cannot be read, or is too large for MQTT (counted as dropped) is acknowledged
/// at once; a redelivery of an event still held renews its receipt.
fn route(
    delivery: Delivery,
    permit: tokio::sync::OwnedSemaphorePermit,
    shared: &LinkState,
    held: &mut HashMap<u64, Weak<Receipt>>,
    counters: &Counters,
    unreadable_log: &mut RateLimited,
) {
    if let Some(receipt) = held.get(&delivery.sequence).and_then(Weak::upgrade) {
        receipt.renew(shared.defer(delivery.ack));
        return;
    }
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
            return;
        }
    };
    if topics.is_empty() {
        delivery.ack.ack();
        return;
    }
    counters.routed.increment(topics.len() as u64);
    if delivery.payload.len() > MAX_PAYLOAD {
        topics.iter().for_each(|_| shared.count_dropped());
        delivery.ack.ack();
        return;
    }
    let receipt = Receipt::new(topics.len(), shared.defer(delivery.ack), permit, accepted_ms);
    held.insert(delivery.sequence, Arc::downgrade(&receipt));
    for topic in topics {
        shared.push(Message { topic, payload: delivery.payload.clone(), receipt: Some(receipt.clone()) });
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
