//! What the machine itself did while positions were sent, reported beside the latencies so a
//! run on a busy or shared host can be told apart: how busy its cores were, and how late a
//! thread that only sleeps 1 ms at a time woke up. A pause that holds every process (a
//! virtual CPU not run by its host, a core taken by another process) shows in that thread as
//! it shows in the pipeline's latency, without any message involved.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the meter's thread sleeps each time.
const NAP: Duration = Duration::from_millis(1);

/// A wake-up this much later than asked counts as a stall.
const STALL: Duration = Duration::from_millis(5);

/// The meter, running from [`Meter::start`] until [`Meter::stop`].
pub struct Meter {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Duration>>,
    cpu: Option<(u64, u64)>,
}

/// What the meter saw.
pub struct Report {
    /// How late each wake-up was, sorted.
    late: Vec<Duration>,
    /// Share of all cores' time not idle, 0 to 1 (none where `/proc/stat` is not readable).
    busy: Option<f64>,
}

impl Meter {
    /// Starts the meter's thread and reads the cores' time so far.
    pub fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let running = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut late = Vec::new();
            while !running.load(Ordering::Relaxed) {
                let asleep = Instant::now();
                std::thread::sleep(NAP);
                late.push(asleep.elapsed().saturating_sub(NAP));
            }
            late
        });
        Self { stop, thread, cpu: cpu_ticks() }
    }

    /// Stops the meter and reports.
    pub fn stop(self) -> Report {
        self.stop.store(true, Ordering::Relaxed);
        let mut late = self.thread.join().unwrap_or_default();
        late.sort_unstable();
        let busy = self.cpu.zip(cpu_ticks()).and_then(|((total0, idle0), (total1, idle1))| {
            let total = total1.checked_sub(total0).filter(|t| *t > 0)?;
            Some(1.0 - idle1.saturating_sub(idle0) as f64 / total as f64)
        });
        Report { late, busy }
    }
}

impl Report {
    /// One line: the cores' use, and the wake-ups' lateness at the 99th and 99.9th percentile,
    /// how many were stalls and the longest.
    pub fn summary(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let at = |q: f64| crate::latency::percentile(&self.late, q);
        let busy = match self.busy {
            Some(busy) => format!("cores {:.0}% busy; ", busy * 100.0),
            None => String::new(),
        };
        let (Some(p99), Some(p999), Some(max)) = (at(0.99), at(0.999), at(1.0)) else {
            return format!("{busy}no wake-up measured");
        };
        let stalls = self.late.iter().filter(|d| **d > STALL).count();
        format!(
            "{busy}a thread sleeping 1 ms woke late by p99 {:.2} p99.9 {:.2} max {:.2} ms; {stalls} of {} wake-ups more than {} ms late",
            ms(p99),
            ms(p999),
            ms(max),
            self.late.len(),
            STALL.as_millis()
        )
    }
}

/// All cores' time so far and the part of it idle (idle and waiting for I/O), in clock ticks,
/// from the first line of `/proc/stat`.
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).filter_map(|t| t.parse().ok()).collect();
    let idle = ticks.get(3)? + ticks.get(4)?;
    Some((ticks.iter().take(8).sum(), idle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_gives_the_percentiles_the_stalls_and_the_busy_share() {
        let late = (0..1000).map(|i| Duration::from_micros(if i >= 997 { 7_000 + i } else { 100 })).collect();
        let report = Report { late, busy: Some(0.42) };
        assert_eq!(
            report.summary(),
            "cores 42% busy; a thread sleeping 1 ms woke late by p99 0.10 p99.9 8.00 max 8.00 ms; 3 of 1000 wake-ups more than 5 ms late"
        );
    }

    #[test]
    fn the_meter_measures_its_wake_ups_and_the_cores_use_while_it_runs() {
        let meter = Meter::start();
        std::thread::sleep(Duration::from_millis(50));
        let report = meter.stop();
        assert!(report.late.len() >= 5, "{} wake-ups in 50 ms of 1 ms naps", report.late.len());
        assert!(report.late.windows(2).all(|w| w[0] <= w[1]), "sorted");
        let busy = report.busy.expect("/proc/stat is read on Linux");
        assert!((0.0..=1.0).contains(&busy), "{busy}");
    }
}
