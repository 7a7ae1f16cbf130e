//! [`Scene`]: every zone region of a site, indexed so that a position is tested only against the
//! regions whose boxes it is near.
//!
//! Static regions of about the typical size are listed in a fixed grid of tiles ([`tiles`]): a
//! position with a margin of up to [`tiles::PAD_M`] scans one tile's list. The few much larger than
//! the typical one (a whole hall around many machine cells) would be listed in many tiles; they
//! live in a bounding-volume hierarchy ([`bvh`]) instead. The boxes of 2D shapes (circle, square)
//! span z ±1e9; the tiles are XY only, and the hierarchy's splits follow the spread of the box
//! centres, which sit at z = 0, so 2D shapes never drive a split along z. Movable (mobile)
//! regions, whose boxes change with their source device's position, live in a spatial hash grid
//! ([`grid`]).
//!
//! Static regions can also be added, replaced and removed one at a time, each in a few
//! microseconds at 100,000 regions: a region the tiles accept (about the typical size, inside the
//! grid) is listed in or unlisted from the few tiles it covers, in place; any other change rebuilds
//! the hierarchy alone, over the regions outside the tiles, which are few. Once those are more than
//! twice as many as at the last whole build (plus [`REBUILD_SLACK`]), for instance after many
//! regions were added beyond the tiles' extent, the whole scene is built again. Either way the
//! queries answer exactly what a scene built from scratch over the same regions answers.
//!
//! A hierarchy over every static region would walk about 40 nodes per position at
//! 100,000 zones of 1–20 m on a square kilometre (16.7 overlapping boxes per position), with a
//! cache miss at nearly every node; the tiles answer the same query from one contiguous list.
//! Figures in `docs/benchmarks.md`.

mod bounds;
mod bvh;
mod grid;
mod tiles;

use crate::aabb::Aabb;
use crate::region::Region;
use crate::vector::Vec3;
use bounds::Query;
use bvh::Bvh;
use grid::{Grid, ball_box};
use tiles::Tiles;

/// Regions outside the tiles, beyond twice as many as at the last whole build, that make the next
/// change build the whole scene again.
const REBUILD_SLACK: usize = 1024;

/// Static zones in tiles and a bounding-volume hierarchy plus movable (mobile) zones in a spatial
/// hash grid, so a position is tested only against candidates.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The static regions, in the caller's order; their heap parts were laid out in tile order,
    /// then leaf order of the hierarchy, so that the candidates of one position, which are close
    /// in space, are close in memory too.
    regions: Vec<Region>,
    /// The static regions' exact boxes, in the caller's order.
    boxes: Vec<Aabb>,
    /// The static regions of about the typical size, by index.
    tiles: Tiles,
    /// The other static regions, by index.
    hierarchy: Bvh,
    /// Whether each static region is listed in the tiles (else it is in the hierarchy).
    tiled: Vec<bool>,
    /// Static regions in the hierarchy after the last whole build.
    built_large: usize,
    /// Movable regions, by the caller's key.
    movable: Grid,
}

/// The static regions near a position, with their distances from it: filled by
/// [`Scene::static_distances`]. Kept by the caller and reused, so that queries allocate nothing.
#[derive(Clone, Debug, Default)]
pub struct Nearby {
    indexes: Vec<usize>,
    distances: Vec<f64>,
}

impl Nearby {
    /// Each region's index (the caller's) with its distance, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.indexes.iter().copied().zip(self.distances.iter().copied())
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.indexes.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.indexes.is_empty()
    }
}

