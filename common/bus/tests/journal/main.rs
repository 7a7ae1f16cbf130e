//! One contract suite for both journals: JetStream on the NATS server of the machine and the
//! in-memory journal of the in-process bus, for both kinds of record (events, action
//! requests). Records are delivered in order until acknowledged, copies are stored once,
//! unacknowledged records come back, what leaves the journal before a consumer acknowledged it
//! is counted, and the two kinds are kept apart.
//!
//! The NATS half needs a server with JetStream at `ZONECAST_TEST_NATS_URL` (default
//! `nats://127.0.0.1:4222`) and fails, never skips, when there is none.

mod consumers;
mod history;
mod readers;
mod setup;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tokio::time::timeout;
use zonecast_bus::journal::{ConsumerState, Delivery, HistoryQuery, HistoryStart, Kind, Record};
use zonecast_bus::{Bus, InProcessBus, Journal, JournalSettings};

use consumers::{
    a_copy_of_a_record_is_stored_once, a_large_append_is_stored_whole, a_subject_outside_the_rules_is_refused,
    an_unacknowledged_record_comes_back_and_an_acknowledged_one_does_not,
    consumers_are_independent_and_start_at_their_creation,
    records_are_delivered_in_order_until_acknowledged_and_published_too,
    records_past_the_bounds_are_counted_as_lost_for_consumers_that_lacked_them,
};
use history::{
    clock_moves_on, eventually, history_narrows_by_subject_payload_and_time,
    history_pages_through_every_event_once_in_order, history_text, page, rusqlite_events_floor, rusqlite_floor,
    zone_record,
};
use readers::{
    a_reader_reads_from_a_sequence_then_new_records_and_affects_no_consumer,
    a_reader_without_a_start_sees_new_records_and_one_reopened_resumes, read_all, read_text,
    the_two_kinds_are_kept_apart,
};
use setup::{Setup, next, small, subject_of, text};

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

