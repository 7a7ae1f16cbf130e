//! A fixed grid of square tiles in XY over the static boxes, for the common query: a position with
//! a small margin.
//!
//! Each box is listed in every tile that the box grown by [`PAD_M`] touches. A query whose margin
//! is at most [`PAD_M`] then needs only the one tile its position lies in, and scans that tile's
//! list front to back: no tree walk, no dependent loads, and every item is listed there at most
//! once. A larger margin scans every tile its box touches and removes the repeats. z is tested per
//! item, so 2D shapes (z ±1e9) need nothing special.
//!
//! An entry is the box's id and its bounds in 16-bit steps: across the tile grown by the pad in x
//! and y, across the z range of the 3D boxes in z, rounded outward and clamped. That is 16 bytes
//! an entry, so a tile's list spans few cache lines. The steps only pre-select: a box is reported
//! when its exact box intersects the query, which the steps settle whenever the query overlaps
//! them by a few steps, and the exact box (kept by the caller) settles otherwise.
//!
//! The tile side follows the boxes: the median of their larger XY extent, so that a typical box
//! touches a handful of tiles. Boxes much larger than a tile, which would be listed in many, are
//! left to the caller (the scene keeps them in a hierarchy). The tiles are one dense array over the
//! listed boxes' extent; when that extent is sparse (sites far apart) the side doubles until the
//! array is at most a few tiles per box.

use super::bounds::Query;
use crate::aabb::Aabb;
use crate::vector::Vec3;

/// Margins up to this (m) are answered from a single tile. The evaluator's margin is the device
/// radius plus the exit tolerance, typically well below it; larger margins are answered exactly
/// too, from several tiles.
pub(crate) const PAD_M: f64 = 1.0;

/// Listing pad: [`PAD_M`] plus a millimetre, so that rounding of the tile arithmetic can never
/// leave a box out of the tile of a position within [`PAD_M`] of it.
const LIST_PAD_M: f64 = PAD_M + 1e-3;

/// A box whose padded XY extent is longer than this many tile sides (on either axis) is not
/// listed; the caller indexes it otherwise.
const MAX_SPAN_TILES: f64 = 4.0;

/// Smallest tile side (m): below it the lists of small boxes would repeat them too often.
const MIN_SIDE_M: f64 = 1.0;

/// At most this many tiles per listed box (plus a fixed allowance) before the side doubles.
const TILES_PER_BOX: usize = 8;

/// A box with the caller's id.
type Item = (u32, Aabb);

/// One listed box: its bounds in the steps of its tile's [`Frame`], and the caller's id.
#[derive(Clone, Copy, Debug)]
struct Entry {
    lo: [u16; 3],
    hi: [u16; 3],
    id: u32,
}

/// Steps a query must overlap a box's 16-bit bounds by to be sure, without the exact box, that it
/// overlaps the box: each bound is off by less than one step, plus rounding.
const SURE_STEPS: u16 = 3;

/// A map from coordinates to 16-bit steps, rounded outward and clamped (so monotonic: boxes that
/// intersect have step bounds that intersect).
#[derive(Clone, Copy, Debug, Default)]
struct Frame {
    base: Vec3,
    scale: Vec3,
}

impl Frame {
    /// The step at or below each coordinate (truncation is the floor once clamped at 0, and
    /// needs no `floor` call, which baseline x86-64 makes a library call).
    fn lo(&self, v: Vec3) -> [u16; 3] {
        [0, 1, 2].map(|i| ((v[i] - self.base[i]) * self.scale[i]).clamp(0.0, f64::from(u16::MAX)) as u16)
    }

    /// A step at or above each coordinate, at most one above its ceiling.
    fn hi(&self, v: Vec3) -> [u16; 3] {
        [0, 1, 2].map(|i| ((v[i] - self.base[i]) * self.scale[i]).clamp(0.0, f64::from(u16::MAX - 1)) as u16 + 1)
    }
}

