//! Where devices are: a hash grid over XY of the last position of each device, so that a mobile
//! zone that moves finds the devices it may now hold without scanning all of them.

// foldhash: a device's cell is looked up whenever it moves into another one.
use foldhash::{HashMap, HashMapExt, HashSet};

use zonecast_geometry::{Aabb, Vec3};
use zonecast_model::Mac;

/// Devices by grid cell (XY; z is ignored because 2D zones are infinite in z anyway).
pub struct DeviceGrid {
    cell: f64,
    cells: HashMap<(i64, i64), HashSet<Mac>>,
}

impl DeviceGrid {
    /// A grid of `cell`-metre squares.
    pub fn new(cell: f64) -> Self {
        Self { cell, cells: HashMap::new() }
    }

    fn key(&self, p: Vec3) -> (i64, i64) {
        ((p[0] / self.cell).floor() as i64, (p[1] / self.cell).floor() as i64)
    }

    /// `mac` moved from `old` to `new`.
    pub fn moved(&mut self, mac: &Mac, old: Option<Vec3>, new: Vec3) {
        let to = self.key(new);
        if let Some(old) = old {
            let from = self.key(old);
            if from == to {
                return;
            }
            self.remove_at(mac, from);
        }
        self.cells.entry(to).or_default().insert(mac.clone());
    }

    /// `mac` is gone.
    pub fn removed(&mut self, mac: &Mac, pos: Option<Vec3>) {
        if let Some(p) = pos {
            let key = self.key(p);
            self.remove_at(mac, key);
        }
    }

    fn remove_at(&mut self, mac: &Mac, key: (i64, i64)) {
        if let Some(set) = self.cells.get_mut(&key) {
            set.remove(mac);
            if set.is_empty() {
                self.cells.remove(&key);
            }
        }
    }

    /// Calls `f` for every device in a cell the box's XY extent touches (a superset of those
    /// inside it). Very large boxes are walked by occupied cell rather than by area.
    pub fn within(&self, aabb: &Aabb, mut f: impl FnMut(&Mac)) {
        let (x0, y0) = self.key(aabb.min);
        let (x1, y1) = self.key(aabb.max);
        let area = (x1 - x0 + 1).saturating_mul(y1 - y0 + 1);
        if area > self.cells.len() as i64 {
            for ((x, y), set) in &self.cells {
                if (x0..=x1).contains(x) && (y0..=y1).contains(y) {
                    set.iter().for_each(&mut f);
                }
            }
            return;
        }
        for x in x0..=x1 {
            for y in y0..=y1 {
                if let Some(set) = self.cells.get(&(x, y)) {
                    set.iter().for_each(&mut f);
                }
            }
        }
    }
}
