//! The console's frame rate on a large site: the all-in-one (`zonecast::start` in this process,
//! built with the bench profile, i.e. release) with 1,000 zones of every shape and 10,000
//! devices walking at 1 Hz, posted over HTTP in batches of 1,000 every 100 ms; the console open
//! in a headless Chromium through `zonecast_tests::browser`, drawing as Chromium chooses on a
//! machine without a GPU (WebGL by SwiftShader, the page composited in software), or as
//! `BROWSER_GRAPHICS` says (`swiftshader-gpu`, `swiftshader-software`, `llvmpipe`),
//! signed in through its form. Once the scene holds every zone and device, the frame rate is
//! sampled from `requestAnimationFrame` timestamps in the page: first with the camera still
//! (the site moving), then with the camera turning about the site, which makes every frame
//! draw everything again. Run with:
//!
//! ```sh
//! cargo bench -p zonecast-tests --bench console_fps
//! BENCH_SECONDS=10 BENCH_ZONES=200 BENCH_DEVICES=2000 cargo bench -p zonecast-tests --bench console_fps
//! BROWSER_GRAPHICS=swiftshader-gpu cargo bench -p zonecast-tests --bench console_fps
//! BROWSER_GRAPHICS=llvmpipe cargo bench -p zonecast-tests --bench console_fps
//! ```
//!
//! It prints the WebGL renderer the page reports, frames per second (animation frames, and how
//! many of them were drawn, in which detail), frame-time percentiles, how many positions and
//! events per second reached the page, the page's main-thread time by kind
//! (`Performance.getMetrics`), the CPU of the browser's processes and of this process, how busy
//! the host's CPUs were and how much of that was other processes', and how soon the full view
//! came back once the camera stopped. `BENCH_PROFILE=1` adds the functions that took the page's
//! JS time (a sampling profile over the DevTools protocol). See `docs/benchmarks.md`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use zonecast_tests::browser::{Browser, Graphics};
use zonecast_tests::{Mode, Server, WRITE_KEY};

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 800;
/// The site's floor, in metres.
const SITE: [f64; 2] = [300.0, 200.0];
/// Positions are posted in this many slices a second, each with every tenth device.
const SLICES: usize = 10;
/// How long the scene may take to hold every zone and device.
const READY_WAIT: Duration = Duration::from_secs(300);

/// A small deterministic generator (SplitMix64): the same site on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn mac(device: usize) -> String {
    format!("0A:00:00:00:{:02X}:{:02X}", device >> 8, device & 0xFF)
}

/// Zone `i` of the site: the six shapes in turn, 2–12 m, turned at random; every fourth cuboid
/// oblique, every other polygon a concave star, AlertLevels 0–9, one zone in 17 inactive, one in
/// 100 mobile (following device `i / 100`).
fn zone(i: usize, rng: &mut Rng) -> Value {
    let (x, y) = (rng.range(5.0, SITE[0] - 5.0), rng.range(5.0, SITE[1] - 5.0));
    let size = rng.range(2.0, 12.0);
    let turn = rng.range(0.0, std::f64::consts::TAU);
    let (c, s) = (turn.cos(), turn.sin());
    let data = match i % 6 {
        0 => json!([[x, y, rng.range(0.5, 3.0)], [size / 2.0, 0, 0]]),
        1 => json!([[x, y, 0], [size / 2.0, 0, 0]]),
        2 => {
            let w_axis = if i % 4 == 2 { json!([-s + 0.4 * c, c + 0.4 * s, 0.3]) } else { json!([-s, c, 0]) };
            json!([[x, y, 0], [size, size * 0.6, rng.range(1.0, 4.0)], [c, s, 0], w_axis, [0, 0, 1]])
        }
        3 => json!([[x, y, 0], [size, size * 0.5, 0], [c, s, 0], [-s, c, 0]]),
        4 => json!([[x, y, 0], [rng.range(-0.2, 0.2), rng.range(-0.2, 0.2), 1], [rng.range(1.0, 5.0), size / 3.0, 0]]),
        _ => {
            let corners = 5 + i % 4;
            let star = i % 2 == 1;
            let mut rows: Vec<Value> = (0..corners * if star { 2 } else { 1 })
                .map(|k| {
                    let n = corners * if star { 2 } else { 1 };
                    let a = turn + std::f64::consts::TAU * k as f64 / n as f64;
                    let r = if star && k % 2 == 1 { size * 0.25 } else { size / 2.0 };
                    json!([x + r * a.cos(), y + r * a.sin(), 0])
                })
                .collect();
            rows.push(json!([rng.range(1.0, 4.0), 0, 0]));
            rows.push(json!([0, 0, 1]));
            Value::Array(rows)
        }
    };
    let kind = ["sphere", "circle", "cuboid", "square", "cylinder", "polygon"][i % 6];
    let mut zone = json!({
        "Name": format!("{kind} {i}"), "GeometryType": kind, "GeometryData": data,
        "AlertLevel": i % 10, "Active": !i.is_multiple_of(17),
    });
    if i.is_multiple_of(100) {
        zone["MobileOriginSource"] = json!(mac(i / 100));
    }
    zone
}

