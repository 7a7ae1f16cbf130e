//! A spatial hash grid in XY for movable (mobile) zones, whose boxes change on every move.
//!
//! Each box is listed in every [`CELL_M`]-sized cell its XY extent touches; z is only checked
//! against the exact box, so 2D shapes (z ±1e9) cost nothing extra. A box touching more than
//! [`MAX_CELLS`] cells goes to a short list that every query scans instead. A query reports an
//! entry from one cell only: the first cell (lowest x, then y) that both ranges share.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::aabb::Aabb;
use crate::vector::Vec3;

/// Cell side length in metres: about the size of a typical zone, so most boxes touch 1–4 cells.
pub(crate) const CELL_M: f64 = 16.0;

/// Boxes touching more cells than this (a 128 m square) are kept in the large list.
pub(crate) const MAX_CELLS: i64 = 64;

/// An inclusive range of cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cells {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl Cells {
    fn of(bounds: &Aabb) -> Self {
        Self { x0: cell(bounds.min[0]), y0: cell(bounds.min[1]), x1: cell(bounds.max[0]), y1: cell(bounds.max[1]) }
    }

    fn count(&self) -> i64 {
        (i64::from(self.x1) - i64::from(self.x0) + 1) * (i64::from(self.y1) - i64::from(self.y0) + 1)
    }

    fn each(self) -> impl Iterator<Item = u64> {
        (self.x0..=self.x1).flat_map(move |x| (self.y0..=self.y1).map(move |y| key(x, y)))
    }
}

/// The cell index of coordinate `c`, saturating (NaN → 0; such a box matches no query anyway).
fn cell(c: f64) -> i32 {
    (c / CELL_M).floor() as i32
}

fn key(x: i32, y: i32) -> u64 {
    (u64::from(x as u32) << 32) | u64::from(y as u32)
}

#[derive(Clone, Debug)]
struct Slot {
    key: u32,
    bounds: Aabb,
    /// The cells the slot is listed in, or `None` when it is in the large list.
    cells: Option<Cells>,
}

/// Movable boxes keyed by the caller's `u32`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Grid {
    slots: Vec<Slot>,
    free: Vec<u32>,
    by_key: HashMap<u32, u32, FxBuild>,
    cells: HashMap<u64, Vec<u32>, FxBuild>,
    large: Vec<u32>,
}

impl Grid {
    /// Inserts `key` with `bounds`, or moves it there.
    pub(crate) fn set(&mut self, key: u32, bounds: Aabb) {
        let cells = Some(Cells::of(&bounds)).filter(|c| c.x0 <= c.x1 && c.y0 <= c.y1 && c.count() <= MAX_CELLS);
        if let Some(&slot) = self.by_key.get(&key) {
            let old = self.slots[slot as usize].cells;
            self.slots[slot as usize].bounds = bounds;
            if old != cells {
                self.unlink(slot, old);
                self.link(slot, cells);
                self.slots[slot as usize].cells = cells;
            }
            return;
        }
        let entry = Slot { key, bounds, cells };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                self.slots.push(entry);
                (self.slots.len() - 1) as u32
            }
        };
        self.by_key.insert(key, slot);
        self.link(slot, cells);
    }

    /// Removes `key`; unknown keys are ignored.
    pub(crate) fn remove(&mut self, key: u32) {
        if let Some(slot) = self.by_key.remove(&key) {
            let cells = self.slots[slot as usize].cells;
            self.unlink(slot, cells);
            self.free.push(slot);
        }
    }

    /// Number of movable boxes.
    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Appends to `out` the key of every box that intersects `query`.
    pub(crate) fn query(&self, query: &Aabb, out: &mut Vec<u32>) {
        let range = Cells::of(query);
        let ordered = query.min[0] <= query.max[0] && query.min[1] <= query.max[1];
        if !ordered || range.count() > self.cells.len() as i64 {
            // Cheaper (and, for a non-finite query, the only sane way) to look at every box once.
            for &slot in self.by_key.values() {
                let s = &self.slots[slot as usize];
                if s.bounds.intersects(query) {
                    out.push(s.key);
                }
            }
            return;
        }
        for x in range.x0..=range.x1 {
            for y in range.y0..=range.y1 {
                let Some(list) = self.cells.get(&key(x, y)) else { continue };
                for &slot in list {
                    let s = &self.slots[slot as usize];
                    // Listed slots always have cells; report each from its first shared cell only.
                    let first = s.cells.is_some_and(|c| c.x0.max(range.x0) == x && c.y0.max(range.y0) == y);
                    if first && s.bounds.intersects(query) {
                        out.push(s.key);
                    }
                }
            }
        }
        for &slot in &self.large {
            let s = &self.slots[slot as usize];
            if s.bounds.intersects(query) {
                out.push(s.key);
            }
        }
    }

    /// Bytes held by the slots, the key map, the cell lists and the large list (capacities; the
    /// hash maps counted at one key, one value and one control byte per bucket).
    pub(crate) fn memory_bytes(&self) -> usize {
        let map = |buckets: usize, entry: usize| buckets * (entry + 1);
        self.slots.capacity() * size_of::<Slot>()
            + self.free.capacity() * size_of::<u32>()
            + map(self.by_key.capacity(), size_of::<(u32, u32)>())
            + map(self.cells.capacity(), size_of::<(u64, Vec<u32>)>())
            + self.cells.values().map(|v| v.capacity() * size_of::<u32>()).sum::<usize>()
            + self.large.capacity() * size_of::<u32>()
    }

    fn link(&mut self, slot: u32, cells: Option<Cells>) {
        match cells {
            Some(cells) => cells.each().for_each(|k| self.cells.entry(k).or_default().push(slot)),
            None => self.large.push(slot),
        }
    }

    fn unlink(&mut self, slot: u32, cells: Option<Cells>) {
        let drop_from = |list: &mut Vec<u32>| {
            if let Some(i) = list.iter().position(|s| *s == slot) {
                list.swap_remove(i);
            }
        };
        match cells {
            Some(cells) => {
                for k in cells.each() {
                    if let Some(list) = self.cells.get_mut(&k) {
                        drop_from(list);
                        if list.is_empty() {
                            self.cells.remove(&k);
                        }
                    }
                }
            }
            None => drop_from(&mut self.large),
        }
    }
}

