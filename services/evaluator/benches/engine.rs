//! Engine throughput: positions per second through `Engine::on_position` (scene query, exact
//! distances, enter/exit state machine, event construction) on one core, for 1k, 10k and 100k
//! static zones and for 1k mobile zones; and memory per device. Zones are mixed (sphere,
//! circle, cuboid and square with rotated axes, cylinder, polygon prism; 1–20 m) at random
//! places on a 1 km × 1 km × 20 m site; 10,000 devices at random positions. Memory is the
//! growth of resident memory while zones, then devices, are added. And one zone change (create,
//! geometry update, delete) applied through `Engine::apply_zones` at 100,000 zones with the
//! 10,000 devices placed.
//! Run with `cargo bench -p zonecast-evaluator`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use chrono::Utc;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use zonecast_evaluator::catalog::Catalog;
use zonecast_evaluator::{Engine, Ownership};
use zonecast_model::{IdSource, Mac, ZoneInput};

/// Resident memory of this process in bytes (Linux), for memory per zone and per device.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

fn zone_json(r: &mut Rng, i: usize, mobile: Option<&Mac>) -> Value {
    let (x, y, z) = (r.range(0.0, 1000.0), r.range(0.0, 1000.0), r.range(0.0, 18.0));
    let s = r.range(1.0, 20.0);
    let a = r.range(0.0, std::f64::consts::PI);
    let (c, n) = (a.cos(), a.sin());
    let mut v = match i % 6 {
        0 => json!({"GeometryType": "sphere", "GeometryData": [[x, y, z], [s / 2.0, 0, 0]]}),
        1 => json!({"GeometryType": "circle", "GeometryData": [[x, y, 0], [s / 2.0, 0, 0]]}),
        2 => {
            json!({"GeometryType": "cuboid", "GeometryData": [[x, y, z], [s, s / 2.0, 2.0], [c, n, 0.1], [-n, c, 0], [0, 0.1, 1]]})
        }
        3 => json!({"GeometryType": "square", "GeometryData": [[x, y, 0], [s, s / 2.0, 0], [c, n, 0], [-n, c, 0]]}),
        4 => json!({"GeometryType": "cylinder", "GeometryData": [[x, y, z], [0.1, 0, 1], [2.0, s / 2.0, 0]]}),
        _ => json!({"GeometryType": "polygon", "GeometryData": [[x, y, z], [x + s, y, z], [x + s, y + s, z],
            [x + s / 2.0, y + s / 3.0, z], [x, y + s, z], [2.0, 0, 0], [0, 0, 1]]}),
    };
    if let Some(m) = mobile {
        v["MobileOriginSource"] = json!(m.as_str());
    }
    v
}

fn mac(i: usize) -> Mac {
    format!("02:00:00:{:02X}:{:02X}:{:02X}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff).parse().expect("valid MAC")
}

fn engine(static_zones: usize, mobile_zones: usize) -> Engine {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut specs = Vec::new();
    for i in 0..static_zones {
        specs.push(
            ZoneInput::parse(&zone_json(&mut r, i, None), &zonecast_model::Limits::DEFAULT)
                .and_then(|z| z.create(uuid::Uuid::new_v4()))
                .expect("valid zone"),
        );
    }
    for i in 0..mobile_zones {
        let source = mac(1_000_000 + i);
        specs.push(
            ZoneInput::parse(&zone_json(&mut r, i, Some(&source)), &zonecast_model::Limits::DEFAULT)
                .and_then(|z| z.create(uuid::Uuid::new_v4()))
                .expect("valid zone"),
        );
    }
    let catalog = Catalog::build(specs, &[], Vec::new());
    let mut e = Engine::new(catalog, 1, Ownership { count: 16, lo: 0, hi: 15 }, IdSource::seeded(7));
    // Mobile zones wander: give each source a position so its zone is placed.
    let mut out = Vec::new();
    for i in 0..mobile_zones {
        e.on_position(
            &mac(1_000_000 + i),
            [r.range(0.0, 1000.0), r.range(0.0, 1000.0), 1.0],
            Utc::now(),
            None,
            Utc::now(),
            &mut out,
        );
    }
    e
}

const DEVICES: usize = 10_000;
const BATCH: usize = 4096;

fn positions() -> Vec<(Mac, [f64; 3])> {
    let mut r = Rng(12345);
    (0..BATCH).map(|i| (mac(i % DEVICES), [r.range(0.0, 1000.0), r.range(0.0, 1000.0), r.range(0.0, 20.0)])).collect()
}

fn run(e: &mut Engine, batch: &[(Mac, [f64; 3])], out: &mut Vec<zonecast_evaluator::Output>) -> usize {
    let now = Utc::now();
    let mut n = 0;
    for (j, (m, p)) in batch.iter().enumerate() {
        // As the service does with a queued burst: the next position's index data loads
        // while this one is evaluated.
        if let Some((_, next)) = batch.get(j + 1) {
            e.prefetch(*next);
        }
        out.clear();
        e.on_position(m, *p, now, None, now, out);
        n += out.len();
    }
    n
}

fn evaluations(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine_positions");
    group.throughput(Throughput::Elements(BATCH as u64)).measurement_time(Duration::from_secs(5));
    let batch = positions();
    for (label, statics, mobiles) in
        [("1k", 1_000, 0), ("10k", 10_000, 0), ("100k", 100_000, 0), ("1k_mobile", 0, 1_000)]
    {
        let mut e = engine(statics, mobiles);
        let mut out = Vec::new();
        run(&mut e, &batch, &mut out);
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| run(&mut e, black_box(&batch), &mut out))
        });
    }
    group.finish();
}

