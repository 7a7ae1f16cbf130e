//! Capped exponential backoff: the one delay schedule between attempts at anything that may
//! fail for a while (a broker, a stream, the store), so that every loop retries alike.

use std::time::Duration;

/// Delays that double from `min` up to `max`; [`Backoff::reset`] starts over.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Starts at `min` (at least 1 ms), never above `max` (at least `min`).
    pub fn new(min: Duration, max: Duration) -> Self {
        let min = min.max(Duration::from_millis(1));
        let max = max.max(min);
        Self { min, max, next: min }
    }

    /// The delay before the next attempt; the one after is twice as long, up to the cap.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (delay * 2).min(self.max);
        delay
    }

    /// After a connection that held: the next delay is `min` again.
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn delays_double_up_to_the_cap_and_reset_starts_over() {
        let mut b = Backoff::new(100 * MS, 1000 * MS);
        let delays: Vec<u128> = (0..6).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.next_delay(), 100 * MS);
    }

    #[test]
    fn odd_bounds_are_made_sane() {
        let mut b = Backoff::new(Duration::ZERO, Duration::ZERO);
        assert_eq!(b.next_delay(), MS);
        assert_eq!(b.next_delay(), MS);
    }
}
