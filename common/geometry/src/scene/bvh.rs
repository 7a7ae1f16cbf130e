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

/// A query box, exact and rounded outward to `f32` for the node tests.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Query {
    exact: Aabb,
    min: [f32; 3],
    max: [f32; 3],
}

impl Query {
    pub(crate) fn new(exact: Aabb) -> Self {
        Self { exact, min: exact.min.map(outward_down), max: exact.max.map(outward_up) }
    }
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
    pub(crate) fn query(&self, query: &Query, out: &mut Vec<usize>) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = [0u32; STACK];
        let mut depth = 1;
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
            }
            while items != 0 {
                let c = items.trailing_zeros() as usize;
                items &= items - 1;
                self.report(node, c, query, out);
            }
        }
    }

    /// Reports the item that is child `c` of `node` if its exact box intersects the query.
    #[inline]
    fn report(&self, node: &Node, c: usize, query: &Query, out: &mut Vec<usize>) {
        let item = (node.child[c] & !ITEM) as usize;
        // The exact bound lies within one f32 ulp inside the stored bound, so the exact box is
        // needed only when the query ends within (a little more than) that band: rarely.
        let sure = (0..3).fold(true, |acc, i| {
            acc & (inward_up(node.min[i][c]) <= query.exact.max[i])
                & (query.exact.min[i] <= inward_down(node.max[i][c]))
        });
        if sure || self.exact[item].intersects(&query.exact) {
            out.push(self.ids[item] as usize);
        }
    }

    /// Temporary: nodes visited by a query.
    pub(crate) fn visits(&self, query: &Query) -> usize {
        if self.nodes.is_empty() {
            return 0;
        }
        let mut stack = vec![0u32];
        let mut n = 0;
        while let Some(at) = stack.pop() {
            n += 1;
            let node = &self.nodes[at as usize];
            let hits = overlaps(node, query);
            for c in 0..4 {
                if hits[c] && node.child[c] & ITEM == 0 {
                    stack.push(node.child[c]);
                }
            }
        }
        n
    }

    /// Bytes held by the node and item arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node>()
            + self.ids.capacity() * size_of::<u32>()
            + self.exact.capacity() * size_of::<Aabb>()
    }
}

/// Which of the node's four children overlap the query box, without branches.
#[inline]
fn overlaps(node: &Node, q: &Query) -> [bool; 4] {
    let mut hit = [true; 4];
    for axis in 0..3 {
        for c in 0..4 {
            hit[c] &= (node.min[axis][c] <= q.max[axis]) & (q.min[axis] <= node.max[axis][c]);
        }
    }
    hit
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

/// A little more than two `f32` ulps, relative: rounding to the nearest `f32` moves a value by at
/// most half an ulp, so a value moved by this first still ends up on the same side.
const F32_SLACK: f64 = 1.0 / (1u64 << 22) as f64;

/// An `f32` at or below `x`, without branches (so, for a query, cheaply); a few ulps low.
fn outward_down(x: f64) -> f32 {
    (x - x.abs() * F32_SLACK - f64::from(f32::MIN_POSITIVE)) as f32
}

/// An `f32` at or above `x`, without branches; a few ulps high.
fn outward_up(x: f64) -> f32 {
    (x + x.abs() * F32_SLACK + f64::from(f32::MIN_POSITIVE)) as f32
}

/// A value at or above the next `f32` above `f`: exact bounds stored as `f32` rounded down lie
/// below it.
fn inward_up(f: f32) -> f64 {
    let x = f64::from(f);
    x + x.abs() * F32_SLACK + f64::from(f32::MIN_POSITIVE)
}

/// A value at or below the next `f32` below `f`.
fn inward_down(f: f32) -> f64 {
    let x = f64::from(f);
    x - x.abs() * F32_SLACK - f64::from(f32::MIN_POSITIVE)
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
        bvh.query(&Query::new(Aabb::around([101.5, 0.5, 0.5], 0.1)), &mut out);
        assert!(out.is_empty(), "{out:?}");
        bvh.query(&Query::new(Aabb::around([100.5, 0.5, 0.5], 1.6)), &mut out);
        out.sort_unstable();
        assert_eq!(out, vec![49, 50, 51]);
        // Touching counts, a hair (below f32 resolution) away does not.
        out.clear();
        bvh.query(&Query::new(Aabb { min: [101.0, 0.0, 0.0], max: [101.5, 1.0, 1.0] }), &mut out);
        assert_eq!(out, vec![50]);
        out.clear();
        bvh.query(&Query::new(Aabb { min: [101.0 + 1e-12, 0.0, 0.0], max: [101.5, 1.0, 1.0] }), &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn depth_is_logarithmic_even_for_identical_boxes() {
        let bvh = Bvh::build((0..4096).map(|i| (i, unit_box(0.0))));
        assert!(depth(&bvh, 0) <= 7, "{}", depth(&bvh, 0));
        let mut out = Vec::new();
        bvh.query(&Query::new(unit_box(0.0)), &mut out);
        assert_eq!(out.len(), 4096);
    }

    #[test]
    fn small_and_empty_hierarchies_answer() {
        let mut out = Vec::new();
        Bvh::build([]).query(&Query::new(unit_box(0.0)), &mut out);
        assert!(out.is_empty());
        Bvh::build([(9, unit_box(0.0))]).query(&Query::new(unit_box(0.5)), &mut out);
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
            let qs: Vec<Query> = (0..100_000).map(|_| Query::new(Aabb::around([r() * 1000.0, r() * 1000.0, r() * 20.0], 0.5))).collect();
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
                for it in &bvh.exact { cnt += it.intersects(&q.exact) as usize; }
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
