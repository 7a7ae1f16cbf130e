//! `zonecast-loadgen`: simulates devices moving through a site with zones, publishes their
//! positions over NATS or HTTP at a set rate, and measures throughput and latency (position
//! timestamp → event on NATS, and → message on MQTT) with percentiles.

mod host;
mod latency;
mod site;
mod streams;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use zonecast_bus::Subjects;

use crate::latency::Recorder;
use crate::site::{Input, Site};

/// mimalloc: allocation-heavy JSON paths run markedly faster than on the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command line.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Input path.
    #[arg(long, value_enum, default_value = "ingest")]
    input: Input,
    /// NATS URL (inputs positions/ingest, and event latency).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats: String,
    /// Subject prefix.
    #[arg(long, default_value = "zonecast")]
    prefix: String,
    /// Partition count of the cluster.
    #[arg(long, default_value_t = 16)]
    partitions: u32,
    /// Base URL of the API (zone setup) and, for `--input http`, of the positions endpoint.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    api: String,
    /// Base URL of `POST /v3/positions` when it differs from `--api` (distributed ingestor).
    #[arg(long)]
    ingest_url: Option<String>,
    /// API key with write authority (zone setup, HTTP input).
    #[arg(long, env = "ZONECAST_LOADGEN_KEY", default_value = "")]
    key: String,
    /// Number of simulated devices.
    #[arg(long, default_value_t = 10_000)]
    devices: u32,
    /// Number of zones to create (0: use what exists).
    #[arg(long, default_value_t = 1_000)]
    zones: u32,
    /// Site edge length in metres (square site, 20 m high).
    #[arg(long, default_value_t = 1000.0)]
    site: f64,
    /// Zones are circles of this radius in metres (2D, through the site's height) instead of
    /// mixed shapes of 2-20 m.
    #[arg(long)]
    circles: Option<f64>,
    /// Metres a device walks between two of its positions.
    #[arg(long, default_value_t = 0.5)]
    step: f64,
    /// Target positions per second (0: as fast as possible).
    #[arg(long, default_value_t = 100_000)]
    rate: u64,
    /// Seconds to send.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Positions per HTTP request or ingest message.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Concurrent senders.
    #[arg(long, default_value_t = 4)]
    senders: usize,
    /// Measure position → event latency on `<prefix>.events.>`.
    #[arg(long)]
    events: bool,
    /// Measure position → MQTT latency: broker `host:port` (a connection to it must exist).
    #[arg(long)]
    mqtt: Option<String>,
    /// MQTT topic filter to subscribe for `--mqtt`.
    #[arg(long, default_value = "zonecast/#")]
    mqtt_topic: String,
    /// Count normalised positions in the partitions' batches on `<prefix>.batches.*` (processing
    /// throughput of the ingestor), and measure the latency to them: the ingest stage alone.
    #[arg(long)]
    count_positions: bool,
    /// Remove the prefix's JetStream streams (stored positions, event journal) when the run ends.
    #[arg(long)]
    remove_streams: bool,
    /// How long a sender pauses, in milliseconds, when the HTTP input pushes back (503 with
    /// Retry-After) before it sends the same positions again.
    #[arg(long, default_value_t = 100)]
    retry_ms: u64,
    /// A zonecast process to measure (repeatable): its CPU time while positions are sent and
    /// drained (positions per CPU-second of all of them), and its peak resident memory (VmHWM).
    #[arg(long)]
    pid: Vec<u32>,
    /// Seconds to keep listening after sending stops.
    #[arg(long, default_value_t = 3)]
    drain: u64,
    /// A `/metrics` URL of an evaluator (repeatable; the all-in-one's too): the run then also
    /// reports the evaluation rate, positions evaluated by the evaluators over the time until
    /// the last one sent was evaluated (what was queued when sending stopped counts as late).
    #[arg(long)]
    evaluated_from: Vec<String>,
    /// Live streams to keep open on the API while positions are sent, half of them
    /// `GET /v3/events/stream`, half `GET /v3/positions/stream`, read as fast as they come.
    #[arg(long, default_value_t = 0)]
    streams: usize,
    /// Which live streams `--streams` opens.
    #[arg(long, value_enum, default_value = "both")]
    stream_kind: streams::Kind,
    /// A directory to write every latency sample to (`batched.tsv`, `events.tsv`, `mqtt.tsv`:
    /// measurement time and latency in microseconds), to see when the slow ones happened.
    #[arg(long)]
    samples: Option<std::path::PathBuf>,
}