/// The query box of the ball `(p, margin)`.
pub(crate) fn ball_box(p: Vec3, margin: f64) -> Aabb {
    Aabb::around(p, margin)
}

/// The multiplicative hash of rustc's `FxHasher`: integer keys need no DoS-resistant hash here
/// (keys come from the service's own zone table and from cell arithmetic).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FxHasher(u64);

type FxBuild = BuildHasherDefault<FxHasher>;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|b| self.add(u64::from(*b)));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(grid: &Grid, p: Vec3, margin: f64) -> Vec<u32> {
        let mut out = Vec::new();
        grid.query(&ball_box(p, margin), &mut out);
        out.sort_unstable();
        out
    }

    #[test]
    fn a_box_over_many_cells_is_reported_once() {
        let mut grid = Grid::default();
        grid.set(7, Aabb { min: [-20.0, -20.0, 0.0], max: [20.0, 20.0, 1.0] });
        assert_eq!(sorted(&grid, [0.0, 0.0, 0.5], 40.0), vec![7]);
        assert_eq!(sorted(&grid, [0.0, 0.0, 5.0], 1.0), Vec::<u32>::new());
    }

    #[test]
    fn moving_and_removing_update_the_cells() {
        let mut grid = Grid::default();
        grid.set(1, Aabb::around([0.0; 3], 1.0));
        grid.set(2, Aabb::around([100.0, 0.0, 0.0], 1.0));
        grid.set(1, Aabb::around([200.0, 0.0, 0.0], 1.0));
        assert_eq!(sorted(&grid, [0.0; 3], 0.5), Vec::<u32>::new());
        assert_eq!(sorted(&grid, [200.0, 0.0, 0.0], 0.5), vec![1]);
        grid.remove(1);
        grid.remove(99);
        assert_eq!(sorted(&grid, [200.0, 0.0, 0.0], 0.5), Vec::<u32>::new());
        assert_eq!(grid.len(), 1);
        // The freed slot is reused.
        grid.set(3, Aabb::around([0.0; 3], 1.0));
        assert_eq!(grid.slots.len(), 2);
        assert_eq!(sorted(&grid, [0.5, 0.5, 0.0], 0.0), vec![3]);
    }

    #[test]
    fn huge_and_flat_boxes_are_found() {
        let mut grid = Grid::default();
        grid.set(1, Aabb { min: [-1e4, -1e4, -1e9], max: [1e4, 1e4, 1e9] });
        grid.set(2, Aabb { min: [5.0, 5.0, -1e9], max: [6.0, 6.0, 1e9] });
        assert!(grid.large.contains(&0));
        assert_eq!(sorted(&grid, [5.5, 5.5, 1234.0], 0.0), vec![1, 2]);
        grid.set(1, Aabb::around([0.0; 3], 1.0));
        assert!(grid.large.is_empty());
        assert_eq!(sorted(&grid, [5.5, 5.5, 1234.0], 0.0), vec![2]);
    }
}
