//! The zone regions as parry3d-f64 shapes: a second independent reference for the property
//! tests, and the other side of the narrow-phase benchmark (`benches/narrow.rs` includes this
//! file by path).
//!
//! Each shape is built in its own local frame and placed with a [`Pose`], as parry expects, so
//! its arithmetic works on numbers of the zone's size rather than the site's:
//!
//! - sphere: a [`Ball`] at the centre;
//! - cuboid with orthogonal axes: a [`Cuboid`] at the box centre, turned by the axes (the third
//!   axis flipped when the given ones are left-handed; a box is symmetric about its centre);
//!   with oblique axes, the [`ConvexPolyhedron`] hull of its eight corners (a prism over one
//!   face);
//! - circle and square, infinite in z: the distance in XY, measured as the distance from the
//!   point moved to z = 0 to a right prism 2 m tall centred on z = 0 (its closest point is then
//!   in z = 0 too): a [`Cylinder`] turned onto z, a [`Cuboid`] for a rectangle, a
//!   [`ConvexPolyhedron`] for an oblique parallelogram;
//! - cylinder: a [`Cylinder`] (parry's runs along its local y) at the axis midpoint, turned onto
//!   the axis;
//! - polygon prism: the hull of the base and top corners when the polygon is convex; otherwise a
//!   closed [`TriMesh`] (caps by ear clipping, two triangles per side) with outward triangles and
//!   [`TriMeshFlags::ORIENTED`], whose angle-weighted pseudo-normals tell inside from outside.
//!
//! [`ParryRegion::new`] takes these shapes. [`ParryRegion::meshed`] makes every prism, the
//! oblique cuboid and square included, such a [`TriMesh`] instead of a [`ConvexPolyhedron`]:
//! parry measures a convex polyhedron with GJK, which now and then stops at a wrong point (for
//! points just outside the boundary, off by up to metres), while a mesh is measured triangle by
//! triangle, exactly up to rounding. The tests take the meshed form as their reference.
//!
//! The distance is parry's solid projection: 0 when parry says inside, else the length to the
//! projected point. Containment is parry's `contains_point`, with no tolerance.
// Each user takes a different subset of this.
#![allow(dead_code)]

use parry3d_f64::math::{Matrix, Pose, Rotation, Vector};
use parry3d_f64::query::{PointProjection, PointQuery};
use parry3d_f64::shape::{Ball, ConvexPolyhedron, Cuboid, Cylinder, TriMesh, TriMeshFlags};
use zonecast_geometry::{Shape, Vec3};

/// Half the height of the prism that stands for a 2D shape: any positive value gives the same XY
/// distance for points at z = 0.
const FLAT_HALF_HEIGHT: f64 = 1.0;

/// Largest `|cos|` between axes that still counts as orthogonal (as `Region` decides).
const ORTHOGONAL_COS: f64 = 1e-12;

/// A zone region as a parry3d-f64 shape placed by a pose.
#[derive(Clone)]
pub struct ParryRegion {
    pose: Pose,
    solid: Solid,
    /// Whether the region is a 2D shape: points are moved to z = 0 first.
    flat: bool,
}

/// The parry shape behind a region, held by value so the calls dispatch statically.
#[derive(Clone)]
enum Solid {
    Ball(Ball),
    Cuboid(Cuboid),
    Cylinder(Cylinder),
    Convex(ConvexPolyhedron),
    Mesh(TriMesh),
}

fn v(p: Vec3) -> Vector {
    Vector::new(p[0], p[1], p[2])
}

/// The rotation taking the local x, y, z to the orthonormal `axes`, which may be left-handed: the
/// third is flipped then (the shapes this serves are symmetric in it).
fn frame_rotation(axes: [Vector; 3]) -> Rotation {
    let third = if axes[0].cross(axes[1]).dot(axes[2]) < 0.0 { -axes[2] } else { axes[2] };
    Rotation::from_mat3(&Matrix::from_cols(axes[0], axes[1], third)).normalize()
}

fn orthogonal(axes: &[Vector]) -> bool {
    (0..axes.len()).all(|i| axes[i].dot(axes[(i + 1) % axes.len()]).abs() <= ORTHOGONAL_COS)
}

