//! Temporary profiling harness.
#[path = "../benches/support/mod.rs"]
mod support;
use std::time::Instant;
use support::Rng;
use zonecast_geometry::{Region, Scene, Vec3};

fn main() {
    single();
    if std::env::var("ONLY_SINGLE").is_ok() { return; }
    let sizes: Vec<usize> = std::env::var("SIZES").map(|k| k.split(",").map(|x| x.parse().unwrap()).collect()).unwrap_or(vec![10_000, 100_000]);
    for n in sizes {
        let mut rng = Rng::new(42);
        let regions: Vec<Region> = (0..n).map(|i| rng.region(i)).collect();
        let scene = Scene::build(regions.clone());
        let mut rng = Rng::new(7);
        let ps: Vec<Vec3> = (0..200_000).map(|_| rng.position()).collect();
        let mut out = Vec::with_capacity(256);
        let mut idx = f64::INFINITY;
        let mut c = 0;
        for _ in 0..7 {
        let t = Instant::now();
        c = 0;
        for &p in &ps { out.clear(); scene.static_candidates(p, 0.5, &mut out); c += out.len(); }
        idx = idx.min(t.elapsed().as_nanos() as f64 / ps.len() as f64);
        }
        if std::env::var("INDEX_ONLY").is_ok() {
            let t = Instant::now();
            for _ in 0..20 { for &p in &ps { out.clear(); scene.static_candidates(p, 0.5, &mut out); } }
            println!("index loop {:.0} ns", t.elapsed().as_nanos() as f64 / ps.len() as f64 / 20.0);
            let (mut a, mut b) = (0, 0);
            for &p in &ps[..10000] { let (x, y) = scene.visits(p, 0.5); a += x; b += y; }
            println!("visits solid {:.1} flat {:.1}", a as f64 / 1e4, b as f64 / 1e4);
            // The same few points again and again: all in cache.
            let few: Vec<Vec3> = ps[..16].to_vec();
            let t = Instant::now();
            let mut c = 0;
            for _ in 0..200_000 { for &p in &few { out.clear(); scene.static_candidates(p, 0.5, &mut out); c += out.len(); } }
            println!("cached loop {:.0} ns ({:.2} found)", t.elapsed().as_nanos() as f64 / 3_200_000.0, c as f64 / 3_200_000.0);
            continue;
        }
        let mut pairs = Vec::new();
        for &p in &ps { out.clear(); scene.static_candidates(p, 0.5, &mut out); for &i in &out { pairs.push((p, i)); } }
        let t = Instant::now();
        let mut s = 0.0;
        for &(p, i) in &pairs { s += scene.static_region(i).distance(p).min(1.0); }
        let dist = t.elapsed().as_nanos() as f64 / pairs.len() as f64;
        let t = Instant::now();
        let mut s2 = 0.0;
        for &p in &ps { out.clear(); scene.static_candidates(p, 0.5, &mut out); for &i in &out { s2 += scene.static_region(i).distance(p).min(1.0); } }
        let full = t.elapsed().as_nanos() as f64 / ps.len() as f64;
        println!("n={n}: index {idx:.0} ns/query, {:.2} cand, distance {dist:.0} ns/cand, full {full:.0} ns/eval => {:.2} M/s  ({s} {s2})", c as f64 / ps.len() as f64, 1e3 / full);
        // per kind, in a tight loop over random pairs of that kind
        for k in 0..6 {
            let sel: Vec<&(Vec3, usize)> = pairs.iter().filter(|(_, i)| i % 6 == k).collect();
            let inside = sel.iter().filter(|(p, i)| scene.static_region(*i).distance(*p) == 0.0).count();
            let mut best = f64::INFINITY;
            let mut s = 0.0;
            for _ in 0..5 {
            let t = Instant::now();
            s = 0.0;
            for &&(p, i) in &sel { s += scene.static_region(i).distance(p).min(1.0); }
            best = best.min(t.elapsed().as_nanos() as f64 / sel.len() as f64);
            }
            println!("  kind {k}: {:.0} ns/cand ({} pairs, {:.0}% inside) {s}", best, sel.len(), 100.0 * inside as f64 / sel.len() as f64);
        }
    }
}

/// Per-kind distance cost for points in the (expanded) box of one region.
pub fn single() {
    let mut rng = Rng::new(5);
    let kinds: Vec<usize> = std::env::var("KINDS").map(|k| k.split(",").map(|x| x.parse().unwrap()).collect()).unwrap_or((0..6).collect());
    for kind in kinds {
        for rep in 0..3 {
        let r = rng.region(kind);
        let b = r.aabb().expanded(1.0);
        let (zlo, zhi) = if r.is_flat() { (0.0, 20.0) } else { (b.min[2], b.max[2]) };
        let ps: Vec<Vec3> = (0..1_000_000).map(|_| [rng.range(b.min[0], b.max[0]), rng.range(b.min[1], b.max[1]), rng.range(zlo, zhi)]).collect();
        let inside = ps.iter().filter(|p| r.distance(**p) == 0.0).count();
        let mut best = f64::INFINITY; let mut s = 0.0;
        for _ in 0..5 { let t = Instant::now(); s = 0.0; for &p in &ps { s += r.distance(p); } best = best.min(t.elapsed().as_nanos() as f64 / 1e6); }
        println!("single kind {kind}.{rep}: {best:.1} ns, {:.0}% inside {s}", inside as f64 / 1e4);
        }
    }
}
