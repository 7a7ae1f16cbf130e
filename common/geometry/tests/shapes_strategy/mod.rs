//! Proptest strategies: random valid zone geometry of every kind (rotated, tilted and oblique
//! axes, concave polygons), rigid motions, and points around a shape.
// Each test crate uses a different subset of these.
#![allow(dead_code)]

use proptest::prelude::*;
use std::f64::consts::{PI, TAU};
use zonecast_geometry::{Aabb, GeometryType, Region, Shape, Vec3, validate};

use crate::reference::{add, cross, dot, scale, sub};

/// A rigid motion: rotation by `angle` about the unit `axis`, then a translation.
#[derive(Debug, Clone, Copy)]
pub struct Motion {
    pub axis: Vec3,
    pub angle: f64,
    pub shift: Vec3,
}

impl Motion {
    pub fn rotate(&self, v: Vec3) -> Vec3 {
        // Rodrigues' rotation formula.
        let (s, c) = self.angle.sin_cos();
        let k = self.axis;
        let kxv = cross(k, v);
        let kv = dot(k, v) * (1.0 - c);
        [0, 1, 2].map(|i| v[i] * c + kxv[i] * s + k[i] * kv)
    }

    pub fn apply(&self, p: Vec3) -> Vec3 {
        add(self.rotate(p), self.shift)
    }

    /// The same motion with its rotation turned into one about z (for 2D shapes, which must stay
    /// in XY).
    pub fn about_z(&self) -> Motion {
        Motion { axis: [0.0, 0.0, 1.0], ..*self }
    }
}

/// Rigid motions with shifts across a site.
pub fn motion() -> impl Strategy<Value = Motion> {
    (0.0..PI, 0.0..TAU, -PI..PI, prop::array::uniform3(-1000.0..1000.0)).prop_map(|(theta, phi, angle, shift)| Motion {
        axis: [theta.sin() * phi.cos(), theta.sin() * phi.sin(), theta.cos()],
        angle,
        shift,
    })
}

fn unit_vector() -> impl Strategy<Value = Vec3> {
    (0.0..PI, 0.0..TAU).prop_map(|(theta, phi)| [theta.sin() * phi.cos(), theta.sin() * phi.sin(), theta.cos()])
}

/// `GeometryData` rows of a random valid shape of `kind`, placed by a random motion.
pub fn rows_of(kind: GeometryType) -> BoxedStrategy<Vec<Vec3>> {
    let size = || 0.2..20.0_f64;
    match kind {
        GeometryType::Sphere | GeometryType::Circle => {
            (prop::array::uniform3(-1000.0..1000.0), size()).prop_map(|(c, r)| vec![c, [r / 2.0, 0.0, 0.0]]).boxed()
        }
        GeometryType::Cuboid => {
            (motion(), prop::array::uniform3(size()), prop::array::uniform3(-0.6..0.6), any::<bool>())
                .prop_map(|(m, extents, skew, oblique)| {
                    let frame = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
                    let axes = [0, 1, 2].map(|i| {
                        let mut a = frame[i];
                        if oblique {
                            a[(i + 1) % 3] += skew[i];
                        }
                        m.rotate(a)
                    });
                    vec![m.shift, extents, axes[0], axes[1], axes[2]]
                })
                .boxed()
        }
        GeometryType::Square => (prop::array::uniform3(-1000.0..1000.0), size(), size(), 0.0..TAU, -0.9..0.9)
            .prop_map(|(bl, l, w, angle, skew): (Vec3, f64, f64, f64, f64)| {
                let u = angle + PI / 2.0 + skew;
                vec![bl, [l, w, 0.0], [angle.cos(), angle.sin(), 0.0], [u.cos(), u.sin(), 0.0]]
            })
            .boxed(),
        GeometryType::Cylinder => (prop::array::uniform3(-1000.0..1000.0), unit_vector(), size(), size())
            .prop_map(|(origin, axis, h, d)| vec![origin, axis, [h, d / 2.0, 0.0]])
            .boxed(),
        GeometryType::Polygon => (
            motion(),
            prop::collection::vec((0.05..1.0_f64, 0.3..10.0_f64), 3..=12),
            size(),
            (-1.5..1.5_f64, -1.5..1.5_f64),
        )
            .prop_map(|(m, steps, h, (tx, ty))| {
                // A star-shaped ring: increasing angles (normalised to one turn), random radii.
                let total: f64 = steps.iter().map(|(step, _)| step).sum();
                let mut angle = 0.0;
                let mut rows: Vec<Vec3> = steps
                    .iter()
                    .map(|(step, r)| {
                        angle += TAU * step / total;
                        m.apply([r * angle.cos(), r * angle.sin(), 0.0])
                    })
                    .collect();
                rows.push([h, 0.0, 0.0]);
                rows.push(m.rotate([tx, ty, 1.0]));
                rows
            })
            .boxed(),
    }
}

/// A random valid shape of any kind, with its kind and rows.
pub fn any_shape() -> impl Strategy<Value = (GeometryType, Vec<Vec3>, Shape)> {
    prop::sample::select(GeometryType::ALL.to_vec())
        .prop_flat_map(|kind| rows_of(kind).prop_map(move |rows| (kind, rows)))
        .prop_filter_map("invalid geometry", |(kind, rows)| validate(kind, &rows).ok().map(|s| (kind, rows, s)))
}

/// A point in the shape's box grown by 3 m (z within ±50 m of 0 for 2D shapes), from unit
/// coordinates `u`.
pub fn point_near(region: &Region, u: Vec3) -> Vec3 {
    let b = region.aabb().expanded(3.0);
    let b =
        if region.is_flat() { Aabb { min: [b.min[0], b.min[1], -50.0], max: [b.max[0], b.max[1], 50.0] } } else { b };
    [0, 1, 2].map(|i| b.min[i] + u[i] * (b.max[i] - b.min[i]))
}

/// `rows` of `kind` moved by `m`: point rows moved, direction rows rotated, size rows kept.
pub fn moved_rows(kind: GeometryType, rows: &[Vec3], m: &Motion) -> Vec<Vec3> {
    let n = rows.len();
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let is_point = match kind {
                GeometryType::Sphere | GeometryType::Circle | GeometryType::Cuboid | GeometryType::Square => i == 0,
                GeometryType::Cylinder => i == 0,
                GeometryType::Polygon => i < n - 2,
            };
            let is_size = match kind {
                GeometryType::Sphere | GeometryType::Circle => i == 1,
                GeometryType::Cuboid | GeometryType::Square => i == 1,
                GeometryType::Cylinder => i == 2,
                GeometryType::Polygon => i == n - 2,
            };
            if is_point {
                m.apply(*row)
            } else if is_size {
                *row
            } else {
                m.rotate(*row)
            }
        })
        .collect()
}

/// `rows` of `kind` translated by `offset`.
pub fn translated_rows(kind: GeometryType, rows: &[Vec3], offset: Vec3) -> Vec<Vec3> {
    let m = Motion { axis: [0.0, 0.0, 1.0], angle: 0.0, shift: offset };
    moved_rows(kind, rows, &m)
}

/// Relative-and-absolute closeness for distances in metres.
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

pub fn vclose(a: Vec3, b: Vec3, tol: f64) -> bool {
    (0..3).all(|i| close(a[i], b[i], tol))
}

pub fn scale_v(v: Vec3, k: f64) -> Vec3 {
    scale(v, k)
}

pub fn sub_v(a: Vec3, b: Vec3) -> Vec3 {
    sub(a, b)
}
