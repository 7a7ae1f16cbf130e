//! `Scene` against brute force: static candidates are exactly the regions whose boxes meet the
//! query box (so every region within the margin is among them), with their distances; movable
//! candidates follow every insert, move and removal.

mod reference;
mod shapes_strategy;

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use shapes_strategy::any_shape;
use zonecast_geometry::{Aabb, GeometryType, Nearby, Region, Scene, Vec3, validate};

fn sphere(centre: Vec3, r: f64) -> Region {
    Region::new(&validate(GeometryType::Sphere, &[centre, [r, 0.0, 0.0]]).expect("valid sphere"))
}

fn circle(centre: Vec3, r: f64) -> Region {
    Region::new(&validate(GeometryType::Circle, &[centre, [r, 0.0, 0.0]]).expect("valid circle"))
}

fn static_set(scene: &Scene, p: Vec3, margin: f64) -> BTreeSet<usize> {
    let mut out = Vec::new();
    scene.static_candidates(p, margin, &mut out);
    let set: BTreeSet<usize> = out.iter().copied().collect();
    assert_eq!(set.len(), out.len(), "a region was reported twice: {out:?}");
    set
}

fn movable_set(scene: &Scene, p: Vec3, margin: f64) -> BTreeSet<u32> {
    let mut out = Vec::new();
    scene.movable_candidates(p, margin, &mut out);
    let set: BTreeSet<u32> = out.iter().copied().collect();
    assert_eq!(set.len(), out.len(), "a key was reported twice: {out:?}");
    set
}

#[test]
fn static_regions_keep_their_indexes_and_are_found_near_a_position() {
    let regions = vec![sphere([0.0; 3], 1.0), circle([10.0, 0.0, 0.0], 2.0), sphere([0.0, 0.0, 50.0], 1.0)];
    let scene = Scene::build(regions.clone());
    assert_eq!(scene.static_len(), 3);
    for (i, r) in regions.iter().enumerate() {
        assert_eq!(scene.static_region(i).centre(), r.centre());
    }
    assert_eq!(static_set(&scene, [0.0, 0.0, 0.5], 0.0), BTreeSet::from([0]));
    // The circle is found at any height; the high sphere only near it.
    assert_eq!(static_set(&scene, [11.0, 0.0, 1000.0], 0.5), BTreeSet::from([1]));
    assert_eq!(static_set(&scene, [0.0, 0.0, 49.5], 0.5), BTreeSet::from([2]));
    // A margin reaching past a box face finds the region; one short of it does not.
    assert_eq!(static_set(&scene, [2.5, 0.0, 0.0], 1.5), BTreeSet::from([0]));
    assert!(static_set(&scene, [2.5, 0.0, 0.0], 1.4).is_empty());
}

#[test]
fn an_empty_scene_finds_nothing() {
    let mut scene = Scene::default();
    assert!(static_set(&scene, [0.0; 3], 100.0).is_empty());
    assert!(movable_set(&scene, [0.0; 3], 100.0).is_empty());
    scene.remove_movable(3);
    assert_eq!(scene.movable_len(), 0);
}

#[test]
fn candidates_need_no_allocation_when_the_output_has_room() {
    let scene = Scene::build((0..1000).map(|i| sphere([i as f64, 0.0, 0.0], 2.0)).collect());
    let mut out = Vec::with_capacity(64);
    let before = out.as_ptr();
    scene.static_candidates([500.0, 0.0, 0.0], 0.5, &mut out);
    assert_eq!(out.len(), 5);
    assert_eq!(out.as_ptr(), before);
}