/// A device's walk: back and forth between two points of the floor at its own speed.
struct Walk {
    from: [f64; 3],
    to: [f64; 3],
    /// Metres per second over the segment's length.
    rate: f64,
    phase: f64,
}

impl Walk {
    fn new(rng: &mut Rng) -> Self {
        let from = [rng.range(0.0, SITE[0]), rng.range(0.0, SITE[1]), rng.range(0.8, 1.8)];
        let angle = rng.range(0.0, std::f64::consts::TAU);
        let length = rng.range(10.0, 60.0);
        let to = [
            (from[0] + length * angle.cos()).clamp(0.0, SITE[0]),
            (from[1] + length * angle.sin()).clamp(0.0, SITE[1]),
            from[2],
        ];
        Self { from, to, rate: rng.range(0.5, 1.5) / length, phase: rng.range(0.0, 2.0) }
    }

    fn at(&self, seconds: f64) -> [f64; 3] {
        let u = (self.phase + self.rate * seconds) % 2.0;
        let u = if u > 1.0 { 2.0 - u } else { u };
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        std::array::from_fn(|k| round(self.from[k] + (self.to[k] - self.from[k]) * u))
    }
}

/// Positions posted and refused (503: the pipeline was behind) by the driver.
#[derive(Default)]
struct Posted {
    accepted: AtomicU64,
    refused: AtomicU64,
}

/// Posts every device's position once a second, a tenth of them every 100 ms, until `stop`. A
/// slice refused because the pipeline is behind is dropped: the next has newer positions.
async fn drive(server: Arc<Server>, walks: Vec<Walk>, stop: Arc<AtomicBool>, posted: Arc<Posted>) {
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / SLICES as u64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let macs: Vec<String> = (0..walks.len()).map(mac).collect();
    for slice in (0..SLICES).cycle() {
        tick.tick().await;
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let now = started.elapsed().as_secs_f64();
        let body: Vec<Value> = (slice..walks.len())
            .step_by(SLICES)
            .map(|d| json!({"MAC": macs[d], "Position": walks[d].at(now)}))
            .collect();
        let response = server
            .http
            .post(format!("{}/v3/positions", server.ingest_base))
            .header("X-API-Key", WRITE_KEY)
            .json(&body)
            .send()
            .await
            .unwrap();
        match response.status() {
            StatusCode::OK => posted.accepted.fetch_add(body.len() as u64, Ordering::Relaxed),
            StatusCode::SERVICE_UNAVAILABLE => posted.refused.fetch_add(body.len() as u64, Ordering::Relaxed),
            other => panic!("positions answered {other}"),
        };
    }
}

