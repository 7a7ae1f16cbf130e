//! A static, 4-wide bounding-volume hierarchy over boxes, in flat arrays.
//!
//! Each node holds the boxes of its (up to) four children side by side, so one node visit tests
//! four boxes with straight-line code and no dependent loads; a query descends only into children
//! its box overlaps. A child is either another node or a single item (by the caller's id), so the
//! leaves are part of the nodes and are tested the same branch-free way. Bounds are `f32` rounded
//! outward — half the bytes of `f64`, so twice as much of the tree stays in cache. An item is
//! reported only when its exact `f64` box intersects the query: the `f32` box settles that except
//! within about an `f32` ulp of a face, where the exact box (which the caller keeps, indexed by
//! id, so it costs no cache traffic otherwise) decides.
//!
//! Built top-down: a node's items are split in two by the binned surface-area heuristic (see
//! [`split`]), and each half again, giving up to four children. Queries keep their pending nodes
//! on a fixed stack, so they need no allocation.

use super::bounds::{Query, round_down, round_up, surely_overlaps};
use crate::aabb::Aabb;

/// Depth from which nodes are split at the median instead of by the heuristic. Heuristic splits
/// may be lopsided and make a deep tree on pathological input; median splits at least halve the
/// items twice per level, so no tree is deeper than this plus ⌈log₄ n⌉ ≤ 16, i.e. 32 levels.
const HEURISTIC_DEPTH: usize = 16;

/// Traversal stack: a node visit pushes at most 3 more entries than it pops, so 32 levels need
/// 3 × 32 + 1 entries.
const STACK: usize = 128;

/// Flag on a child reference that makes it an item (the caller's id) rather than a node index.
const ITEM: u32 = 1 << 31;

/// Four child boxes in structure-of-arrays form, with what each child is.
#[derive(Clone, Copy, Debug)]
struct Node {
    min: [[f32; 4]; 3],
    max: [[f32; 4]; 3],
    /// A node index, or an item's id with [`ITEM`] set. Unused slots have inverted bounds, so
    /// they never overlap a query.
    child: [u32; 4],
}

impl Node {
    const fn empty() -> Self {
        Self { min: [[f32::INFINITY; 4]; 3], max: [[f32::NEG_INFINITY; 4]; 3], child: [0; 4] }
    }
}

/// Boxes with caller ids, indexed for box-overlap queries.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bvh {
    nodes: Vec<Node>,
}

impl Bvh {
    /// Indexes `boxes` (id, box); ids must be below 2³¹. Also returns the ids in leaf order:
    /// items that are near each other in space are near in that order.
    pub(crate) fn build(boxes: impl IntoIterator<Item = (u32, Aabb)>) -> (Self, Vec<u32>) {
        let mut all: Vec<(u32, Aabb)> = boxes.into_iter().collect();
        debug_assert!(all.iter().all(|(id, _)| id & ITEM == 0));
        let mut nodes = Vec::new();
        if !all.is_empty() {
            build_node(&mut nodes, &mut all, 1);
        }
        nodes.shrink_to_fit();
        (Self { nodes }, all.iter().map(|(id, _)| *id).collect())
    }

    /// Appends to `out` the id of every item whose box intersects `query` (closed boxes); `exact`
    /// holds every item's exact box, indexed by id.
    pub(crate) fn query(&self, query: &Query, exact: &[Aabb], out: &mut Vec<usize>) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = [0u32; STACK];
        let mut depth = 1;
        let last = self.nodes.len() - 1;
        let mut touched = 0u32;
        while depth > 0 {
            depth -= 1;
            let node = &self.nodes[stack[depth % STACK] as usize];
            let hits = overlaps(node, query);
            // Overlapping inner children are pushed without branches (every slot is written,
            // kept only when it counts): branching here is mispredicted about half the time.
            let mut items = 0u32;
            for (c, hit) in hits.into_iter().enumerate() {
                let child = node.child[c];
                let is_item = child >> 31;
                stack[depth % STACK] = child;
                depth += (u32::from(hit) & (is_item ^ 1)) as usize;
                items |= (u32::from(hit) & is_item) << c;
                // Start loading the child now, so that the misses of siblings overlap (an
                // item's reference is clamped to some node: a harmless extra read).
                touched ^= self.nodes[(child as usize).min(last)].child[0];
            }
            while items != 0 {
                let c = items.trailing_zeros() as usize;
                items &= items - 1;
                report(node, c, query, exact, out);
            }
        }
        std::hint::black_box(touched);
    }

    /// Bytes held by the node array.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node>()
    }
}

