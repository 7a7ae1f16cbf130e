//! Scene throughput: evaluations per second (candidates for a position, then the distance to each)
//! for 1k, 10k and 100k static zones and for 1k movable zones, plus the memory the scene holds per
//! zone. Zones are mixed (all six kinds, 1–20 m, random rotated and oblique axes, polygons of 5–12
//! vertices) at random places in a 1 km × 1 km × 20 m site; positions are uniform in the site;
//! the margin (device radius) is 0.5 m. Run with `cargo bench -p zonecast-geometry`.

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use parry3d::bounding_volume::Aabb as ParryAabb;
use parry3d::math::Vector;
use parry3d::partitioning::{Bvh, BvhBuildStrategy};
use support::Rng;
use zonecast_geometry::{Nearby, Region, Scene, Vec3};

const MARGIN: f64 = 0.5;
/// Positions per measured batch; a batch is cycled so the scene, not the position list, is measured.
const BATCH: usize = 4096;

fn static_scene(n: usize, seed: u64) -> Scene {
    let mut rng = Rng::new(seed);
    Scene::build((0..n).map(|i| rng.region(i)).collect())
}

fn positions(seed: u64) -> Vec<Vec3> {
    let mut rng = Rng::new(seed);
    (0..BATCH).map(|_| rng.position()).collect()
}

/// One evaluation per position: static candidates with the distance to each as the evaluator
/// measures it (exact up to the margin), with the next position's index data prefetched
/// meanwhile, as the evaluator does for the next message of a queued burst. Returns a checksum.
fn evaluate_static(scene: &Scene, positions: &[Vec3], nearby: &mut Nearby) -> f64 {
    let mut sum = 0.0;
    for (j, &p) in positions.iter().enumerate() {
        if let Some(&next) = positions.get(j + 1) {
            scene.prefetch(next);
        }
        scene.static_distances(p, MARGIN, nearby);
        sum += nearby.iter().map(|(_, d)| d.min(1.0)).sum::<f64>();
    }
    sum
}

fn static_zones(c: &mut Criterion) {
    let mut group = c.benchmark_group("static_evaluations");
    group.throughput(Throughput::Elements(BATCH as u64));
    let positions = positions(7);
    for n in [1_000, 10_000, 100_000] {
        let scene = static_scene(n, 42);
        report(&scene, n, &positions);
        let mut nearby = Nearby::default();
        group.bench_with_input(BenchmarkId::from_parameter(n), &scene, |b, scene| {
            b.iter(|| evaluate_static(scene, black_box(&positions), &mut nearby))
        });
    }
    group.finish();
}

/// Prints memory per zone, candidates and hits per evaluation for a scene of `n` static zones.
fn report(scene: &Scene, n: usize, positions: &[Vec3]) {
    let memory = scene.memory();
    let mut out = Vec::new();
    let (mut candidates, mut hits) = (0, 0);
    for &p in positions {
        out.clear();
        scene.static_candidates(p, MARGIN, &mut out);
        candidates += out.len();
        hits += out.iter().filter(|i| scene.static_region(**i).distance(p) <= MARGIN).count();
    }
    println!(
        "scene of {n} static zones: {:.0} B/zone in all ({:.0} regions + {:.0} hierarchies); \
         {:.2} candidates and {:.3} zones within the margin per evaluation",
        memory.total() as f64 / n as f64,
        memory.regions as f64 / n as f64,
        memory.static_index as f64 / n as f64,
        candidates as f64 / positions.len() as f64,
        hits as f64 / positions.len() as f64,
    );
}

