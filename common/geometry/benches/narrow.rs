//! Narrow phase alone: `Region::contains` and `Region::distance` against the same regions as
//! parry3d-f64 shapes (`tests/reference/parry.rs`), per shape, on the same points.
//!
//! Per class of shape, 64 random zones of 1–20 m at random places in the 1 km site (as the
//! scene benchmark makes them) and 4096 queries, each a zone and a point near it: half uniform
//! in the zone's box grown by 2 m (z in the site for 2D zones), half within 1 mm of the
//! boundary, found by bisection between the centre and a point of the grown box. Before
//! measuring, the run prints, for 65,536 more such queries, how often each side finds the point
//! inside and how far apart their answers are. Shapes parry takes as convex polyhedra are measured as oriented meshes too. Run with `cargo bench -p zonecast-geometry --bench narrow`.

#[path = "../tests/reference/parry.rs"]
mod parry;
mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use parry::ParryRegion;
use support::{Rng, SITE_Z};
use zonecast_geometry::{BOUNDARY_TOLERANCE_M, GeometryType, Region, Shape, Vec3};

const ZONES: usize = 64;
const QUERIES: usize = 4096;
/// Queries compared (not timed) per class: parry's convex polyhedra go wrong about once in tens
/// of thousands of points near the boundary.
const CHECKS: usize = 65_536;

/// One class of shape: the hand-written regions and parry's, and the queries.
struct Class {
    name: &'static str,
    regions: Vec<Region>,
    parry: Vec<ParryRegion>,
    /// For the classes parry takes as convex polyhedra: the same as oriented meshes.
    meshed: Option<Vec<ParryRegion>>,
    queries: Vec<(usize, Vec3)>,
    /// More queries made the same way, to compare the answers on.
    checks: Vec<(usize, Vec3)>,
}

/// The classes measured: every kind, with the cuboid, square and polygon split by the parry shape
/// that stands for them.
fn classes() -> Vec<Class> {
    let mut rng = Rng::new(5);
    let of_kind = |kind: GeometryType, parry_shape: &'static str| {
        move |rng: &mut Rng| loop {
            let shape = rng.shape(kind);
            if ParryRegion::new(&shape).parry_shape() == parry_shape {
                return shape;
            }
        }
    };
    type Make = Box<dyn Fn(&mut Rng) -> Shape>;
    let specs: [(&'static str, Make); 9] = [
        ("sphere", Box::new(of_kind(GeometryType::Sphere, "Ball"))),
        ("circle", Box::new(of_kind(GeometryType::Circle, "Cylinder"))),
        ("cuboid_orthogonal", Box::new(of_kind(GeometryType::Cuboid, "Cuboid"))),
        ("cuboid_oblique", Box::new(of_kind(GeometryType::Cuboid, "ConvexPolyhedron"))),
        ("square_rectangle", Box::new(of_kind(GeometryType::Square, "Cuboid"))),
        ("square_oblique", Box::new(of_kind(GeometryType::Square, "ConvexPolyhedron"))),
        ("cylinder", Box::new(of_kind(GeometryType::Cylinder, "Cylinder"))),
        ("polygon_convex", Box::new(|rng: &mut Rng| rng.convex_polygon())),
        ("polygon_concave", Box::new(of_kind(GeometryType::Polygon, "TriMesh"))),
    ];
    specs
        .into_iter()
        .map(|(name, make)| {
            let shapes: Vec<Shape> = (0..ZONES).map(|_| make(&mut rng)).collect();
            let regions: Vec<Region> = shapes.iter().map(Region::new).collect();
            let parry: Vec<ParryRegion> = shapes.iter().map(ParryRegion::new).collect();
            let meshed = (parry[0].parry_shape() == "ConvexPolyhedron")
                .then(|| shapes.iter().map(ParryRegion::meshed).collect());
            let mut queries = |n: usize| -> Vec<(usize, Vec3)> {
                (0..n)
                    .map(|j| {
                        let k = rng.below(ZONES);
                        let region = &regions[k];
                        (k, if j % 2 == 0 { in_box(&mut rng, region) } else { near_boundary(&mut rng, region) })
                    })
                    .collect()
            };
            let (queries, checks) = (queries(QUERIES), queries(CHECKS));
            Class { name, regions, parry, meshed, queries, checks }
        })
        .collect()
}

/// A uniform point of the region's box grown by 2 m; z anywhere in the site for a 2D region.
fn in_box(rng: &mut Rng, region: &Region) -> Vec3 {
    let b = region.aabb().expanded(2.0);
    let (lo, hi) = if region.is_flat() { (0.0, SITE_Z) } else { (b.min[2], b.max[2]) };
    [rng.range(b.min[0], b.max[0]), rng.range(b.min[1], b.max[1]), rng.range(lo, hi)]
}

