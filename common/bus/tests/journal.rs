//! One contract suite for both journals: JetStream on the NATS server of the machine and the
//! in-memory journal of the in-process bus, for both kinds of record (events, action
//! requests). Records are delivered in order until acknowledged, copies are stored once,
//! unacknowledged records come back, what leaves the journal before a consumer acknowledged it
//! is counted, and the two kinds are kept apart.
//!
//! The NATS half needs a server with JetStream at `ZONECAST_TEST_NATS_URL` (default
//! `nats://127.0.0.1:4222`) and fails, never skips, when there is none.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::StreamExt;
use tokio::time::timeout;
use zonecast_bus::journal::{ConsumerState, Delivery, HistoryPage, HistoryQuery, HistoryStart, Kind, Record};
use zonecast_bus::{Bus, InProcessBus, Journal, JournalSettings, NatsBus};

const START_NATS: &str = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log";

/// Longest wait for a record that must arrive: JetStream hands an unacknowledged record out
/// again after its ack wait (10 s).
const ARRIVES: Duration = Duration::from_secs(20);

/// Settings with a small byte bound: JetStream reserves a stream's bound from the shared
/// server's storage when it is made, and the default (1 GiB) per test would exhaust it.
fn small() -> JournalSettings {
    JournalSettings { max_bytes: 64 << 20, ..JournalSettings::default() }
}

/// A bus, a journal under a fresh prefix on it, the prefix, and the kind of record used.
struct Setup {
    bus: Arc<dyn Bus>,
    journal: Arc<dyn Journal>,
    prefix: String,
    kind: Kind,
}

/// A subject of `kind` under `prefix`, as the evaluator appends them.
fn subject_of(kind: Kind, prefix: &str) -> String {
    let subjects = zonecast_bus::Subjects::new(prefix);
    match kind {
        Kind::Events => subjects.zone_event("z", zonecast_model::ZoneEventKind::Enter),
        Kind::Actions => subjects.http_action("z"),
    }
}

