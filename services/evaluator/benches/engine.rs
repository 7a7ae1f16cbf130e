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
use zonecast_evaluator::Engine;
use zonecast_model::{Mac, ZoneInput};

#[path = "../tests/support/site.rs"]
mod site;
use site::{Rng, engine, mac, zone_json};

/// Resident memory of this process in bytes (Linux), for memory per zone and per device.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
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
