//! How the positions of several partitions travel in one stored message over NATS: the body is
//! the partitions' lines one after the other, each partition's lines together, and the header
//! [`SECTIONS`] says which partition each run of bytes belongs to. A subscriber that ignores
//! the header reads the body as any batch, one position event per line.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use super::{MAX_BATCH_BYTES, cut};

/// The header naming each partition's bytes in the body, in order: `<P>:<length>` entries
/// separated by commas, e.g. `0:812,5:406`.
pub const SECTIONS: &str = "Zonecast-Sections";

/// One message to store: its [`SECTIONS`] header and its body.
#[derive(Debug, PartialEq, Eq)]
pub struct Message {
    /// The value of its [`SECTIONS`] header.
    pub sections: String,
    /// The partitions' lines.
    pub body: Bytes,
}

/// The messages that carry `batches` (partition, lines), in order: as few as fit in
/// [`MAX_BATCH_BYTES`] each, a partition's lines cut between lines where they do not fit.
pub fn messages(batches: Vec<(u32, Bytes)>) -> Vec<Message> {
    let mut out = Vec::new();
    let (mut sections, mut body) = (String::new(), BytesMut::new());
    for (partition, lines) in batches {
        for piece in cut(lines, MAX_BATCH_BYTES) {
            if !body.is_empty() && body.len() + piece.len() > MAX_BATCH_BYTES {
                out.push(Message { sections: std::mem::take(&mut sections), body: body.split().freeze() });
            }
            if !sections.is_empty() {
                sections.push(',');
            }
            sections.push_str(&format!("{partition}:{}", piece.len()));
            body.extend_from_slice(&piece);
        }
    }
    if !body.is_empty() {
        out.push(Message { sections, body: body.freeze() });
    }
    out
}

/// The partitions of a message and where their bytes are in its body; `None` when the header
/// does not describe a body of `len` bytes.
pub fn sections(header: &str, len: usize) -> Option<Vec<(u32, Range<usize>)>> {
    let mut found = Vec::new();
    let mut at = 0usize;
    for entry in header.split(',').filter(|e| !e.is_empty()) {
        let (partition, length) = entry.split_once(':')?;
        let end = at.checked_add(length.parse().ok()?)?;
        found.push((partition.parse().ok()?, at..end));
        at = end;
    }
    (at == len).then_some(found)
}

/// The lines of `partition` in a message's `body`, given its `sections` (one slice of the body
/// where they are together, as they always are).
pub fn of_partition(body: &Bytes, sections: &[(u32, Range<usize>)], partition: u32) -> Option<Bytes> {
    let mut ranges = sections.iter().filter(|(p, _)| *p == partition).map(|(_, r)| r.clone());
    let first = ranges.next()?;
    match ranges.next() {
        None => Some(body.slice(first)),
        Some(second) => {
            let mut joined = BytesMut::from(&body[first]);
            joined.extend_from_slice(&body[second]);
            ranges.for_each(|r| joined.extend_from_slice(&body[r]));
            Some(joined.freeze())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn lines(prefix: &str, n: usize, width: usize) -> Bytes {
        let mut b = BytesMut::new();
        for i in 0..n {
            let line = format!("{prefix}{i:0width$}");
            super::super::push_line(&mut b, line.as_bytes());
        }
        b.freeze()
    }

    #[test]
    fn each_partition_reads_back_its_own_lines() {
        let (a, b) = (lines("a", 3, 4), lines("b", 2, 4));
        let messages = messages(vec![(3, a.clone()), (7, b.clone())]);
        assert_eq!(messages.len(), 1);
        let m = &messages[0];
        assert_eq!(m.sections, format!("3:{},7:{}", a.len(), b.len()));
        let found = sections(&m.sections, m.body.len()).unwrap();
        assert_eq!(of_partition(&m.body, &found, 3), Some(a));
        assert_eq!(of_partition(&m.body, &found, 7), Some(b));
        assert_eq!(of_partition(&m.body, &found, 4), None);
    }

    #[test]
    fn a_round_beyond_the_message_bound_is_cut_between_lines_and_keeps_its_order() {
        // Two partitions of 300 KiB each: the second does not fit beside the first.
        let (a, b) = (lines("a", 30_000, 9), lines("b", 30_000, 9));
        assert!(a.len() + b.len() > MAX_BATCH_BYTES);
        let messages = messages(vec![(0, a.clone()), (1, b.clone())]);
        assert!(messages.iter().all(|m| m.body.len() <= MAX_BATCH_BYTES && m.body.ends_with(b"\n")));
        let mut read: Vec<(u32, Bytes)> = Vec::new();
        for m in &messages {
            let found = sections(&m.sections, m.body.len()).unwrap();
            read.extend(found.iter().map(|(p, r)| (*p, m.body.slice(r.clone()))));
        }
        let joined = |p: u32| read.iter().filter(|(q, _)| *q == p).flat_map(|(_, b)| b.to_vec()).collect::<Vec<u8>>();
        assert_eq!(joined(0), a.to_vec());
        assert_eq!(joined(1), b.to_vec());
    }

    #[test]
    fn a_header_that_does_not_match_its_body_is_refused() {
        assert_eq!(sections("0:4,1:2", 6), Some(vec![(0, 0..4), (1, 4..6)]));
        assert_eq!(sections("", 0), Some(vec![]));
        for bad in ["0:4,1:2", "0:x", "a:1", "0", "0:99999999999999999999999"] {
            assert_eq!(sections(bad, 5), None, "{bad}");
        }
    }
}