/// 1k mobile zones at random places (each a random region moved so its centre sits on a random
/// position) with 10k static zones around them; an evaluation is movable candidates plus
/// `distance_offset` to each.
fn movable_zones(c: &mut Criterion) {
    let mut rng = Rng::new(3);
    let mut scene = static_scene(10_000, 42);
    let regions: Vec<Region> = (0..1000).map(|i| rng.region(i)).collect();
    let mut offsets: Vec<Vec3> = Vec::new();
    for (key, region) in regions.iter().enumerate() {
        let (to, from) = (rng.position(), region.centre());
        let offset = [0, 1, 2].map(|i| to[i] - from[i]);
        scene.set_movable(key as u32, region.aabb().translated(offset));
        offsets.push(offset);
    }
    let before = scene.memory().movable_index;
    println!("1000 movable zones: movable grid {:.0} B/zone", before as f64 / 1000.0);
    let positions = positions(11);
    let mut group = c.benchmark_group("movable_evaluations");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut out = Vec::with_capacity(256);
    group.bench_function("1000", |b| {
        b.iter(|| {
            let mut sum = 0.0;
            for &p in black_box(&positions) {
                out.clear();
                scene.movable_candidates(p, MARGIN, &mut out);
                for &k in &out {
                    sum += regions[k as usize].distance_offset(p, offsets[k as usize]).min(1.0);
                }
            }
            sum
        })
    });
    group.finish();

    // Moving a mobile zone: a new box for one key, as on every position of its source device.
    let mut group = c.benchmark_group("movable_updates");
    group.throughput(Throughput::Elements(BATCH as u64));
    let steps: Vec<(u32, Vec3)> = (0..BATCH).map(|_| (rng.below(1000) as u32, rng.position())).collect();
    group.bench_function("1000", |b| {
        b.iter(|| {
            for &(key, to) in &steps {
                let from = regions[key as usize].centre();
                let offset = [0, 1, 2].map(|i| to[i] - from[i]);
                scene.set_movable(key, regions[key as usize].aabb().translated(offset));
            }
        })
    });
    group.finish();
}

/// The static index alone (candidate lists, no distances), our tiles against parry3d's BVH over the
/// same boxes (as `f32`, 3D and 2D shapes in two trees), to back the choice of index.
fn index_only(c: &mut Criterion) {
    let n = 100_000;
    let mut rng = Rng::new(42);
    let regions: Vec<Region> = (0..n).map(|i| rng.region(i)).collect();
    let parry_tree = |flat: bool| {
        let leaves = regions.iter().enumerate().filter(|(_, r)| r.is_flat() == flat).map(|(i, r)| {
            let b = r.aabb();
            let v = |p: Vec3| Vector::new(p[0] as f32, p[1] as f32, p[2] as f32);
            (i, ParryAabb::new(v(b.min), v(b.max)))
        });
        Bvh::from_iter(BvhBuildStrategy::Binned, leaves)
    };
    let (solid, flat) = (parry_tree(false), parry_tree(true));
    let scene = Scene::build(regions);
    let positions = positions(7);
    let mut group = c.benchmark_group("static_index_100000");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut out = Vec::with_capacity(256);
    group.bench_function("zonecast_tiles", |b| {
        b.iter(|| {
            let mut count = 0;
            for &p in black_box(&positions) {
                out.clear();
                scene.static_candidates(p, MARGIN, &mut out);
                count += out.len();
            }
            count
        })
    });
    group.bench_function("parry3d_bvh", |b| {
        b.iter(|| {
            let mut count = 0;
            for &p in black_box(&positions) {
                let m = MARGIN as f32;
                let q = ParryAabb::new(
                    Vector::new(p[0] as f32 - m, p[1] as f32 - m, p[2] as f32 - m),
                    Vector::new(p[0] as f32 + m, p[1] as f32 + m, p[2] as f32 + m),
                );
                count += solid.intersect_aabb(&q).count() + flat.intersect_aabb(&q).count();
            }
            count
        })
    });
    group.finish();
    println!(
        "static index memory at 100k zones: zonecast {:.0} B/zone, parry3d {:.0} B/zone",
        scene.memory().static_index as f64 / n as f64,
        (solid.total_memory_size() + flat.total_memory_size()) as f64 / n as f64
    );
}

fn config() -> Criterion {
    Criterion::default().sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4))
}

criterion_group! { name = benches; config = config(); targets = static_zones, movable_zones, index_only }
criterion_main!(benches);
