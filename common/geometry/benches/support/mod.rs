//! Random zones and positions for the benchmarks: a 1 km × 1 km × 20 m site with mixed shapes.
// Each benchmark uses a different subset of these.
#![allow(dead_code)]

use zonecast_geometry::{GeometryType, Region, Shape, Vec3, validate};

/// Site extent in metres: x and y in `[0, SITE_XY]`, z in `[0, SITE_Z]`.
pub const SITE_XY: f64 = 1000.0;
/// Height of the site.
pub const SITE_Z: f64 = 20.0;

/// SplitMix64: small, fast and reproducible, which is all a benchmark's scene needs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A uniform point of the site.
    pub fn position(&mut self) -> Vec3 {
        [self.range(0.0, SITE_XY), self.range(0.0, SITE_XY), self.range(0.0, SITE_Z)]
    }

    /// A uniformly random unit vector.
    fn unit(&mut self) -> Vec3 {
        loop {
            let v = [self.range(-1.0, 1.0), self.range(-1.0, 1.0), self.range(-1.0, 1.0)];
            let n = dot(v, v).sqrt();
            if n > 0.1 && n <= 1.0 {
                return v.map(|c| c / n);
            }
        }
    }

    /// A random right-handed orthonormal frame.
    fn frame(&mut self) -> [Vec3; 3] {
        let a = self.unit();
        let r = self.unit();
        let b = sub(r, scale(a, dot(r, a)));
        let b = scale(b, 1.0 / dot(b, b).sqrt());
        [a, b, cross(a, b)]
    }

    fn size(&mut self) -> f64 {
        self.range(1.0, 20.0)
    }

    /// `GeometryData` rows of a random zone of `kind` somewhere in the site; may be invalid (the
    /// caller retries).
    fn rows(&mut self, kind: GeometryType) -> Vec<Vec3> {
        let at = self.position();
        match kind {
            GeometryType::Sphere | GeometryType::Circle => vec![at, [self.size() / 2.0, 0.0, 0.0]],
            GeometryType::Cuboid => {
                let mut axes = self.frame();
                if self.below(2) == 0 {
                    // Oblique: cuboid axes need not be orthogonal, only not (nearly) parallel.
                    for a in &mut axes {
                        *a = [0, 1, 2].map(|i| a[i] + self.range(-0.4, 0.4));
                    }
                }
                vec![at, [self.size(), self.size(), self.size()], axes[0], axes[1], axes[2]]
            }
            GeometryType::Square => {
                let t = self.range(0.0, std::f64::consts::TAU);
                let skew = if self.below(2) == 0 { self.range(-0.6, 0.6) } else { 0.0 };
                let u = t + std::f64::consts::FRAC_PI_2 + skew;
                vec![at, [self.size(), self.size(), 0.0], [t.cos(), t.sin(), 0.0], [u.cos(), u.sin(), 0.0]]
            }
            GeometryType::Cylinder => vec![at, self.unit(), [self.size(), self.size() / 2.0, 0.0]],
            GeometryType::Polygon => {
                let n = 5 + self.below(8);
                let mut angles: Vec<f64> = (0..n).map(|_| self.range(0.0, std::f64::consts::TAU)).collect();
                angles.sort_by(f64::total_cmp);
                let [a, b, c] = self.frame();
                let mut rows: Vec<Vec3> = angles
                    .iter()
                    .map(|t| {
                        let r = self.size() / 2.0;
                        add(at, add(scale(a, r * t.cos()), scale(b, r * t.sin())))
                    })
                    .collect();
                rows.push([self.size(), 0.0, 0.0]);
                let tilt = add(scale(a, self.range(-0.5, 0.5)), scale(b, self.range(-0.5, 0.5)));
                rows.push(add(c, tilt));
                rows
            }
        }
    }

    /// A random valid region of the `i`-th kind in `GeometryType::ALL` order (mod 6).
    pub fn region(&mut self, i: usize) -> Region {
        Region::new(&self.shape(GeometryType::ALL[i % 6]))
    }

    /// A random valid shape of `kind` somewhere in the site.
    pub fn shape(&mut self, kind: GeometryType) -> Shape {
        loop {
            if let Ok(shape) = validate(kind, &self.rows(kind)) {
                return shape;
            }
        }
    }

    /// A random convex polygon prism: the vertices of a polygon shape at one radius.
    pub fn convex_polygon(&mut self) -> Shape {
        loop {
            let mut rows = self.rows(GeometryType::Polygon);
            let n = rows.len() - 2;
            let centre = scale(rows[..n].iter().fold([0.0; 3], |c, v| add(c, *v)), 1.0 / n as f64);
            let r = self.size() / 2.0;
            for v in &mut rows[..n] {
                let d = sub(*v, centre);
                *v = add(centre, scale(d, r / dot(d, d).sqrt()));
            }
            if let Ok(shape) = validate(GeometryType::Polygon, &rows) {
                return shape;
            }
        }
    }
}

fn add(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn scale(v: Vec3, k: f64) -> Vec3 {
    v.map(|c| c * k)
}

fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