/// Busy and total jiffies of every CPU, from `/proc/stat`.
fn cpu_jiffies() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> =
        stat.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let total: u64 = fields.iter().sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// CPU seconds (user + system) of process `pid`, from `/proc/<pid>/stat`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(end) = stat.rfind(')') else { return 0.0 };
    let fields: Vec<&str> = stat[end + 2..].split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds so far of every process below `root` (chromedriver), by Chromium's process
/// type (`renderer`, `gpu-process`, `utility`, or `browser`).
fn browser_cpu(root: u32) -> BTreeMap<String, f64> {
    let mut parents = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid = stat.rfind(')').and_then(|end| stat[end + 2..].split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.insert(pid, ppid);
        }
    }
    let below = |mut pid: u32| {
        while let Some(&parent) = parents.get(&pid) {
            if parent == root {
                return true;
            }
            pid = parent;
        }
        false
    };
    let mut cpu = BTreeMap::new();
    for &pid in parents.keys().filter(|&&pid| below(pid)) {
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        // Chromium rewrites its command line with spaces between the arguments.
        let kind = cmdline.split(['\0', ' ']).find_map(|a| a.strip_prefix("--type=")).unwrap_or("browser").to_owned();
        *cpu.entry(kind).or_insert(0.0) += cpu_seconds(pid);
    }
    cpu
}