/// What is appended reaches the journal file itself, not only its write-ahead log: checkpoints
/// run beside the appends, SQLite's own in the appending connection being off.
#[tokio::test]
async fn a_persistent_journal_checkpoints_its_file_beside_the_appends() {
    use zonecast_bus::journal::MemoryJournal;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("journal.sqlite");
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
    let journal = MemoryJournal::persistent(bus, "p", JournalSettings::default(), &path).expect("open");
    let size = |name: &str| std::fs::metadata(dir.path().join(name)).map_or(0, |m| m.len());
    let before = size("journal.sqlite");
    // 16 MiB of events, four times what the log holds before it is checkpointed.
    let filler = "x".repeat(1024);
    for round in 0..64u32 {
        let records = (0..256u32)
            .map(|n| Record {
                subject: "p.events.zone.z.enter".to_owned(),
                payload: Bytes::from(format!("{filler} {round} {n}")),
                id: format!("id-{round}-{n}"),
            })
            .collect();
        journal.append(records).await.expect("append");
    }
    eventually(|| size("journal.sqlite") > before + (8 << 20)).await;
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

/// The file finds events by the time they were stored, from any moment, and keeps counting
/// sequences after every record was deleted: a record appended after a restart never takes
/// the sequence of one a consumer may have seen.
#[tokio::test]
async fn a_persistent_journal_finds_events_by_time_and_never_reuses_a_sequence() {
    use zonecast_bus::journal::MemoryJournal;
    use zonecast_model::ZoneEventKind::Enter;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("journal.sqlite");
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
    let open = || MemoryJournal::persistent(bus.clone(), "p", JournalSettings::default(), &path).expect("open");
    let journal = open();
    let mut before = Vec::new();
    for n in 1..=9 {
        before.push(clock_moves_on().await);
        journal.append(vec![zone_record("p", "a", Enter, n)]).await.expect("append");
    }
    let after = clock_moves_on().await;
    for (first, at) in (1u32..).zip(&before) {
        let got = page(&journal, &HistoryQuery::new(HistoryStart::At(*at), 100, 1000)).await;
        let expected: Vec<String> = (first..=9).map(|n| format!("a enter {n}")).collect();
        assert_eq!(history_text(&got), expected, "from just before event {first}");
    }
    let got = page(&journal, &HistoryQuery::new(HistoryStart::At(after), 100, 1000)).await;
    assert!(got.records.is_empty() && got.next.is_none(), "nothing stored since: {got:?}");
    journal.remove_all().await.expect("remove");
    drop(journal);
    let journal = open();
    journal.append(vec![zone_record("p", "a", Enter, 10)]).await.expect("append");
    let got = page(&journal, &HistoryQuery::new(HistoryStart::Oldest, 100, 1000)).await;
    assert_eq!(history_text(&got), ["a enter 10"]);
    assert_eq!(got.records[0].sequence, 10, "the sequence after the nine deleted");
}

/// A consumer narrowed to some subjects gets only their records, in both journals: the others
/// are passed over, count as acknowledged (no backlog) and are never lost for it. The
/// in-process journal, which does not keep the narrowing in its file, takes it again when the
/// consumer is first narrowed after a start.
async fn a_narrowed_consumer_gets_only_the_records_of_its_subjects(nats: bool) {
    let s = Setup::new(nats, Kind::Events, small()).await;
    let subjects = zonecast_bus::Subjects::new(s.prefix.clone());
    let dwell = subjects.zone_event("z", zonecast_model::ZoneEventKind::Dwell);
    let filter = subjects.zone_event("*", zonecast_model::ZoneEventKind::Dwell);
    s.journal.create_narrowed(Kind::Events, "dwell", &filter, 10).await.expect("create");
    let record = |subject: &str, n: u32| Record {
        subject: subject.to_owned(),
        payload: format!("event {n}").into(),
        id: format!("id-{n}"),
    };
    let enter = subject_of(Kind::Events, &s.prefix);
    s.journal
        .append(vec![record(&enter, 1), record(&dwell, 2), record(&enter, 3), record(&dwell, 4), record(&enter, 5)])
        .await
        .expect("append");
    let mut deliveries = s.journal.consume_narrowed(Kind::Events, "dwell", &filter, 10).await.expect("consume");
    let mut got = Vec::new();
    for _ in 0..2 {
        let delivery = next(&mut deliveries).await;
        got.push((delivery.subject.clone(), text(&delivery)));
        delivery.ack.ack();
    }
    assert_eq!(got, vec![(dwell.clone(), "event 2".into()), (dwell.clone(), "event 4".into())]);
    // Acknowledgements travel on their own; the backlog empties once they are in.
    timeout(setup::ARRIVES, async {
        while s.state("dwell").await.backlog != 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the records on other subjects are no backlog");
    assert_eq!(s.state("dwell").await.lost, 0);
    s.done().await;
}

/// A persistent in-process journal does not keep a consumer's narrowing in its file: loaded at
/// start, the consumer holds every record it had not taken, until it is narrowed again; then it
/// gets only those on its subjects, the ones it held before the restart included.
#[tokio::test]
async fn in_process_a_narrowed_consumer_is_narrowed_again_after_a_restart() {
    use zonecast_bus::journal::MemoryJournal;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("journal.sqlite");
    let subjects = zonecast_bus::Subjects::new("p");
    let dwell = subjects.zone_event("z", zonecast_model::ZoneEventKind::Dwell);
    let filter = subjects.zone_event("*", zonecast_model::ZoneEventKind::Dwell);
    let enter = subject_of(Kind::Events, "p");
    let record = |subject: &str, n: u32| Record {
        subject: subject.to_owned(),
        payload: format!("event {n}").into(),
        id: format!("id-{n}"),
    };
    {
        let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
        let journal = MemoryJournal::persistent(bus, "p", small(), &path).expect("open");
        journal.create_consumer(Kind::Events, "dwell", 10).await.expect("create");
        journal.append(vec![record(&enter, 1), record(&dwell, 2), record(&enter, 3)]).await.expect("append");
    }
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new());
    let journal = MemoryJournal::persistent(bus, "p", small(), &path).expect("open again");
    assert_eq!(journal.state(Kind::Events, "dwell").await.expect("state").expect("kept").backlog, 3);
    journal.create_narrowed(Kind::Events, "dwell", &filter, 10).await.expect("narrow");
    assert_eq!(journal.state(Kind::Events, "dwell").await.expect("state").expect("kept").backlog, 1);
    journal.append(vec![record(&enter, 4), record(&dwell, 5)]).await.expect("append");
    let mut deliveries = journal.consume_narrowed(Kind::Events, "dwell", &filter, 10).await.expect("consume");
    let mut got = Vec::new();
    for _ in 0..2 {
        let delivery = next(&mut deliveries).await;
        got.push(text(&delivery));
        delivery.ack.ack();
    }
    assert_eq!(got, ["event 2", "event 5"]);
    assert_eq!(journal.state(Kind::Events, "dwell").await.expect("state").expect("kept").backlog, 0);
}

#[tokio::test]
async fn nats_a_narrowed_consumer_gets_only_the_records_of_its_subjects() {
    a_narrowed_consumer_gets_only_the_records_of_its_subjects(true).await;
}

#[tokio::test]
async fn in_process_a_narrowed_consumer_gets_only_the_records_of_its_subjects() {
    a_narrowed_consumer_gets_only_the_records_of_its_subjects(false).await;
}
