//! `Region` against hand-computed values: points 1 cm inside and outside every face of rotated
//! and tilted shapes, points exactly on the boundary, distances worked out on paper, 2D shapes at
//! any z, centres and boxes.

mod support;

use GeometryType::{Circle, Cuboid, Cylinder, Polygon, Sphere, Square};
use support::accept;
use zonecast_geometry::{Aabb, BOUNDARY_TOLERANCE_M, FLAT_Z_BOUND_M, GeometryType, Region, Vec3};

const CM: f64 = 0.01;

fn region(kind: GeometryType, rows: &[Vec3]) -> Region {
    Region::new(&accept(kind, rows))
}

fn add(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn scale(v: Vec3, k: f64) -> Vec3 {
    v.map(|c| c * k)
}

fn unit(v: Vec3) -> Vec3 {
    scale(v, 1.0 / support::length(v))
}

fn assert_distance(r: &Region, p: Vec3, expected: f64) {
    let d = r.distance(p);
    assert!((d - expected).abs() < 1e-9, "distance at {p:?}: got {d}, expected {expected}");
}

/// A rotation: 30° about z, then 20° about x (so every axis is rotated and tilted).
fn rotate(v: Vec3) -> Vec3 {
    let (s, c) = (30f64.to_radians().sin(), 30f64.to_radians().cos());
    let v = [c * v[0] - s * v[1], s * v[0] + c * v[1], v[2]];
    let (s, c) = (20f64.to_radians().sin(), 20f64.to_radians().cos());
    [v[0], c * v[1] - s * v[2], s * v[1] + c * v[2]]
}

// ---- sphere and circle ----

#[test]
fn a_sphere_holds_its_boundary_and_measures_from_its_surface() {
    let r = region(Sphere, &[[1.0, 2.0, 3.0], [2.0, 0.0, 0.0]]);
    assert_distance(&r, [1.0, 2.0, 5.0], 0.0);
    assert_distance(&r, [1.0, 2.0, 5.0 - CM], 0.0);
    assert_distance(&r, [1.0, 2.0, 5.0 + CM], CM);
    assert_distance(&r, [4.0, 6.0, 3.0], 3.0);
    assert!(r.contains([1.0, 2.0, 3.0]));
    assert_eq!(r.centre(), [1.0, 2.0, 3.0]);
    assert!(!r.is_flat());
}

#[test]
fn a_circle_ignores_z_entirely() {
    let r = region(Circle, &[[0.0, 0.0, 7.0], [1.0, 0.0, 0.0]]);
    for z in [-1e8, -1000.0, 0.0, 7.0, 1e8] {
        assert_distance(&r, [3.0, 4.0, z], 4.0);
        assert_distance(&r, [1.0, 0.0, z], 0.0);
        assert_distance(&r, [0.0, 1.0 - CM, z], 0.0);
        assert_distance(&r, [0.0, -1.0 - CM, z], CM);
    }
    assert_eq!(r.centre(), [0.0, 0.0, 7.0]);
    assert!(r.is_flat());
    let b = r.aabb();
    assert_eq!((b.min[2], b.max[2]), (-FLAT_Z_BOUND_M, FLAT_Z_BOUND_M));
}

// ---- cuboid ----

/// A 4 × 2 × 3 box rotated and tilted, corner at (10, -5, 2).
fn rotated_box() -> (Region, Vec3, [Vec3; 3], Vec3) {
    let origin = [10.0, -5.0, 2.0];
    let axes = [rotate([1.0, 0.0, 0.0]), rotate([0.0, 1.0, 0.0]), rotate([0.0, 0.0, 1.0])];
    let extents = [4.0, 2.0, 3.0];
    // Axis rows of any length are accepted; give them lengths 2, 0.5 and 7.
    let rows = [origin, extents, scale(axes[0], 2.0), scale(axes[1], 0.5), scale(axes[2], 7.0)];
    (region(Cuboid, &rows), origin, axes, extents)
}

#[test]
fn a_rotated_cuboid_is_inside_one_centimetre_in_from_each_face_and_one_centimetre_out_of_it() {
    let (r, origin, axes, extents) = rotated_box();
    let centre = add(origin, (0..3).fold([0.0; 3], |c, i| add(c, scale(axes[i], extents[i] / 2.0))));
    for i in 0..3 {
        for side in [-1.0, 1.0] {
            // The centre of the face on this side of slab i, then 1 cm in and out along its normal.
            let face = add(centre, scale(axes[i], side * extents[i] / 2.0));
            assert_distance(&r, add(face, scale(axes[i], -side * CM)), 0.0);
            assert_distance(&r, face, 0.0);
            assert_distance(&r, add(face, scale(axes[i], side * CM)), CM);
        }
    }
    // Beyond a corner: 3, 4 and 12 m out along the three axes is 13 m away.
    let far = [0, 1, 2].map(|i| [3.0, 4.0, 12.0][i] + extents[i]);
    let p = add(origin, (0..3).fold([0.0; 3], |c, i| add(c, scale(axes[i], far[i]))));
    assert_distance(&r, p, 13.0);
    assert!((r.centre().iter().zip(centre).all(|(a, b)| (a - b).abs() < 1e-12)));
}

#[test]
fn every_cuboid_corner_is_inside() {
    let (r, origin, axes, extents) = rotated_box();
    for bits in 0..8 {
        let corner = (0..3).filter(|i| bits >> i & 1 == 1).fold(origin, |c, i| add(c, scale(axes[i], extents[i])));
        assert_distance(&r, corner, 0.0);
        assert!(r.aabb().contains(corner));
    }
}

#[test]
fn an_oblique_cuboid_is_the_parallelepiped_its_slabs_cut_out() {
    // 0 ≤ x ≤ 2, 0 ≤ (x + y)/√2 ≤ 2, 0 ≤ z ≤ 2.
    let r = region(Cuboid, &[[0.0; 3], [2.0, 2.0, 2.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);
    assert_distance(&r, [1.0, 0.0, 1.0], 0.0);
    assert_distance(&r, [1.0, -1.0, 1.0], 0.0);
    assert_distance(&r, [1.0, -1.0 - CM, 1.0], CM / 2f64.sqrt());
    // Out past the face x = 0, whose foot (0, 0.5) is in the face.
    assert_distance(&r, [-1.0, 0.5, 1.0], 1.0);
    // Out past the edge x = 2, x + y = 0: the nearest point is (2, -2).
    assert_distance(&r, [3.0, -3.0, 1.0], 2f64.sqrt());
    // The far corner solves x = 2, (x + y)/√2 = 2, z = 2.
    assert_distance(&r, [2.0, 2.0 * 2f64.sqrt() - 2.0, 2.0], 0.0);
    assert_distance(&r, [2.0, 2.0 * 2f64.sqrt() - 2.0, 2.0 + CM], CM);
    // The centre is the mean of the corners: x = 1, y = √2 − 1, z = 1.
    let c = r.centre();
    assert!((c[0] - 1.0).abs() < 1e-12 && (c[1] - (2f64.sqrt() - 1.0)).abs() < 1e-12 && (c[2] - 1.0).abs() < 1e-12);
    // Its box: x from 0 to 2, y from -2 to 2√2, z from 0 to 2.
    let b = r.aabb();
    assert!((b.min[1] + 2.0).abs() < 1e-5 && (b.max[1] - 2.0 * 2f64.sqrt()).abs() < 1e-5, "{b:?}");
}

// ---- square ----

#[test]
fn a_rotated_square_is_inside_one_centimetre_in_from_each_edge_at_any_z() {
    let (s, c) = (30f64.to_radians().sin(), 30f64.to_radians().cos());
    let (al, aw) = ([c, s, 0.0], [-s, c, 0.0]);
    let bl = [1.0, 1.0, 5.0];
    let r = region(Square, &[bl, [4.0, 2.0, 0.0], [c, s, 9.0], [-s, c, -9.0]]);
    let centre = add(add(bl, scale(al, 2.0)), scale(aw, 1.0));
    assert!(r.centre().iter().zip(centre).all(|(a, b)| (a - b).abs() < 1e-12));
    for z in [-500.0, 0.0, 5.0, 1e6] {
        let at = [centre[0], centre[1], z];
        for (axis, half) in [(al, 2.0), (aw, 1.0)] {
            for side in [-1.0, 1.0] {
                let edge = add(at, scale(axis, side * half));
                assert_distance(&r, add(edge, scale(axis, -side * CM)), 0.0);
                assert_distance(&r, edge, 0.0);
                assert_distance(&r, add(edge, scale(axis, side * CM)), CM);
            }
        }
        // 3 m and 4 m beyond the corner at bl: 5 m.
        assert_distance(&r, add([bl[0], bl[1], z], add(scale(al, -3.0), scale(aw, -4.0))), 5.0);
    }
    assert!(r.is_flat());
}

// ---- cylinder ----

#[test]
fn a_tilted_cylinder_measures_radially_axially_and_at_the_rim() {
    let axis = unit([1.0, 1.0, 1.0]);
    let e1 = unit([1.0, -1.0, 0.0]);
    let origin = [5.0, 5.0, 0.0];
    let r = region(Cylinder, &[origin, scale(axis, 3.0), [4.0, 1.5, 0.0]]);
    let mid = add(origin, scale(axis, 2.0));
    assert_distance(&r, add(mid, scale(e1, 1.5 - CM)), 0.0);
    assert_distance(&r, add(mid, scale(e1, 1.5)), 0.0);
    assert_distance(&r, add(mid, scale(e1, 1.5 + CM)), CM);
    assert_distance(&r, add(origin, scale(axis, -CM)), CM);
    assert_distance(&r, add(origin, scale(axis, CM)), 0.0);
    assert_distance(&r, add(origin, scale(axis, 4.0 + CM)), CM);
    assert_distance(&r, add(origin, scale(axis, 4.0 - CM)), 0.0);
    // 3 m below the base and 4 m out from the rim: 5 m.
    assert_distance(&r, add(add(origin, scale(axis, -3.0)), scale(e1, 5.5)), 5.0);
    // A point on the rim itself.
    assert_distance(&r, add(add(origin, scale(axis, 4.0)), scale(e1, 1.5)), 0.0);
    let c = r.centre();
    assert!(c.iter().zip(mid).all(|(a, b)| (a - b).abs() < 1e-12));
}

// ---- polygon prism ----

/// An L (concave at (1, 1)) in z = 0, swept 2 m along the oblique axis (0.5, 0, 1), then moved
/// by `m`.
fn l_prism(m: impl Fn(Vec3) -> Vec3, rotate_axis: impl Fn(Vec3) -> Vec3) -> Region {
    let l = [[0.0, 0.0, 0.0], [4.0, 0.0, 0.0], [4.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 3.0, 0.0]];
    let mut rows: Vec<Vec3> = l.iter().map(|v| m(*v)).collect();
    rows.push([2.0, 0.0, 0.0]);
    rows.push(rotate_axis([0.5, 0.0, 1.0]));
    region(Polygon, &rows)
}

/// Hand-computed distances for the L prism (in its own frame).
fn l_prism_cases() -> Vec<(Vec3, f64)> {
    let k = 1.0 / 1.25f64.sqrt(); // cos of the axis tilt
    let top = 2.0 * k; // height of the top plane
    vec![
        // Moved along the axis onto the base, (0.5, 2, 1) lands on the edge x = 0: inside.
        ([0.5, 2.0, 1.0], 0.0),
        ([0.5 + CM, 2.0, 1.0], 0.0),
        // 1 cm out in x from that slanted side face: its normal is tilted, so CM·cos.
        ([0.5 - CM, 2.0, 1.0], CM * k),
        // In the notch of the L: 0.75 (in x, along the base) from the side over edge 3→4.
        ([2.0, 2.0, 0.5], 0.75 * k),
        // Below the base with the foot in the L.
        ([2.0, 0.5, -1.0], 1.0),
        ([2.0, 0.5, -CM], CM),
        ([2.0, 0.5, CM], 0.0),
        // Above the top with the foot in the top L (shifted by 2k·0.5 = k in x).
        ([3.5, 0.5, 3.0], 3.0 - top),
        ([3.5, 0.5, top - CM], 0.0),
        // The base vertices and the top ones are on the boundary.
        ([1.0, 1.0, 0.0], 0.0),
        ([4.0 + k, 1.0, top], 0.0),
        // 5 m below the notch: the foot (1.5, 1.5) is not in the L; the nearest base points are on
        // the two edges meeting at the concave corner, 0.5 m from the foot.
        ([1.5, 1.5, -5.0], (0.25f64 + 25.0).sqrt()),
    ]
}

#[test]
fn an_oblique_concave_prism_matches_hand_computed_distances() {
    let r = l_prism(|v| v, |a| a);
    for (p, expected) in l_prism_cases() {
        assert_distance(&r, p, expected);
    }
}

#[test]
fn the_same_prism_rotated_and_tilted_keeps_its_distances() {
    let shift = [100.0, -40.0, 3.0];
    let moved = |v: Vec3| add(rotate(v), shift);
    let r = l_prism(moved, rotate);
    for (p, expected) in l_prism_cases() {
        let d = r.distance(moved(p));
        assert!((d - expected).abs() < 1e-9, "{p:?}: {d} vs {expected}");
    }
}

#[test]
fn a_prism_centre_is_the_area_centroid_moved_half_the_sweep() {
    let r = l_prism(|v| v, |a| a);
    // The L is a 4×1 bar (centroid (2, 0.5)) plus a 1×2 bar (centroid (0.5, 2)): area 6.
    let (cx, cy) = ((4.0 * 2.0 + 2.0 * 0.5) / 6.0, (4.0 * 0.5 + 2.0 * 2.0) / 6.0);
    let half = scale(unit([0.5, 0.0, 1.0]), 1.0);
    let c = r.centre();
    let expected = add([cx, cy, 0.0], half);
    assert!(c.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-12), "{c:?} vs {expected:?}");
}

#[test]
fn a_prism_given_clockwise_or_with_a_downward_axis_is_the_same_region() {
    let l = [[0.0, 0.0, 0.0], [4.0, 0.0, 0.0], [4.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 3.0, 0.0]];
    let mut reversed: Vec<Vec3> = l.iter().rev().copied().collect();
    reversed.extend([[2.0, 0.0, 0.0], [0.5, 0.0, 1.0]]);
    let r = region(Polygon, &reversed);
    for (p, expected) in l_prism_cases() {
        assert_distance(&r, p, expected);
    }
    // Swept downwards from the top L instead: the top L is the base moved by the sweep.
    let sweep = scale(unit([0.5, 0.0, 1.0]), 2.0);
    let mut down: Vec<Vec3> = l.iter().map(|v| add(*v, sweep)).collect();
    down.extend([[2.0, 0.0, 0.0], [-0.5, 0.0, -1.0]]);
    let r = region(Polygon, &down);
    for (p, expected) in l_prism_cases() {
        assert_distance(&r, p, expected);
    }
}

// ---- shared ----

#[test]
fn points_within_the_tolerance_outside_count_as_on_the_boundary() {
    let r = region(Sphere, &[[0.0; 3], [1.0, 0.0, 0.0]]);
    assert_eq!(r.distance([1.0 + BOUNDARY_TOLERANCE_M / 2.0, 0.0, 0.0]), 0.0);
    assert!(r.distance([1.0 + 10.0 * BOUNDARY_TOLERANCE_M, 0.0, 0.0]) > 0.0);
}

#[test]
fn distance_offset_measures_the_moved_region() {
    let (r, ..) = rotated_box();
    let offset = [-3.0, 7.5, 100.0];
    for p in [[0.0, 0.0, 0.0], [12.0, -4.0, 3.0], [9.0, 2.5, 103.0]] {
        let moved_p = [p[0] - offset[0], p[1] - offset[1], p[2] - offset[2]];
        assert_eq!(r.distance_offset(p, offset), r.distance(moved_p));
    }
}

#[test]
fn boxes_hold_every_corner_and_are_padded_only_slightly() {
    let (r, origin, axes, extents) = rotated_box();
    let corners: Vec<Vec3> = (0..8)
        .map(|bits: usize| {
            (0..3).filter(|i| bits >> i & 1 == 1).fold(origin, |c, i| add(c, scale(axes[i], extents[i])))
        })
        .collect();
    let Some(tight) = Aabb::enclosing(corners) else { panic!("no corners") };
    let b = r.aabb();
    for i in 0..3 {
        assert!(b.min[i] <= tight.min[i] && tight.min[i] - b.min[i] < 1e-5, "{b:?} vs {tight:?}");
        assert!(b.max[i] >= tight.max[i] && b.max[i] - tight.max[i] < 1e-5, "{b:?} vs {tight:?}");
    }
    let cyl = region(Cylinder, &[[0.0; 3], [0.0, 0.0, 2.0], [3.0, 1.0, 0.0]]);
    let b = cyl.aabb();
    assert!((b.min[0] + 1.0).abs() < 1e-5 && (b.max[2] - 3.0).abs() < 1e-5, "{b:?}");
}

#[test]
fn regions_are_send_sync_and_small() {
    fn send_sync<T: Send + Sync + Clone + std::fmt::Debug>() {}
    send_sync::<Region>();
    send_sync::<zonecast_geometry::Scene>();
    assert!(size_of::<Region>() <= 80, "{}", size_of::<Region>());
}

#[test]
fn shapes_made_by_hand_without_validation_never_panic() {
    use zonecast_geometry::Shape;
    let nan = f64::NAN;
    let shapes = [
        Shape::Polygon { vertices: vec![], height: 1.0, axis: [0.0, 0.0, 1.0] },
        Shape::Polygon { vertices: vec![[0.0; 3], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], height: 0.0, axis: [0.0; 3] },
        Shape::Polygon { vertices: vec![[nan; 3]; 4], height: nan, axis: [nan; 3] },
        Shape::Cuboid { origin: [0.0; 3], extents: [1.0; 3], axes: [[1.0, 0.0, 0.0]; 3] },
        Shape::Cuboid { origin: [nan; 3], extents: [-1.0, 0.0, nan], axes: [[0.0; 3]; 3] },
        Shape::Square { bottom_left: [0.0; 3], extents: [1.0, 1.0], axes: [[1.0, 0.0, 0.0]; 2] },
        Shape::Cylinder { origin: [0.0; 3], axis: [0.0; 3], height: -1.0, radius: nan },
        Shape::Sphere { centre: [nan; 3], radius: -2.0 },
        Shape::Circle { centre: [0.0; 3], radius: f64::INFINITY },
    ];
    for shape in &shapes {
        let r = Region::new(shape);
        for p in [[0.0; 3], [1.0, 2.0, 3.0], [nan; 3], [f64::INFINITY, 0.0, 0.0]] {
            let _ = r.distance(p);
        }
        let _ = (r.aabb(), r.centre(), r.memory_bytes());
    }
    let scene = zonecast_geometry::Scene::build(shapes.iter().map(Region::new).collect());
    let mut out = Vec::new();
    for p in [[0.0; 3], [nan; 3], [f64::INFINITY; 3]] {
        scene.static_candidates(p, 1.0, &mut out);
    }
}
