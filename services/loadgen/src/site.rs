//! The simulated site: zones scattered over a square site and devices walking through it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use zonecast_bus::{Bus, Subjects};
use zonecast_model::{Mac, PositionUpdate};

/// How positions are sent.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Input {
    /// Normalised positions stored in the position stream as an ingestor stores them
    /// (bypasses the ingestor).
    Positions,
    /// Compact positions on `<prefix>.ingest` (through the ingestor), in arrays of `--batch`.
    Ingest,
    /// `POST /v3/positions` in arrays of `--batch`.
    Http,
}

/// A small deterministic generator (xorshift64*), enough for scattering and walking.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [0, 1).
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

/// One simulated device.
#[derive(Clone)]
pub struct Device {
    mac: Mac,
    pos: [f64; 3],
    heading: f64,
}

/// Zones and devices.
pub struct Site {
    size: f64,
    devices: Vec<Device>,
    rng: Rng,
    /// Circles of this radius (m) instead of mixed shapes.
    circles: Option<f64>,
}

impl Site {
    /// `devices` devices at random places on a `size` × `size` m site; zones are circles of
    /// radius `circles` when given, mixed shapes otherwise.
    pub fn new(size: f64, devices: u32, seed: u64, circles: Option<f64>) -> Self {
        let mut rng = Rng::new(seed);
        let devices = (0..devices)
            .map(|i| Device {
                mac: format!(
                    "02:00:{:02X}:{:02X}:{:02X}:{:02X}",
                    (i >> 24) & 0xff,
                    (i >> 16) & 0xff,
                    (i >> 8) & 0xff,
                    i & 0xff
                )
                .parse()
                // Start-up: the format above always gives six two-digit hex octets.
                .expect("valid MAC"),
                pos: [rng.range(0.0, size), rng.range(0.0, size), rng.range(0.0, 3.0)],
                heading: rng.range(0.0, std::f64::consts::TAU),
            })
            .collect();
        Self { size, devices, rng, circles }
    }

    /// The devices.
    pub fn devices(&self) -> Vec<Device> {
        self.devices.clone()
    }

    /// Creates `n` zones (mixed shapes of 2–20 m, or circles) through the API, 500 per batch
    /// request.
    pub async fn create_zones(&mut self, http: &reqwest::Client, api: &str, key: &str, n: u32) -> anyhow::Result<u32> {
        let mut created = 0;
        while created < n {
            let chunk: Vec<Value> = (created..n.min(created + 500)).map(|i| self.zone(i)).collect();
            let r =
                http.post(format!("{api}/v3/modules/zones/batch")).header("X-API-Key", key).json(&chunk).send().await?;
            if !r.status().is_success() {
                anyhow::bail!("zone setup failed: {} {}", r.status(), r.text().await.unwrap_or_default());
            }
            created += chunk.len() as u32;
        }
        Ok(created)
    }

    fn zone(&mut self, i: u32) -> Value {
        let r = &mut self.rng;
        let (x, y) = (r.range(0.0, self.size), r.range(0.0, self.size));
        let s = r.range(2.0, 20.0);
        let name = format!("load-{i}");
        if let Some(radius) = self.circles {
            return json!({"Name": name, "GeometryType": "circle", "GeometryData": [[x, y, 0.0], [radius, 0, 0]]});
        }
        match i % 4 {
            0 => json!({"Name": name, "GeometryType": "sphere", "GeometryData": [[x, y, 1.0], [s / 2.0, 0, 0]]}),
            1 => {
                let a = r.range(0.0, std::f64::consts::PI);
                json!({"Name": name, "GeometryType": "cuboid", "GeometryData": [[x, y, 0.0], [s, s / 2.0, 4.0],
                    [a.cos(), a.sin(), 0.0], [-a.sin(), a.cos(), 0.0], [0, 0, 1]]})
            }
            2 => {
                json!({"Name": name, "GeometryType": "cylinder", "GeometryData": [[x, y, 0.0], [0, 0, 1], [5.0, s / 2.0, 0]]})
            }
            _ => {
                json!({"Name": name, "GeometryType": "polygon", "GeometryData": [[x, y, 0.0], [x + s, y, 0.0], [x + s, y + s, 0.0],
                [x + s / 2.0, y + s / 2.0, 0.0], [x, y + s, 0.0], [3.0, 0, 0], [0, 0, 1]]})
            }
        }
    }
}