/// Static boxes listed by tile; see the module documentation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tiles {
    /// XY of the low corner of tile (0, 0).
    origin: [f64; 2],
    side: f64,
    nx: usize,
    ny: usize,
    /// Steps per metre in x and y: `u16::MAX` across a tile grown by the listing pad.
    xy_scale: f64,
    /// z of step 0 and steps per metre, shared by every tile.
    z_base: f64,
    z_scale: f64,
    /// Tile `t` (row-major, `t = y·nx + x`) lists `entries[ranges[t][0]..ranges[t][1]]`.
    ranges: Vec<[u32; 2]>,
    /// Room for entries of tile `t` from `ranges[t][0]` on: a list that grows past it moves to the
    /// end of `entries` with twice the room.
    room: Vec<u32>,
    entries: Vec<Entry>,
    /// Entries left behind by lists that moved, so in no list.
    dead: usize,
}

/// What fills the room of a list past its end.
const UNUSED: Entry = Entry { lo: [0; 3], hi: [0; 3], id: u32::MAX };

/// Moved-away entries are compacted once they are more than this many and half of all.
const COMPACT_MIN: usize = 1024;

impl Tiles {
    /// Lists the boxes of `items` that are small enough; returns the tiles and the ids of the
    /// boxes left out.
    pub(crate) fn build(items: &[Item]) -> (Self, Vec<u32>) {
        let mut extents: Vec<f64> = items
            .iter()
            .map(|(_, b)| (b.max[0] - b.min[0]).max(b.max[1] - b.min[1]))
            .filter(|e| e.is_finite())
            .collect();
        if extents.is_empty() {
            return (Self::default(), items.iter().map(|(id, _)| *id).collect());
        }
        let mid = extents.len() / 2;
        let mut side = extents.select_nth_unstable_by(mid, f64::total_cmp).1.max(MIN_SIDE_M);
        loop {
            let listed = |b: &Aabb| {
                (0..2)
                    .all(|i| (b.max[i] - b.min[i] + 2.0 * LIST_PAD_M) <= MAX_SPAN_TILES * side && b.min[i].is_finite())
            };
            let (small, large): (Vec<&Item>, Vec<&Item>) = items.iter().partition(|(_, b)| listed(b));
            let Some(extent) = Aabb::enclosing(small.iter().flat_map(|(_, b)| [b.min, b.max])) else {
                return (Self::default(), large.iter().map(|(id, _)| *id).collect());
            };
            let extent = extent.expanded(LIST_PAD_M);
            // `as` saturates: a site spanning more tiles than there are numbers counts as that
            // many, and the side grows below until the grid is small enough.
            let count = |i: usize| (((extent.max[i] - extent.min[i]) / side).floor() as usize).saturating_add(1);
            let (nx, ny) = (count(0), count(1));
            if nx.saturating_mul(ny) > TILES_PER_BOX * small.len() + 4096 {
                side *= 2.0;
                continue;
            }
            // The z range of the 3D boxes (2D ones span ±1e9 and are clamped to every step).
            let solid = small.iter().filter(|(_, b)| b.max[2] - b.min[2] < 1e6);
            let (z_lo, z_hi) =
                solid.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (_, b)| (lo.min(b.min[2]), hi.max(b.max[2])));
            let (z_base, z_scale) =
                if z_hi > z_lo { (z_lo, f64::from(u16::MAX) / (z_hi - z_lo)) } else { (z_lo.min(0.0), 1.0) };
            let xy_scale = f64::from(u16::MAX) / (side + 2.0 * LIST_PAD_M);
            let origin = [extent.min[0], extent.min[1]];
            let mut tiles = Self { origin, side, nx, ny, xy_scale, z_base, z_scale, ..Self::default() };
            tiles.fill(&small);
            return (tiles, large.iter().map(|(id, _)| *id).collect());
        }
    }

    /// Lists every box of `small` in the tiles its padded extent touches (counting first, so the
    /// lists are one exact allocation).
    fn fill(&mut self, small: &[&Item]) {
        let mut counts = vec![0u32; self.nx * self.ny + 1];
        for (_, b) in small {
            self.each_tile(&b.expanded(LIST_PAD_M), |x, y| counts[y * self.nx + x] += 1);
        }
        let mut total = 0u32;
        for c in counts.iter_mut() {
            let n = *c;
            *c = total;
            total += n;
        }
        let mut next = counts.clone();
        let mut entries = vec![UNUSED; total as usize];
        for (id, b) in small {
            self.each_tile(&b.expanded(LIST_PAD_M), |x, y| {
                let (t, frame) = (y * self.nx + x, self.frame(x, y));
                entries[next[t] as usize] = Entry { lo: frame.lo(b.min), hi: frame.hi(b.max), id: *id };
                next[t] += 1;
            });
        }
        self.entries = entries;
        self.ranges = counts.windows(2).map(|w| [w[0], w[1]]).collect();
        self.room = self.ranges.iter().map(|[start, end]| end - start).collect();
    }

    /// Whether `b` can be listed: no larger than the boxes [`Tiles::build`] lists, and inside the
    /// grid once grown by the pad (so that every position near it finds it in its tile).
    pub(crate) fn accepts(&self, b: &Aabb) -> bool {
        self.nx > 0
            && (0..2).all(|i| {
                let n = if i == 0 { self.nx } else { self.ny };
                b.max[i] - b.min[i] + 2.0 * LIST_PAD_M <= MAX_SPAN_TILES * self.side
                    && b.min[i] - LIST_PAD_M >= self.origin[i]
                    && b.max[i] + LIST_PAD_M < self.origin[i] + n as f64 * self.side
            })
    }

    /// Lists box `id` in every tile its padded extent touches, as [`Tiles::build`] would have;
    /// `b` must be [accepted](Tiles::accepts).
    pub(crate) fn insert(&mut self, id: u32, b: &Aabb) {
        let (xs, ys) = self.tile_span(&b.expanded(LIST_PAD_M));
        for y in ys {
            for x in xs.clone() {
                let frame = self.frame(x, y);
                self.push(y * self.nx + x, Entry { lo: frame.lo(b.min), hi: frame.hi(b.max), id });
            }
        }
    }

    /// Removes box `id`, listed with box `b`, from every tile.
    pub(crate) fn remove(&mut self, id: u32, b: &Aabb) {
        let (xs, ys) = self.tile_span(&b.expanded(LIST_PAD_M));
        for y in ys {
            for x in xs.clone() {
                let [start, end] = &mut self.ranges[y * self.nx + x];
                let list = &mut self.entries[*start as usize..*end as usize];
                if let Some(k) = list.iter().position(|e| e.id == id) {
                    list.swap(k, list.len() - 1);
                    *end -= 1;
                }
            }
        }
    }

    /// Renames box `from`, listed with box `b`, to `to` in every tile.
    pub(crate) fn rename(&mut self, from: u32, to: u32, b: &Aabb) {
        let (xs, ys) = self.tile_span(&b.expanded(LIST_PAD_M));
        for y in ys {
            for x in xs.clone() {
                let [start, end] = self.ranges[y * self.nx + x];
                if let Some(e) = self.entries[start as usize..end as usize].iter_mut().find(|e| e.id == from) {
                    e.id = to;
                }
            }
        }
    }

    /// Appends `entry` to the list of tile `t`, moving the list to the end with more room when
    /// it has none left.
    fn push(&mut self, t: usize, entry: Entry) {
        let [start, end] = self.ranges[t];
        if end - start == self.room[t] {
            let room = (2 * self.room[t]).max(4);
            let at = u32::try_from(self.entries.len()).expect("fewer than 2^32 tile entries");
            self.entries.extend_from_within(start as usize..end as usize);
            self.entries.resize(self.entries.len() + (room - (end - start)) as usize, UNUSED);
            self.dead += self.room[t] as usize;
            self.ranges[t] = [at, at + (end - start)];
            self.room[t] = room;
        }
        let end = &mut self.ranges[t][1];
        self.entries[*end as usize] = entry;
        *end += 1;
        if self.dead > COMPACT_MIN && 2 * self.dead > self.entries.len() {
            self.compact();
        }
    }

    /// Lays the lists out end to end again, without the entries left behind by moves, each with
    /// room for a quarter more.
    fn compact(&mut self) {
        let mut entries = Vec::with_capacity(self.entries.len() - self.dead);
        for (range, room) in self.ranges.iter_mut().zip(&mut self.room) {
            let at = entries.len() as u32;
            let len = range[1] - range[0];
            entries.extend_from_slice(&self.entries[range[0] as usize..range[1] as usize]);
            *room = len + len / 4;
            entries.resize(entries.len() + (*room - len) as usize, UNUSED);
            *range = [at, at + len];
        }
        self.entries = entries;
        self.dead = 0;
    }

    /// The tile columns and rows `b` touches, clamped to the grid.
    fn tile_span(&self, b: &Aabb) -> (std::ops::RangeInclusive<usize>, std::ops::RangeInclusive<usize>) {
        (self.index(b.min[0], 0)..=self.index(b.max[0], 0), self.index(b.min[1], 1)..=self.index(b.max[1], 1))
    }

    /// The step frame of tile (`x`, `y`): x and y across the tile grown by the listing pad, z across
    /// the 3D boxes' range.
    fn frame(&self, x: usize, y: usize) -> Frame {
        Frame {
            base: [
                self.origin[0] + x as f64 * self.side - LIST_PAD_M,
                self.origin[1] + y as f64 * self.side - LIST_PAD_M,
                self.z_base,
            ],
            scale: [self.xy_scale, self.xy_scale, self.z_scale],
        }
    }

    /// Tile column (or row, for `axis` 1) of coordinate `c`, clamped to the grid.
    fn index(&self, c: f64, axis: usize) -> usize {
        let n = if axis == 0 { self.nx } else { self.ny };
        // Truncation is the floor once clamped at 0; NaN becomes 0.
        (((c - self.origin[axis]) / self.side).max(0.0) as usize).min(n - 1)
    }

    /// Calls `f` with every tile that `b` touches, clamped to the grid.
    fn each_tile(&self, b: &Aabb, mut f: impl FnMut(usize, usize)) {
        let (xs, ys) = self.tile_span(b);
        for y in ys {
            for x in xs.clone() {
                f(x, y);
            }
        }
    }

    /// Appends to `out` the id of every listed box that intersects the box of the ball
    /// (`p`, `margin`), given as `query`; `exact` holds every box, indexed by id.
    pub(crate) fn query(&self, p: Vec3, margin: f64, query: &Query, exact: &[Aabb], out: &mut Vec<usize>) {
        if self.entries.is_empty() || !(p[0].is_finite() && p[1].is_finite()) {
            return;
        }
        if margin <= PAD_M {
            // Every listed box within PAD_M of p is listed in p's tile; outside the grid there
            // is none.
            let inside = (0..2).all(|i| {
                let n = if i == 0 { self.nx } else { self.ny };
                p[i] >= self.origin[i] && p[i] < self.origin[i] + n as f64 * self.side
            });
            if inside {
                self.scan(self.index(p[0], 0), self.index(p[1], 1), query, exact, out);
            }
            return;
        }
        let first = out.len();
        self.each_tile(&query.exact, |x, y| self.scan(x, y, query, exact, out));
        out[first..].sort_unstable();
        let mut kept = first;
        for i in first..out.len() {
            if kept == first || out[kept - 1] != out[i] {
                out[kept] = out[i];
                kept += 1;
            }
        }
        out.truncate(kept);
    }

    /// Prefetches the start of the list of `p`'s tile (see `Scene::prefetch`).
    pub(crate) fn prefetch(&self, p: Vec3) {
        if self.entries.is_empty() || !(p[0].is_finite() && p[1].is_finite()) {
            return;
        }
        let [start, end] = self.ranges[self.index(p[1], 1) * self.nx + self.index(p[0], 0)];
        for e in self.entries[start as usize..end as usize].iter().step_by(4) {
            crate::region::prefetch(e);
        }
    }

    /// Appends the listed boxes of tile (`x`, `y`) that intersect the query.
    ///
    /// The list is scanned without branches (each id is written, and kept when its step bounds
    /// overlap the query's): a branch per entry, taken at random, would be mispredicted often,
    /// and each misprediction would stop the loads of the entries after it from overlapping. The
    /// few kept are then confirmed by their step bounds or, near a face, by their exact box.
    #[inline]
    fn scan(&self, x: usize, y: usize, query: &Query, exact: &[Aabb], out: &mut Vec<usize>) {
        let [start, end] = self.ranges[y * self.nx + x];
        let list = &self.entries[start as usize..end as usize];
        let frame = self.frame(x, y);
        let (lo, hi) = (frame.lo(query.exact.min), frame.hi(query.exact.max));
        let first = out.len();
        out.resize(first + list.len(), 0);
        let mut kept = first;
        for (e, slot) in list.iter().zip(first..) {
            let hit = (0..3).fold(true, |acc, i| acc & (e.lo[i] <= hi[i]) & (lo[i] <= e.hi[i]));
            out[kept] = slot;
            kept += usize::from(hit);
        }
        let mut end = first;
        for i in first..kept {
            let e = &list[out[i] - first];
            let sure = (0..3).all(|i| {
                u32::from(e.lo[i]) + u32::from(SURE_STEPS) <= u32::from(hi[i])
                    && u32::from(lo[i]) + u32::from(SURE_STEPS) <= u32::from(e.hi[i])
            });
            if sure || exact[e.id as usize].intersects(&query.exact) {
                out[end] = e.id as usize;
                end += 1;
            }
        }
        out.truncate(end);
    }

    /// Bytes held by the tile offsets and lists.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.ranges.capacity() * size_of::<[u32; 2]>()
            + self.room.capacity() * size_of::<u32>()
            + self.entries.capacity() * size_of::<Entry>()
    }

    /// The listed ids, each once, in Z order (Morton order) of the tiles their box centres lie
    /// in: items near each other in space are mostly near in that order. `exact` holds every
    /// box, indexed by id.
    pub(crate) fn order(&self, exact: &[Aabb]) -> Vec<u32> {
        let mut seen = vec![false; exact.len()];
        let mut ids: Vec<(u64, u32)> = Vec::new();
        for e in self.ranges.iter().flat_map(|&[start, end]| &self.entries[start as usize..end as usize]) {
            if !std::mem::replace(&mut seen[e.id as usize], true) {
                let c = exact[e.id as usize].centre();
                ids.push((morton(self.index(c[0], 0) as u32, self.index(c[1], 1) as u32), e.id));
            }
        }
        ids.sort_unstable();
        ids.into_iter().map(|(_, id)| id).collect()
    }
}

