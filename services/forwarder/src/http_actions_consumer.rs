//! The journal consumer of http-request actions: it takes the requests the evaluators stored
//! in the journal, takes each to its final outcome with [`Delivery::send`], and acknowledges
//! it then — delivered, refused by a final answer, or expired. A request still waiting for a
//! try when the forwarder stops is not acknowledged: the journal delivers it again after the
//! restart, or to another replica, so a crash or a redeploy loses no request.
//!
//! Every forwarder replica consumes from the same durable consumer ([`ACTIONS_CONSUMER`]), and
//! the journal hands each request to one of them at a time. At most [`ACTIONS_IN_HAND`]
//! requests are held (trying or waiting for their next try); the rest wait in the journal. The
//! loop is the one every journal consumer runs ([`zonecast_runtime::consume`]): a request held
//! reports its progress, so JetStream does not hand it to another replica; should it still come
//! again (a progress report lost on the way), it is recognised by its sequence and its
//! acknowledgement renewed instead of sending it twice.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinSet;
use zonecast_bus::Journal;
use zonecast_bus::journal::{ACTIONS_CONSUMER, ACTIONS_IN_HAND, Ack, Delivery as Record, Kind};
use zonecast_runtime::Shutdown;
use zonecast_runtime::consume::{self, Held, Take};
use zonecast_runtime::ratelog::RateLimited;

use zonecast_model::ActionRequest;

use crate::http_actions::{self, Delivery, Outcome};

/// Starts consuming: the task ends after `shutdown`, once every request in hand has its
/// outcome or is left to the journal.
pub fn spawn(journal: Arc<dyn Journal>, delivery: Delivery, shutdown: Shutdown) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let losses = tokio::spawn(consume::look_for_losses(
            journal.clone(),
            Kind::Actions,
            ACTIONS_CONSUMER.to_owned(),
            shutdown.clone(),
            |lost| {
                metrics::counter!("zonecast_forwarder_http_actions_total", "outcome" => "lost").increment(lost);
                tracing::warn!(
                    requests = lost,
                    "http-request actions lost: they left the journal (older than ZONECAST_EVENT_RETENTION_SECS, or beyond its size) before they were delivered"
                );
            },
        ));
        let mut senders = Senders {
            running: JoinSet::new(),
            delivery: Arc::new(delivery),
            shutdown: shutdown.clone(),
            log: Arc::new(Mutex::new(RateLimited::new(Duration::from_secs(10)))),
        };
        consume::run(journal.as_ref(), Kind::Actions, ACTIONS_CONSUMER, None, ACTIONS_IN_HAND, &shutdown, &mut senders)
            .await;
        // Requests trying finish their try; those waiting for their next one are left to the
        // journal.
        while senders.running.join_next().await.is_some() {}
        let _ = losses.await;
    })
}

/// Sends each request taken from the journal on a task of its own.
struct Senders {
    running: JoinSet<()>,
    delivery: Arc<Delivery>,
    shutdown: Shutdown,
    log: Arc<Mutex<RateLimited>>,
}

impl Take for Senders {
    type Held = Held;

    /// Sends the request on a task of its own, which acknowledges it once it has its final
    /// outcome. A record that is no request is acknowledged at once and counted as failed.
    fn take(&mut self, record: Record, permit: OwnedSemaphorePermit) -> Option<Arc<Held>> {
        while self.running.try_join_next().is_some() {}
        let request: ActionRequest = match serde_json::from_slice(&record.payload) {
            Ok(request) => request,
            Err(e) => {
                metrics::counter!("zonecast_forwarder_http_actions_total", "outcome" => "failed").increment(1);
                tracing::warn!(subject = %record.subject, error = %e, "stored http-request action unreadable; skipped");
                record.ack.ack();
                return None;
            }
        };
        let holding = Arc::new(Held::new(record.ack, permit));
        let (held, delivery, shutdown, log) =
            (holding.clone(), self.delivery.clone(), self.shutdown.clone(), self.log.clone());
        self.running.spawn(async move {
            let outcome = delivery.send(&request, &shutdown).await;
            http_actions::record(&request.uri, &outcome, &log);
            match outcome {
                Outcome::Interrupted => {
                    metrics::counter!("zonecast_forwarder_http_actions_interrupted_total").increment(1);
                }
                Outcome::Delivered | Outcome::GaveUp { .. } => held.ack.ack(),
            }
        });
        Some(holding)
    }

    /// The request still trying takes the newest acknowledgement instead of being sent twice.
    fn again(&mut self, held: &Held, ack: Ack) {
        held.ack.renew(ack);
    }
}
