//! [`Scene`]: every zone region of a site, indexed so that a position is tested only against the
//! regions whose boxes it is near.
//!
//! Static regions live in two bounding-volume hierarchies ([`bvh`]): one for 3D shapes and one for
//! 2D shapes (circle, square), whose boxes span z ±1e9 and would otherwise make every node they
//! fall in as tall as the world. Movable (mobile) regions, whose boxes change with their source
//! device's position, live in a spatial hash grid ([`grid`]).

mod bvh;
mod grid;

use crate::aabb::Aabb;
use crate::region::Region;
use crate::vector::Vec3;
use bvh::{Bvh, Query};
use grid::{Grid, ball_box};

/// Static zones in a bounding-volume hierarchy plus movable (mobile) zones in a spatial hash grid,
/// so a position is tested only against candidates.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The static regions, stored in leaf order of the hierarchies so that the candidates of one
    /// position, which are close in space, are close in memory too.
    regions: Vec<Region>,
    /// Caller's index → position in `regions`.
    slot: Vec<u32>,
    solid: Bvh,
    flat: Bvh,
    movable: Grid,
}

/// Bytes a [`Scene`] holds, by part (vector capacities and hash-map buckets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SceneMemory {
    /// The prepared static regions, inline and on the heap.
    pub regions: usize,
    /// The two hierarchies over the static regions.
    pub static_index: usize,
    /// The movable grid.
    pub movable_index: usize,
}

impl SceneMemory {
    /// All parts together.
    pub fn total(&self) -> usize {
        self.regions + self.static_index + self.movable_index
    }
}

impl Scene {
    /// Static regions, indexed 0..n in the given order (the caller keeps its own ids in a parallel
    /// Vec). No movable regions yet.
    ///
    /// # Panics
    ///
    /// With more than `u32::MAX` regions.
    pub fn build(static_regions: Vec<Region>) -> Self {
        assert!(u32::try_from(static_regions.len()).is_ok(), "a scene holds at most u32::MAX static regions");
        let boxes = |flat: bool| {
            static_regions
                .iter()
                .enumerate()
                .filter(move |(_, r)| r.is_flat() == flat)
                .map(|(i, r)| (i as u32, r.aabb()))
        };
        let solid = Bvh::build(boxes(false));
        let flat = Bvh::build(boxes(true));
        // Cloning in leaf order also lays the regions' heap parts out in that order.
        let order: Vec<u32> = solid.ids().chain(flat.ids()).collect();
        let regions: Vec<Region> = order.iter().map(|i| static_regions[*i as usize].clone()).collect();
        drop(static_regions);
        let mut slot = vec![0; regions.len()];
        for (at, i) in order.iter().enumerate() {
            slot[*i as usize] = at as u32;
        }
        Self { regions, slot, solid, flat, movable: Grid::default() }
    }

    /// Static region `i`.
    ///
    /// # Panics
    ///
    /// When `i >= self.static_len()`.
    pub fn static_region(&self, i: usize) -> &Region {
        &self.regions[self.slot[i] as usize]
    }

    /// Number of static regions.
    pub fn static_len(&self) -> usize {
        self.regions.len()
    }

    /// Indexes of static regions whose AABB intersects the ball (p, margin) box. Appends to `out`
    /// (cleared by the caller), no allocation when `out` has capacity. Order unspecified.
    ///
    /// Every region within `margin` of `p` is among them (each AABB holds its region).
    pub fn static_candidates(&self, p: Vec3, margin: f64, out: &mut Vec<usize>) {
        let query = Query::new(ball_box(p, margin));
        self.solid.query(&query, out);
        self.flat.query(&query, out);
    }

    /// Temporary.
    pub fn visits(&self, p: Vec3, margin: f64) -> (usize, usize) {
        let q = Query::new(ball_box(p, margin));
        (self.solid.visits(&q), self.flat.visits(&q))
    }

    /// Inserts or moves movable region `key` to `aabb` (already translated to where it is now).
    pub fn set_movable(&mut self, key: u32, aabb: Aabb) {
        self.movable.set(key, aabb);
    }

    /// Removes movable region `key`; an unknown key is ignored.
    pub fn remove_movable(&mut self, key: u32) {
        self.movable.remove(key);
    }

    /// Number of movable regions.
    pub fn movable_len(&self) -> usize {
        self.movable.len()
    }

    /// Keys of movable regions whose AABB intersects the ball (p, margin) box. Appends to `out`
    /// (cleared by the caller). Order unspecified.
    pub fn movable_candidates(&self, p: Vec3, margin: f64, out: &mut Vec<u32>) {
        self.movable.query(&ball_box(p, margin), out);
    }

    /// Bytes held by the scene, by part.
    pub fn memory(&self) -> SceneMemory {
        SceneMemory {
            regions: self.regions.iter().map(Region::memory_bytes).sum::<usize>()
                + (self.regions.capacity() - self.regions.len()) * size_of::<Region>()
                + self.slot.capacity() * size_of::<u32>(),
            static_index: self.solid.memory_bytes() + self.flat.memory_bytes(),
            movable_index: self.movable.memory_bytes(),
        }
    }
}

impl Default for Scene {
    fn default() -> Self {
        Self::build(Vec::new())
    }
}
