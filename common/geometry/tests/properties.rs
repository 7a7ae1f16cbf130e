//! Property tests: whole families of valid shapes validate, bow-ties never do, axes normalise.

use proptest::prelude::*;
use zonecast_geometry::{GeometryType, Shape, Vec3, validate};

fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// A rigid motion: rotation by `angle` about the unit axis at spherical angles `(theta, phi)`,
/// then a translation.
#[derive(Debug, Clone, Copy)]
struct Motion {
    axis: Vec3,
    angle: f64,
    shift: Vec3,
}

impl Motion {
    fn rotate(&self, v: Vec3) -> Vec3 {
        // Rodrigues' rotation formula.
        let (s, c) = self.angle.sin_cos();
        let k = self.axis;
        let kxv = cross(k, v);
        let kv = dot(k, v) * (1.0 - c);
        [0, 1, 2].map(|i| v[i] * c + kxv[i] * s + k[i] * kv)
    }

    fn apply(&self, v: Vec3) -> Vec3 {
        let r = self.rotate(v);
        [0, 1, 2].map(|i| r[i] + self.shift[i])
    }
}

fn motion() -> impl Strategy<Value = Motion> {
    (0.0..std::f64::consts::PI, 0.0..std::f64::consts::TAU, -3.2..3.2, prop::array::uniform3(-1e4..1e4)).prop_map(
        |(theta, phi, angle, shift): (f64, f64, f64, Vec3)| Motion {
            axis: [theta.sin() * phi.cos(), theta.sin() * phi.sin(), theta.cos()],
            angle,
            shift,
        },
    )
}

/// Rows of a polygon prism over `vertices` (in the XY plane before `m` moves them), swept `h` along
/// the moved direction `(tilt_x, tilt_y, 1)`, which is never in the polygon's plane.
fn prism(vertices: &[Vec3], h: f64, (tilt_x, tilt_y): (f64, f64), m: Motion) -> Vec<Vec3> {
    let mut rows: Vec<Vec3> = vertices.iter().map(|v| m.apply(*v)).collect();
    rows.push([h, 0.0, 0.0]);
    rows.push(m.rotate([tilt_x, tilt_y, 1.0]));
    rows
}

proptest! {
    #[test]
    fn rotated_scaled_shifted_regular_polygons_validate(
        n in 3usize..=64,
        radius in 0.05..500.0_f64,
        phase in 0.0..std::f64::consts::TAU,
        clockwise in any::<bool>(),
        closed in any::<bool>(),
        h in 0.01..100.0_f64,
        tilt in (-5.0..5.0_f64, -5.0..5.0_f64),
        m in motion(),
    ) {
        let mut ring: Vec<Vec3> = (0..n)
            .map(|k| {
                let t = phase + std::f64::consts::TAU * k as f64 / n as f64;
                [radius * t.cos(), radius * t.sin(), 0.0]
            })
            .collect();
        if clockwise {
            ring.reverse();
        }
        if closed {
            ring.push(ring[0]);
        }
        let rows = prism(&ring, h, tilt, m);
        let shape = validate(GeometryType::Polygon, &rows);
        prop_assert!(shape.is_ok(), "{:?}", shape);
        if let Ok(Shape::Polygon { vertices, height, axis }) = shape {
            prop_assert_eq!(vertices.len(), n);
            prop_assert_eq!(height, h);
            prop_assert!((dot(axis, axis).sqrt() - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn bow_ties_are_rejected(
        quadrant_angles in prop::array::uniform4(0.05..1.5_f64),
        radius in 0.05..500.0_f64,
        h in 0.01..100.0_f64,
        m in motion(),
    ) {
        // One point per quadrant on a circle makes a convex quadrilateral p0 p1 p2 p3; visiting
        // them as p0 p1 p3 p2 turns it into a bow-tie whose edges 1 and 3 cross.
        let p: Vec<Vec3> = (0..4)
            .map(|k| {
                let t = std::f64::consts::FRAC_PI_2 * k as f64 + quadrant_angles[k];
                [radius * t.cos(), radius * t.sin(), 0.0]
            })
            .collect();
        let bow_tie = [p[0], p[1], p[3], p[2]];
        let e = validate(GeometryType::Polygon, &prism(&bow_tie, h, (0.0, 0.0), m));
        prop_assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("GeometryData: polygon edges 1 and 3 intersect".to_string())
        );
    }

    #[test]
    fn non_zero_axes_normalise_to_unit_length_in_the_same_direction(
        v in prop::array::uniform3(-1.0..1.0_f64),
        exponent in -150i32..150,
    ) {
        prop_assume!(v.iter().any(|c| *c != 0.0));
        let axis = v.map(|c| c * 10f64.powi(exponent));
        let shape = validate(GeometryType::Cylinder, &[[0.0; 3], axis, [1.0, 1.0, 0.0]]);
        prop_assert!(shape.is_ok(), "{:?}", shape);
        if let Ok(Shape::Cylinder { axis: unit, .. }) = shape {
            prop_assert!((dot(unit, unit).sqrt() - 1.0).abs() < 1e-12);
            let c = cross(unit, v);
            prop_assert!(dot(c, c).sqrt() < 1e-12 * dot(v, v).sqrt().max(1.0), "{:?} vs {:?}", unit, v);
            prop_assert!(dot(unit, v) > 0.0);
        }
    }

    #[test]
    fn rotated_cuboids_validate_with_unit_axes(
        extents in prop::array::uniform3(0.01..100.0_f64),
        lengths in prop::array::uniform3(0.001..1000.0_f64),
        m in motion(),
    ) {
        let frame = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let axes = [0, 1, 2].map(|i| m.rotate(frame[i]).map(|c| c * lengths[i]));
        let rows = [m.shift, extents, axes[0], axes[1], axes[2]];
        let shape = validate(GeometryType::Cuboid, &rows);
        prop_assert!(shape.is_ok(), "{:?}", shape);
        if let Ok(Shape::Cuboid { axes: unit, extents: e, .. }) = shape {
            prop_assert_eq!(e, extents);
            for (u, given) in unit.iter().zip(axes) {
                prop_assert!((dot(*u, *u).sqrt() - 1.0).abs() < 1e-12);
                prop_assert!(dot(*u, given) > 0.0);
            }
        }
    }

    #[test]
    fn rotated_squares_validate_with_unit_axes_in_xy(
        angle in -3.2..3.2_f64,
        lengths in (0.001..1000.0_f64, 0.001..1000.0_f64),
        zs in (-10.0..10.0_f64, -10.0..10.0_f64),
    ) {
        let (s, c) = angle.sin_cos();
        let rows = [
            [1.0, 2.0, 0.0],
            [3.0, 4.0, 0.0],
            [c * lengths.0, s * lengths.0, zs.0],
            [-s * lengths.1, c * lengths.1, zs.1],
        ];
        let shape = validate(GeometryType::Square, &rows);
        prop_assert!(shape.is_ok(), "{:?}", shape);
        if let Ok(Shape::Square { axes, .. }) = shape {
            for a in axes {
                prop_assert_eq!(a[2], 0.0);
                prop_assert!((dot(a, a).sqrt() - 1.0).abs() < 1e-12);
            }
            prop_assert!((axes[0][0] - c).abs() < 1e-12 && (axes[0][1] - s).abs() < 1e-12);
        }
    }
}