impl Setup {
    async fn new(nats: bool, kind: Kind, settings: JournalSettings) -> Self {
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

    fn record(&self, n: u32) -> Record {
        Record {
            subject: subject_of(self.kind, &self.prefix),
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
        self.journal.state(self.kind, name).await.expect("state").expect("the consumer exists")
    }

    async fn create(&self, name: &str, in_hand: usize) {
        self.journal.create_consumer(self.kind, name, in_hand).await.expect("create");
    }

    async fn consume(&self, name: &str, in_hand: usize) -> zonecast_bus::journal::Deliveries {
        self.journal.consume(self.kind, name, in_hand).await.expect("consume")
    }
}

async fn next(deliveries: &mut zonecast_bus::journal::Deliveries) -> Delivery {
    timeout(ARRIVES, deliveries.next()).await.expect("a record should arrive in time").expect("the stream goes on")
}

fn text(delivery: &Delivery) -> String {
    String::from_utf8_lossy(&delivery.payload).into_owned()
}

async fn records_are_delivered_in_order_until_acknowledged_and_published_too(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    let mut tap =
        s.bus.subscribe(&kind.pattern(&zonecast_bus::Subjects::new(s.prefix.clone()))).await.expect("subscribe");
    s.create("mqtt-1", 100).await;
    s.append(1..=3).await;
    let mut deliveries = s.consume("mqtt-1", 100).await;
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

async fn an_unacknowledged_record_comes_back_and_an_acknowledged_one_does_not(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    s.create("c", 100).await;
    s.append(1..=2).await;
    {
        let mut deliveries = s.consume("c", 100).await;
        let first = next(&mut deliveries).await;
        let second = next(&mut deliveries).await;
        assert_eq!((text(&first), text(&second)), ("event 1".into(), "event 2".into()));
        first.ack.ack();
        // The second is dropped unacknowledged: the consumer stopped before delivering it.
        drop(second);
    }
    s.append([3]).await;
    let mut deliveries = s.consume("c", 100).await;
    let again = next(&mut deliveries).await;
    let after = next(&mut deliveries).await;
    let mut got = vec![text(&again), text(&after)];
    got.sort();
    assert_eq!(got, ["event 2", "event 3"], "the unacknowledged record comes back, the acknowledged one not");
    s.done().await;
}

async fn a_copy_of_a_record_is_stored_once(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    s.create("c", 100).await;
    s.append([1]).await;
    s.append([1, 2]).await;
    let mut deliveries = s.consume("c", 100).await;
    assert_eq!(text(&next(&mut deliveries).await), "event 1");
    assert_eq!(text(&next(&mut deliveries).await), "event 2", "the copy of event 1 is not delivered");
    assert_eq!(s.state("c").await.backlog, 2);
    s.done().await;
}

async fn consumers_are_independent_and_start_at_their_creation(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    s.create("a", 100).await;
    s.append([1]).await;
    s.create("b", 100).await;
    s.append([2]).await;
    let mut a = s.consume("a", 100).await;
    let mut b = s.consume("b", 100).await;
    let one = next(&mut a).await;
    assert_eq!(text(&one), "event 1");
    one.ack.ack();
    assert_eq!(text(&next(&mut b).await), "event 2", "b starts with what came after it was made");
    assert_eq!(text(&next(&mut a).await), "event 2");
    s.journal.remove_consumer(kind, "b").await.expect("remove");
    assert_eq!(s.journal.state(kind, "b").await.expect("state"), None);
    s.journal.remove_consumer(kind, "b").await.expect("removing a missing consumer is no error");
    s.done().await;
}

async fn records_past_the_bounds_are_counted_as_lost_for_consumers_that_lacked_them(nats: bool, kind: Kind) {
    // Each record is about 7 bytes of payload (plus JetStream's own overhead per message).
    let s = Setup::new(nats, kind, JournalSettings { max_bytes: 2_000, ..small() }).await;
    s.create("slow", 100).await;
    s.append(1..=400).await;
    let state = s.state("slow").await;
    assert!(state.lost > 0, "records pushed out by the size bound count as lost: {state:?}");
    assert!(state.lost + state.backlog >= 400 - 1, "every record is either waiting or counted lost: {state:?}");
    let mut deliveries = s.consume("slow", 1000).await;
    let first = next(&mut deliveries).await;
    assert_ne!(text(&first), "event 1", "the oldest records are the ones gone");
    s.done().await;
}

async fn a_large_append_is_stored_whole(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    s.create("c", 100).await;
    s.append(0..5_000).await;
    assert_eq!(s.state("c").await.backlog, 5_000);
    s.done().await;
}

async fn a_subject_outside_the_rules_is_refused(nats: bool, kind: Kind) {
    let s = Setup::new(nats, kind, small()).await;
    let bad = Record { subject: format!("{}..x", subject_of(kind, &s.prefix)), payload: Bytes::new(), id: "x".into() };
    assert!(matches!(s.journal.append(vec![bad]).await, Err(zonecast_bus::BusError::InvalidSubject(_))));
    s.done().await;
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod in_process {
            mod events {
                $(#[tokio::test]
                async fn $name() {
                    super::super::$name(false, zonecast_bus::journal::Kind::Events).await;
                })*
            }
            mod actions {
                $(#[tokio::test]
                async fn $name() {
                    super::super::$name(false, zonecast_bus::journal::Kind::Actions).await;
                })*
            }
        }
        mod nats {
            mod events {
                $(#[tokio::test]
                async fn $name() {
                    super::super::$name(true, zonecast_bus::journal::Kind::Events).await;
                })*
            }
            mod actions {
                $(#[tokio::test]
                async fn $name() {
                    super::super::$name(true, zonecast_bus::journal::Kind::Actions).await;
                })*
            }
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

async fn read_all(reads: &mut zonecast_bus::journal::Reads, count: usize) -> Vec<zonecast_bus::journal::Read> {
    let mut out = Vec::new();
    while out.len() < count {
        out.push(
            timeout(ARRIVES, reads.next()).await.expect("a record should arrive in time").expect("reading goes on"),
        );
    }
    out
}

fn read_text(read: &zonecast_bus::journal::Read) -> String {
    String::from_utf8_lossy(&read.payload).into_owned()
}

/// A reader (a live stream's) starts at the sequence asked for, goes on with new records, tells
/// how far behind the newest each one is, and leaves every consumer as it was.
async fn a_reader_reads_from_a_sequence_then_new_records_and_affects_no_consumer(nats: bool) {
    let s = Setup::new(nats, Kind::Events, small()).await;
    s.create("c", 100).await;
    s.append(1..=5).await;
    let mut deliveries = s.consume("c", 100).await;
    let mut sequences = Vec::new();
    for _ in 0..5 {
        sequences.push(next(&mut deliveries).await.sequence);
    }
    let (start, mut reads) = s.journal.read(Kind::Events, Some(sequences[2])).await.expect("read");
    assert_eq!(start, sequences[2]);
    let got = read_all(&mut reads, 3).await;
    assert_eq!(got.iter().map(read_text).collect::<Vec<_>>(), ["event 3", "event 4", "event 5"]);
    assert_eq!(got.iter().map(|r| r.sequence).collect::<Vec<_>>(), sequences[2..]);
    assert_eq!(got.iter().map(|r| r.behind).collect::<Vec<_>>(), [2, 1, 0]);
    s.append([6]).await;
    let got = read_all(&mut reads, 1).await;
    assert_eq!((read_text(&got[0]).as_str(), got[0].sequence, got[0].behind), ("event 6", sequences[4] + 1, 0));
    let delivered = next(&mut deliveries).await;
    assert_eq!(text(&delivered), "event 6", "the consumer goes on as before");
    assert_eq!(s.state("c").await.backlog, 6, "reading acknowledged nothing");
    drop(reads);
    s.done().await;
}

/// A reader without a start sees only what is appended after it opened; one opened again from
/// a later sequence misses nothing and repeats nothing, even with no consumer at all.
async fn a_reader_without_a_start_sees_new_records_and_one_reopened_resumes(nats: bool) {
    let s = Setup::new(nats, Kind::Events, small()).await;
    s.append(1..=3).await;
    let (start, mut reads) = s.journal.read(Kind::Events, None).await.expect("read");
    s.append(4..=6).await;
    let got = read_all(&mut reads, 2).await;
    assert_eq!(got.iter().map(read_text).collect::<Vec<_>>(), ["event 4", "event 5"]);
    assert_eq!(got[0].sequence, start);
    drop(reads);
    s.append(7..=8).await;
    let (_, mut reads) = s.journal.read(Kind::Events, Some(got[1].sequence + 1)).await.expect("read again");
    let again = read_all(&mut reads, 3).await;
    assert_eq!(again.iter().map(read_text).collect::<Vec<_>>(), ["event 6", "event 7", "event 8"]);
    // A start beyond the newest record is the next one to come.
    let (beyond, _) = s.journal.read(Kind::Events, Some(1_000_000)).await.expect("read beyond");
    assert_eq!(beyond, again[2].sequence + 1);
    s.done().await;
}

#[tokio::test]
async fn in_process_a_reader_reads_from_a_sequence_then_new_records_and_affects_no_consumer() {
    a_reader_reads_from_a_sequence_then_new_records_and_affects_no_consumer(false).await;
}

#[tokio::test]
async fn nats_a_reader_reads_from_a_sequence_then_new_records_and_affects_no_consumer() {
    a_reader_reads_from_a_sequence_then_new_records_and_affects_no_consumer(true).await;
}

#[tokio::test]
async fn in_process_a_reader_without_a_start_sees_new_records_and_one_reopened_resumes() {
    a_reader_without_a_start_sees_new_records_and_one_reopened_resumes(false).await;
}

#[tokio::test]
async fn nats_a_reader_without_a_start_sees_new_records_and_one_reopened_resumes() {
    a_reader_without_a_start_sees_new_records_and_one_reopened_resumes(true).await;
}

/// In one process the newest events stay for readers when no consumer needs them, within a
/// bound; older ones go, and a reader from before them starts at the first kept.
#[tokio::test]
async fn in_process_the_newest_events_stay_for_readers_within_a_bound() {
    use zonecast_bus::journal::READER_TAIL_RECORDS;
    let s = Setup::new(false, Kind::Events, small()).await;
    let total = READER_TAIL_RECORDS as u32 + 10;
    s.append(1..=total).await;
    let (_, mut reads) = s.journal.read(Kind::Events, Some(1)).await.expect("read");
    let first = read_all(&mut reads, 1).await.remove(0);
    assert_eq!(read_text(&first), "event 11", "the oldest ten left; the reader sees the gap by the sequence");
    assert_eq!(first.sequence, 11);
    assert_eq!(first.behind, u64::from(total) - 11);
    s.done().await;
}

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
        journal.create_consumer(Kind::Events, "c", 100).await.expect("create");
        journal.append((1..=3).map(record).collect()).await.expect("append");
        let mut deliveries = journal.consume(Kind::Events, "c", 100).await.expect("consume");
        let first = next(&mut deliveries).await;
        assert_eq!(text(&first), "event 1");
        first.ack.ack();
        let second = next(&mut deliveries).await;
        second.sequence
        // Dropped here with events 2 and 3 unacknowledged.
    };
    let journal = MemoryJournal::persistent(bus.clone(), "p", JournalSettings::default(), &path).expect("reopen");
    assert_eq!(journal.state(Kind::Events, "c").await.expect("state"), Some(ConsumerState { backlog: 2, lost: 0 }));
    journal.append(vec![record(4), record(2)]).await.expect("append after the restart");
    let mut deliveries = journal.consume(Kind::Events, "c", 100).await.expect("consume");
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
    let s = Setup::new(true, Kind::Events, small()).await;
    s.create("c", 1).await;
    s.append(1..=10).await;
    let mut deliveries = s.consume("c", 3).await;
    let first = next(&mut deliveries).await;
    next(&mut deliveries).await;
    next(&mut deliveries).await;
    let held_back = timeout(Duration::from_millis(500), deliveries.next()).await;
    assert!(held_back.is_err(), "a fourth while three are unacknowledged: {held_back:?}");
    first.ack.ack();
    assert_eq!(text(&next(&mut deliveries).await), "event 4", "one acknowledged makes room for one more");
    s.done().await;
}

/// Events and action requests appended together go each to the consumers of their own kind,
/// with sequences of their own; a consumer name of one kind is not the other's, and removing
/// one leaves the other.
async fn the_two_kinds_are_kept_apart(nats: bool) {
    let s = Setup::new(nats, Kind::Events, small()).await;
    let record = |kind: Kind, n: u32| Record {
        subject: subject_of(kind, &s.prefix),
        payload: Bytes::from(format!("{kind:?} {n}")),
        // The same id in both kinds: each kind recognises copies among its own records only.
        id: format!("id-{n}"),
    };
    for kind in Kind::ALL {
        s.journal.create_consumer(kind, "c", 100).await.expect("create");
    }
    let mixed =
        vec![record(Kind::Events, 1), record(Kind::Actions, 1), record(Kind::Events, 2), record(Kind::Actions, 2)];
    s.journal.append(mixed).await.expect("append");
    let mut events = s.journal.consume(Kind::Events, "c", 100).await.expect("consume events");
    let mut actions = s.journal.consume(Kind::Actions, "c", 100).await.expect("consume actions");
    let (e1, e2) = (next(&mut events).await, next(&mut events).await);
    let (a1, a2) = (next(&mut actions).await, next(&mut actions).await);
    assert_eq!([text(&e1), text(&e2)], ["Events 1", "Events 2"]);
    assert_eq!([text(&a1), text(&a2)], ["Actions 1", "Actions 2"]);
    assert_eq!(a1.subject, subject_of(Kind::Actions, &s.prefix));
    assert_eq!(a2.sequence, a1.sequence + 1, "action requests have sequences of their own");
    a1.ack.ack();
    a2.ack.ack();
    let events_state = s.journal.state(Kind::Events, "c").await.expect("state").expect("exists");
    assert_eq!(events_state.backlog, 2, "acknowledging action requests leaves the events waiting");
    s.journal.remove_consumer(Kind::Events, "c").await.expect("remove");
    assert_eq!(s.journal.state(Kind::Events, "c").await.expect("state"), None);
    assert!(s.journal.state(Kind::Actions, "c").await.expect("state").is_some(), "the other kind's consumer stays");
    s.done().await;
}

#[tokio::test]
async fn in_process_the_two_kinds_are_kept_apart() {
    the_two_kinds_are_kept_apart(false).await;
}

#[tokio::test]
async fn nats_the_two_kinds_are_kept_apart() {
    the_two_kinds_are_kept_apart(true).await;
}

/// JetStream hands a record out again after its ack wait (10 s) unless the consumer says it is
/// still working on it: a request waiting a minute for its next try is not sent twice.
#[tokio::test]
async fn jetstream_waits_for_a_record_whose_consumer_reports_progress() {
    let s = Setup::new(true, Kind::Actions, small()).await;
    s.create("c", 10).await;
    s.append([1]).await;
    let mut deliveries = s.consume("c", 10).await;
    let held = next(&mut deliveries).await;
    // Longer than the ack wait, reporting progress within it.
    let until = tokio::time::Instant::now() + Duration::from_secs(14);
    while tokio::time::Instant::now() < until {
        held.ack.progress();
        let again = timeout(Duration::from_secs(2), deliveries.next()).await;
        assert!(again.is_err(), "delivered again while in progress: {again:?}");
    }
    // Without word it comes back, with the same sequence.
    let again = next(&mut deliveries).await;
    assert_eq!((text(&again), again.sequence), (text(&held), held.sequence));
    s.done().await;
}

/// The all-in-one's file keeps action requests too, apart from the events: what the consumer
/// had not acknowledged is delivered after a reopen, what it had is not.
#[tokio::test]
async fn a_persistent_journal_keeps_action_requests_across_a_restart() {
    use zonecast_bus::journal::MemoryJournal;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("journal.sqlite");
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
    let record = |kind: Kind, n: u32| Record {
        subject: subject_of(kind, "p"),
        payload: Bytes::from(format!("{kind:?} {n}")),
        id: format!("{kind:?}-{n}"),
    };
    {
        let journal = MemoryJournal::persistent(bus.clone(), "p", JournalSettings::default(), &path).expect("open");
        for kind in Kind::ALL {
            journal.create_consumer(kind, "c", 100).await.expect("create");
        }
        let records = (1..=3).flat_map(|n| [record(Kind::Events, n), record(Kind::Actions, n)]).collect();
        journal.append(records).await.expect("append");
        let mut actions = journal.consume(Kind::Actions, "c", 100).await.expect("consume");
        let first = next(&mut actions).await;
        assert_eq!(text(&first), "Actions 1");
        first.ack.ack();
        // Let the acknowledgement reach the file (it is written every 100 ms), then drop the
        // journal with requests 2 and 3 unacknowledged, as a crash would.
        let file = rusqlite_floor(&path);
        eventually(|| file() == Some(2)).await;
    }
    let journal = MemoryJournal::persistent(bus, "p", JournalSettings::default(), &path).expect("reopen");
    assert_eq!(journal.state(Kind::Actions, "c").await.expect("state"), Some(ConsumerState { backlog: 2, lost: 0 }));
    assert_eq!(journal.state(Kind::Events, "c").await.expect("state"), Some(ConsumerState { backlog: 3, lost: 0 }));
    journal.append(vec![record(Kind::Actions, 2)]).await.expect("a copy after the restart");
    let mut actions = journal.consume(Kind::Actions, "c", 100).await.expect("consume");
    assert_eq!(text(&next(&mut actions).await), "Actions 2");
    assert_eq!(text(&next(&mut actions).await), "Actions 3");
    let more = timeout(Duration::from_millis(300), actions.next()).await;
    assert!(more.is_err(), "the copy of request 2 is not stored again: {more:?}");
    let mut events = journal.consume(Kind::Events, "c", 100).await.expect("consume events");
    assert_eq!(text(&next(&mut events).await), "Events 1");
}

/// The floor of consumer `c` of action requests as the journal file holds it.
fn rusqlite_floor(path: &std::path::Path) -> impl Fn() -> Option<i64> + '_ {
    move || {
        let connection = rusqlite::Connection::open(path).ok()?;
        connection.query_row("SELECT floor FROM journal_actions_consumers WHERE name = 'c'", [], |r| r.get(0)).ok()
    }
}

/// Polls `done` until it holds, for at most [`ARRIVES`].
async fn eventually(done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + ARRIVES;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never came to pass");
        tokio::time::sleep(Duration::from_millis(20)).await; // sleep-ok: polling interval of a bounded wait
    }
}

/// An event of `zone` (`enter` or `exit`) numbered `n`, as the evaluator appends them.
fn zone_record(prefix: &str, zone: &str, kind: zonecast_model::ZoneEventKind, n: u32) -> Record {
    Record {
        subject: zonecast_bus::Subjects::new(prefix).zone_event(zone, kind),
        payload: Bytes::from(format!("{zone} {kind} {n}")),
        id: format!("id-{n}"),
    }
}

fn history_text(page: &HistoryPage) -> Vec<String> {
    page.records.iter().map(|r| String::from_utf8_lossy(&r.payload).into_owned()).collect()
}

/// Lets the clock pass the current millisecond, so that what is appended next is stored later
/// than what was appended before.
async fn clock_moves_on() -> SystemTime {
    let start = SystemTime::now();
    while SystemTime::now() < start + Duration::from_millis(3) {
        tokio::task::yield_now().await;
    }
    SystemTime::now()
}

async fn page(journal: &dyn Journal, query: &HistoryQuery) -> HistoryPage {
    timeout(ARRIVES, journal.history(query)).await.expect("history answers at once").expect("history")
}

/// Pages of a small limit, followed by their `next`, give every event once and in order, also
/// those appended between pages; the last page says there is no more.
async fn history_pages_through_every_event_once_in_order(nats: bool) {
    use zonecast_model::ZoneEventKind::Enter;
    let s = Setup::new(nats, Kind::Events, small()).await;
    let empty = page(s.journal.as_ref(), &HistoryQuery::new(HistoryStart::Oldest, 3, 1000)).await;
    assert!(empty.records.is_empty() && empty.next.is_none(), "an empty journal answers at once: {empty:?}");
    s.journal.append((1..=7).map(|n| zone_record(&s.prefix, "a", Enter, n)).collect()).await.expect("append");
    let mut seen = Vec::new();
    let mut start = HistoryStart::Oldest;
    let mut pages = 0;
    loop {
        let got = page(s.journal.as_ref(), &HistoryQuery::new(start, 3, 1000)).await;
        assert!(got.records.len() <= 3);
        assert!(got.records.windows(2).all(|w| w[0].sequence < w[1].sequence));
        seen.extend(history_text(&got));
        pages += 1;
        if pages == 1 {
            // More arrive while the client pages.
            s.journal.append((8..=9).map(|n| zone_record(&s.prefix, "a", Enter, n)).collect()).await.expect("append");
        }
        match got.next {
            Some(next) => start = HistoryStart::Sequence(next),
            None => break,
        }
    }
    let expected: Vec<String> = (1..=9).map(|n| format!("a enter {n}")).collect();
    assert_eq!(seen, expected);
    assert_eq!(pages, 3, "three pages of three");
    // A consumer reading the journal is not needed for history, and history is no consumer.
    assert_eq!(s.journal.state(Kind::Events, "nobody").await.expect("state"), None);
    s.done().await;
}

/// History narrows by subject pattern, by payload and by the time the events were stored.
async fn history_narrows_by_subject_payload_and_time(nats: bool) {
    use zonecast_model::ZoneEventKind::{Enter, Exit};
    let s = Setup::new(nats, Kind::Events, small()).await;
    let subjects = zonecast_bus::Subjects::new(s.prefix.clone());
    s.journal
        .append(vec![
            zone_record(&s.prefix, "a", Enter, 1),
            zone_record(&s.prefix, "b", Enter, 2),
            zone_record(&s.prefix, "a", Exit, 3),
        ])
        .await
        .expect("append");
    let between = clock_moves_on().await;
    s.journal
        .append(vec![zone_record(&s.prefix, "a", Enter, 4), zone_record(&s.prefix, "b", Exit, 5)])
        .await
        .expect("append");
    let after = clock_moves_on().await;
    s.journal.append(vec![zone_record(&s.prefix, "a", Enter, 6)]).await.expect("append");

    let mut of_a = HistoryQuery::new(HistoryStart::Oldest, 100, 1000);
    of_a.subjects = vec![subjects.zone_events("a")];
    assert_eq!(
        history_text(&page(s.journal.as_ref(), &of_a).await),
        ["a enter 1", "a exit 3", "a enter 4", "a enter 6"]
    );

    let mut exits = HistoryQuery::new(HistoryStart::Oldest, 100, 1000);
    exits.subjects = vec![subjects.zone_event("a", Exit), subjects.zone_event("b", Exit)];
    assert_eq!(history_text(&page(s.journal.as_ref(), &exits).await), ["a exit 3", "b exit 5"]);

    let mut odd: HistoryQuery = HistoryQuery::new(HistoryStart::Oldest, 100, 1000);
    odd.admits = Some(Arc::new(|payload: &[u8]| payload.last().is_some_and(|d| (d - b'0') % 2 == 1)));
    assert_eq!(history_text(&page(s.journal.as_ref(), &odd).await), ["a enter 1", "a exit 3", "b exit 5"]);

    let mut window = HistoryQuery::new(HistoryStart::At(between), 100, 1000);
    window.until = Some(after);
    let got = page(s.journal.as_ref(), &window).await;
    assert_eq!(history_text(&got), ["a enter 4", "b exit 5"]);
    assert_eq!(got.next, None, "the window is read to its end");
    // Storing times are kept to the millisecond in one process.
    let ms = Duration::from_millis(1);
    assert!(got.records.iter().all(|r| r.stored + ms > between && r.stored < after), "{got:?}");

    let later = page(s.journal.as_ref(), &HistoryQuery::new(HistoryStart::At(clock_moves_on().await), 100, 1000)).await;
    assert!(later.records.is_empty() && later.next.is_none(), "nothing stored after now: {later:?}");

    // A page that looks at its whole budget without filling ends early and says where to go on.
    let mut sparse = HistoryQuery::new(HistoryStart::Oldest, 100, 1);
    sparse.subjects = vec![subjects.zone_events("b")];
    sparse.admits = Some(Arc::new(|payload: &[u8]| payload.ends_with(b"5")));
    let (mut found, mut pages) = (Vec::new(), 0);
    loop {
        let got = page(s.journal.as_ref(), &sparse).await;
        found.extend(history_text(&got));
        pages += 1;
        match got.next {
            Some(next) => sparse.start = HistoryStart::Sequence(next),
            None => break,
        }
    }
    assert_eq!(found, ["b exit 5"]);
    assert!(pages >= 2, "a budget of one event a page ends the first page early");
    s.done().await;
}

#[tokio::test]
async fn in_process_history_pages_through_every_event_once_in_order() {
    history_pages_through_every_event_once_in_order(false).await;
}

#[tokio::test]
async fn nats_history_pages_through_every_event_once_in_order() {
    history_pages_through_every_event_once_in_order(true).await;
}

#[tokio::test]
async fn in_process_history_narrows_by_subject_payload_and_time() {
    history_narrows_by_subject_payload_and_time(false).await;
}

#[tokio::test]
async fn nats_history_narrows_by_subject_payload_and_time() {
    history_narrows_by_subject_payload_and_time(true).await;
}

/// The all-in-one's file keeps the events every consumer is done with, for history, across a
/// restart; memory loads only the readers' tail, and action requests leave as before.
#[tokio::test]
async fn a_persistent_journal_keeps_the_event_history_across_a_restart() {
    use zonecast_bus::journal::{MemoryJournal, READER_TAIL_RECORDS};
    use zonecast_model::ZoneEventKind::Enter;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("journal.sqlite");
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
    let total = READER_TAIL_RECORDS as u32 + 10;
    {
        let journal = MemoryJournal::persistent(bus.clone(), "p", JournalSettings::default(), &path).expect("open");
        journal.create_consumer(Kind::Events, "c", 100).await.expect("create");
        journal.append((1..=total).map(|n| zone_record("p", "a", Enter, n)).collect()).await.expect("append");
        let mut deliveries = journal.consume(Kind::Events, "c", 100_000).await.expect("consume");
        for _ in 0..total {
            next(&mut deliveries).await.ack.ack();
        }
        let floor = rusqlite_events_floor(&path);
        eventually(|| floor() == Some(i64::from(total) + 1)).await;
        let got = page(&journal, &HistoryQuery::new(HistoryStart::Oldest, 2, 1000)).await;
        assert_eq!(history_text(&got), ["a enter 1", "a enter 2"], "acknowledged events stay for history");
    }
    let journal = MemoryJournal::persistent(bus, "p", JournalSettings::default(), &path).expect("reopen");
    let got = page(&journal, &HistoryQuery::new(HistoryStart::Oldest, 2, 1000)).await;
    assert_eq!(history_text(&got), ["a enter 1", "a enter 2"], "the history survives the restart");
    let (_, mut reads) = journal.read(Kind::Events, Some(1)).await.expect("read");
    let first = read_all(&mut reads, 1).await.remove(0);
    assert_eq!(first.sequence, 11, "memory loaded only the readers' tail");
    let mut last = HistoryQuery::new(HistoryStart::Sequence(u64::from(total)), 10, 1000);
    last.subjects = vec![zonecast_bus::Subjects::new("p").zone_events("a")];
    let got = page(&journal, &last).await;
    assert_eq!((history_text(&got), got.next), (vec![format!("a enter {total}")], None));
}

/// Events leave the file at the end of the retention, consumers or not.
#[tokio::test]
async fn a_persistent_journal_lets_history_go_at_the_retention() {
    use zonecast_bus::journal::MemoryJournal;
    use zonecast_model::ZoneEventKind::Enter;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("journal.sqlite");
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
    let settings = JournalSettings { max_age: Duration::from_secs(1), ..JournalSettings::default() };
    let journal = MemoryJournal::persistent(bus, "p", settings, &path).expect("open");
    journal.append(vec![zone_record("p", "a", Enter, 1)]).await.expect("append");
    assert_eq!(page(&journal, &HistoryQuery::new(HistoryStart::Oldest, 10, 10)).await.records.len(), 1);
    let count = || {
        let connection = rusqlite::Connection::open(&path).ok()?;
        connection.query_row("SELECT COUNT(*) FROM journal_records", [], |r| r.get::<_, i64>(0)).ok()
    };
    eventually(|| count() == Some(0)).await;
    assert!(page(&journal, &HistoryQuery::new(HistoryStart::Oldest, 10, 10)).await.records.is_empty());
}

/// The floor of consumer `c` of events as the journal file holds it.
fn rusqlite_events_floor(path: &std::path::Path) -> impl Fn() -> Option<i64> + '_ {
    move || {
        let connection = rusqlite::Connection::open(path).ok()?;
        connection.query_row("SELECT floor FROM journal_consumers WHERE name = 'c'", [], |r| r.get(0)).ok()
    }
}
