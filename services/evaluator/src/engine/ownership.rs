//! Which partitions, and so which devices, an engine owns.

use zonecast_model::Mac;

/// Which devices this evaluator owns: those of the partitions it holds, of `count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    count: u32,
    held: Vec<bool>,
}

impl Ownership {
    /// Partitions `lo..=hi` of `count`.
    pub fn range(count: u32, lo: u32, hi: u32) -> Self {
        Self { count, held: (0..count).map(|p| (lo..=hi).contains(&p)).collect() }
    }

    /// None of `count` partitions (an evaluator that has claimed nothing yet).
    pub fn none(count: u32) -> Self {
        Self::range(count, 1, 0)
    }

    /// Partition count.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether `mac`'s partition is owned.
    pub fn owns(&self, mac: &Mac) -> bool {
        self.holds(mac.partition(self.count))
    }

    /// Whether `partition` is owned.
    pub fn holds(&self, partition: u32) -> bool {
        self.held.get(partition as usize).copied().unwrap_or(false)
    }

    /// The partitions owned, in order.
    pub fn partitions(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.count).filter(|&p| self.holds(p))
    }

    /// Owns `partition` from now on.
    pub fn insert(&mut self, partition: u32) {
        if let Some(held) = self.held.get_mut(partition as usize) {
            *held = true;
        }
    }

    /// No longer owns `partition`.
    pub fn remove(&mut self, partition: u32) {
        if let Some(held) = self.held.get_mut(partition as usize) {
            *held = false;
        }
    }

    /// The partitions owned as ranges, e.g. `0-7,12` (`-` for none): a metric label, a log field.
    pub fn label(&self) -> String {
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for p in self.partitions() {
            match ranges.last_mut() {
                Some((_, hi)) if *hi + 1 == p => *hi = p,
                _ => ranges.push((p, p)),
            }
        }
        if ranges.is_empty() {
            return "-".to_owned();
        }
        let text: Vec<String> =
            ranges.iter().map(|(lo, hi)| if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") }).collect();
        text.join(",")
    }
}
