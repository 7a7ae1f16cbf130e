//! One contract suite for both journals: JetStream on the NATS server of the machine and the
//! in-memory journal of the in-process bus. Records are delivered in order until acknowledged,
//! copies are stored once, unacknowledged records come back, and what leaves the journal
//! before a consumer acknowledged it is counted.
//!
//! The NATS half needs a server with JetStream at `ZONECAST_TEST_NATS_URL` (default
//! `nats://127.0.0.1:4222`) and fails, never skips, when there is none.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tokio::time::timeout;
use zonecast_bus::journal::{ConsumerState, Delivery, Record};
use zonecast_bus::{Bus, InProcessBus, Journal, JournalSettings, NatsBus};

const START_NATS: &str = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log";

/// Longest wait for a record that must arrive: JetStream hands an unacknowledged record out
/// again after its ack wait (10 s).
const ARRIVES: Duration = Duration::from_secs(20);

/// A bus, a journal under a fresh prefix on it, and the prefix.
struct Setup {
    bus: Arc<dyn Bus>,
    journal: Arc<dyn Journal>,
    prefix: String,
}

impl Setup {
    async fn new(nats: bool, settings: JournalSettings) -> Self {
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
        Self { bus, journal, prefix }
    }

    fn record(&self, n: u32) -> Record {
        Record {
            subject: format!("{}.events.zone.z.enter", self.prefix),
            payload: Bytes::from(format!("event {n}")),
            id: format!("id-{n}"),
        }
    }

    async fn append(&self, numbers: impl IntoIterator<Item = u32>) {
        let records = numbers.into_iter().map(|n| self.record(n)).collect();
        self.journal.append(records).await.expect("append");
    }

    /// Leaves nothing behind on the shared server.
    async fn done(self) {
        self.journal.remove_all().await.expect("remove the test's streams");
    }

    async fn state(&self, name: &str) -> ConsumerState {
        self.journal.state(name).await.expect("state").expect("the consumer exists")
    }
}

async fn next(deliveries: &mut zonecast_bus::journal::Deliveries) -> Delivery {
    timeout(ARRIVES, deliveries.next()).await.expect("a record should arrive in time").expect("the stream goes on")
}

fn text(delivery: &Delivery) -> String {
    String::from_utf8_lossy(&delivery.payload).into_owned()
}

