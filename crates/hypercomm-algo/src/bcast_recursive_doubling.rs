//! Recursive-doubling broadcast, farthest partner first (Kumar's
//! one-to-all broadcast).
//!
//! In step i = ⌈log2 p⌉−1, …, 1, 0 every participant that has the message
//! and whose relative number is a multiple of 2^(i+1) sends it to relative
//! number + 2^i: half the machine away first, then a quarter, … (seed 001,
//! Programs 3.1 and 3.2, ONE_TO_ALL_BC and GENERAL_ONE_TO_ALL_BC; Figure
//! 3.6, the ring with cut-through routing). Relative numbers are `rank XOR
//! root` when p is a power of two (Program 3.2's virtual ids: partners are
//! hypercube neighbours, and on a ring they are 2^i apart, the pairs of one
//! step on disjoint arcs), `(rank − root) mod p` otherwise. The same tree
//! as [`crate::bcast_binomial()`] walked from the other end: on a
//! hypercube the two cost the same; on a ring or a mesh with cut-through
//! routing only this order is free of link contention.
//!
//! cost: (ts + tw·m)·⌈log2 p⌉; with per-hop time th on a p-node ring with
//! cut-through routing (ts + tw·m)·log2 p + th·(p − 1) (seed 001).

use crate::bcast_binomial::{rel, unrel};
use crate::entry::{combines_nothing, Entry};
use crate::schedule::{ceil_log2, output, recv, send, Schedule};
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`; the root's data is in Output[0..count], every
/// rank's Output[0..count] receives it.
pub fn bcast_recursive_doubling(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    assert!(rank < p && root < p);
    let me = rel(rank, p, root);
    let all = output(0, count);
    let mut s = Schedule::new();
    // 1. Receive in the step of my lowest set bit (root: never), from the
    //    participant 2^i below me.
    let top = ceil_log2(p);
    let first = if me == 0 {
        top
    } else {
        let i = me.trailing_zeros();
        s.push(vec![recv(unrel(me ^ (1 << i), p, root), all)]);
        i
    };
    // 2. Then send in every later step: 2^(i-1), …, 2, 1 above me.
    for i in (0..first).rev() {
        let to = me + (1 << i);
        if to < p {
            s.push(vec![send(unrel(to, p, root), all)]);
        }
    }
    s
}

/// Cost in the seed-001 model for an m-byte message.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    (ts + tw * m_bytes as f64) * f64::from(ceil_log2(p))
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Bcast,
    algorithm: Algorithm::RecursiveDoubling,
    generate: |x| bcast_recursive_doubling(x.me, x.p, x.root, x.count),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_bcast, standard_cases};
    use crate::Op;

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            check_bcast(p, root, count, &|r| {
                bcast_recursive_doubling(r, p, root, count)
            })
            .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
        }
    }

    /// Program 3.1 on 8 nodes: 0 → 4, then 0 → 2 and 4 → 6, then the odd ones.
    #[test]
    fn farthest_first() {
        let sends = |r: usize| -> Vec<usize> {
            bcast_recursive_doubling(r, 8, 0, 1)
                .ops()
                .filter_map(|op| match op {
                    Op::Send { to, .. } => Some(*to),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(sends(0), [4, 2, 1]);
        assert_eq!(sends(4), [6, 5]);
        assert_eq!(sends(2), [3]);
        assert_eq!(sends(7), [] as [usize; 0]);
        assert_eq!(cost(8, 10, 1.0, 1.0), 33.0);
    }
}