#[test]
fn movable_regions_follow_their_moves_and_removals() {
    let mut scene = Scene::build(Vec::new());
    let zone = sphere([0.0; 3], 2.0);
    scene.set_movable(7, zone.aabb().translated([100.0, 100.0, 0.0]));
    scene.set_movable(8, circle([0.0; 3], 1.0).aabb().translated([100.0, 103.5, 0.0]));
    assert_eq!(movable_set(&scene, [101.0, 100.0, 0.0], 0.5), BTreeSet::from([7]));
    assert_eq!(movable_set(&scene, [100.0, 102.3, 900.0], 0.5), BTreeSet::from([8]));
    assert_eq!(movable_set(&scene, [100.0, 102.3, 1.0], 0.5), BTreeSet::from([7, 8]));
    scene.set_movable(7, zone.aabb().translated([-50.0, 0.0, 0.0]));
    assert!(movable_set(&scene, [101.0, 100.0, 0.0], 0.5).is_empty());
    assert_eq!(movable_set(&scene, [-50.0, 1.0, 0.0], 0.0), BTreeSet::from([7]));
    scene.remove_movable(7);
    assert!(movable_set(&scene, [-50.0, 1.0, 0.0], 0.0).is_empty());
    assert_eq!(scene.movable_len(), 1);
    // A zone bigger than the grid likes is still found everywhere it reaches.
    let huge = Region::new(
        &validate(GeometryType::Square, &[[0.0; 3], [2000.0, 2000.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
            .expect("valid square"),
    );
    scene.set_movable(9, huge.aabb());
    assert_eq!(movable_set(&scene, [1999.0, 1.0, -3.0], 0.5), BTreeSet::from([9]));
    assert_eq!(movable_set(&scene, [100.0, 103.5, 0.0], 0.5), BTreeSet::from([8, 9]));
}

#[test]
fn memory_is_accounted_per_part() {
    let mut scene = Scene::build((0..100).map(|i| sphere([i as f64 * 10.0, 0.0, 0.0], 2.0)).collect());
    scene.set_movable(1, Aabb::around([0.0; 3], 1.0));
    let m = scene.memory();
    assert!(m.regions >= 100 * size_of::<Region>(), "{m:?}");
    assert!(m.static_index > 0 && m.movable_index > 0, "{m:?}");
    assert_eq!(m.total(), m.regions + m.static_index + m.movable_index);
}

/// A set of static zones of every kind with up to 1 km between them, and query points and margins.
fn scene_case() -> impl Strategy<Value = (Vec<zonecast_geometry::Shape>, Vec<(Vec3, f64)>)> {
    let shapes = prop::collection::vec(any_shape().prop_map(|(_, _, s)| s), 1..120);
    let queries = prop::collection::vec(
        (prop::array::uniform3(-1100.0..1100.0_f64), prop::sample::select(vec![0.0, 0.5, 3.0, 40.0])),
        40,
    );
    (shapes, queries)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn static_candidates_are_exactly_the_overlapping_boxes((shapes, queries) in scene_case()) {
        let regions: Vec<Region> = shapes.iter().map(Region::new).collect();
        let scene = Scene::build(regions.clone());
        for (p, margin) in queries {
            let got = static_set(&scene, p, margin);
            let query = Aabb::around(p, margin);
            let want: BTreeSet<usize> = (0..regions.len()).filter(|i| regions[*i].aabb().intersects(&query)).collect();
            prop_assert_eq!(&got, &want);
            // The evaluator's call: the same regions, each with its distance exact up to the
            // margin; a prefetch beforehand is only a hint and changes nothing.
            scene.prefetch(p);
            let mut nearby = Nearby::default();
            scene.static_distances(p, margin, &mut nearby);
            let distances: BTreeMap<usize, f64> = nearby.iter().collect();
            prop_assert_eq!(distances.len(), nearby.len());
            prop_assert_eq!(&distances.keys().copied().collect::<BTreeSet<usize>>(), &want);
            for (i, d) in distances {
                prop_assert_eq!(d.to_bits(), regions[i].distance_within(p, margin).to_bits());
            }
            for (i, shape) in shapes.iter().enumerate() {
                if reference::distance(shape, p) <= margin {
                    prop_assert!(got.contains(&i), "region {} within {} of {:?} not among {:?}", i, margin, p, got);
                }
            }
        }
    }

    #[test]
    fn every_region_within_the_margin_of_a_point_near_it_is_a_candidate(
        (shapes, _) in scene_case(),
        picks in prop::collection::vec((any::<prop::sample::Index>(), prop::array::uniform3(-25.0..25.0_f64), 0.0..5.0_f64), 30),
    ) {
        let regions: Vec<Region> = shapes.iter().map(Region::new).collect();
        let scene = Scene::build(regions.clone());
        for (pick, off, margin) in picks {
            let c = regions[pick.index(regions.len())].centre();
            let p = [c[0] + off[0], c[1] + off[1], c[2] + off[2]];
            let got = static_set(&scene, p, margin);
            for (i, r) in regions.iter().enumerate() {
                if r.distance(p) <= margin {
                    prop_assert!(got.contains(&i), "region {} within {} of {:?} not among {:?}", i, margin, p, got);
                }
            }
        }
    }

    #[test]
    fn movable_candidates_follow_any_sequence_of_moves(
        ops in prop::collection::vec(
            (0u32..24, prop::option::weighted(0.85, (prop::array::uniform3(-300.0..300.0_f64), prop::array::uniform3(0.0..150.0_f64)))),
            1..200,
        ),
        queries in prop::collection::vec((prop::array::uniform3(-320.0..320.0_f64), 0.0..20.0_f64), 30),
    ) {
        let mut scene = Scene::build(Vec::new());
        let mut model: BTreeMap<u32, Aabb> = BTreeMap::new();
        for (step, (key, op)) in ops.into_iter().enumerate() {
            match op {
                Some((min, size)) => {
                    let b = Aabb { min, max: [min[0] + size[0], min[1] + size[1], min[2] + size[2]] };
                    scene.set_movable(key, b);
                    model.insert(key, b);
                }
                None => {
                    scene.remove_movable(key);
                    model.remove(&key);
                }
            }
            prop_assert_eq!(scene.movable_len(), model.len());
            if step % 10 == 0 {
                for (p, margin) in &queries {
                    let q = Aabb::around(*p, *margin);
                    let want: BTreeSet<u32> = model.iter().filter(|(_, b)| b.intersects(&q)).map(|(k, _)| *k).collect();
                    prop_assert_eq!(movable_set(&scene, *p, *margin), want);
                }
            }
        }
    }
}

/// A change to the static regions: add one, replace region `Index` with one, or remove it (the
/// last region taking its index).
#[derive(Clone, Debug)]
enum Change {
    Push(zonecast_geometry::Shape),
    Replace(prop::sample::Index, zonecast_geometry::Shape),
    Remove(prop::sample::Index),
}

fn change() -> impl Strategy<Value = Change> {
    let shape = || any_shape().prop_map(|(_, _, s)| s);
    prop_oneof![
        3 => shape().prop_map(Change::Push),
        2 => (any::<prop::sample::Index>(), shape()).prop_map(|(i, s)| Change::Replace(i, s)),
        2 => any::<prop::sample::Index>().prop_map(Change::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A scene changed one region at a time answers every query exactly as a scene built from
    /// scratch over the same regions: the same candidates with the same distances.
    #[test]
    fn a_scene_changed_in_place_answers_as_one_built_from_scratch(
        (shapes, queries) in scene_case(),
        changes in prop::collection::vec(change(), 1..150),
    ) {
        let mut regions: Vec<Region> = shapes.iter().map(Region::new).collect();
        let mut scene = Scene::build(regions.clone());
        scene.set_movable(3, Aabb::around([0.0; 3], 1.0));
        for (step, c) in changes.into_iter().enumerate() {
            match c {
                Change::Push(s) => {
                    prop_assert_eq!(scene.push_static(Region::new(&s)), regions.len());
                    regions.push(Region::new(&s));
                }
                Change::Replace(i, s) if !regions.is_empty() => {
                    let i = i.index(regions.len());
                    let old = scene.replace_static(i, Region::new(&s));
                    prop_assert_eq!(old.aabb(), regions[i].aabb());
                    regions[i] = Region::new(&s);
                }
                Change::Remove(i) if !regions.is_empty() => {
                    let i = i.index(regions.len());
                    let old = scene.swap_remove_static(i);
                    prop_assert_eq!(old.aabb(), regions.swap_remove(i).aabb());
                }
                _ => {}
            }
            prop_assert_eq!(scene.static_len(), regions.len());
            if step % 7 != 0 {
                continue;
            }
            let fresh = Scene::build(regions.clone());
            let (mut got, mut want) = (Nearby::default(), Nearby::default());
            for &(p, margin) in &queries {
                let query = Aabb::around(p, margin);
                let brute: BTreeSet<usize> =
                    (0..regions.len()).filter(|i| regions[*i].aabb().intersects(&query)).collect();
                prop_assert_eq!(&static_set(&scene, p, margin), &brute);
                scene.static_distances(p, margin, &mut got);
                fresh.static_distances(p, margin, &mut want);
                let bits = |n: &Nearby| n.iter().map(|(i, d)| (i, d.to_bits())).collect::<BTreeMap<usize, u64>>();
                prop_assert_eq!(bits(&got), bits(&want));
            }
        }
        prop_assert_eq!(scene.movable_len(), 1, "movable regions stay through every change");
    }
}

#[test]
fn many_changes_near_a_large_scene_keep_it_exact() {
    // Small spheres on a grid, then many moves and removals among them and additions far outside
    // the tiles' extent, enough to move lists, compact them and build the whole scene again.
    let at = |i: usize| [(i % 100) as f64 * 7.0, (i / 100) as f64 * 7.0, 1.0];
    let mut regions: Vec<Region> = (0..2000).map(|i| sphere(at(i), 2.0)).collect();
    let mut scene = Scene::build(regions.clone());
    for k in 0..6000usize {
        let i = (k * 7919) % regions.len();
        match k % 4 {
            0 | 1 => {
                let r = sphere(at(k % 2000), 1.0 + (k % 5) as f64);
                scene.replace_static(i, r.clone());
                regions[i] = r;
            }
            2 => {
                scene.swap_remove_static(i);
                regions.swap_remove(i);
            }
            _ => {
                let r = sphere([5000.0 + k as f64, 0.0, 0.0], 1.0);
                assert_eq!(scene.push_static(r.clone()), regions.len());
                regions.push(r);
            }
        }
    }
    let fresh = Scene::build(regions.clone());
    for k in 0..3000 {
        let p = if k % 3 == 0 {
            [5000.0 + k as f64 * 1.5, 0.5, 0.0]
        } else {
            [(k % 700) as f64, (k / 3) as f64 % 140.0, 1.0]
        };
        for margin in [0.0, 0.5, 3.0] {
            assert_eq!(static_set(&scene, p, margin), static_set(&fresh, p, margin), "at {p:?} ± {margin}");
        }
    }
}
