//! The NATS input's buffer: payloads in arrival order, at most a given number of bytes of
//! them. Its reader puts payloads in (dropping or waiting when it is full), the input's task
//! takes them out one at a time.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use tokio::sync::Notify;

/// Payloads waiting to be taken, in arrival order, holding at most `max_bytes` of them.
pub(crate) struct Buffer {
    max_bytes: usize,
    state: Mutex<State>,
    /// Woken when a payload comes in or the buffer closes.
    filled: Notify,
    /// Woken when a payload is taken out or the buffer closes.
    emptied: Notify,
}

#[derive(Default)]
struct State {
    payloads: VecDeque<Bytes>,
    bytes: usize,
    closed: bool,
}

impl Buffer {
    /// An empty buffer of `max_bytes` (a payload larger than that fits only an empty buffer).
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self { max_bytes, state: Mutex::default(), filled: Notify::new(), emptied: Notify::new() }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `payload` in if it fits now; `false` (and the payload dropped) when it does not or
    /// the buffer is closed.
    pub(crate) fn offer(&self, payload: Bytes) -> bool {
        let mut state = self.lock();
        if state.closed || !state.fits(payload.len(), self.max_bytes) {
            return false;
        }
        state.bytes += payload.len();
        state.payloads.push_back(payload);
        drop(state);
        self.filled.notify_one();
        true
    }

    /// Puts `payload` in, waiting for room; `false` when the buffer closed first.
    pub(crate) async fn put(&self, payload: Bytes) -> bool {
        loop {
            let emptied = self.emptied.notified();
            {
                let mut state = self.lock();
                if state.closed {
                    return false;
                }
                if state.fits(payload.len(), self.max_bytes) {
                    state.bytes += payload.len();
                    state.payloads.push_back(payload);
                    drop(state);
                    self.filled.notify_one();
                    return true;
                }
            }
            emptied.await;
        }
    }

    /// The oldest payload, waiting for one; `None` once the buffer is closed and empty.
    pub(crate) async fn take(&self) -> Option<Bytes> {
        loop {
            let filled = self.filled.notified();
            {
                let mut state = self.lock();
                if let Some(payload) = state.payloads.pop_front() {
                    state.bytes -= payload.len();
                    drop(state);
                    self.emptied.notify_one();
                    return Some(payload);
                }
                if state.closed {
                    return None;
                }
            }
            filled.await;
        }
    }

    /// No payload comes in any more; those in it can still be taken.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.filled.notify_waiters();
        self.emptied.notify_waiters();
    }

    /// Closes the buffer and empties it, returning how many payloads it held.
    pub(crate) fn close_and_clear(&self) -> usize {
        let mut state = self.lock();
        state.closed = true;
        let held = state.payloads.len();
        state.payloads.clear();
        state.bytes = 0;
        drop(state);
        self.filled.notify_waiters();
        self.emptied.notify_waiters();
        held
    }
}

impl State {
    fn fits(&self, len: usize, max_bytes: usize) -> bool {
        self.payloads.is_empty() || self.bytes + len <= max_bytes
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;

    fn payload(n: usize) -> Bytes {
        Bytes::from(vec![b'x'; n])
    }

    #[tokio::test]
    async fn payloads_come_out_in_the_order_they_went_in_and_past_the_bound_are_dropped() {
        let buffer = Buffer::new(10);
        assert!(buffer.offer(Bytes::from_static(b"abcd")));
        assert!(buffer.offer(Bytes::from_static(b"efgh")));
        assert!(!buffer.offer(Bytes::from_static(b"ijk")), "4 + 4 + 3 bytes are more than 10");
        assert!(buffer.offer(Bytes::from_static(b"ij")), "exactly 10");
        assert_eq!(buffer.take().await.unwrap(), "abcd");
        assert!(buffer.offer(Bytes::from_static(b"klmn")), "room again");
        buffer.close();
        assert!(!buffer.offer(Bytes::from_static(b"o")), "closed");
        let mut rest = Vec::new();
        while let Some(p) = buffer.take().await {
            rest.push(p);
        }
        assert_eq!(rest, ["efgh", "ij", "klmn"], "what it held is taken after it closed");
    }

    #[tokio::test]
    async fn a_payload_larger_than_the_bound_fits_only_an_empty_buffer() {
        let buffer = Buffer::new(10);
        assert!(buffer.offer(payload(50)));
        assert!(!buffer.offer(payload(1)));
        assert_eq!(buffer.take().await.unwrap().len(), 50);
        assert!(buffer.offer(payload(1)));
    }

    #[tokio::test]
    async fn put_waits_for_room_and_take_for_a_payload() {
        let buffer = Arc::new(Buffer::new(4));
        assert!(buffer.put(payload(4)).await);
        let putting = tokio::spawn({
            let buffer = buffer.clone();
            async move { buffer.put(payload(3)).await }
        });
        tokio::task::yield_now().await;
        assert!(!putting.is_finished(), "no room yet");
        assert_eq!(buffer.take().await.unwrap().len(), 4);
        assert!(putting.await.unwrap());
        assert_eq!(buffer.take().await.unwrap().len(), 3);
        let taking = tokio::spawn({
            let buffer = buffer.clone();
            async move { buffer.take().await }
        });
        assert!(buffer.put(payload(2)).await);
        assert_eq!(taking.await.unwrap().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn closing_and_clearing_counts_what_was_held_and_releases_a_waiting_put() {
        let buffer = Arc::new(Buffer::new(4));
        assert!(buffer.offer(payload(2)));
        assert!(buffer.offer(payload(2)));
        let putting = tokio::spawn({
            let buffer = buffer.clone();
            async move { buffer.put(payload(1)).await }
        });
        tokio::task::yield_now().await;
        assert_eq!(buffer.close_and_clear(), 2);
        assert!(!putting.await.unwrap(), "refused: closed");
        assert_eq!(buffer.take().await, None);
    }
}
