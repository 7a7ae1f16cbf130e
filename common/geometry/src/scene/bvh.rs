//! A static, 4-wide bounding-volume hierarchy over boxes, in flat arrays.
//!
//! Each node holds the boxes of its (up to) four children side by side, so one node visit tests
//! four boxes with straight-line code and no dependent loads; a query descends only into children
//! its box overlaps. A child is either another node or a single item, so the leaves are part of
//! the nodes and are tested the same branch-free way. Bounds are `f32` rounded outward — half the
//! bytes of `f64`, so twice as much of the tree stays in cache. An item is reported only when its
//! exact `f64` box intersects the query: the `f32` box settles that except within one `f32` ulp of
//! a face, where the exact box (kept in a parallel array, so it costs no cache traffic otherwise)
//! decides.
//!
//! Built top-down: a node's items are split at the median along the axis of greatest centroid
//! spread, and each half again, giving four children of about a quarter each, so the depth is at
//! most ⌈log₄ n⌉ + 1 and a query needs no allocation.

use crate::aabb::Aabb;

/// Traversal stack: a node visit pushes at most 3 more entries than it pops, and the depth is at
/// most 17 for `u32` item counts, so 3 × 17 + 1 entries suffice.
const STACK: usize = 64;

/// Flag on a child reference that makes it an item index rather than a node index.
const ITEM: u32 = 1 << 31;

/// Four child boxes in structure-of-arrays form, with what each child is.
#[derive(Clone, Copy, Debug)]
struct Node {
    min: [[f32; 4]; 3],
    max: [[f32; 4]; 3],
    /// A node index, or an item index with [`ITEM`] set. Unused slots have inverted bounds, so
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
    /// Caller ids of the items, in leaf order.
    ids: Vec<u32>,
    /// Exact boxes, parallel to `ids`.
    exact: Vec<Aabb>,
}

impl Bvh {
    /// Indexes `boxes` (id, box).
    ///
    /// # Panics
    ///
    /// With `2³¹` boxes or more.
    pub(crate) fn build(boxes: impl IntoIterator<Item = (u32, Aabb)>) -> Self {
        let mut all: Vec<(u32, Aabb)> = boxes.into_iter().collect();
        assert!(all.len() < ITEM as usize, "a hierarchy holds fewer than 2^31 boxes");
        let mut nodes = Vec::new();
        if !all.is_empty() {
            build_node(&mut nodes, &mut all, 0);
        }
        nodes.shrink_to_fit();
        Self { nodes, ids: all.iter().map(|(id, _)| *id).collect(), exact: all.iter().map(|(_, b)| *b).collect() }
    }

    /// The ids in leaf order: items that are near each other in space are near in this order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.ids.iter().copied()
    }

    /// Appends to `out` the id of every item whose box intersects `query` (closed boxes).
    pub(crate) fn query(&self, query: &Aabb, out: &mut Vec<usize>) {
        if self.nodes.is_empty() {
            return;
        }
        let qmin = query.min.map(round_down);
        let qmax = query.max.map(round_up);
        let mut stack = [0u32; STACK];
        let mut depth = 1;
        while depth > 0 {
            depth -= 1;
            let node = &self.nodes[stack[depth] as usize];
            let hits = overlaps(node, qmin, qmax);
            for (c, hit) in hits.into_iter().enumerate() {
                // Branch-free push of an overlapping inner child: the slot is always written and
                // kept only when it counts. Branches here would be mispredicted about half the time.
                let child = node.child[c];
                let inner = child & ITEM == 0;
                stack[depth] = child;
                depth += usize::from(hit & inner);
                if hit & !inner {
                    self.report(child & !ITEM, node, c, query, out);
                }
            }
        }
    }

    /// Temporary: nodes visited by a query.
    pub(crate) fn visits(&self, query: &Aabb) -> usize {
        if self.nodes.is_empty() {
            return 0;
        }
        let qmin = query.min.map(round_down);
        let qmax = query.max.map(round_up);
        let mut stack = vec![0u32];
        let mut n = 0;
        while let Some(at) = stack.pop() {
            n += 1;
            let node = &self.nodes[at as usize];
            let hits = overlaps(node, qmin, qmax);
            for c in 0..4 {
                if hits[c] && node.child[c] & ITEM == 0 {
                    stack.push(node.child[c]);
                }
            }
        }
        n
    }

    /// Reports item `item`, child `c` of `node`, if its exact box intersects `query`.
    #[inline]
    fn report(&self, item: u32, node: &Node, c: usize, query: &Aabb, out: &mut Vec<usize>) {
        let item = item as usize;
        // The exact bound lies between the stored f32 bound and the next f32 inward, so the exact
        // box is needed only when the query ends within that band (rare).
        let sure = (0..3).fold(true, |acc, i| {
            acc & (f64::from(node.min[i][c].next_up()) <= query.max[i])
                & (query.min[i] <= f64::from(node.max[i][c].next_down()))
        });
        if sure || self.exact[item].intersects(query) {
            out.push(self.ids[item] as usize);
        }
    }

    /// Bytes held by the node and item arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node>()
            + self.ids.capacity() * size_of::<u32>()
            + self.exact.capacity() * size_of::<Aabb>()
    }
}