/// Reports the item that is child `c` of `node` if its exact box intersects the query.
#[inline]
fn report(node: &Node, c: usize, query: &Query, exact: &[Aabb], out: &mut Vec<usize>) {
    let id = (node.child[c] & !ITEM) as usize;
    let sure = surely_overlaps([0, 1, 2].map(|i| node.min[i][c]), [0, 1, 2].map(|i| node.max[i][c]), query);
    if sure || exact[id].intersects(&query.exact) {
        out.push(id);
    }
}

/// Which of the node's four children overlap the query box, without branches.
#[inline]
fn overlaps(node: &Node, q: &Query) -> [bool; 4] {
    let mut hit = [true; 4];
    for axis in 0..3 {
        let (lo, hi) = (&node.min[axis], &node.max[axis]);
        for (c, h) in hit.iter_mut().enumerate() {
            *h &= (lo[c] <= q.max[axis]) & (q.min[axis] <= hi[c]);
        }
    }
    hit
}

/// Adds the subtree over `items`, whose root is at depth `depth` (the root of all is 1), and
/// returns its index.
fn build_node(nodes: &mut Vec<Node>, items: &mut [(u32, Aabb)], depth: usize) -> u32 {
    let at = nodes.len();
    nodes.push(Node::empty());
    let split = if depth < HEURISTIC_DEPTH { split } else { split_at_median };
    // Up to four items become the children; more are split in two, and each half again.
    let groups: Vec<(usize, usize)> = if items.len() <= 4 {
        (0..items.len()).map(|i| (i, i + 1)).collect()
    } else {
        let half = split(items);
        let mut groups = Vec::with_capacity(4);
        for (start, end) in [(0, half), (half, items.len())] {
            if end - start >= 2 {
                let mid = start + split(&mut items[start..end]);
                groups.extend([(start, mid), (mid, end)]);
            } else {
                groups.push((start, end));
            }
        }
        groups
    };
    for (slot, (start, end)) in groups.into_iter().enumerate() {
        let group = &mut items[start..end];
        let bounds = group.iter().skip(1).fold(group[0].1, |b, (_, item)| b.union(item));
        let child = if group.len() == 1 { group[0].0 | ITEM } else { build_node(nodes, group, depth + 1) };
        let node = &mut nodes[at];
        for axis in 0..3 {
            node.min[axis][slot] = round_down(bounds.min[axis]);
            node.max[axis][slot] = round_up(bounds.max[axis]);
        }
        node.child[slot] = child;
    }
    at as u32
}

/// Bins per axis for the split search.
const BINS: usize = 16;

/// Boxes count for the split cost with at most this height (m): a 2D shape's ±1e9 is tall, but
/// not so tall that it drowns every other difference.
const COST_HEIGHT_CAP_M: f64 = 100.0;

/// The split cost of a box: its volume grown by the 1 m of a typical query, height capped — about
/// how likely a query lands in it.
fn cost_volume(b: &Aabb) -> f64 {
    (b.max[0] - b.min[0] + 1.0) * (b.max[1] - b.min[1] + 1.0) * ((b.max[2] - b.min[2]).min(COST_HEIGHT_CAP_M) + 1.0)
}

/// Reorders `items` (at least 2) into two non-empty groups and returns the size of the first.
///
/// The surface-area heuristic, binned: along each axis the box centres are sorted into [`BINS`]
/// bins, and the cut between bins that minimises (items × [`cost_volume`]) summed over both sides
/// wins. When every centre coincides (or no cut separates them) it falls back to a median split.
fn split(items: &mut [(u32, Aabb)]) -> usize {
    let centres =
        Aabb::enclosing(items.iter().map(|(_, b)| b.centre())).unwrap_or(Aabb { min: [0.0; 3], max: [0.0; 3] });
    let mut best: Option<(f64, usize, f64)> = None;
    for axis in 0..3 {
        let (lo, spread) = (centres.min[axis], centres.max[axis] - centres.min[axis]);
        if !(spread.is_finite() && spread > 0.0) {
            continue;
        }
        let bin_of = |b: &Aabb| (((b.centre()[axis] - lo) / spread * BINS as f64) as usize).min(BINS - 1);
        let mut counts = [0usize; BINS];
        let mut bounds: [Option<Aabb>; BINS] = [None; BINS];
        for (_, b) in items.iter() {
            let k = bin_of(b);
            counts[k] += 1;
            bounds[k] = Some(bounds[k].map_or(*b, |x| x.union(b)));
        }
        // Cost of everything from bin k up, for every k.
        let mut upper = [0.0; BINS];
        let (mut acc, mut n) = (None::<Aabb>, 0);
        for k in (1..BINS).rev() {
            acc = union(acc, bounds[k]);
            n += counts[k];
            upper[k] = acc.map_or(0.0, |a| cost_volume(&a) * n as f64);
        }
        let (mut acc, mut n) = (None::<Aabb>, 0);
        for k in 0..BINS - 1 {
            acc = union(acc, bounds[k]);
            n += counts[k];
            if n == 0 || n == items.len() {
                continue;
            }
            let cost = acc.map_or(0.0, |a| cost_volume(&a) * n as f64) + upper[k + 1];
            if best.is_none_or(|(c, ..)| cost < c) {
                best = Some((cost, axis, lo + spread * (k + 1) as f64 / BINS as f64));
            }
        }
    }
    if let Some((_, axis, cut)) = best {
        let mut below = 0;
        for j in 0..items.len() {
            if items[j].1.centre()[axis] < cut {
                items.swap(below, j);
                below += 1;
            }
        }
        if below > 0 && below < items.len() {
            return below;
        }
    }
    split_at_median(items)
}

