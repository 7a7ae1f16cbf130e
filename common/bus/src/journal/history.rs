//! Reading the events the journal keeps, a page at a time ([`super::Journal::history`]): what a
//! query asks for, what a page answers, and the one rule both journals apply while they read
//! ([`Pager`]).

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;

use crate::BusError;
use crate::pattern::Pattern;

/// Where a history page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryStart {
    /// At the oldest event kept.
    Oldest,
    /// At the first event stored at or after this time.
    At(SystemTime),
    /// At this sequence (the first kept after it, when it is gone): where the previous page
    /// ended ([`HistoryPage::next`]).
    Sequence(u64),
}

/// A test of an event's payload: whether it belongs to the answer.
pub type Admits = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// Which stored events one page of history holds (zone events and alarms: the records of
/// [`super::Kind::Events`]).
#[derive(Clone)]
pub struct HistoryQuery {
    /// Where to start.
    pub start: HistoryStart,
    /// Events stored at or after this time are not read; `None`: up to the newest.
    pub until: Option<SystemTime>,
    /// Subject patterns ([`crate::Subjects::events_narrowed`]); an event passes when its
    /// subject matches one of them. Empty: every event.
    pub subjects: Vec<String>,
    /// A further test of the payload, after the subject's; `None` admits every payload.
    pub admits: Option<Admits>,
    /// Most events a page holds.
    pub limit: usize,
    /// Most events a page looks at, admitted or not: a page that passes over many events
    /// ends early (with [`HistoryPage::next`] set), so that no request reads without bound.
    pub scan: usize,
}

impl std::fmt::Debug for HistoryQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryQuery")
            .field("start", &self.start)
            .field("until", &self.until)
            .field("subjects", &self.subjects)
            .field("admits", &self.admits.is_some())
            .field("limit", &self.limit)
            .field("scan", &self.scan)
            .finish()
    }
}

impl HistoryQuery {
    /// Every event from `start` on, `limit` to a page, looking at no more than `scan`.
    pub fn new(start: HistoryStart, limit: usize, scan: usize) -> Self {
        Self { start, until: None, subjects: Vec::new(), admits: None, limit, scan }
    }
}

/// One stored event as history answers it.
#[derive(Debug, Clone)]
pub struct HistoryRecord {
    /// The subject it was appended on.
    pub subject: String,
    /// Its bytes.
    pub payload: Bytes,
    /// Its place in the journal (the sequence a consumer or a live stream sees).
    pub sequence: u64,
    /// When the journal stored it.
    pub stored: SystemTime,
}

/// One page of history.
#[derive(Debug, Clone, Default)]
pub struct HistoryPage {
    /// The events, in journal order.
    pub records: Vec<HistoryRecord>,
    /// Where the next page starts ([`HistoryStart::Sequence`]) when there may be more; `None`
    /// once the range is read to its end: its bound, or the newest event stored when the page
    /// was read.
    pub next: Option<u64>,
}

/// Fills one page from the records read in journal order: the bounds, the narrowing and the
/// limits of a [`HistoryQuery`], the same for every journal.
pub(crate) struct Pager<'q> {
    query: &'q HistoryQuery,
    patterns: Vec<Pattern>,
    /// The newest sequence when reading began: what is appended later belongs to a later page.
    last: u64,
    /// `query.until`, to the precision of the journal's storing times.
    until: Option<SystemTime>,
    scanned: usize,
    page: HistoryPage,
}

impl<'q> Pager<'q> {
    /// A pager for `query` over records up to sequence `last`; `millis`: the journal keeps its
    /// storing times to the millisecond, and the bound is taken to the same precision.
    pub(crate) fn new(query: &'q HistoryQuery, last: u64, millis: bool) -> Result<Self, BusError> {
        let patterns = query.subjects.iter().map(|s| Pattern::parse(s)).collect::<Result<Vec<_>, _>>()?;
        let until = query.until.map(|until| if millis { from_ms(to_ms(until)) } else { until });
        Ok(Self { query, patterns, last, until, scanned: 0, page: HistoryPage::default() })
    }

    /// Offers the next record; `more`: whether the journal may hold records after it. Returns
    /// whether the page wants another.
    pub(crate) fn offer(&mut self, record: HistoryRecord, more: bool) -> bool {
        if record.sequence > self.last || self.until.is_some_and(|until| record.stored >= until) {
            self.page.next = None;
            return false;
        }
        self.scanned += 1;
        let sequence = record.sequence;
        if self.admits(&record) {
            self.page.records.push(record);
        }
        if !more || sequence >= self.last {
            self.page.next = None;
            return false;
        }
        if self.page.records.len() >= self.query.limit || self.scanned >= self.query.scan {
            self.page.next = Some(sequence + 1);
            return false;
        }
        true
    }

    fn admits(&self, record: &HistoryRecord) -> bool {
        if !self.patterns.is_empty() {
            let tokens: Vec<&str> = record.subject.split('.').collect();
            if !self.patterns.iter().any(|p| p.matches(&tokens)) {
                return false;
            }
        }
        self.query.admits.as_ref().is_none_or(|admits| admits(&record.payload))
    }

    /// The page; a reading that ran out of records without the page ending read to the end.
    pub(crate) fn finish(self) -> HistoryPage {
        self.page
    }

    /// The one subject filter a server-side reading may use: the query's single pattern, else
    /// `all` (the pager still matches each record against every pattern).
    pub(crate) fn server_filter(query: &HistoryQuery, all: String) -> String {
        match query.subjects.as_slice() {
            [one] => one.clone(),
            _ => all,
        }
    }
}

/// Milliseconds since the Unix epoch as a time.
pub(crate) fn from_ms(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms)
}

/// A time as milliseconds since the Unix epoch (0 before it).
pub(crate) fn to_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