/// The page's main-thread time so far by kind, from `Performance.getMetrics`.
async fn main_thread(browser: &Browser) -> BTreeMap<String, f64> {
    let metrics = browser.cdp("Performance.getMetrics", json!({})).await;
    metrics["metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["name"].as_str().is_some_and(|n| n.ends_with("Duration")))
        .map(|m| (m["name"].as_str().unwrap().trim_end_matches("Duration").to_owned(), m["value"].as_f64().unwrap()))
        .collect()
}

/// Differences of `after` and `before` per second of `span`, as percentages, largest first.
fn shares(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>, span: f64) -> String {
    let mut parts: Vec<(String, f64)> =
        after.iter().map(|(k, v)| (k.clone(), 100.0 * (v - before.get(k).unwrap_or(&0.0)) / span)).collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts.iter().filter(|(_, v)| *v >= 0.5).map(|(k, v)| format!("{k} {v:.0} %")).collect::<Vec<_>>().join(", ")
}

/// The functions that took the most of a JS sampling profile (`Profiler.stop`'s), by self time.
fn profile_top(profile: &Value, count: usize) -> String {
    let nodes = profile["nodes"].as_array().cloned().unwrap_or_default();
    let names: HashMap<u64, String> = nodes
        .iter()
        .map(|n| {
            let f = &n["callFrame"];
            let url = f["url"].as_str().unwrap_or("").rsplit('/').next().unwrap_or("").to_owned();
            let name = f["functionName"].as_str().filter(|s| !s.is_empty()).unwrap_or("(anonymous)");
            (n["id"].as_u64().unwrap(), format!("{name} {url}:{}", f["lineNumber"].as_i64().unwrap_or(0) + 1))
        })
        .collect();
    let samples = profile["samples"].as_array().cloned().unwrap_or_default();
    let deltas = profile["timeDeltas"].as_array().cloned().unwrap_or_default();
    let mut time: HashMap<&str, f64> = HashMap::new();
    for (sample, delta) in samples.iter().zip(deltas.iter().skip(1).chain([&json!(0)])) {
        let name = names.get(&sample.as_u64().unwrap()).map_or("?", String::as_str);
        *time.entry(name).or_insert(0.0) += delta.as_f64().unwrap_or(0.0) / 1000.0;
    }
    let total: f64 = time.values().sum();
    let mut top: Vec<(&str, f64)> = time.into_iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    top.iter().take(count).map(|(n, ms)| format!("  {:5.1} %  {n}\n", 100.0 * ms / total)).collect()
}

/// Starts recording the time of every animation frame in the page.
const SAMPLER: &str = "window.__frames = []; const round = window.__round = (window.__round || 0) + 1; \
    const record = (t) => { if (window.__round === round && window.__frames) { \
    window.__frames.push(t); requestAnimationFrame(record); } }; requestAnimationFrame(record); \
    window.__start = { stats: window.zonecastConsole.stats() };";

/// Stops recording and answers the frame times, and the page's counters then and before.
const RESULT: &str = "const t = window.__frames; window.__frames = null; \
    return { times: t, before: window.__start.stats, after: window.zonecastConsole.stats() };";

/// One sample of `seconds`: frames per second and frame-time percentiles.
async fn sample(browser: &Browser, what: &str, seconds: u64) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let profiling = std::env::var("BENCH_PROFILE").is_ok_and(|v| v == "1");
    if profiling {
        browser.cdp("Profiler.enable", json!({})).await;
        browser.cdp("Profiler.setSamplingInterval", json!({"interval": 500})).await;
        browser.cdp("Profiler.start", json!({})).await;
    }
    let (busy0, total0) = cpu_jiffies();
    let (page0, processes0) = (main_thread(browser).await, browser_cpu(browser.driver_pid()));
    let own0 = cpu_seconds(std::process::id());
    let started = Instant::now();
    browser.execute(SAMPLER, json!([])).await;
    // A benchmark's measuring window, not a synchronisation.
    tokio::time::sleep(Duration::from_secs(seconds)).await; // sleep-ok: the sampling window
    let result = browser.execute(RESULT, json!([])).await;
    let (page1, processes1) = (main_thread(browser).await, browser_cpu(browser.driver_pid()));
    let wall = started.elapsed().as_secs_f64();
    let own = cpu_seconds(std::process::id()) - own0;
    let (busy1, total1) = cpu_jiffies();
    let times: Vec<f64> = result["times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
    let (before, after) = (&result["before"], &result["after"]);
    let span = (times.last().unwrap_or(&0.0) - times.first().unwrap_or(&0.0)) / 1000.0;
    let mut gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let pct = |p: f64| gaps.get(((gaps.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    let counted = |field: &str| after[field].as_f64().unwrap_or(0.0) - before[field].as_f64().unwrap_or(0.0);
    println!(
        "{what}: {:.1} fps ({} frames in {span:.1} s, {:.0} of them drawn, {} detail: {} triangles, {} lines, {} points), \
         frame ms p50 {:.1} p95 {:.1} p99 {:.1} max {:.1}; {:.0} positions/s and {:.0} events/s reached the page; \
         CPU busy {:.0} % (load before: {})",
        gaps.len() as f64 / span.max(1e-9),
        gaps.len(),
        counted("rendered"),
        after["detail"].as_str().unwrap_or("?"),
        after["drawn"]["triangles"],
        after["drawn"]["lines"],
        after["drawn"]["points"],
        pct(0.5),
        pct(0.95),
        pct(0.99),
        gaps.last().copied().unwrap_or(f64::NAN),
        counted("positions") / span.max(1e-9),
        counted("events") / span.max(1e-9),
        100.0 * (busy1 - busy0) as f64 / (total1 - total0).max(1) as f64,
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    );
    println!("  page main thread: {}", shares(&page0, &page1, wall));
    // What the host's other processes took: the busy share of every core, less the browser's
    // and this process's. Figures with much of it are not comparable.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let browser_seconds: f64 = processes1.iter().map(|(k, v)| v - processes0.get(k).unwrap_or(&0.0)).sum();
    let busy = cores * (busy1 - busy0) as f64 / (total1 - total0).max(1) as f64;
    println!(
        "  CPU (of one core): browser {}; zonecast and the driver (this process) {:.0} %; other processes {:.0} %",
        shares(&processes0, &processes1, wall),
        100.0 * own / wall,
        (100.0 * (busy - (browser_seconds + own) / wall)).max(0.0)
    );
    if profiling {
        let profile = browser.cdp("Profiler.stop", json!({})).await;
        print!("  JS self time:\n{}", profile_top(&profile["profile"], 25));
    }
}

async fn run() {
    let zones = env_number("BENCH_ZONES", 1_000) as usize;
    let devices = env_number("BENCH_DEVICES", 10_000) as usize;
    let seconds = env_number("BENCH_SECONDS", 20);
    let graphics = Graphics::from_env();
    println!("console_fps: {zones} zones, {devices} devices at 1 Hz, {WIDTH}x{HEIGHT}, headless Chromium ({graphics})");
    // Ingest pushes back only past 5 s of lag: the host's other work may starve the pipeline
    // for a moment, and what is measured here is the page.
    let server =
        Arc::new(Server::start_configured(Mode::AllInOne, |c| c.bus.positions.max_lag = Duration::from_secs(5)).await);
    let mut rng = Rng(7);
    let site: Vec<Value> = (0..zones).map(|i| zone(i, &mut rng)).collect();
    for chunk in site.chunks(250) {
        server.ok(reqwest::Method::POST, "/v3/modules/zones/batch", Some(Value::Array(chunk.to_vec()))).await;
    }
    let walks: Vec<Walk> = (0..devices).map(|_| Walk::new(&mut rng)).collect();
    let (stop, posted) = (Arc::new(AtomicBool::new(false)), Arc::new(Posted::default()));
    let driver = tokio::spawn(drive(server.clone(), walks, stop.clone(), posted.clone()));

    let browser = Browser::start_with(WIDTH, HEIGHT, graphics).await;
    let started = Instant::now();
    browser.goto(&format!("{}/", server.base)).await;
    browser.until("the sign-in form", READY_WAIT, "!document.getElementById('signin').hidden").await;
    browser.type_into("#api-key", WRITE_KEY).await;
    browser.click("#signin-submit").await;
    let ready = format!(
        "window.zonecastConsole.stats().zonesDrawn === {zones} && window.zonecastConsole.stats().devices === {devices}"
    );
    browser.until("every zone and device in the scene", READY_WAIT, &ready).await;
    browser.cdp("Performance.enable", json!({})).await;
    println!("scene ready {:.1} s after the page was opened", started.elapsed().as_secs_f64());
    let drawn_by = browser.execute("return window.zonecastConsole.stats().renderer", json!([])).await;
    println!("WebGL renderer: {}", drawn_by.as_str().unwrap_or("unknown"));
    browser.execute("window.zonecastConsole.fit()", json!([])).await;
    tokio::time::sleep(Duration::from_secs(3)).await; // sleep-ok: warm-up before sampling
    sample(&browser, "camera still, site moving", seconds).await;
    browser.execute("window.zonecastConsole.orbit(true)", json!([])).await;
    sample(&browser, "camera turning, site moving", seconds).await;
    browser.screenshot("console-fps-turning").await;
    // The full view again once the camera rests.
    browser.execute("window.zonecastConsole.orbit(false)", json!([])).await;
    let rested =
        "(() => { const s = window.zonecastConsole.stats(); return s.detail === 'full' && s.labels > 0 && s; })()";
    let (rest, _) = browser.until("the full view at rest", READY_WAIT, rested).await;
    println!(
        "camera at rest: full view drawn {} ms after the last move: {} triangles, {} lines, {} points",
        rest["settledMs"], rest["drawn"]["triangles"], rest["drawn"]["lines"], rest["drawn"]["points"]
    );
    browser.screenshot("console-fps").await;
    stop.store(true, Ordering::Relaxed);
    driver.await.unwrap();
    println!(
        "positions accepted: {}, refused while the pipeline was behind: {}",
        posted.accepted.load(Ordering::Relaxed),
        posted.refused.load(Ordering::Relaxed)
    );
    browser.close().await;
    Arc::into_inner(server).expect("the driver let go of the server").stop().await;
}

fn main() {
    // `cargo bench` passes --bench; this benchmark has no filters to take.
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(run());
}