/// Reorders `items` (at least 2) so the first half has the lower centres along the axis of
/// greatest centre spread; returns the size of that half.
fn split_at_median(items: &mut [(u32, Aabb)]) -> usize {
    let centres =
        Aabb::enclosing(items.iter().map(|(_, b)| b.centre())).unwrap_or(Aabb { min: [0.0; 3], max: [0.0; 3] });
    let axis = (0..3)
        .max_by(|a, b| (centres.max[*a] - centres.min[*a]).total_cmp(&(centres.max[*b] - centres.min[*b])))
        .unwrap_or(0);
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, |a, b| a.1.centre()[axis].total_cmp(&b.1.centre()[axis]));
    mid
}

fn union(a: Option<Aabb>, b: Option<Aabb>) -> Option<Aabb> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.union(&b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_box(x: f64) -> Aabb {
        Aabb { min: [x, 0.0, 0.0], max: [x + 1.0, 1.0, 1.0] }
    }

    fn depth(bvh: &Bvh, at: usize) -> usize {
        let node = bvh.nodes[at];
        let inner = (0..4).filter(|c| node.min[0][*c] <= node.max[0][*c] && node.child[*c] & ITEM == 0);
        1 + inner.map(|c| depth(bvh, node.child[c] as usize)).max().unwrap_or(0)
    }

    fn query(bvh: &Bvh, exact: &[Aabb], q: Aabb) -> Vec<usize> {
        let mut out = Vec::new();
        bvh.query(&Query::new(q), exact, &mut out);
        out.sort_unstable();
        out
    }

    #[test]
    fn queries_find_exactly_the_overlapping_boxes() {
        let exact: Vec<Aabb> = (0..1000).map(|i| unit_box(i as f64 * 2.0)).collect();
        let (bvh, order) = Bvh::build(exact.iter().enumerate().map(|(i, b)| (i as u32, *b)));
        assert_eq!(order.len(), 1000);
        assert!(query(&bvh, &exact, Aabb::around([101.5, 0.5, 0.5], 0.1)).is_empty());
        assert_eq!(query(&bvh, &exact, Aabb::around([100.5, 0.5, 0.5], 1.6)), vec![49, 50, 51]);
        // Touching counts, a hair (far below f32 resolution) away does not.
        assert_eq!(query(&bvh, &exact, Aabb { min: [101.0, 0.0, 0.0], max: [101.5, 1.0, 1.0] }), vec![50]);
        assert!(query(&bvh, &exact, Aabb { min: [101.0 + 1e-12, 0.0, 0.0], max: [101.5, 1.0, 1.0] }).is_empty());
    }

    #[test]
    fn depth_is_logarithmic_even_for_identical_boxes() {
        let exact = vec![unit_box(0.0); 4096];
        let (bvh, _) = Bvh::build((0..4096).map(|i| (i, unit_box(0.0))));
        assert!(depth(&bvh, 0) <= 7, "{}", depth(&bvh, 0));
        assert_eq!(query(&bvh, &exact, unit_box(0.0)).len(), 4096);
    }

    #[test]
    fn lopsided_input_stays_shallow_enough_for_the_stack() {
        // Boxes at doubling distances: heuristic splits peel one item off at a time.
        let exact: Vec<Aabb> = (0..3000).map(|i| unit_box(1.01f64.powi(i) * 10.0)).collect();
        let (bvh, _) = Bvh::build(exact.iter().enumerate().map(|(i, b)| (i as u32, *b)));
        let d = depth(&bvh, 0);
        assert!(3 * d < STACK, "{d}");
        for i in [0, 1, 1500, 2999] {
            let c = exact[i].centre();
            assert!(query(&bvh, &exact, Aabb::around(c, 0.1)).contains(&i));
        }
    }

    #[test]
    fn small_and_empty_hierarchies_answer() {
        let exact = vec![unit_box(0.0); 10];
        assert!(query(&Bvh::build([]).0, &exact, unit_box(0.0)).is_empty());
        assert_eq!(query(&Bvh::build([(9, unit_box(0.0))]).0, &exact, unit_box(0.5)), vec![9]);
    }
}
