//! An independent, deliberately plain reference for the zone regions (boundaries inclusive; a
//! cuboid is `0 ≤ (p − o)·âᵢ ≤ extentᵢ` for each axis, a square the same in XY at any z, a
//! cylinder `0 ≤ (p − o)·â ≤ h` within `r` of the axis line, a polygon prism the planar simple
//! polygon swept `h` along its axis), written from these definitions rather than from the crate's
//! code:
//!
//! - cuboid and square: the corners solve the slab equations (Cramer's rule); a point's
//!   coordinates in the edge basis come from solving the linear system; the distance is the
//!   box-constrained least-squares problem `min |E·t − d|` over `t ∈ [0,1]ⁿ`, solved exactly by
//!   enumerating every active set (each `tᵢ` at 0, at 1 or free) — no face selection, no pruning;
//! - cylinder: the distance to a rectangle in the (radial, axial) half-plane of a local frame;
//! - polygon prism: the winding number (not a crossing count) of the point moved along the axis
//!   onto the polygon's plane, and the distance as the minimum over every face (both caps as
//!   polygons, every side as a parallelogram solved by active sets).
//!
//! Beside it, [`parry`] gives the same regions as parry3d-f64 shapes: a second reference from a
//! different hand.
// Each test crate uses a different subset of these.
#![allow(dead_code)]

pub mod parry;

use zonecast_geometry::{Shape, Vec3};

