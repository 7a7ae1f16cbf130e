//! Logging at a limited rate, for input loops that must survive floods of bad messages.

use std::time::{Duration, Instant};

/// Allows one log line per interval and counts what it held back.
#[derive(Debug)]
pub struct RateLimited {
    every: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimited {
    /// At most one line per `every`.
    pub const fn new(every: Duration) -> Self {
        Self { every, last: None, suppressed: 0 }
    }

    /// `Some(n)` when a line may be written now, `n` being how many were held back since the
    /// last one; `None` when this one must be held back.
    pub fn allow(&mut self) -> Option<u64> {
        let now = Instant::now();
        match self.last {
            Some(last) if now.duration_since(last) < self.every => {
                self.suppressed += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.suppressed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_of_a_burst_is_allowed_and_the_rest_are_counted() {
        let mut r = RateLimited::new(Duration::from_secs(3600));
        assert_eq!(r.allow(), Some(0));
        assert_eq!(r.allow(), None);
        assert_eq!(r.allow(), None);
        r.last = Some(Instant::now() - Duration::from_secs(7200));
        assert_eq!(r.allow(), Some(2));
    }
}
