//! Property tests of `Region` against the independent reference in `tests/reference`: random
//! shapes of every kind with random (rotated, tilted, oblique) axes and random points near them;
//! invariance under rigid motions; `distance_within` against `distance`; `distance_offset` against a
//! translated shape; centres; boxes; and the same answers as parry3d-f64's shapes.

mod reference;
mod shapes_strategy;

use proptest::prelude::*;
use reference::parry::ParryRegion;
use shapes_strategy::{any_shape, close, motion, moved_rows, point_near, translated_rows, vclose};
use zonecast_geometry::{BOUNDARY_TOLERANCE_M, Region, Vec3, validate};

/// The point `shift` metres past the boundary on the segment from the region's centre to `p`
/// (before it when negative), when the centre is inside and `p` outside; else `p`.
fn across_boundary(region: &Region, p: Vec3, shift: f64) -> Vec3 {
    let mut inside = region.centre();
    if region.is_flat() {
        inside[2] = p[2];
    }
    if !region.contains(inside) || region.contains(p) {
        return p;
    }
    let mut outside = p;
    for _ in 0..80 {
        let mid = [0, 1, 2].map(|i| (inside[i] + outside[i]) / 2.0);
        if region.contains(mid) {
            inside = mid;
        } else {
            outside = mid;
        }
    }
    let centre = region.centre();
    let length = reference::norm(reference::sub(p, centre));
    [0, 1, 2].map(|i| inside[i] + shift * (p[i] - centre[i]) / length)
}

/// How far parry's distances may differ from the regions'.
const PARRY_DISTANCE_TOLERANCE_M: f64 = 1e-9;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn distances_match_the_reference(
        (_, _, shape) in any_shape(),
        points in prop::collection::vec(prop::array::uniform3(0.0..1.0_f64), 16),
    ) {
        let region = Region::new(&shape);
        for u in points {
            let p = point_near(&region, u);
            let (got, want) = (region.distance(p), reference::distance(&shape, p));
            prop_assert!(close(got, want, 1e-9), "{:?} at {:?}: {} vs reference {}", shape, p, got, want);
            prop_assert_eq!(region.contains(p), want <= 1e-9, "containment at {:?}", p);
        }
    }

    #[test]
    fn parry3d_f64_finds_the_same_containment_and_distances(
        (_, _, shape) in any_shape(),
        points in prop::collection::vec((prop::array::uniform3(0.0..1.0_f64), any::<bool>(), -1e-3..1e-3_f64), 16),
    ) {
        let (region, parry) = (Region::new(&shape), ParryRegion::meshed(&shape));
        for (u, at_boundary, shift) in points {
            let p = point_near(&region, u);
            let p = if at_boundary { across_boundary(&region, p, shift) } else { p };
            let (ours, theirs) = (region.distance(p), parry.distance(p));
            prop_assert!(
                (ours - theirs).abs() <= PARRY_DISTANCE_TOLERANCE_M,
                "{:?} ({}) at {:?}: {} vs parry {}", shape, parry.parry_shape(), p, ours, theirs
            );
            // Within the boundary tolerance either answer is right (the region counts it in).
            prop_assert!(
                region.contains(p) == parry.contains(p) || (region.contains(p) && theirs <= BOUNDARY_TOLERANCE_M),
                "{:?} ({}) at {:?}: contains {} vs parry {} at distance {}",
                shape, parry.parry_shape(), p, region.contains(p), parry.contains(p), theirs
            );
        }
    }

    #[test]
    fn a_distance_within_a_limit_is_exact_up_to_it_and_above_it_beyond(
        (_, _, shape) in any_shape(),
        points in prop::collection::vec((prop::array::uniform3(0.0..1.0_f64), 0.0..3.0_f64), 16),
    ) {
        let region = Region::new(&shape);
        for (u, limit) in points {
            let p = point_near(&region, u);
            let (got, exact) = (region.distance_within(p, limit), region.distance(p));
            if exact <= limit {
                prop_assert_eq!(got, exact, "{:?} at {:?} within {}", shape, p, limit);
            } else {
                prop_assert!(got > limit && got <= exact + 1e-9, "{:?} at {:?}: {} for {} beyond {}", shape, p, got, exact, limit);
            }
        }
    }

    #[test]
    fn rotating_and_moving_shape_and_point_together_keeps_the_distance(
        (kind, rows, shape) in any_shape(),
        m in motion(),
        points in prop::collection::vec(prop::array::uniform3(0.0..1.0_f64), 8),
    ) {
        // 2D shapes stay in XY: they may only turn about z.
        let m = if Region::new(&shape).is_flat() { m.about_z() } else { m };
        let region = Region::new(&shape);
        let moved = Region::new(&validate(kind, &moved_rows(kind, &rows, &m)).expect("a moved valid shape is valid"));
        for u in points {
            let p = point_near(&region, u);
            let (before, after) = (region.distance(p), moved.distance(m.apply(p)));
            prop_assert!((before - after).abs() <= 1e-6, "{:?} at {:?}: {} then {}", shape, p, before, after);
        }
        prop_assert!(vclose(moved.centre(), m.apply(region.centre()), 1e-9) || region.is_flat());
    }

    #[test]
    fn distance_offset_is_the_distance_to_the_translated_shape(
        (kind, rows, shape) in any_shape(),
        offset in prop::array::uniform3(-500.0..500.0_f64),
        points in prop::collection::vec(prop::array::uniform3(0.0..1.0_f64), 8),
    ) {
        let region = Region::new(&shape);
        let moved = Region::new(&validate(kind, &translated_rows(kind, &rows, offset)).expect("valid"));
        for u in points {
            let p = point_near(&moved, u);
            let (got, want) = (region.distance_offset(p, offset), moved.distance(p));
            prop_assert!((got - want).abs() <= 1e-7, "{:?} at {:?}: {} vs {}", shape, p, got, want);
        }
        let shifted = region.centre().iter().zip(offset).map(|(c, o)| c + o).collect::<Vec<_>>();
        prop_assert!(vclose(moved.centre(), [shifted[0], shifted[1], shifted[2]], 1e-9));
    }

    #[test]
    fn centres_match_the_reference((_, _, shape) in any_shape()) {
        let (got, want) = (Region::new(&shape).centre(), reference::centre(&shape));
        prop_assert!(vclose(got, want, 1e-9), "{:?}: {:?} vs {:?}", shape, got, want);
    }

    #[test]
    fn boxes_hold_every_point_of_the_region(
        (_, _, shape) in any_shape(),
        points in prop::collection::vec(prop::array::uniform3(0.0..1.0_f64), 64),
    ) {
        let region = Region::new(&shape);
        let b = region.aabb();
        // Sample the box grown by 3 m: a region point outside the box would show up here.
        for u in points {
            let p = point_near(&region, u);
            if reference::distance(&shape, p) <= 1e-9 {
                prop_assert!(b.contains(p), "{:?}: {:?} is in the region but not in {:?}", shape, p, b);
            }
        }
        prop_assert!(b.contains(region.centre()) || region.is_flat());
    }
}