pub fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub fn add(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

pub fn scale(v: Vec3, k: f64) -> Vec3 {
    [v[0] * k, v[1] * k, v[2] * k]
}

pub fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

pub fn norm(v: Vec3) -> f64 {
    dot(v, v).sqrt()
}

fn det3(c0: Vec3, c1: Vec3, c2: Vec3) -> f64 {
    dot(c0, cross(c1, c2))
}

/// Solves `M x = rhs` where `M` has the given rows, by Cramer's rule.
fn solve_rows(rows: [Vec3; 3], rhs: Vec3) -> Vec3 {
    // Columns of M.
    let col = |j: usize| [rows[0][j], rows[1][j], rows[2][j]];
    let (c0, c1, c2) = (col(0), col(1), col(2));
    let d = det3(c0, c1, c2);
    [det3(rhs, c1, c2) / d, det3(c0, rhs, c2) / d, det3(c0, c1, rhs) / d]
}

/// Solves `M x = rhs` where `M` has the given columns, by Cramer's rule.
fn solve_cols(cols: [Vec3; 3], rhs: Vec3) -> Vec3 {
    let d = det3(cols[0], cols[1], cols[2]);
    [det3(rhs, cols[1], cols[2]) / d, det3(cols[0], rhs, cols[2]) / d, det3(cols[0], cols[1], rhs) / d]
}

/// Least squares `min |Σ tᵢ·colsᵢ − d|` over `t ∈ [0,1]ⁿ` (n ≤ 3 columns), by enumerating every
/// active set: each variable fixed at 0, fixed at 1, or free (then solved from the normal
/// equations); the best feasible candidate is the optimum of this convex problem.
pub fn box_least_squares(cols: &[Vec3], d: Vec3) -> f64 {
    let n = cols.len();
    let mut best = f64::INFINITY;
    for code in 0..3usize.pow(n as u32) {
        let states: Vec<usize> = (0..n).map(|i| code / 3usize.pow(i as u32) % 3).collect();
        let mut t = vec![0.0; n];
        let mut fixed_sum = [0.0; 3];
        let mut free = Vec::new();
        for i in 0..n {
            match states[i] {
                0 => t[i] = 0.0,
                1 => {
                    t[i] = 1.0;
                    fixed_sum = add(fixed_sum, cols[i]);
                }
                _ => free.push(i),
            }
        }
        let r = sub(d, fixed_sum);
        // Normal equations for the free variables (Gaussian elimination, k ≤ 3).
        let k = free.len();
        let mut a = vec![vec![0.0; k + 1]; k];
        for (row, &i) in free.iter().enumerate() {
            for (col, &j) in free.iter().enumerate() {
                a[row][col] = dot(cols[i], cols[j]);
            }
            a[row][k] = dot(cols[i], r);
        }
        let mut ok = true;
        for pivot in 0..k {
            let best_row = (pivot..k).max_by(|x, y| a[*x][pivot].abs().total_cmp(&a[*y][pivot].abs())).unwrap_or(pivot);
            a.swap(pivot, best_row);
            if a[pivot][pivot].abs() < 1e-300 {
                ok = false;
                break;
            }
            let pivot_row = a[pivot].clone();
            for (row, values) in a.iter_mut().enumerate() {
                if row != pivot {
                    let f = values[pivot] / pivot_row[pivot];
                    for (v, p) in values.iter_mut().zip(&pivot_row).skip(pivot) {
                        *v -= f * p;
                    }
                }
            }
        }
        if !ok {
            continue;
        }
        let mut feasible = true;
        for (row, &i) in free.iter().enumerate() {
            t[i] = a[row][k] / a[row][row];
            if !(-1e-12..=1.0 + 1e-12).contains(&t[i]) {
                feasible = false;
            }
        }
        if !feasible {
            continue;
        }
        let mut x = [0.0; 3];
        for i in 0..n {
            x = add(x, scale(cols[i], t[i].clamp(0.0, 1.0)));
        }
        best = best.min(norm(sub(d, x)));
    }
    best
}

/// Edge vectors of a cuboid: corner `origin + Eᵢ` solves `(x − o)·âᵢ = extentᵢ`, `(x − o)·âⱼ = 0`.
pub fn cuboid_edges(extents: Vec3, axes: [Vec3; 3]) -> [Vec3; 3] {
    [0, 1, 2].map(|i| {
        let mut rhs = [0.0; 3];
        rhs[i] = extents[i];
        solve_rows(axes, rhs)
    })
}

/// The 2D analogue for a square, embedded in z = 0.
fn square_edges(extents: [f64; 2], axes: [Vec3; 2]) -> [Vec3; 2] {
    let rows = [axes[0], axes[1], [0.0, 0.0, 1.0]];
    [solve_rows(rows, [extents[0], 0.0, 0.0]), solve_rows(rows, [0.0, extents[1], 0.0])]
}

/// A plane through a polygon: a point on it and a unit normal (Newell's method about vertex 0).
fn polygon_plane(vertices: &[Vec3]) -> (Vec3, Vec3) {
    let mut n = [0.0; 3];
    for i in 0..vertices.len() {
        let a = sub(vertices[i], vertices[0]);
        let b = sub(vertices[(i + 1) % vertices.len()], vertices[0]);
        n = add(n, cross(a, b));
    }
    let centroid = scale(vertices.iter().fold([0.0; 3], |c, v| add(c, *v)), 1.0 / vertices.len() as f64);
    (centroid, scale(n, 1.0 / norm(n)))
}

/// Winding number of the closed planar ring `ring` around `p` (all in a plane with unit normal
/// `n`), by summing signed angles.
fn winding(p: Vec3, ring: &[Vec3], n: Vec3) -> f64 {
    let mut total = 0.0;
    for i in 0..ring.len() {
        let a = sub(ring[i], p);
        let b = sub(ring[(i + 1) % ring.len()], p);
        total += dot(cross(a, b), n).atan2(dot(a, b));
    }
    total / std::f64::consts::TAU
}

fn segment_distance(p: Vec3, a: Vec3, b: Vec3) -> f64 {
    box_least_squares(&[sub(b, a)], sub(p, a))
}

/// Distance from `p` to the filled planar polygon `ring` (plane normal `n`).
fn polygon_distance(p: Vec3, ring: &[Vec3], n: Vec3) -> f64 {
    let off = dot(sub(p, ring[0]), n);
    let foot = sub(p, scale(n, off));
    if winding(foot, ring, n).abs() > 0.5 {
        return off.abs();
    }
    (0..ring.len()).map(|i| segment_distance(p, ring[i], ring[(i + 1) % ring.len()])).fold(f64::INFINITY, f64::min)
}

/// The base ring projected onto its best-fit plane (what the crate uses; validation allows 1 mm
/// off-plane, tests use exactly planar rings, where this is the identity up to rounding).
fn flattened(vertices: &[Vec3]) -> (Vec<Vec3>, Vec3) {
    let (c, n) = polygon_plane(vertices);
    (vertices.iter().map(|v| sub(*v, scale(n, dot(sub(*v, c), n)))).collect(), n)
}

/// Whether `p` is in the region, with boundaries widened by `tol`.
pub fn contains(shape: &Shape, p: Vec3, tol: f64) -> bool {
    distance(shape, p) <= tol
}

/// The distance from `p` to the region (0 inside).
pub fn distance(shape: &Shape, p: Vec3) -> f64 {
    match shape {
        Shape::Sphere { centre, radius } => (norm(sub(p, *centre)) - radius).max(0.0),
        Shape::Circle { centre, radius } => {
            ((p[0] - centre[0]).powi(2) + (p[1] - centre[1]).powi(2)).sqrt().max(*radius) - radius
        }
        Shape::Cuboid { origin, extents, axes } => {
            let edges = cuboid_edges(*extents, *axes);
            let d = sub(p, *origin);
            let t = solve_cols(edges, d);
            if t.iter().all(|c| (0.0..=1.0).contains(c)) {
                return 0.0;
            }
            box_least_squares(&edges, d)
        }
        Shape::Square { bottom_left, extents, axes } => {
            let edges = square_edges(*extents, *axes);
            let d = [p[0] - bottom_left[0], p[1] - bottom_left[1], 0.0];
            box_least_squares(&edges, d)
        }
        Shape::Cylinder { origin, axis, height, radius } => {
            // Local frame (e1, e2, axis); the solid is a rectangle [0, r] × [0, h] in (ρ, z).
            let helper = if axis[0].abs() < 0.9 { [1.0, 0.0, 0.0] } else { [0.0, 1.0, 0.0] };
            let e1 = scale(cross(*axis, helper), 1.0 / norm(cross(*axis, helper)));
            let e2 = cross(*axis, e1);
            let d = sub(p, *origin);
            let (x, y, z) = (dot(d, e1), dot(d, e2), dot(d, *axis));
            let rho = (x * x + y * y).sqrt();
            let dr = if rho > *radius { rho - radius } else { 0.0 };
            let dz = if z < 0.0 {
                -z
            } else if z > *height {
                z - height
            } else {
                0.0
            };
            (dr * dr + dz * dz).sqrt()
        }
        Shape::Polygon { vertices, height, axis } => {
            let (base, n) = flattened(vertices);
            let sweep = scale(*axis, *height);
            // Moving p along the axis by -t lands on the base plane.
            let t = dot(sub(p, base[0]), n) / dot(*axis, n);
            let landed = sub(p, scale(*axis, t));
            if (0.0..=*height).contains(&t) && winding(landed, &base, n).abs() > 0.5 {
                return 0.0;
            }
            let top: Vec<Vec3> = base.iter().map(|v| add(*v, sweep)).collect();
            let mut best = polygon_distance(p, &base, n).min(polygon_distance(p, &top, n));
            for i in 0..base.len() {
                let edge = sub(base[(i + 1) % base.len()], base[i]);
                best = best.min(box_least_squares(&[edge, sweep], sub(p, base[i])));
            }
            best
        }
    }
}

/// The mobile-zone centre as its definition reads: sphere/circle centre, box and rectangle centres
/// as the mean of their corners, cylinder axis midpoint, polygon area centroid (by fan
/// triangulation from vertex 0) moved half the sweep.
pub fn centre(shape: &Shape) -> Vec3 {
    match shape {
        Shape::Sphere { centre, .. } | Shape::Circle { centre, .. } => *centre,
        Shape::Cuboid { origin, extents, axes } => {
            let e = cuboid_edges(*extents, *axes);
            let mut sum = [0.0; 3];
            for bits in 0..8 {
                let mut c = *origin;
                for (i, edge) in e.iter().enumerate() {
                    if bits >> i & 1 == 1 {
                        c = add(c, *edge);
                    }
                }
                sum = add(sum, c);
            }
            scale(sum, 1.0 / 8.0)
        }
        Shape::Square { bottom_left, extents, axes } => {
            let e = square_edges(*extents, *axes);
            let c = add(*bottom_left, scale(add(e[0], e[1]), 0.5));
            [c[0], c[1], bottom_left[2]]
        }
        Shape::Cylinder { origin, axis, height, .. } => add(*origin, scale(*axis, height / 2.0)),
        Shape::Polygon { vertices, height, axis } => {
            let (base, n) = flattened(vertices);
            let mut weighted = [0.0; 3];
            let mut area = 0.0;
            for i in 1..base.len() - 1 {
                let a = dot(cross(sub(base[i], base[0]), sub(base[i + 1], base[0])), n) / 2.0;
                let c = scale(add(add(base[0], base[i]), base[i + 1]), 1.0 / 3.0);
                weighted = add(weighted, scale(c, a));
                area += a;
            }
            add(scale(weighted, 1.0 / area), scale(*axis, height / 2.0))
        }
    }
}
