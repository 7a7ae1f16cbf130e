//! A static bounding-volume hierarchy over boxes, in one flat array.
//!
//! Nodes are in depth-first order: an inner node's left child follows it and the index of its right
//! child is stored. Node bounds are `f32` rounded outward, half the size of `f64` ones, so a node is
//! 32 bytes and twice as many fit in cache; they only prune, never decide. Leaves list up to
//! [`LEAF_SIZE`] items, each with its exact `f64` box, which is what a query answers by.
//!
//! Built top-down by median split along the axis of greatest centroid spread, so the depth is at
//! most ⌈log₂ n⌉ + 1 and a query needs no allocation.

use crate::aabb::Aabb;

/// Most items in a leaf.
const LEAF_SIZE: usize = 4;

/// Longest root-to-leaf path a median split can produce for `u32` item counts, with room to spare.
const STACK: usize = 64;

#[derive(Clone, Copy, Debug)]
struct Node {
    min: [f32; 3],
    max: [f32; 3],
    /// Leaf: index of its first item. Inner node: index of its right child.
    first: u32,
    /// Leaf: number of items (≥ 1). Inner node: 0.
    count: u32,
}

#[derive(Clone, Copy, Debug)]
struct Item {
    bounds: Aabb,
    /// Index the caller knows the item by.
    id: u32,
}

/// Boxes with caller ids, indexed for box-overlap queries.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bvh {
    nodes: Vec<Node>,
    items: Vec<Item>,
}

impl Bvh {
    /// Indexes `boxes` (id, box). Ids must fit in `u32`.
    pub(crate) fn build(boxes: impl IntoIterator<Item = (u32, Aabb)>) -> Self {
        let mut items: Vec<Item> = boxes.into_iter().map(|(id, bounds)| Item { bounds, id }).collect();
        let mut nodes = Vec::with_capacity(2 * items.len().div_ceil(LEAF_SIZE));
        if !items.is_empty() {
            split(&mut nodes, &mut items, 0);
        }
        nodes.shrink_to_fit();
        Self { nodes, items }
    }

    /// Appends to `out` the id of every item whose box intersects `query` (closed boxes).
    pub(crate) fn query(&self, query: &Aabb, out: &mut Vec<usize>) {
        if self.nodes.is_empty() {
            return;
        }
        let qmin = query.min.map(round_down);
        let qmax = query.max.map(round_up);
        let mut stack = [0u32; STACK];
        let mut depth = 0;
        let mut at = 0usize;
        loop {
            let node = &self.nodes[at];
            let hit = (0..3).all(|i| node.min[i] <= qmax[i] && qmin[i] <= node.max[i]);
            if hit {
                if node.count == 0 {
                    stack[depth] = node.first;
                    depth += 1;
                    at += 1;
                    continue;
                }
                let first = node.first as usize;
                for item in &self.items[first..first + node.count as usize] {
                    if item.bounds.intersects(query) {
                        out.push(item.id as usize);
                    }
                }
            }
            if depth == 0 {
                return;
            }
            depth -= 1;
            at = stack[depth] as usize;
        }
    }

    /// Bytes held by the node and item arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node>() + self.items.capacity() * size_of::<Item>()
    }

    /// Number of nodes and the greatest depth (root = 1), for tests.
    #[cfg(test)]
    fn shape(&self) -> (usize, usize) {
        fn depth(nodes: &[Node], at: usize) -> usize {
            let node = nodes[at];
            if node.count > 0 { 1 } else { 1 + depth(nodes, at + 1).max(depth(nodes, node.first as usize)) }
        }
        (self.nodes.len(), if self.nodes.is_empty() { 0 } else { depth(&self.nodes, 0) })
    }
}