/// Which of the node's four children overlap the query box, without branches: the largest gap
/// between the query and a child along any axis is ≤ 0 exactly when they overlap. Written as lane
/// arithmetic with a `>`-select (the semantics of a packed max) so the compiler vectorises it.
/// The query must be finite.
#[inline]
fn overlaps(node: &Node, qmin: [f32; 3], qmax: [f32; 3]) -> [bool; 4] {
    let mut gap = [f32::NEG_INFINITY; 4];
    for axis in 0..3 {
        let (lo, hi) = (&node.min[axis], &node.max[axis]);
        for c in 0..4 {
            let below = lo[c] - qmax[axis];
            gap[c] = if below > gap[c] { below } else { gap[c] };
            let above = qmin[axis] - hi[c];
            gap[c] = if above > gap[c] { above } else { gap[c] };
        }
    }
    gap.map(|g| g <= 0.0)
}

/// Adds the subtree over `items` (which start at `offset` in the full array) and returns its index.
fn build_node(nodes: &mut Vec<Node>, items: &mut [(u32, Aabb)], offset: usize) -> u32 {
    let at = nodes.len();
    nodes.push(Node::empty());
    // Up to four items become the children; more are split in two rounds of median splits.
    let groups: Vec<(usize, usize)> = if items.len() <= 4 {
        (0..items.len()).map(|i| (i, i + 1)).collect()
    } else {
        let half = split_at_median(items);
        let first = split_at_median(&mut items[..half]);
        let second = half + split_at_median(&mut items[half..]);
        vec![(0, first), (first, half), (half, second), (second, items.len())]
    };
    for (slot, (start, end)) in groups.into_iter().enumerate() {
        let group = &mut items[start..end];
        let bounds = group.iter().skip(1).fold(group[0].1, |b, (_, item)| b.union(item));
        let child =
            if group.len() == 1 { (offset + start) as u32 | ITEM } else { build_node(nodes, group, offset + start) };
        let node = &mut nodes[at];
        for axis in 0..3 {
            node.min[axis][slot] = round_down(bounds.min[axis]);
            node.max[axis][slot] = round_up(bounds.max[axis]);
        }
        node.child[slot] = child;
    }
    at as u32
}

/// Reorders `items` (at least 2) so the first half has the lower centroids along the axis of
/// greatest centroid spread; returns the size of that half.
fn split_at_median(items: &mut [(u32, Aabb)]) -> usize {
    let centres =
        Aabb::enclosing(items.iter().map(|(_, b)| b.centre())).unwrap_or(Aabb { min: [0.0; 3], max: [0.0; 3] });
    let spread = [0, 1, 2].map(|i| centres.max[i] - centres.min[i]);
    let axis = (0..3).max_by(|a, b| spread[*a].total_cmp(&spread[*b])).unwrap_or(0);
    let mid = items.len() / 2;
    let centre = |b: &Aabb| b.min[axis] + b.max[axis];
    items.select_nth_unstable_by(mid, |a, b| centre(&a.1).total_cmp(&centre(&b.1)));
    mid
}

/// The largest `f32` not above `x` (NaN stays NaN, which then matches nothing).
fn round_down(x: f64) -> f32 {
    let f = x as f32;
    if f as f64 > x { f.next_down() } else { f }
}

