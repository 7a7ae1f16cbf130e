//! Who should own which partition: the same answer on every member from the same view.

use std::collections::BTreeSet;

/// The balanced assignment of `count` partitions to the `live` members (sorted), given each
/// partition's live owner: every member gets `count / live` partitions or one more (those that
/// hold the most get the extra ones), keeps the lowest it holds up to that, and the others go,
/// in order, to the members short of their share, in member order. Every member computes the
/// same from the same view.
pub fn assign(count: u32, live: &[String], owners: &[Option<&str>]) -> Vec<Option<String>> {
    let mut target: Vec<Option<String>> = vec![None; count as usize];
    if live.is_empty() {
        return target;
    }
    let n = live.len();
    let holdings: Vec<Vec<u32>> = live
        .iter()
        .map(|m| (0..count).filter(|&p| owners.get(p as usize).copied().flatten() == Some(m.as_str())).collect())
        .collect();
    let mut by_holdings: Vec<usize> = (0..n).collect();
    by_holdings.sort_by(|&a, &b| holdings[b].len().cmp(&holdings[a].len()).then(live[a].cmp(&live[b])));
    let base = count as usize / n;
    let extra = count as usize % n;
    let mut quota = vec![base; n];
    for &m in by_holdings.iter().take(extra) {
        quota[m] += 1;
    }
    let mut assigned = vec![0usize; n];
    for m in 0..n {
        for &p in holdings[m].iter().take(quota[m]) {
            target[p as usize] = Some(live[m].clone());
            assigned[m] += 1;
        }
    }
    let mut free = (0..count as usize).filter(|&p| target[p].is_none()).collect::<BTreeSet<usize>>().into_iter();
    for m in 0..n {
        while assigned[m] < quota[m] {
            let Some(p) = free.next() else { break };
            target[p] = Some(live[m].clone());
            assigned[m] += 1;
        }
    }
    target
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn members(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("m{i}")).collect()
    }

    fn counts(target: &[Option<String>], live: &[String]) -> Vec<usize> {
        live.iter().map(|m| target.iter().filter(|t| t.as_deref() == Some(m.as_str())).count()).collect()
    }

    #[test]
    fn every_partition_goes_to_a_live_member_within_one_of_its_share() {
        for n in 1..=20 {
            let live = members(n);
            let target = assign(64, &live, &vec![None; 64]);
            assert!(target.iter().all(Option::is_some));
            let c = counts(&target, &live);
            assert!(c.iter().max().unwrap() - c.iter().min().unwrap() <= 1, "{n}: {c:?}");
        }
    }

    #[test]
    fn a_member_joining_takes_its_share_from_the_others_and_nothing_else_moves() {
        let two = members(2);
        let before = assign(64, &two, &vec![None; 64]);
        let three = members(3);
        let owners: Vec<Option<&str>> = before.iter().map(|o| o.as_deref()).collect();
        let after = assign(64, &three, &owners);
        let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
        assert_eq!(counts(&after, &three), [22, 21, 21]);
        // Only what the newcomer takes moves: 21 partitions.
        assert_eq!(moved, 21);
        assert!(before.iter().zip(&after).all(|(b, a)| b == a || a.as_deref() == Some("m2")));
    }

    #[test]
    fn a_member_gone_leaves_its_partitions_to_the_others_and_theirs_stay() {
        let three = members(3);
        let before = assign(64, &three, &vec![None; 64]);
        let two = vec!["m0".to_owned(), "m2".to_owned()];
        let owners: Vec<Option<&str>> = before.iter().map(|o| o.as_deref().filter(|m| *m != "m1")).collect();
        let after = assign(64, &two, &owners);
        assert_eq!(counts(&after, &two), [32, 32]);
        assert!(before.iter().zip(&after).all(|(b, a)| b.as_deref() == Some("m1") || b == a));
    }

    #[test]
    fn no_member_no_owner() {
        assert!(assign(4, &[], &[None; 4]).iter().all(Option::is_none));
    }
}