async fn records_are_delivered_in_order_until_acknowledged_and_published_too(nats: bool) {
    let s = Setup::new(nats, JournalSettings::default()).await;
    let mut tap = s.bus.subscribe(&format!("{}.events.>", s.prefix)).await.expect("subscribe");
    s.journal.create_consumer("mqtt-1", 100).await.expect("create");
    s.append(1..=3).await;
    let mut deliveries = s.journal.consume("mqtt-1", 100).await.expect("consume");
    let got: Vec<Delivery> =
        vec![next(&mut deliveries).await, next(&mut deliveries).await, next(&mut deliveries).await];
    assert_eq!(got.iter().map(text).collect::<Vec<_>>(), ["event 1", "event 2", "event 3"]);
    assert!(got.windows(2).all(|w| w[0].sequence < w[1].sequence), "sequences grow in append order");
    let tapped = timeout(ARRIVES, tap.next()).await.expect("tap").expect("message");
    assert_eq!(tapped.payload, Bytes::from("event 1"), "subscribers of the subject see the record");
    assert_eq!(s.state("mqtt-1").await.backlog, 3);
    for d in got {
        d.ack.ack();
    }
    // Acknowledgements travel on their own; the backlog empties once they are in.
    timeout(ARRIVES, async {
        while s.state("mqtt-1").await.backlog != 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the backlog empties once everything is acknowledged");
    s.done().await;
}

async fn an_unacknowledged_record_comes_back_and_an_acknowledged_one_does_not(nats: bool) {
    let s = Setup::new(nats, JournalSettings::default()).await;
    s.journal.create_consumer("c", 100).await.expect("create");
    s.append(1..=2).await;
    {
        let mut deliveries = s.journal.consume("c", 100).await.expect("consume");
        let first = next(&mut deliveries).await;
        let second = next(&mut deliveries).await;
        assert_eq!((text(&first), text(&second)), ("event 1".into(), "event 2".into()));
        first.ack.ack();
        // The second is dropped unacknowledged: the consumer stopped before delivering it.
        drop(second);
    }
    s.append([3]).await;
    let mut deliveries = s.journal.consume("c", 100).await.expect("consume again");
    let again = next(&mut deliveries).await;
    let after = next(&mut deliveries).await;
    let mut got = vec![text(&again), text(&after)];
    got.sort();
    assert_eq!(got, ["event 2", "event 3"], "the unacknowledged record comes back, the acknowledged one not");
    s.done().await;
}

async fn a_copy_of_a_record_is_stored_once(nats: bool) {
    let s = Setup::new(nats, JournalSettings::default()).await;
    s.journal.create_consumer("c", 100).await.expect("create");
    s.append([1]).await;
    s.append([1, 2]).await;
    let mut deliveries = s.journal.consume("c", 100).await.expect("consume");
    assert_eq!(text(&next(&mut deliveries).await), "event 1");
    assert_eq!(text(&next(&mut deliveries).await), "event 2", "the copy of event 1 is not delivered");
    assert_eq!(s.state("c").await.backlog, 2);
    s.done().await;
}

async fn consumers_are_independent_and_start_at_their_creation(nats: bool) {
    let s = Setup::new(nats, JournalSettings::default()).await;
    s.journal.create_consumer("a", 100).await.expect("create a");
    s.append([1]).await;
    s.journal.create_consumer("b", 100).await.expect("create b");
    s.append([2]).await;
    let mut a = s.journal.consume("a", 100).await.expect("consume a");
    let mut b = s.journal.consume("b", 100).await.expect("consume b");
    let one = next(&mut a).await;
    assert_eq!(text(&one), "event 1");
    one.ack.ack();
    assert_eq!(text(&next(&mut b).await), "event 2", "b starts with what came after it was made");
    assert_eq!(text(&next(&mut a).await), "event 2");
    s.journal.remove_consumer("b").await.expect("remove");
    assert_eq!(s.journal.state("b").await.expect("state"), None);
    s.journal.remove_consumer("b").await.expect("removing a missing consumer is no error");
    s.done().await;
}

async fn records_past_the_bounds_are_counted_as_lost_for_consumers_that_lacked_them(nats: bool) {
    // Each record is about 7 bytes of payload (plus JetStream's own overhead per message).
    let s = Setup::new(nats, JournalSettings { max_bytes: 2_000, ..JournalSettings::default() }).await;
    s.journal.create_consumer("slow", 100).await.expect("create");
    s.append(1..=400).await;
    let state = s.state("slow").await;
    assert!(state.lost > 0, "records pushed out by the size bound count as lost: {state:?}");
    assert!(state.lost + state.backlog >= 400 - 1, "every record is either waiting or counted lost: {state:?}");
    let mut deliveries = s.journal.consume("slow", 1000).await.expect("consume");
    let first = next(&mut deliveries).await;
    assert_ne!(text(&first), "event 1", "the oldest records are the ones gone");
    s.done().await;
}

async fn a_large_append_is_stored_whole(nats: bool) {
    let s = Setup::new(nats, JournalSettings::default()).await;
    s.journal.create_consumer("c", 100).await.expect("create");
    s.append(0..5_000).await;
    assert_eq!(s.state("c").await.backlog, 5_000);
    s.done().await;
}

async fn a_subject_outside_the_rules_is_refused(nats: bool) {
    let s = Setup::new(nats, JournalSettings::default()).await;
    let bad = Record { subject: format!("{}.events..x", s.prefix), payload: Bytes::new(), id: "x".into() };
    assert!(matches!(s.journal.append(vec![bad]).await, Err(zonecast_bus::BusError::InvalidSubject(_))));
    s.done().await;
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod in_process {
            $(#[tokio::test]
            async fn $name() {
                super::$name(false).await;
            })*
        }
        mod nats {
            $(#[tokio::test]
            async fn $name() {
                super::$name(true).await;
            })*
        }
    };
}

both!(
    records_are_delivered_in_order_until_acknowledged_and_published_too,
    an_unacknowledged_record_comes_back_and_an_acknowledged_one_does_not,
    a_copy_of_a_record_is_stored_once,
    consumers_are_independent_and_start_at_their_creation,
    records_past_the_bounds_are_counted_as_lost_for_consumers_that_lacked_them,
    a_large_append_is_stored_whole,
    a_subject_outside_the_rules_is_refused,
);

/// The all-in-one's journal file: what a consumer had not acknowledged when the journal went
/// away (a restart, a crash) is delivered when it is opened again; what it acknowledged is not;
/// sequences go on where they were.
#[tokio::test]
async fn a_persistent_journal_keeps_what_consumers_lack_across_a_restart() {
    use zonecast_bus::journal::MemoryJournal;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("journal.sqlite");
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
    let record = |n: u32| Record {
        subject: "p.events.zone.z.enter".to_owned(),
        payload: Bytes::from(format!("event {n}")),
        id: format!("id-{n}"),
    };
    let last_sequence = {
        let journal = MemoryJournal::persistent(bus.clone(), "p", JournalSettings::default(), &path).expect("open");
        journal.create_consumer("c", 100).await.expect("create");
        journal.append((1..=3).map(record).collect()).await.expect("append");
        let mut deliveries = journal.consume("c", 100).await.expect("consume");
        let first = next(&mut deliveries).await;
        assert_eq!(text(&first), "event 1");
        first.ack.ack();
        let second = next(&mut deliveries).await;
        second.sequence
        // Dropped here with events 2 and 3 unacknowledged.
    };
    let journal = MemoryJournal::persistent(bus.clone(), "p", JournalSettings::default(), &path).expect("reopen");
    assert_eq!(journal.state("c").await.expect("state"), Some(ConsumerState { backlog: 2, lost: 0 }));
    journal.append(vec![record(4), record(2)]).await.expect("append after the restart");
    let mut deliveries = journal.consume("c", 100).await.expect("consume");
    let got: Vec<Delivery> =
        vec![next(&mut deliveries).await, next(&mut deliveries).await, next(&mut deliveries).await];
    assert_eq!(
        got.iter().map(text).collect::<Vec<_>>(),
        ["event 2", "event 3", "event 4"],
        "the copy of 2 is not stored again"
    );
    assert_eq!(got[0].sequence, last_sequence);
    assert!(got[2].sequence > got[1].sequence, "sequences go on after the restart");
}

/// A journal file that cannot be opened is an error naming it, not a journal that loses
/// everything.
#[tokio::test]
async fn a_journal_file_that_cannot_be_opened_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
    let err = zonecast_bus::journal::MemoryJournal::persistent(bus, "p", JournalSettings::default(), dir.path())
        .err()
        .expect("a directory is no journal file");
    assert!(err.to_string().starts_with("journal: journal file:"), "{err}");
}

/// JetStream holds back what a consumer may not have in hand, and a consumer opened with a
/// new bound takes it.
#[tokio::test]
async fn jetstream_hands_out_no_more_than_the_consumer_may_hold() {
    let s = Setup::new(true, JournalSettings::default()).await;
    s.journal.create_consumer("c", 1).await.expect("create");
    s.append(1..=10).await;
    let mut deliveries = s.journal.consume("c", 3).await.expect("consume with a larger bound");
    let first = next(&mut deliveries).await;
    next(&mut deliveries).await;
    next(&mut deliveries).await;
    let held_back = timeout(Duration::from_millis(500), deliveries.next()).await;
    assert!(held_back.is_err(), "a fourth while three are unacknowledged: {held_back:?}");
    first.ack.ack();
    assert_eq!(text(&next(&mut deliveries).await), "event 4", "one acknowledged makes room for one more");
    s.done().await;
}