/// Adds the subtree over `items` (which start at index `offset` of the full item array) to `nodes`.
fn split(nodes: &mut Vec<Node>, items: &mut [Item], offset: usize) {
    let bounds = items.iter().skip(1).fold(items[0].bounds, |b, item| b.union(&item.bounds));
    let at = nodes.len();
    nodes.push(Node {
        min: bounds.min.map(round_down),
        max: bounds.max.map(round_up),
        first: offset as u32,
        count: items.len() as u32,
    });
    if items.len() <= LEAF_SIZE {
        return;
    }
    let centres =
        Aabb::enclosing(items.iter().map(|item| item.bounds.centre())).unwrap_or(Aabb { min: [0.0; 3], max: [0.0; 3] });
    let spread = [0, 1, 2].map(|i| centres.max[i] - centres.min[i]);
    let axis = (0..3).max_by(|a, b| spread[*a].total_cmp(&spread[*b])).unwrap_or(0);
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, |a, b| centre(a, axis).total_cmp(&centre(b, axis)));
    let (left, right) = items.split_at_mut(mid);
    split(nodes, left, offset);
    let right_at = nodes.len() as u32;
    split(nodes, right, offset + mid);
    nodes[at].first = right_at;
    nodes[at].count = 0;
}

fn centre(item: &Item, axis: usize) -> f64 {
    0.5 * (item.bounds.min[axis] + item.bounds.max[axis])
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

    #[test]
    fn rounding_goes_outward() {
        let x = 0.1_f64;
        assert!((round_down(x) as f64) <= x && (round_up(x) as f64) >= x);
        assert!((round_down(-x) as f64) <= -x && (round_up(-x) as f64) >= -x);
        assert_eq!(round_down(1e9), 1e9_f32);
    }

    #[test]
    fn queries_find_exactly_the_overlapping_boxes() {
        let bvh = Bvh::build((0..1000).map(|i| (i, unit_box(i as f64 * 2.0))));
        let mut out = Vec::new();
        bvh.query(&Aabb::around([101.0, 0.5, 0.5], 0.1), &mut out);
        assert!(out.is_empty(), "{out:?}");
        bvh.query(&Aabb::around([100.5, 0.5, 0.5], 1.6), &mut out);
        out.sort_unstable();
        assert_eq!(out, vec![49, 50, 51]);
    }

    #[test]
    fn depth_is_logarithmic_even_for_identical_boxes() {
        let bvh = Bvh::build((0..4096).map(|i| (i, unit_box(0.0))));
        let (_, depth) = bvh.shape();
        assert!(depth <= 12, "{depth}");
        let mut out = Vec::new();
        bvh.query(&unit_box(0.0), &mut out);
        assert_eq!(out.len(), 4096);
    }

    #[test]
    fn an_empty_hierarchy_answers_nothing() {
        let mut out = Vec::new();
        Bvh::build([]).query(&unit_box(0.0), &mut out);
        assert!(out.is_empty());
        assert_eq!(Bvh::build([]).shape(), (0, 0));
    }
}

#[cfg(test)]
mod visits {
    use super::*;

    #[test]
    #[ignore]
    fn count_visits() {
        // Uniform random boxes of 1–20 m in a 1 km square, like the benchmark.
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
            let (mut visits, mut found) = (0usize, 0usize);
            for _ in 0..10_000 {
                let q = Aabb::around([r() * 1000.0, r() * 1000.0, r() * 20.0], 0.5);
                let (qmin, qmax) = (q.min.map(round_down), q.max.map(round_up));
                for node in &bvh.nodes {
                    if (0..3).all(|i| node.min[i] <= qmax[i] && qmin[i] <= node.max[i]) {
                        visits += 1;
                    }
                }
                let mut out = Vec::new();
                bvh.query(&q, &mut out);
                found += out.len();
            }
            let qs: Vec<Aabb> = (0..100_000).map(|_| Aabb::around([r() * 1000.0, r() * 1000.0, r() * 20.0], 0.5)).collect();
            let mut out = Vec::with_capacity(100);
            let t = std::time::Instant::now();
            for q in &qs {
                out.clear();
                bvh.query(q, &mut out);
            }
            println!("{:.0} ns/query", t.elapsed().as_nanos() as f64 / 1e5);
            println!("n={n}: {} nodes, depth {}, {:.1} node hits/query, {:.2} found", bvh.nodes.len(), bvh.shape().1, visits as f64 / 1e4, found as f64 / 1e4);
        }
    }
}
