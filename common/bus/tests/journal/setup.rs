//! A journal to test, in process or on NATS, and how its deliveries are read.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tokio::time::timeout;
use zonecast_bus::journal::{ConsumerState, Delivery, Kind, Record};
use zonecast_bus::{Bus, InProcessBus, Journal, JournalSettings, NatsBus};

const START_NATS: &str = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log";

/// Longest wait for a record that must arrive: JetStream hands an unacknowledged record out
/// again after its ack wait (10 s).
pub(crate) const ARRIVES: Duration = Duration::from_secs(20);

/// Settings with a small byte bound: JetStream reserves a stream's bound from the shared
/// server's storage when it is made, and the default (1 GiB) per test would exhaust it.
pub(crate) fn small() -> JournalSettings {
    JournalSettings { max_bytes: 64 << 20, ..JournalSettings::default() }
}

/// A bus, a journal under a fresh prefix on it, the prefix, and the kind of record used.
pub(crate) struct Setup {
    pub(crate) bus: Arc<dyn Bus>,
    pub(crate) journal: Arc<dyn Journal>,
    pub(crate) prefix: String,
    pub(crate) kind: Kind,
}

/// A subject of `kind` under `prefix`, as the evaluator appends them.
pub(crate) fn subject_of(kind: Kind, prefix: &str) -> String {
    let subjects = zonecast_bus::Subjects::new(prefix);
    match kind {
        Kind::Events => subjects.zone_event("z", zonecast_model::ZoneEventKind::Enter),
        Kind::Actions => subjects.http_action("z"),
    }
}

impl Setup {
    pub(crate) async fn new(nats: bool, kind: Kind, settings: JournalSettings) -> Self {
        let bus: Arc<dyn Bus> = if nats {
            let url = std::env::var("ZONECAST_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
            match NatsBus::connect(&url, "zonecast-journal-contract").await {
                Ok(bus) => Arc::new(bus),
                Err(err) => panic!(
                    "the journal contract tests need NATS with JetStream ({err}); start it with:\n  {START_NATS}"
                ),
            }
        } else {
            Arc::new(InProcessBus::new())
        };
        let prefix = format!("jt{}", uuid::Uuid::new_v4().simple());
        let journal = bus.journal(&prefix, settings);
        Self { bus, journal, prefix, kind }
    }

    pub(crate) fn record(&self, n: u32) -> Record {
        Record {
            subject: subject_of(self.kind, &self.prefix),
            payload: Bytes::from(format!("event {n}")),
            id: format!("id-{n}"),
        }
    }

    pub(crate) async fn append(&self, numbers: impl IntoIterator<Item = u32>) {
        let records = numbers.into_iter().map(|n| self.record(n)).collect();
        self.journal.append(records).await.expect("append");
    }

    /// Leaves nothing behind on the shared server.
    pub(crate) async fn done(self) {
        self.journal.remove_all().await.expect("remove the test's streams");
    }

    pub(crate) async fn state(&self, name: &str) -> ConsumerState {
        self.journal.state(self.kind, name).await.expect("state").expect("the consumer exists")
    }

    pub(crate) async fn create(&self, name: &str, in_hand: usize) {
        self.journal.create_consumer(self.kind, name, in_hand).await.expect("create");
    }

    pub(crate) async fn consume(&self, name: &str, in_hand: usize) -> zonecast_bus::journal::Deliveries {
        self.journal.consume(self.kind, name, in_hand).await.expect("consume")
    }
}

pub(crate) async fn next(deliveries: &mut zonecast_bus::journal::Deliveries) -> Delivery {
    timeout(ARRIVES, deliveries.next()).await.expect("a record should arrive in time").expect("the stream goes on")
}

pub(crate) fn text(delivery: &Delivery) -> String {
    String::from_utf8_lossy(&delivery.payload).into_owned()
}