/// Sum of `zonecast_evaluator_positions_total` over the given `/metrics` URLs.
async fn evaluated(http: &reqwest::Client, urls: &[String], key: &str) -> anyhow::Result<u64> {
    let mut total = 0;
    for url in urls {
        let text = http.get(url).header("X-API-Key", key).send().await?.error_for_status()?.text().await?;
        total += text
            .lines()
            .filter(|l| l.starts_with("zonecast_evaluator_positions_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64;
    }
    Ok(total)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let subjects = Subjects::new(args.prefix.clone());
    // The services close a connection idle for 10 s: pooled ones go before, so that a request
    // (the evaluation count read after a 10 s run) never lands on one being closed.
    let http = zonecast_tls::http_client()?.pool_idle_timeout(Duration::from_secs(5)).build()?;
    let mut site = Site::new(args.site, args.devices, 42, args.circles);
    if args.zones > 0 {
        let created = site.create_zones(&http, &args.api, &args.key, args.zones).await?;
        eprintln!("loadgen: created {created} zones");
    }
    let bus_site = zonecast_bus::Site {
        prefix: &args.prefix,
        partitions: args.partitions,
        journal: zonecast_bus::JournalSettings::default(),
        positions: zonecast_bus::PositionSettings::default(),
        journal_file: None,
    };
    let channels = zonecast_bus::open(Some(&args.nats), "zonecast-loadgen", bus_site).await?;
    let bus = channels.bus.clone();
    let events = Arc::new(Recorder::default());
    let mqtt = Arc::new(Recorder::default());
    let positions_seen = Arc::new(AtomicU64::new(0));
    if args.events {
        let mut sub = bus.subscribe(&subjects.events_all()).await?;
        let rec = events.clone();
        tokio::spawn(async move {
            while let Some(msg) = sub.next().await {
                rec.observe_event(&msg.payload);
            }
        });
    }
    let stored = Arc::new(Recorder::default());
    if args.count_positions {
        let mut sub = bus.subscribe(&subjects.position_batches()).await?;
        let (seen, stored) = (positions_seen.clone(), stored.clone());
        tokio::spawn(async move {
            while let Some(msg) = sub.next().await {
                let at = chrono::Utc::now();
                for line in zonecast_bus::positions::lines(&msg.payload) {
                    seen.fetch_add(1, Ordering::Relaxed);
                    stored.observe_position(&line, at);
                }
            }
        });
    }
    if let Some(broker) = &args.mqtt {
        latency::subscribe_mqtt(broker, &args.mqtt_topic, mqtt.clone()).await?;
    }
    bus.flush().await?;
    let streams = match args.streams {
        0 => None,
        n => Some(
            streams::open(&zonecast_tls::http_client()?.build()?, &args.api, &args.key, n, args.stream_kind).await?,
        ),
    };

    // One publisher for every sender, as one ingestor stores what all its inputs take;
    // its streams are made before the clock of the run starts.
    let publisher =
        zonecast_ingest::Publisher::new(&channels, subjects.clone(), 1, zonecast_bus::PositionSettings::default());
    if matches!(args.input, Input::Positions) {
        publisher.prepare().await?;
    }
    let evaluated_before = evaluated(&http, &args.evaluated_from, &args.key).await?;
    let sent = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let cpu_before: Vec<Option<u64>> = args.pid.iter().map(|pid| cpu_ns(*pid)).collect();
    let deadline = Instant::now() + Duration::from_secs(args.duration);
    let per_sender_rate = if args.rate == 0 { 0 } else { args.rate.div_ceil(args.senders as u64) };
    let started = Instant::now();
    let host = host::Meter::start();
    let mut tasks = Vec::new();
    let devices = site.devices();
    for sender in 0..args.senders {
        let mine: Vec<_> =
            devices.iter().enumerate().filter(|(i, _)| i % args.senders == sender).map(|(_, d)| d.clone()).collect();
        let ctx = site::Sender {
            input: args.input,
            bus: bus.clone(),
            subjects: subjects.clone(),
            publisher: publisher.clone(),
            http: http.clone(),
            url: format!("{}/v3/positions", args.ingest_url.as_deref().unwrap_or(&args.api)),
            key: args.key.clone(),
            batch: args.batch,
            rate: per_sender_rate,
            site: args.site,
            step: args.step,
            sent: sent.clone(),
            refused: refused.clone(),
            retry: Duration::from_millis(args.retry_ms),
            deadline,
        };
        tasks.push(tokio::spawn(ctx.run(mine, sender as u64)));
    }
    for t in tasks {
        t.await??;
    }
    bus.flush().await?;
    let send_secs = started.elapsed().as_secs_f64();
    let send_end = Instant::now();
    let host = host.stop();
    let total = sent.load(Ordering::Relaxed);
    let drain_until = Instant::now() + Duration::from_secs(args.drain);
    // The evaluation rate: wait (up to the drain time) until every position sent was evaluated.
    let mut evaluation = None;
    if !args.evaluated_from.is_empty() {
        loop {
            let done = evaluated(&http, &args.evaluated_from, &args.key).await? - evaluated_before;
            if done >= total || Instant::now() >= drain_until {
                evaluation = Some((done, started.elapsed().as_secs_f64()));
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    tokio::time::sleep_until(drain_until.into()).await;
    println!("input           {:?}", args.input);
    println!("sent            {total} positions in {send_secs:.2} s = {:.0} positions/s", total as f64 / send_secs);
    let refused = refused.load(Ordering::Relaxed);
    if refused > 0 {
        println!("pushed back     {refused} answers 503 with Retry-After: the sent rate above is the sustainable one");
    }
    if let Some((done, secs)) = evaluation {
        println!(
            "evaluated       {done} positions ({:.2}% of sent) by {secs:.2} s = {:.0} positions/s",
            100.0 * done as f64 / total.max(1) as f64,
            done as f64 / secs
        );
    }
    if args.count_positions {
        let seen = positions_seen.load(Ordering::Relaxed);
        println!(
            "normalised      {seen} positions seen on batches.* ({:.1}% of sent)",
            100.0 * seen as f64 / total.max(1) as f64
        );
        println!("batched         {}", stored.summary());
    }
    if args.events {
        println!("events          {}", events.summary());
    }
    if args.mqtt.is_some() {
        println!("mqtt            {}", mqtt.summary());
    }
    if args.mqtt.is_some()
        && let Some(last) = mqtt.last_seen()
    {
        let after = last.saturating_duration_since(send_end).as_secs_f64() * 1e3;
        println!("drain           the last MQTT message came {after:.0} ms after sending stopped");
    }
    if let Some(dir) = &args.samples {
        std::fs::create_dir_all(dir)?;
        for (name, recorder) in [("batched", &stored), ("events", &events), ("mqtt", &mqtt)] {
            recorder.write_samples(&dir.join(format!("{name}.tsv")))?;
        }
    }
    println!("host            {}", host.summary());
    if let Some(received) = &streams {
        println!("streams         {}", received.summary(args.streams));
    }
    let cpu_ns_total: u64 = args
        .pid
        .iter()
        .zip(&cpu_before)
        .filter_map(|(pid, before)| Some(cpu_ns(*pid)?.saturating_sub((*before)?)))
        .sum();
    if cpu_ns_total > 0 {
        let secs = cpu_ns_total as f64 / 1e9;
        println!(
            "cpu             {secs:.2} CPU-seconds of the measured processes = {:.0} positions per CPU-second",
            total as f64 / secs
        );
    }
    for pid in &args.pid {
        match peak_rss_mb(*pid) {
            Some(mb) => println!("peak memory     process {pid}: {mb:.0} MB resident at most (VmHWM)"),
            None => println!("peak memory     process {pid}: not readable"),
        }
    }
    if args.remove_streams {
        channels.journal.remove_all().await?;
        channels.positions.remove_all().await?;
    }
    Ok(())
}

/// The peak resident set of process `pid` in MB, from `/proc/<pid>/status`.
fn peak_rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// CPU time process `pid` (all its threads) has used so far, in nanoseconds: user plus system
/// time from `/proc/<pid>/stat`, in clock ticks of 10 ms (Linux's `CLK_TCK` of 100).
fn cpu_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces: the
    // process state first, then utime and stime as the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000_000)
}
