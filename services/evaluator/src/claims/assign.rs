//! Who should own which partition: the same answer on every member from the same view.

use std::collections::BTreeSet;

/// Who should own each of `count` partitions, from the `live` members (sorted), the range each
/// is pinned to (`pins`, one per member) and each partition's live owner. A partition in a
/// member's pinned range goes to it (to the first such member, should ranges overlap); the rest
/// are balanced over the members that are not pinned: each gets `rest / members` partitions or
/// one more (those that hold the most get the extra ones), keeps the lowest it holds up to
/// that, and the others go, in order, to the members short of their share, in member order.
/// With no member to share them, the rest go to nobody. Every member computes the same from
/// the same view.
pub fn assign(
    count: u32,
    live: &[String],
    pins: &[Option<(u32, u32)>],
    owners: &[Option<&str>],
) -> Vec<Option<String>> {
    let mut target: Vec<Option<String>> = vec![None; count as usize];
    let pinned_to = |p: u32| live.iter().zip(pins).find(|(_, pin)| pin.is_some_and(|(lo, hi)| (lo..=hi).contains(&p)));
    for p in 0..count {
        if let Some((member, _)) = pinned_to(p) {
            target[p as usize] = Some(member.clone());
        }
    }
    let sharing: Vec<&String> = live.iter().zip(pins).filter(|(_, pin)| pin.is_none()).map(|(m, _)| m).collect();
    if sharing.is_empty() {
        return target;
    }
    let rest: Vec<u32> = (0..count).filter(|&p| target[p as usize].is_none()).collect();
    let n = sharing.len();
    let holdings: Vec<Vec<u32>> = sharing
        .iter()
        .map(|m| {
            rest.iter().copied().filter(|&p| owners.get(p as usize).copied().flatten() == Some(m.as_str())).collect()
        })
        .collect();
    let mut by_holdings: Vec<usize> = (0..n).collect();
    by_holdings.sort_by(|&a, &b| holdings[b].len().cmp(&holdings[a].len()).then(sharing[a].cmp(sharing[b])));
    let base = rest.len() / n;
    let extra = rest.len() % n;
    let mut quota = vec![base; n];
    for &m in by_holdings.iter().take(extra) {
        quota[m] += 1;
    }
    let mut assigned = vec![0usize; n];
    for m in 0..n {
        for &p in holdings[m].iter().take(quota[m]) {
            target[p as usize] = Some(sharing[m].clone());
            assigned[m] += 1;
        }
    }
    let mut free =
        rest.iter().copied().filter(|&p| target[p as usize].is_none()).collect::<BTreeSet<u32>>().into_iter();
    for m in 0..n {
        while assigned[m] < quota[m] {
            let Some(p) = free.next() else { break };
            target[p as usize] = Some(sharing[m].clone());
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
            let target = assign(64, &live, &vec![None; n], &vec![None; 64]);
            assert!(target.iter().all(Option::is_some));
            let c = counts(&target, &live);
            assert!(c.iter().max().unwrap() - c.iter().min().unwrap() <= 1, "{n}: {c:?}");
        }
    }

    #[test]
    fn a_member_joining_takes_its_share_from_the_others_and_nothing_else_moves() {
        let two = members(2);
        let before = assign(64, &two, &[None; 2], &vec![None; 64]);
        let three = members(3);
        let owners: Vec<Option<&str>> = before.iter().map(|o| o.as_deref()).collect();
        let after = assign(64, &three, &[None; 3], &owners);
        let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
        assert_eq!(counts(&after, &three), [22, 21, 21]);
        // Only what the newcomer takes moves: 21 partitions.
        assert_eq!(moved, 21);
        assert!(before.iter().zip(&after).all(|(b, a)| b == a || a.as_deref() == Some("m2")));
    }

    #[test]
    fn a_member_gone_leaves_its_partitions_to_the_others_and_theirs_stay() {
        let three = members(3);
        let before = assign(64, &three, &[None; 3], &vec![None; 64]);
        let two = vec!["m0".to_owned(), "m2".to_owned()];
        let owners: Vec<Option<&str>> = before.iter().map(|o| o.as_deref().filter(|m| *m != "m1")).collect();
        let after = assign(64, &two, &[None; 2], &owners);
        assert_eq!(counts(&after, &two), [32, 32]);
        assert!(before.iter().zip(&after).all(|(b, a)| b.as_deref() == Some("m1") || b == a));
    }

    #[test]
    fn no_member_no_owner() {
        assert!(assign(4, &[], &[], &[None; 4]).iter().all(Option::is_none));
    }

    #[test]
    fn a_pinned_member_gets_its_range_and_the_others_share_the_rest() {
        let live = members(3);
        let pins = [None, Some((0, 7)), None];
        let target = assign(64, &live, &pins, &vec![None; 64]);
        assert!(target[..8].iter().all(|t| t.as_deref() == Some("m1")));
        assert_eq!(counts(&target, &live), [28, 8, 28]);
        // A sharing member that held a pinned partition (taken over while the pinned one was
        // dead) is not assigned it once the pinned one is back.
        let mut owners: Vec<Option<&str>> = target.iter().map(|o| o.as_deref()).collect();
        owners[3] = Some("m0");
        assert_eq!(assign(64, &live, &pins, &owners)[3].as_deref(), Some("m1"));
    }

    #[test]
    fn partitions_no_pinned_range_covers_go_to_nobody_without_a_sharing_member() {
        let live = members(2);
        let target = assign(64, &live, &[Some((0, 7)), Some((8, 15))], &vec![None; 64]);
        assert_eq!(counts(&target, &live), [8, 8]);
        assert!(target[16..].iter().all(Option::is_none));
    }

    #[test]
    fn a_pinned_member_gone_leaves_its_range_to_the_sharing_members() {
        let live = vec!["m0".to_owned(), "m2".to_owned()];
        let target = assign(64, &live, &[None, None], &vec![None; 64]);
        assert_eq!(counts(&target, &live), [32, 32]);
    }
}