/// The prism over the planar ring `base` (world coordinates, either orientation) swept by
/// `sweep`, placed at the ring's vertex mean: the hull of its corners when `convex` (and not
/// `meshed`), else a closed oriented mesh.
fn prism(base: &[Vector], sweep: Vector, convex: bool, meshed: bool) -> (Pose, Solid) {
    let centre = base.iter().copied().sum::<Vector>() / base.len() as f64;
    let mut local: Vec<Vector> = base.iter().map(|p| *p - centre).collect();
    let mut top: Vec<Vector> = local.iter().map(|p| *p + sweep).collect();
    let pose = Pose::from_translation(centre);
    if convex && !meshed {
        local.append(&mut top);
        return (pose, Solid::Convex(ConvexPolyhedron::from_convex_hull(&local).expect("a prism spans a volume")));
    }
    // Newell's normal; the ring is made counter-clockwise about the side the sweep goes to.
    let k = local.len();
    let mut n = (0..k).map(|i| local[i].cross(local[(i + 1) % k])).sum::<Vector>();
    if n.dot(sweep) < 0.0 {
        local.reverse();
        top.reverse();
        n = -n;
    }
    // In-plane axes from the first edge, which validation keeps longer than a micrometre.
    let u = (local[1] - local[0]).normalize();
    let w = n.normalize().cross(u);
    let ring: Vec<[f64; 2]> = local.iter().map(|p| [p.dot(u), p.dot(w)]).collect();
    // Vertices 0..k are the base, k..2k the top; outward triangles throughout.
    local.append(&mut top);
    let k = k as u32;
    let mut triangles = Vec::new();
    for [a, b, c] in ear_clipping(&ring) {
        // The base faces away from the sweep: clockwise about n; the top towards it.
        triangles.push([a, c, b]);
        triangles.push([a + k, b + k, c + k]);
    }
    for i in 0..k {
        let j = (i + 1) % k;
        triangles.push([i, j, j + k]);
        triangles.push([i, j + k, i + k]);
    }
    let mesh = TriMesh::with_flags(local, triangles, TriMeshFlags::ORIENTED).expect("a prism has triangles");
    (pose, Solid::Mesh(mesh))
}

impl ParryRegion {
    /// The parry shape of a validated `shape`, as listed above.
    pub fn new(shape: &Shape) -> Self {
        Self::build(shape, false)
    }

    /// The same with every prism a [`TriMesh`], measured exactly (see above).
    pub fn meshed(shape: &Shape) -> Self {
        Self::build(shape, true)
    }

    fn build(shape: &Shape, meshed: bool) -> Self {
        let (pose, solid, flat) = match shape {
            Shape::Sphere { centre, radius } => {
                (Pose::from_translation(v(*centre)), Solid::Ball(Ball::new(*radius)), false)
            }
            Shape::Circle { centre, radius } => {
                let turn = Rotation::from_rotation_arc(Vector::Y, Vector::Z);
                let pose = Pose::from_parts(Vector::new(centre[0], centre[1], 0.0), turn);
                (pose, Solid::Cylinder(Cylinder::new(FLAT_HALF_HEIGHT, *radius)), true)
            }
            Shape::Cuboid { origin, extents, axes } => {
                let a = axes.map(v);
                // Edge i solves (x − origin)·aᵢ = extentᵢ, (x − origin)·aⱼ = 0: along the dual basis.
                let det = a[0].dot(a[1].cross(a[2]));
                let edges = [0, 1, 2].map(|i| a[(i + 1) % 3].cross(a[(i + 2) % 3]) * (extents[i] / det));
                if orthogonal(&a) {
                    let centre = v(*origin) + (edges[0] + edges[1] + edges[2]) * 0.5;
                    let pose = Pose::from_parts(centre, frame_rotation(a));
                    (pose, Solid::Cuboid(Cuboid::new(v(*extents) * 0.5)), false)
                } else {
                    let o = v(*origin);
                    let (pose, solid) =
                        prism(&[o, o + edges[0], o + edges[0] + edges[1], o + edges[1]], edges[2], true, meshed);
                    (pose, solid, false)
                }
            }
            Shape::Square { bottom_left, extents, axes } => {
                let a = [v(axes[0]), v(axes[1]), Vector::Z];
                let det = a[0].x * a[1].y - a[0].y * a[1].x;
                let edges = [
                    Vector::new(a[1].y, -a[1].x, 0.0) * (extents[0] / det),
                    Vector::new(-a[0].y, a[0].x, 0.0) * (extents[1] / det),
                ];
                let origin = Vector::new(bottom_left[0], bottom_left[1], -FLAT_HALF_HEIGHT);
                if orthogonal(&a[..2]) {
                    let centre = origin + (edges[0] + edges[1]) * 0.5 + Vector::Z * FLAT_HALF_HEIGHT;
                    let half = Vector::new(extents[0] / 2.0, extents[1] / 2.0, FLAT_HALF_HEIGHT);
                    (Pose::from_parts(centre, frame_rotation(a)), Solid::Cuboid(Cuboid::new(half)), true)
                } else {
                    let base = [origin, origin + edges[0], origin + edges[0] + edges[1], origin + edges[1]];
                    let (pose, solid) = prism(&base, Vector::Z * (2.0 * FLAT_HALF_HEIGHT), true, meshed);
                    (pose, solid, true)
                }
            }
            Shape::Cylinder { origin, axis, height, radius } => {
                let axis = v(*axis);
                let pose =
                    Pose::from_parts(v(*origin) + axis * (height / 2.0), Rotation::from_rotation_arc(Vector::Y, axis));
                (pose, Solid::Cylinder(Cylinder::new(height / 2.0, *radius)), false)
            }
            Shape::Polygon { vertices, height, axis } => {
                let (pose, solid) = polygon_prism(vertices, *height, v(*axis), meshed);
                (pose, solid, false)
            }
        };
        Self { pose, solid, flat }
    }