/// Bytes a [`Scene`] holds, by part (vector capacities and hash-map buckets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SceneMemory {
    /// The prepared static regions, inline and on the heap.
    pub regions: usize,
    /// The tiles and the hierarchy over the static regions, and their exact boxes.
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
    /// With `2³¹` regions or more.
    pub fn build(static_regions: Vec<Region>) -> Self {
        assert!(static_regions.len() < 1 << 31, "a scene holds fewer than 2^31 static regions");
        let boxes: Vec<Aabb> = static_regions.iter().map(Region::aabb).collect();
        let items: Vec<(u32, Aabb)> = boxes.iter().enumerate().map(|(i, b)| (i as u32, *b)).collect();
        let (tiles, large) = Tiles::build(&items);
        let mut tiled = vec![true; static_regions.len()];
        large.iter().for_each(|&i| tiled[i as usize] = false);
        let built_large = large.len();
        let (hierarchy, leaves) = Bvh::build(large.into_iter().map(|i| (i, boxes[i as usize])));
        // Cloning in tile order, then leaf order, lays the regions' heap parts out in space order.
        let mut regions: Vec<Option<Region>> = vec![None; static_regions.len()];
        for i in tiles.order(&boxes).into_iter().chain(leaves) {
            regions[i as usize] = Some(static_regions[i as usize].clone());
        }
        let regions = regions.into_iter().zip(static_regions).map(|(copy, given)| copy.unwrap_or(given)).collect();
        Self { regions, boxes, tiles, hierarchy, tiled, built_large, movable: Grid::default() }
    }

    /// Adds static region `region` with the next index ([`Scene::static_len`] before the call)
    /// and returns that index.
    ///
    /// # Panics
    ///
    /// With `2³¹` regions or more.
    pub fn push_static(&mut self, region: Region) -> usize {
        let i = self.regions.len();
        assert!(i < (1 << 31) - 1, "a scene holds fewer than 2^31 static regions");
        self.boxes.push(region.aabb());
        self.regions.push(region);
        self.tiled.push(false);
        let stale = self.list(i);
        self.settle(stale);
        i
    }

    /// Puts `region` in place of static region `i` (same index) and returns the one it replaces.
    ///
    /// # Panics
    ///
    /// When `i >= self.static_len()`.
    pub fn replace_static(&mut self, i: usize, region: Region) -> Region {
        let stale = self.unlist(i);
        self.boxes[i] = region.aabb();
        let old = std::mem::replace(&mut self.regions[i], region);
        let stale = self.list(i) | stale;
        self.settle(stale);
        old
    }

    /// Removes static region `i` and returns it; the last region takes index `i`, as in
    /// [`Vec::swap_remove`].
    ///
    /// # Panics
    ///
    /// When `i >= self.static_len()`.
    pub fn swap_remove_static(&mut self, i: usize) -> Region {
        let mut stale = self.unlist(i);
        let last = self.regions.len() - 1;
        if i != last {
            if self.tiled[last] {
                self.tiles.rename(last as u32, i as u32, &self.boxes[last]);
            } else {
                stale = true;
            }
        }
        self.boxes.swap_remove(i);
        self.tiled.swap_remove(i);
        let old = self.regions.swap_remove(i);
        self.settle(stale);
        old
    }

    /// Indexes static region `i`: in the tiles if they accept it, else in the hierarchy (then the
    /// answer is true: the hierarchy must be built again).
    fn list(&mut self, i: usize) -> bool {
        self.tiled[i] = self.tiles.accepts(&self.boxes[i]);
        if self.tiled[i] {
            self.tiles.insert(i as u32, &self.boxes[i]);
        }
        !self.tiled[i]
    }

    /// Takes static region `i` out of the index; true when it was in the hierarchy, which must be
    /// built again.
    fn unlist(&mut self, i: usize) -> bool {
        if self.tiled[i] {
            self.tiles.remove(i as u32, &self.boxes[i]);
        }
        !self.tiled[i]
    }

    /// After a change: builds the hierarchy again when it is `stale`, or the whole scene when the
    /// regions outside the tiles have grown too many (see the module documentation).
    fn settle(&mut self, stale: bool) {
        if !stale {
            return;
        }
        let large: Vec<(u32, Aabb)> =
            (0..self.regions.len()).filter(|&i| !self.tiled[i]).map(|i| (i as u32, self.boxes[i])).collect();
        if large.len() > 2 * self.built_large + REBUILD_SLACK {
            let movable = std::mem::take(&mut self.movable);
            *self = Self::build(std::mem::take(&mut self.regions));
            self.movable = movable;
        } else {
            self.hierarchy = Bvh::build(large).0;
        }
    }

    /// Static region `i`.
    ///
    /// # Panics
    ///
    /// When `i >= self.static_len()`.
    pub fn static_region(&self, i: usize) -> &Region {
        &self.regions[i]
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
        let first = out.len();
        self.tiles.query(p, margin, &query, &self.boxes, out);
        self.hierarchy.query(&query, &self.boxes, out);
        // Ask for every candidate's data now, so that the cache misses overlap instead of each
        // stalling the caller's distance computation in turn: first the regions themselves,
        // then their heap parts, which needs the regions.
        for &i in &out[first..] {
            crate::region::prefetch(&self.regions[i]);
        }
        for &i in &out[first..] {
            self.regions[i].prefetch_heap();
        }
    }

    /// Asks the processor to load the index data a query at `p` reads first, without waiting for
    /// it: called for the next position while the current one is evaluated, it overlaps the two
    /// positions' cache misses. No effect but on speed.
    pub fn prefetch(&self, p: Vec3) {
        self.tiles.prefetch(p);
    }

    /// The [`Scene::static_candidates`] of (`p`, `margin`) with the distance of each from `p`,
    /// exact up to `margin` and some value above it beyond ([`Region::distance_within`]): what
    /// an evaluation needs, in one call that reads each region once. Replaces `out`'s contents.
    pub fn static_distances(&self, p: Vec3, margin: f64, out: &mut Nearby) {
        out.indexes.clear();
        out.distances.clear();
        self.static_candidates(p, margin, &mut out.indexes);
        out.distances.extend(out.indexes.iter().map(|&i| self.regions[i].distance_within(p, margin)));
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
                + (self.regions.capacity() - self.regions.len()) * size_of::<Region>(),
            static_index: self.tiles.memory_bytes()
                + self.hierarchy.memory_bytes()
                + self.tiled.capacity()
                + self.boxes.capacity() * size_of::<Aabb>(),
            movable_index: self.movable.memory_bytes(),
        }
    }
}

impl Default for Scene {
    fn default() -> Self {
        Self::build(Vec::new())
    }
}
