//! The process's own metrics (`process_*`, as Prometheus's client libraries name them), read
//! from `/proc/self` at each scrape. Elsewhere than on Linux there are none.

use std::fmt::Write;

use super::catalog::find;

/// Appends the `process_*` metrics to `text`, each with its `# HELP` and `# TYPE` lines from
/// the catalog. A figure that cannot be read is left out.
pub(super) fn render(text: &mut String) {
    for (name, value) in read() {
        let Some(metric) = find(name) else { continue };
        let _ =
            write!(text, "# HELP {name} {}\n# TYPE {name} {}\n{name} {value}\n\n", metric.help, metric.kind.as_str());
    }
}

#[cfg(target_os = "linux")]
fn read() -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    let ticks = rustix::param::clock_ticks_per_second() as f64;
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // The fields after the command, which is in parentheses and may hold anything.
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        // Field n of proc(5) is fields[n - 3].
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
        if let (Some(user), Some(system)) = (field(14), field(15)) {
            out.push(("process_cpu_seconds_total", (user + system) / ticks));
        }
        if let Some(threads) = field(20) {
            out.push(("process_threads", threads));
        }
        if let (Some(start), Some(boot)) = (field(22), boot_time()) {
            out.push(("process_start_time_seconds", boot + start / ticks));
        }
        if let Some(virtual_bytes) = field(23) {
            out.push(("process_virtual_memory_bytes", virtual_bytes));
        }
        if let Some(pages) = field(24) {
            out.push(("process_resident_memory_bytes", pages * rustix::param::page_size() as f64));
        }
    }
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        out.push(("process_open_fds", entries.count() as f64));
    }
    if let Some(max) = max_fds() {
        out.push(("process_max_fds", max));
    }
    out
}

#[cfg(not(target_os = "linux"))]
fn read() -> Vec<(&'static str, f64)> {
    Vec::new()
}

/// When the machine booted, in seconds since the Unix epoch (`btime` of `/proc/stat`).
#[cfg(target_os = "linux")]
fn boot_time() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines().find_map(|line| line.strip_prefix("btime ")).and_then(|t| t.trim().parse().ok())
}

/// The soft limit of open files (`/proc/self/limits`).
#[cfg(target_os = "linux")]
fn max_fds() -> Option<f64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn every_process_metric_is_read_and_described() {
        let figures = read();
        let names: Vec<&str> = figures.iter().map(|(name, _)| *name).collect();
        for metric in super::super::CATALOG.iter().filter(|m| m.name.starts_with("process_")) {
            assert!(names.contains(&metric.name), "{} not read: {names:?}", metric.name);
        }
        let value = |name| figures.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).unwrap_or_default();
        assert!(value("process_resident_memory_bytes") > 1e6);
        assert!(value("process_open_fds") >= 3.0);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        let started = value("process_start_time_seconds");
        assert!(started <= now + 1.0 && started > now - 86_400.0, "started {started}, now {now}");
    }
}
