//! Sparse multicast to a target list over the SPGSNW fan-out tree.
//!
//! The root repeatedly calls SPLIT on its target list: it picks a *child*
//! (a target with no other target on a shortest hypercube path to it), and
//! the child's *descendants* (targets the child lies on a shortest path to);
//! it sends the message to the child with the descendant list appended, and
//! goes on with the rest. A target receives from any source, strips the
//! appended list and does the same with it. Targets never know the root.
//! Source: seed 000, section 7 and the SPGSNW/SPGRCW/SPLIT/BETWEEN listings
//! ([`crate::hypercube::split`], [`crate::hypercube::between`]).
//!
//! **Executor contract.** Participant numbers are hypercube node numbers
//! (communicator ranks). The sender runs [`spgsnw_sender`]`(me, list,
//! count)`: a schedule of Sends of Output[0..count], one per round, and,
//! parallel to them, the sub-list to append to each message. A target posts
//! a receive *from any source* for this collective, takes the data into
//! Output and the appended list, then runs `spgsnw_sender(me, &list,
//! count)` itself (an empty list gives an empty schedule). The schedule
//! model has no "receive from any", so a target's receive is not part of a
//! schedule; [`spgsnw_receiver`] builds it for a known parent, for tests and
//! simulation, from [`spgsnw_plan`].
//!
//! cost: depends on the targets; [`cost_plan`] gives the completion time of
//! the last target with sequential sends of (ts + tw·m) each; for all p-1
//! other nodes of a 2^d cube it is (ts + tw·m)·d.

use crate::hypercube::spgsnw_fanout;
use crate::schedule::{output, recv, send, Schedule};

/// The sends of one sender: schedule (one Send of Output[0..count] per
/// round) and the list to append to each message, in the same order.
pub fn spgsnw_sender(me: usize, list: &[usize], count: usize) -> (Schedule, Vec<Vec<usize>>) {
    let mut s = Schedule::new();
    let mut lists = Vec::new();
    // 1. SPLIT off a child and its descendants, send, repeat with the rest.
    for (child, sub) in spgsnw_fanout(me, list) {
        s.push(vec![send(child, output(0, count))]);
        lists.push(sub);
    }
    (s, lists)
}

/// The whole tree: `(parent, child, list appended to the child's message)`
/// in breadth-first order. Every target appears exactly once as a child.
pub fn spgsnw_plan(root: usize, targets: &[usize]) -> Vec<(usize, usize, Vec<usize>)> {
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([(root, targets.to_vec())]);
    while let Some((me, list)) = queue.pop_front() {
        for (child, sub) in spgsnw_fanout(me, &list) {
            out.push((me, child, sub.clone()));
            queue.push_back((child, sub));
        }
    }
    out
}

/// Schedule of a target whose parent and appended list are known (from
/// [`spgsnw_plan`]): receive from the parent, then forward.
pub fn spgsnw_receiver(me: usize, parent: usize, list: &[usize], count: usize) -> Schedule {
    let mut s = Schedule::new();
    s.push(vec![recv(parent, output(0, count))]);
    s.then(spgsnw_sender(me, list, count).0)
}

/// Completion time of the last target, sequential sends of (ts + tw·m).
pub fn cost_plan(root: usize, targets: &[usize], m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let step = ts + tw * m_bytes as f64;
    let mut ready = std::collections::HashMap::from([(root, 0.0f64)]);
    let mut sent = std::collections::HashMap::<usize, usize>::new();
    let mut last = 0.0f64;
    for (parent, child, _) in spgsnw_plan(root, targets) {
        let k = sent.entry(parent).or_insert(0);
        *k += 1;
        let t = ready[&parent] + *k as f64 * step;
        ready.insert(child, t);
        last = last.max(t);
    }
    last
}

/// Cost of a multicast from 0 to all other p-1 nodes.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let targets: Vec<usize> = (1..p).collect();
    cost_plan(0, &targets, m_bytes, ts, tw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{simulate, sym, Sym};
    use crate::hypercube::between;

    /// Simulate the multicast on p nodes; targets get the root's data,
    /// nobody else is touched.
    fn check(p: usize, root: usize, targets: &[usize], count: usize) {
        let plan = spgsnw_plan(root, targets);
        let mut seen = vec![0; p];
        for (parent, child, sub) in &plan {
            seen[*child] += 1;
            for &d in sub {
                assert!(between(*parent, *child, d), "{parent} {child} {d}");
            }
        }
        for (t, n) in seen.iter().enumerate() {
            assert_eq!(*n, usize::from(targets.contains(&t)), "target {t}");
        }
        let scheds: Vec<Schedule> = (0..p)
            .map(|r| {
                if r == root {
                    spgsnw_sender(r, targets, count).0
                } else if let Some((parent, _, sub)) = plan.iter().find(|(_, c, _)| *c == r) {
                    spgsnw_receiver(r, *parent, sub, count)
                } else {
                    Schedule::new()
                }
            })
            .collect();
        let init = (0..p)
            .map(|r| {
                let out: Vec<Option<Sym>> = (0..count)
                    .map(|i| if r == root { sym(root, i) } else { None })
                    .collect();
                (vec![], out)
            })
            .collect();
        let out = simulate(&scheds, init, &crate::check::concat).expect("simulation");
        for (r, b) in out.iter().enumerate() {
            let want: Vec<Option<Sym>> = (0..count)
                .map(|i| {
                    (r == root || targets.contains(&r))
                        .then(|| sym(root, i))
                        .flatten()
                })
                .collect();
            assert_eq!(b.output, want, "rank {r}");
        }
    }

    #[test]
    fn exhaustive_small_cubes() {
        for p in [1usize, 2, 4, 8] {
            for root in 0..p {
                for mask in 0u32..(1 << p) {
                    let targets: Vec<usize> = (0..p)
                        .filter(|&t| t != root && mask >> t & 1 == 1)
                        .collect();
                    check(p, root, &targets, 2);
                }
            }
        }
    }

    #[test]
    fn incomplete_cubes_and_orders() {
        for p in 1..=33 {
            for root in [0, p / 2, p - 1] {
                let mut targets: Vec<usize> = (0..p).filter(|&t| t != root && t % 3 != 1).collect();
                targets.reverse();
                check(p, root, &targets, 3);
                let all: Vec<usize> = (0..p).filter(|&t| t != root).collect();
                check(p, root, &all, 0);
            }
        }
    }

    #[test]
    fn full_cube_is_the_spanning_tree() {
        // All 7 others of a 3-cube from 0: d = 3 steps, like GSENDW.
        assert_eq!(cost(8, 10, 1.0, 1.0), 33.0);
        assert_eq!(cost(16, 0, 1.0, 1.0), 4.0);
        assert_eq!(cost_plan(0, &[7], 0, 1.0, 1.0), 1.0);
    }
}