/// A point within 1 mm of the region's boundary: the boundary crossing on the segment from the
/// centre (inside for these shapes, or the point is returned as it is) to a point outside, found
/// by bisection, then moved up to 1 mm either way along the segment.
fn near_boundary(rng: &mut Rng, region: &Region) -> Vec3 {
    let mut inside = region.centre();
    if region.is_flat() {
        inside[2] = rng.range(0.0, SITE_Z);
    }
    let mut outside = loop {
        let p = in_box(rng, region);
        if !region.contains(p) {
            break p;
        }
    };
    if !region.contains(inside) {
        return outside;
    }
    let (start, end) = (inside, outside);
    for _ in 0..80 {
        let mid = [0, 1, 2].map(|i| (inside[i] + outside[i]) / 2.0);
        if region.contains(mid) {
            inside = mid;
        } else {
            outside = mid;
        }
    }
    let length = (0..3).map(|i| (end[i] - start[i]).powi(2)).sum::<f64>().sqrt();
    let shift = rng.range(-1e-3, 1e-3) / length;
    [0, 1, 2].map(|i| inside[i] + shift * (end[i] - start[i]))
}

/// How parry's regions compare with ours on a class's queries: inside counts, the largest
/// distance difference, how many distances differ by more than 1 µm, and the containment
/// disagreements farther than the boundary tolerance from it.
fn compare(class: &Class, parry: &[ParryRegion]) {
    let (mut ours_in, mut parry_in, mut worst, mut off, mut disagree) = (0, 0, 0.0_f64, 0, 0);
    for &(k, p) in &class.checks {
        let (ours, theirs) = (&class.regions[k], &parry[k]);
        ours_in += usize::from(ours.contains(p));
        parry_in += usize::from(theirs.contains(p));
        let difference = (ours.distance(p) - theirs.distance(p)).abs();
        worst = worst.max(difference);
        off += usize::from(difference > 1e-6);
        // Within the tolerance of the boundary either answer is right: `Region` counts it in.
        if ours.contains(p) != theirs.contains(p) && !(ours.contains(p) && theirs.distance(p) <= BOUNDARY_TOLERANCE_M) {
            disagree += 1;
        }
    }
    println!(
        "{} ({}): inside {ours_in} (hand-written) / {parry_in} (parry3d-f64) of {}; largest distance difference \
         {worst:.2e} m, {off} over 1e-6 m; containment disagreements beyond {BOUNDARY_TOLERANCE_M:e} m of the boundary: \
         {disagree}",
        class.name,
        parry[0].parry_shape(),
        class.checks.len(),
    );
}

fn narrow_phase(c: &mut Criterion) {
    for class in classes() {
        compare(&class, &class.parry);
        if let Some(meshed) = &class.meshed {
            compare(&class, meshed);
        }
        let mut group = c.benchmark_group(format!("narrow_{}", class.name));
        group.throughput(Throughput::Elements(QUERIES as u64));
        let queries = &class.queries;
        group.bench_function("contains/hand_written", |b| {
            b.iter(|| black_box(queries).iter().filter(|(k, p)| class.regions[*k].contains(*p)).count())
        });
        group.bench_function("contains/parry3d_f64", |b| {
            b.iter(|| black_box(queries).iter().filter(|(k, p)| class.parry[*k].contains(*p)).count())
        });
        if let Some(meshed) = &class.meshed {
            group.bench_function("contains/parry3d_f64_trimesh", |b| {
                b.iter(|| black_box(queries).iter().filter(|(k, p)| meshed[*k].contains(*p)).count())
            });
        }
        group.bench_function("distance/hand_written", |b| {
            b.iter(|| black_box(queries).iter().map(|(k, p)| class.regions[*k].distance(*p)).sum::<f64>())
        });
        group.bench_function("distance/parry3d_f64", |b| {
            b.iter(|| black_box(queries).iter().map(|(k, p)| class.parry[*k].distance(*p)).sum::<f64>())
        });
        if let Some(meshed) = &class.meshed {
            group.bench_function("distance/parry3d_f64_trimesh", |b| {
                b.iter(|| black_box(queries).iter().map(|(k, p)| meshed[*k].distance(*p)).sum::<f64>())
            });
        }
        group.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .without_plots()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! { name = benches; config = config(); targets = narrow_phase }
criterion_main!(benches);