/// One sending task.
#[allow(missing_docs)]
pub struct Sender {
    pub input: Input,
    pub bus: Arc<dyn Bus>,
    pub subjects: Subjects,
    /// Stores normalised positions as an ingestor does (`--input positions`).
    pub publisher: zonecast_ingest::Publisher,
    pub http: reqwest::Client,
    pub url: String,
    pub key: String,
    pub batch: usize,
    /// Positions per second for this sender (0: unlimited).
    pub rate: u64,
    pub site: f64,
    /// Metres a device walks per position.
    pub step: f64,
    pub sent: Arc<AtomicU64>,
    /// Answers 503 with `Retry-After` (the HTTP input pushed back).
    pub refused: Arc<AtomicU64>,
    /// How long a pushed-back sender pauses before it sends the same positions again.
    pub retry: Duration,
    pub deadline: Instant,
}

impl Sender {
    /// Walks `devices` round-robin, sending `batch` positions at a time until the deadline.
    pub async fn run(self, mut devices: Vec<Device>, seed: u64) -> anyhow::Result<()> {
        if devices.is_empty() {
            return Ok(());
        }
        let mut rng = Rng::new(seed + 7);
        let started = Instant::now();
        let mut sent: u64 = 0;
        let mut next = 0usize;
        while Instant::now() < self.deadline {
            let now = chrono::Utc::now();
            let mut batch = Vec::with_capacity(self.batch);
            for _ in 0..self.batch {
                let count = devices.len();
                let d = &mut devices[next];
                next = (next + 1) % count;
                d.heading += rng.range(-0.3, 0.3);
                d.pos[0] = (d.pos[0] + self.step * d.heading.cos()).clamp(0.0, self.site);
                d.pos[1] = (d.pos[1] + self.step * d.heading.sin()).clamp(0.0, self.site);
                batch.push(PositionUpdate {
                    mac: d.mac.clone(),
                    position: d.pos,
                    timestamp: now,
                    gateway_uri: None,
                    extra: Default::default(),
                });
            }
            match self.input {
                Input::Positions => {
                    self.publisher.publish(batch.clone(), now).await?;
                }
                Input::Ingest => {
                    self.bus.publish(self.subjects.ingest(), compact(&batch).into()).await?;
                }
                Input::Http => loop {
                    let r =
                        self.http.post(&self.url).header("X-API-Key", &self.key).body(compact(&batch)).send().await?;
                    if r.status().is_success() {
                        break;
                    }
                    if r.status() != reqwest::StatusCode::SERVICE_UNAVAILABLE
                        || !r.headers().contains_key("retry-after")
                    {
                        anyhow::bail!("POST /v3/positions: {}", r.status());
                    }
                    // Pushed back: the same positions again after a pause, stamped anew, so that
                    // latency counts from when they are accepted.
                    self.refused.fetch_add(1, Ordering::Relaxed);
                    if Instant::now() >= self.deadline {
                        return Ok(());
                    }
                    tokio::time::sleep(self.retry).await;
                    let now = chrono::Utc::now();
                    batch.iter_mut().for_each(|p| p.timestamp = now);
                },
            }
            sent += batch.len() as u64;
            self.sent.fetch_add(batch.len() as u64, Ordering::Relaxed);
            if self.rate > 0 {
                let due = started + Duration::from_secs_f64(sent as f64 / self.rate as f64);
                tokio::time::sleep_until(due.into()).await;
            }
        }
        Ok(())
    }
}

/// Positions in the compact form, as a JSON array, serialised straight from borrowed fields (the
/// generator shares the machine with what it measures, so it spends as little as it can).
fn compact(batch: &[PositionUpdate]) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Compact<'a> {
        #[serde(rename = "MAC")]
        mac: &'a str,
        #[serde(rename = "Position")]
        position: [f64; 3],
        #[serde(rename = "Timestamp")]
        timestamp: &'a str,
    }
    let ts = batch.first().map(|p| zonecast_model::format_timestamp(&p.timestamp)).unwrap_or_default();
    let items: Vec<Compact<'_>> =
        batch.iter().map(|p| Compact { mac: p.mac.as_str(), position: p.position, timestamp: &ts }).collect();
    serde_json::to_vec(&items).unwrap_or_default()
}