/// The smallest `f32` not below `x`.
fn round_up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x { f.next_up() } else { f }
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

    #[test]
    fn rounding_goes_outward() {
        let x = 0.1_f64;
        assert!((round_down(x) as f64) <= x && (round_up(x) as f64) >= x);
        assert!((round_down(-x) as f64) <= -x && (round_up(-x) as f64) >= -x);
        assert_eq!(round_down(1e9), 1e9_f32);
        assert_eq!(round_up(1e9), 1e9_f32);
    }

    #[test]
    fn queries_find_exactly_the_overlapping_boxes() {
        let bvh = Bvh::build((0..1000).map(|i| (i, unit_box(i as f64 * 2.0))));
        let mut out = Vec::new();
        bvh.query(&Aabb::around([101.5, 0.5, 0.5], 0.1), &mut out);
        assert!(out.is_empty(), "{out:?}");
        bvh.query(&Aabb::around([100.5, 0.5, 0.5], 1.6), &mut out);
        out.sort_unstable();
        assert_eq!(out, vec![49, 50, 51]);
        // Touching counts, a hair (below f32 resolution) away does not.
        out.clear();
        bvh.query(&Aabb { min: [101.0, 0.0, 0.0], max: [101.5, 1.0, 1.0] }, &mut out);
        assert_eq!(out, vec![50]);
        out.clear();
        bvh.query(&Aabb { min: [101.0 + 1e-12, 0.0, 0.0], max: [101.5, 1.0, 1.0] }, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn depth_is_logarithmic_even_for_identical_boxes() {
        let bvh = Bvh::build((0..4096).map(|i| (i, unit_box(0.0))));
        assert!(depth(&bvh, 0) <= 7, "{}", depth(&bvh, 0));
        let mut out = Vec::new();
        bvh.query(&unit_box(0.0), &mut out);
        assert_eq!(out.len(), 4096);
    }

    #[test]
    fn small_and_empty_hierarchies_answer() {
        let mut out = Vec::new();
        Bvh::build([]).query(&unit_box(0.0), &mut out);
        assert!(out.is_empty());
        Bvh::build([(9, unit_box(0.0))]).query(&unit_box(0.5), &mut out);
        assert_eq!(out, vec![9]);
        assert_eq!(Bvh::build([(3, unit_box(0.0)), (4, unit_box(5.0))]).ids().collect::<Vec<_>>().len(), 2);
    }
}

#[cfg(test)]
mod visits {
    use super::*;

    #[test]
    #[ignore]
    fn count_visits() {
        let mut s = 12345u64;
        let mut r = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in [10_000u32, 100_000] {
            let boxes: Vec<(u32, Aabb)> = (0..n)
                .map(|i| {
                    let c = [r() * 1000.0, r() * 1000.0, r() * 20.0];
                    let h = [r() * 10.0 + 0.5, r() * 10.0 + 0.5, r() * 10.0 + 0.5];
                    (i, Aabb { min: [c[0] - h[0], c[1] - h[1], c[2] - h[2]], max: [c[0] + h[0], c[1] + h[1], c[2] + h[2]] })
                })
                .collect();
            let bvh = Bvh::build(boxes);
            let qs: Vec<Aabb> = (0..100_000).map(|_| Aabb::around([r() * 1000.0, r() * 1000.0, r() * 20.0], 0.5)).collect();
            let mut out = Vec::with_capacity(100);
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let t = std::time::Instant::now();
                for q in &qs {
                    out.clear();
                    bvh.query(q, &mut out);
                }
                best = best.min(t.elapsed().as_nanos() as f64 / 1e5);
            }
            let t = std::time::Instant::now();
            let mut cnt = 0;
            for q in &qs[..1000] {
                for it in &bvh.exact { cnt += it.intersects(q) as usize; }
            }
            let lin = t.elapsed().as_nanos() as f64 / 1e3;
            let t = std::time::Instant::now();
            let mut x = 1.0f64;
            for i in 0..100_000_000u64 { x = x * 1.0000001 + (i as f64) * 1e-12; }
            let spin = t.elapsed().as_nanos() as f64 / 1e8;
            println!("n={n}: {} nodes {best:.0} ns/query; linear {lin:.0} ns/query ({cnt}); {spin:.2} ns per dependent fma {x}", bvh.nodes.len());
        }
    }
}