    /// Which parry shape stands for the region, for reports.
    pub fn parry_shape(&self) -> &'static str {
        match self.solid {
            Solid::Ball(_) => "Ball",
            Solid::Cuboid(_) => "Cuboid",
            Solid::Cylinder(_) => "Cylinder",
            Solid::Convex(_) => "ConvexPolyhedron",
            Solid::Mesh(_) => "TriMesh",
        }
    }

    fn point(&self, p: Vec3) -> Vector {
        Vector::new(p[0], p[1], if self.flat { 0.0 } else { p[2] })
    }

    /// Whether parry finds `p` inside the region (no tolerance).
    #[inline]
    pub fn contains(&self, p: Vec3) -> bool {
        let (m, q) = (&self.pose, self.point(p));
        match &self.solid {
            Solid::Ball(s) => s.contains_point(m, q),
            Solid::Cuboid(s) => s.contains_point(m, q),
            Solid::Cylinder(s) => s.contains_point(m, q),
            Solid::Convex(s) => s.contains_point(m, q),
            Solid::Mesh(s) => s.contains_point(m, q),
        }
    }

    /// Distance from `p` to the region, 0 inside: parry's solid projection.
    #[inline]
    pub fn distance(&self, p: Vec3) -> f64 {
        let (m, q) = (&self.pose, self.point(p));
        let projection: PointProjection = match &self.solid {
            Solid::Ball(s) => s.project_point(m, q, true),
            Solid::Cuboid(s) => s.project_point(m, q, true),
            Solid::Cylinder(s) => s.project_point(m, q, true),
            Solid::Convex(s) => s.project_point(m, q, true),
            Solid::Mesh(s) => s.project_point(m, q, true),
        };
        if projection.is_inside { 0.0 } else { (q - projection.point).length() }
    }
}

/// A polygon prism: the base ring flattened onto its best-fit plane (vertex centroid, Newell
/// normal, as the crate fits it).
fn polygon_prism(vertices: &[Vec3], height: f64, axis: Vector, meshed: bool) -> (Pose, Solid) {
    let given: Vec<Vector> = vertices.iter().copied().map(v).collect();
    let centre = given.iter().copied().sum::<Vector>() / given.len() as f64;
    let k = given.len();
    let n = (0..k).map(|i| (given[i] - centre).cross(given[(i + 1) % k] - centre)).sum::<Vector>().normalize();
    let base: Vec<Vector> = given.iter().map(|p| *p - n * (*p - centre).dot(n)).collect();
    // Convex when every corner turns the same way about the normal (straight corners allowed).
    let turns: Vec<f64> =
        (0..k).map(|i| (base[i] - base[(i + k - 1) % k]).cross(base[(i + 1) % k] - base[i]).dot(n)).collect();
    let convex = turns.iter().all(|t| *t >= 0.0) || turns.iter().all(|t| *t <= 0.0);
    prism(&base, axis * height, convex, meshed)
}

/// Triangles (counter-clockwise) of a simple counter-clockwise ring, by ear clipping: a corner
/// that turns left and holds no other remaining vertex is cut off, until three are left.
fn ear_clipping(ring: &[[f64; 2]]) -> Vec<[u32; 3]> {
    let turn = |a: [f64; 2], b: [f64; 2], c: [f64; 2]| (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
    let mut left: Vec<usize> = (0..ring.len()).collect();
    let mut triangles = Vec::new();
    while left.len() > 3 {
        let m = left.len();
        let is_ear = |i: usize| {
            let (a, b, c) = (left[(i + m - 1) % m], left[i], left[(i + 1) % m]);
            let (pa, pb, pc) = (ring[a], ring[b], ring[c]);
            turn(pa, pb, pc) > 0.0
                && left.iter().filter(|q| ![a, b, c].contains(q)).all(|q| {
                    let p = ring[*q];
                    !(turn(pa, pb, p) >= 0.0 && turn(pb, pc, p) >= 0.0 && turn(pc, pa, p) >= 0.0)
                })
        };
        // A simple polygon always has an ear; should rounding hide it, the sharpest left turn goes.
        let i = (0..m).find(|i| is_ear(*i)).unwrap_or_else(|| {
            (0..m)
                .max_by(|x, y| {
                    let t = |i: usize| turn(ring[left[(i + m - 1) % m]], ring[left[i]], ring[left[(i + 1) % m]]);
                    t(*x).total_cmp(&t(*y))
                })
                .unwrap_or(0)
        });
        triangles.push([left[(i + m - 1) % m], left[i], left[(i + 1) % m]].map(|x| x as u32));
        left.remove(i);
    }
    triangles.push([left[0], left[1], left[2]].map(|x| x as u32));
    triangles
}
