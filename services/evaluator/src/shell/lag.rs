//! The lag an evaluator reports (`<prefix>.pipeline.lag`, for ingest to push back on): how long
//! the positions it works on have waited since acceptance.

use std::sync::atomic::{AtomicU64, Ordering};

use zonecast_model::lag::now_ms;

/// The evaluator's lag, shared between its loop and its lag reports.
///
/// A report gives the larger of two ages: the oldest position evaluated since the last report,
/// and the oldest position of the turn still under way (evaluated, its events not yet stored).
/// The second keeps a long turn from reading as no lag: while the loop waits for its events to
/// be stored, what came after them waits too, at least as long, and a report of 0 would let
/// ingest take more in. Between turns the loop takes the next batch read as soon as it is
/// free, so what waits then waits briefly.
#[derive(Debug, Default)]
pub(super) struct Lag {
    /// The largest age (ms) among the positions evaluated since the last report.
    evaluated_ms: AtomicU64,
    /// When the oldest position of the turn under way was accepted (Unix ms); 0 between turns.
    turn_accepted_ms: AtomicU64,
}

impl Lag {
    /// Positions accepted at `accepted_ms` (Unix ms, their oldest) were just evaluated, in the
    /// turn under way.
    pub(super) fn evaluated(&self, accepted_ms: u64) {
        self.evaluated_ms.fetch_max(now_ms().saturating_sub(accepted_ms), Ordering::Relaxed);
        let turn = self.turn_accepted_ms.load(Ordering::Relaxed);
        if turn == 0 || accepted_ms < turn {
            self.turn_accepted_ms.store(accepted_ms.max(1), Ordering::Relaxed);
        }
    }

    /// Something of the turn under way has waited `ms` (events not stored yet, collisions not
    /// written): counted in the next report.
    pub(super) fn waited(&self, ms: u64) {
        self.evaluated_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// The turn is over: its events are stored.
    pub(super) fn turn_ended(&self) {
        self.turn_accepted_ms.store(0, Ordering::Relaxed);
    }

    /// The lag to report now, in milliseconds; starts the next report's window.
    pub(super) fn report(&self) -> u64 {
        let evaluated = self.evaluated_ms.swap(0, Ordering::Relaxed);
        let turn = match self.turn_accepted_ms.load(Ordering::Relaxed) {
            0 => 0,
            accepted => now_ms().saturating_sub(accepted),
        };
        evaluated.max(turn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_under_way_keeps_its_age_in_every_report_until_it_ends() {
        let lag = Lag::default();
        assert_eq!(lag.report(), 0, "nothing evaluated, no turn");
        lag.evaluated(now_ms() - 40);
        assert!(lag.report() >= 40);
        // The turn waits for its events to be stored: the next reports still see it.
        assert!(lag.report() >= 40);
        lag.turn_ended();
        assert_eq!(lag.report(), 0, "evaluated and reported, turn over");
    }

    #[test]
    fn the_oldest_position_of_a_turn_counts() {
        let lag = Lag::default();
        let now = now_ms();
        lag.evaluated(now - 10);
        lag.evaluated(now - 70);
        lag.evaluated(now - 20);
        lag.report();
        assert!(lag.report() >= 70, "the turn's oldest, after the window's evaluations were reported");
    }

    #[test]
    fn a_wait_counts_in_the_next_report_only() {
        let lag = Lag::default();
        lag.waited(25);
        assert_eq!(lag.report(), 25);
        assert_eq!(lag.report(), 0);
    }
}