/// One zone change at 100,000 static zones, end to end of `Engine::apply_zones` (catalog patch,
/// scene update, reconciliation of the devices in the zone): a create, a geometry update and a
/// delete of a zone of the same mix, where the 10,000 devices stand.
fn zone_changes(c: &mut Criterion) {
    let mut group = c.benchmark_group("zone_change_100k");
    group.measurement_time(Duration::from_secs(5));
    let mut e = engine(100_000, 0);
    let mut out = Vec::new();
    let batch = positions();
    run(&mut e, &batch, &mut out);
    let mut r = Rng(4242);
    let mut spec = |i: usize| {
        ZoneInput::parse(&zone_json(&mut r, i, None), &zonecast_model::Limits::DEFAULT)
            .and_then(|z| z.create(uuid::Uuid::new_v4()))
            .expect("valid zone")
    };
    let mut apply = |e: &mut Engine, changed: Vec<zonecast_model::ZoneSpec>, id: uuid::Uuid| {
        let touched: foldhash::HashSet<uuid::Uuid> = [id].into_iter().collect();
        let change = zonecast_model::ConfigChanged {
            kind: zonecast_model::ConfigKind::Zones,
            ids: vec![zonecast_model::format_id(&id)],
            operation: None,
            revision: 0,
        };
        out.clear();
        let start = Instant::now();
        e.apply_zones(changed, &touched, &[change], Utc::now(), &mut out);
        start.elapsed()
    };
    let zones: Vec<zonecast_model::ZoneSpec> = (0..64).map(&mut spec).collect();
    let mut k = 0;
    group.bench_function("create", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let z = zones[k % zones.len()].clone();
                k += 1;
                total += apply(&mut e, vec![z.clone()], z.id);
                apply(&mut e, Vec::new(), z.id);
            }
            total
        })
    });
    group.bench_function("delete", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let z = zones[k % zones.len()].clone();
                k += 1;
                apply(&mut e, vec![z.clone()], z.id);
                total += apply(&mut e, Vec::new(), z.id);
            }
            total
        })
    });
    // An existing zone moved back and forth between two places of the site.
    let id = e.catalog().zones[12_345].spec.id;
    let places: Vec<zonecast_model::ZoneSpec> = [0, 1].map(|i| zonecast_model::ZoneSpec { id, ..spec(i) }).into();
    group.bench_function("update", |b| {
        b.iter_custom(|iters| (0..iters).map(|i| apply(&mut e, vec![places[(i % 2) as usize].clone()], id)).sum())
    });
    group.finish();
}

/// Runs first, in a fresh process, so that resident growth is the structures' own.
fn memory(_: &mut Criterion) {
    let before = rss();
    let mut e = engine(10_000, 0);
    let zones_bytes = rss().saturating_sub(before);
    let mut out = Vec::new();
    let mut r = Rng(99);
    let base = rss();
    let now = Utc::now();
    for i in 0..100_000 {
        out.clear();
        e.on_position(
            &mac(i),
            [r.range(0.0, 1000.0), r.range(0.0, 1000.0), r.range(0.0, 20.0)],
            now,
            None,
            now,
            &mut out,
        );
    }
    let device_bytes = rss().saturating_sub(base);
    println!(
        "memory (resident growth): {:.0} B per zone (catalog of 10k zones incl. specs, regions, scene); {:.0} B per device (100k devices)",
        zones_bytes as f64 / 10_000.0,
        device_bytes as f64 / 100_000.0
    );
}

criterion_group!(benches, memory, evaluations, zone_changes);
criterion_main!(benches);
