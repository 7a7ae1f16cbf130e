//! Readers: from a sequence or from now, resumed when reopened, and the two kinds kept apart.

use bytes::Bytes;
use futures::StreamExt;
use tokio::time::timeout;
use zonecast_bus::journal::{Kind, Record};

use super::setup::{ARRIVES, Setup, next, small, subject_of, text};

pub(crate) async fn read_all(
    reads: &mut zonecast_bus::journal::Reads,
    count: usize,
) -> Vec<zonecast_bus::journal::Read> {
    let mut out = Vec::new();
    while out.len() < count {
        out.push(
            timeout(ARRIVES, reads.next()).await.expect("a record should arrive in time").expect("reading goes on"),
        );
    }
    out
}

pub(crate) fn read_text(read: &zonecast_bus::journal::Read) -> String {
    String::from_utf8_lossy(&read.payload).into_owned()
}

/// A reader (a live stream's) starts at the sequence asked for, goes on with new records, tells
/// how far behind the newest each one is, and leaves every consumer as it was.
pub(crate) async fn a_reader_reads_from_a_sequence_then_new_records_and_affects_no_consumer(nats: bool) {
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
pub(crate) async fn a_reader_without_a_start_sees_new_records_and_one_reopened_resumes(nats: bool) {
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

/// Events and action requests appended together go each to the consumers of their own kind,
/// with sequences of their own; a consumer name of one kind is not the other's, and removing
/// one leaves the other.
pub(crate) async fn the_two_kinds_are_kept_apart(nats: bool) {
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