/// The Z-order (Morton) code of (`x`, `y`): their bits interleaved.
fn morton(x: u32, y: u32) -> u64 {
    let spread = |v: u32| {
        let mut v = u64::from(v);
        v = (v | (v << 16)) & 0x0000_ffff_0000_ffff;
        v = (v | (v << 8)) & 0x00ff_00ff_00ff_00ff;
        v = (v | (v << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
        v = (v | (v << 2)) & 0x3333_3333_3333_3333;
        (v | (v << 1)) & 0x5555_5555_5555_5555
    };
    spread(x) | (spread(y) << 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_box(x: f64, y: f64) -> Aabb {
        Aabb { min: [x, y, 0.0], max: [x + 1.0, y + 1.0, 1.0] }
    }

    fn query(tiles: &Tiles, exact: &[Aabb], p: Vec3, margin: f64) -> Vec<usize> {
        let mut out = Vec::new();
        tiles.query(p, margin, &Query::new(Aabb::around(p, margin)), exact, &mut out);
        out.sort_unstable();
        out
    }

    #[test]
    fn small_boxes_are_listed_and_found_from_one_tile_or_many() {
        let exact: Vec<Aabb> = (0..100).map(|i| unit_box(i as f64 * 2.0, 0.0)).collect();
        let items: Vec<(u32, Aabb)> = exact.iter().enumerate().map(|(i, b)| (i as u32, *b)).collect();
        let (tiles, left) = Tiles::build(&items);
        assert!(left.is_empty());
        assert_eq!(tiles.order(&exact).len(), 100);
        assert_eq!(morton(0b11, 0b01), 0b0111);
        assert_eq!(query(&tiles, &exact, [100.5, 0.5, 0.5], 0.5), vec![50]);
        assert_eq!(query(&tiles, &exact, [101.5, 0.5, 0.5], 0.5), vec![50, 51]);
        assert!(query(&tiles, &exact, [101.5, 0.5, 0.5], 0.4).is_empty());
        assert!(query(&tiles, &exact, [101.5, 0.5, 3.0], 0.5).is_empty());
        // A margin past the pad looks at several tiles and reports each box once.
        assert_eq!(query(&tiles, &exact, [100.5, 0.5, 0.5], 3.6), vec![48, 49, 50, 51, 52]);
        // Outside the grid, and a NaN position.
        assert!(query(&tiles, &exact, [-50.0, 0.5, 0.5], 0.5).is_empty());
        assert!(query(&tiles, &exact, [f64::NAN, 0.5, 0.5], 0.5).is_empty());
    }

    #[test]
    fn large_boxes_are_left_out_and_sparse_sites_get_larger_tiles() {
        let mut exact: Vec<Aabb> = (0..10).map(|i| unit_box(i as f64 * 1e5, 0.0)).collect();
        exact.push(Aabb { min: [0.0, 0.0, 0.0], max: [5000.0, 5000.0, 1.0] });
        let items: Vec<(u32, Aabb)> = exact.iter().enumerate().map(|(i, b)| (i as u32, *b)).collect();
        let (tiles, left) = Tiles::build(&items);
        assert_eq!(left, vec![10]);
        assert!(tiles.nx * tiles.ny <= TILES_PER_BOX * 10 + 4096, "{} × {}", tiles.nx, tiles.ny);
        assert_eq!(query(&tiles, &exact, [3e5 + 0.5, 0.5, 0.5], 0.0), vec![3]);
        let (empty, left) = Tiles::build(&[]);
        assert!(left.is_empty());
        assert!(query(&empty, &exact, [0.0; 3], 1.0).is_empty());
    }

    #[test]
    fn boxes_at_the_far_ends_of_the_number_range_are_still_listed_and_found() {
        let exact = vec![unit_box(-1e300, -1e300), unit_box(1e300, 1e300), unit_box(1e241, 0.0), unit_box(0.0, 0.0)];
        let items: Vec<(u32, Aabb)> = exact.iter().enumerate().map(|(i, b)| (i as u32, *b)).collect();
        let (tiles, left) = Tiles::build(&items);
        let mut found: Vec<usize> = left.iter().map(|id| *id as usize).collect();
        for p in
            [[-1e300 + 0.5, -1e300 + 0.5, 0.5], [1e300 + 0.5, 1e300 + 0.5, 0.5], [1e241, 0.5, 0.5], [0.5, 0.5, 0.5]]
        {
            found.extend(query(&tiles, &exact, p, 0.5));
        }
        found.sort_unstable();
        found.dedup();
        assert_eq!(found, vec![0, 1, 2, 3], "every box is listed or left out, and none is lost");
        let (empty, left) = Tiles::build(&[]);
        assert!(left.is_empty());
        assert!(query(&empty, &exact, [0.0; 3], 1.0).is_empty());
    }
}
