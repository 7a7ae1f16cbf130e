//! The event history: paged in order, narrowed by subject, payload and time; the journal file's
//! floors.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::time::timeout;
use zonecast_bus::Journal;
use zonecast_bus::journal::{HistoryPage, HistoryQuery, HistoryStart, Kind, Record};

use super::setup::{ARRIVES, Setup, small};

/// The floor of consumer `c` of action requests as the journal file holds it.
pub(crate) fn rusqlite_floor(path: &std::path::Path) -> impl Fn() -> Option<i64> + '_ {
    move || {
        let connection = rusqlite::Connection::open(path).ok()?;
        connection.query_row("SELECT floor FROM journal_actions_consumers WHERE name = 'c'", [], |r| r.get(0)).ok()
    }
}

/// Polls `done` until it holds, for at most [`ARRIVES`].
pub(crate) async fn eventually(done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + ARRIVES;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never came to pass");
        tokio::time::sleep(Duration::from_millis(20)).await; // sleep-ok: polling interval of a bounded wait
    }
}

/// An event of `zone` (`enter` or `exit`) numbered `n`, as the evaluator appends them.
pub(crate) fn zone_record(prefix: &str, zone: &str, kind: zonecast_model::ZoneEventKind, n: u32) -> Record {
    Record {
        subject: zonecast_bus::Subjects::new(prefix).zone_event(zone, kind),
        payload: Bytes::from(format!("{zone} {kind} {n}")),
        id: format!("id-{n}"),
    }
}

pub(crate) fn history_text(page: &HistoryPage) -> Vec<String> {
    page.records.iter().map(|r| String::from_utf8_lossy(&r.payload).into_owned()).collect()
}

/// Lets the clock pass the current millisecond, so that what is appended next is stored later
/// than what was appended before.
pub(crate) async fn clock_moves_on() -> SystemTime {
    let start = SystemTime::now();
    while SystemTime::now() < start + Duration::from_millis(3) {
        tokio::task::yield_now().await;
    }
    SystemTime::now()
}

pub(crate) async fn page(journal: &dyn Journal, query: &HistoryQuery) -> HistoryPage {
    timeout(ARRIVES, journal.history(query)).await.expect("history answers at once").expect("history")
}

/// Pages of a small limit, followed by their `next`, give every event once and in order, also
/// those appended between pages; the last page says there is no more.
pub(crate) async fn history_pages_through_every_event_once_in_order(nats: bool) {
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
pub(crate) async fn history_narrows_by_subject_payload_and_time(nats: bool) {
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

/// The floor of consumer `c` of events as the journal file holds it.
pub(crate) fn rusqlite_events_floor(path: &std::path::Path) -> impl Fn() -> Option<i64> + '_ {
    move || {
        let connection = rusqlite::Connection::open(path).ok()?;
        connection.query_row("SELECT floor FROM journal_consumers WHERE name = 'c'", [], |r| r.get(0)).ok()
    }
}
