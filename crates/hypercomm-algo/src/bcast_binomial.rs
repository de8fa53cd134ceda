//! Hypercube spanning-tree broadcast (binomial tree) with the iPSC
//! forwarding rule.
//!
//! The root sends to its neighbours along dimensions 0, 1, 2, … in turn; a
//! node that received along dimension d forwards only along the dimensions
//! above d, in increasing order, so no node needs to know the root (seed
//! 000, section 2 and the GSENDW/GRECVW listing: `BIT = 2*XOR(ME, NODE)`).
//! Node numbers are relative to the root: `rank XOR root` when p is a power
//! of two (the seed's hypercube neighbours), `(rank - root) mod p` otherwise
//! (an incomplete hypercube: sends to relative numbers ≥ p are skipped).
//!
//! cost: (ts + tw·m)·⌈log2 p⌉ (Kumar, seed 001, one-to-all broadcast on a hypercube)

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{ceil_log2, output, recv, send, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// `rank`'s number relative to `root`: XOR on a power of two (so the tree
/// is the hypercube's), the distance round the ring otherwise.
pub(crate) fn rel(rank: usize, p: usize, root: usize) -> usize {
    if p.is_power_of_two() {
        rank ^ root
    } else {
        (rank + p - root) % p
    }
}

/// The rank whose relative number is `rel` ([`rel`]'s inverse).
pub(crate) fn unrel(rel: usize, p: usize, root: usize) -> usize {
    if p.is_power_of_two() {
        rel ^ root
    } else {
        (rel + root) % p
    }
}

/// Schedule for `rank` of `p`; the root's data is in Output[0..count], every
/// rank's Output[0..count] receives it.
pub fn bcast_binomial(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    assert!(rank < p && root < p);
    let me = rel(rank, p, root);
    let mut s = Schedule::new();
    let all = output(0, count);
    // 1. Receive from the neighbour along my highest set bit (root: none).
    let mut bit = 1usize;
    if me != 0 {
        let high = 1usize << (usize::BITS - 1 - me.leading_zeros());
        s.push(vec![recv(unrel(me ^ high, p, root), all)]);
        bit = high << 1;
    }
    // 2. Forward along every higher dimension, lowest first (seed rule).
    while bit < p {
        if me + bit < p {
            // me < bit here, so me | bit == me + bit
            s.push(vec![send(unrel(me | bit, p, root), all)]);
        }
        bit <<= 1;
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
    algorithm: Algorithm::Binomial,
    generate: |x| bcast_binomial(x.me, x.p, x.root, x.count),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Hypercube],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_bcast, standard_cases};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            check_bcast(p, root, count, &|r| bcast_binomial(r, p, root, count))
                .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
        }
    }

    #[test]
    fn seed_forwarding_rule() {
        // p = 8, root 0: node 1 forwards to 3, 5; node 3 to 7; node 4 to nobody.
        let sends = |r| -> Vec<usize> {
            bcast_binomial(r, 8, 0, 1)
                .ops()
                .filter_map(|op| match op {
                    crate::Op::Send { to, .. } => Some(*to),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(sends(0), [1, 2, 4]);
        assert_eq!(sends(1), [3, 5]);
        assert_eq!(sends(3), [7]);
        assert!(sends(4).is_empty());
        // root 5 on a cube: neighbours of 5 along dims 0,1,2 = 4, 7, 1
        let s = bcast_binomial(5, 8, 5, 1);
        let to: Vec<usize> = s
            .ops()
            .filter_map(|op| match op {
                crate::Op::Send { to, .. } => Some(*to),
                _ => None,
            })
            .collect();
        assert_eq!(to, [4, 7, 1]);
    }

    #[test]
    fn cost_hand_values() {
        // Kumar: (ts + tw m) log p; p = 8, ts = 10, tw = 0.5, m = 100 -> 3 * 60
        assert_eq!(cost(8, 100, 10.0, 0.5), 180.0);
        assert_eq!(cost(1, 100, 10.0, 0.5), 0.0);
        assert_eq!(cost(5, 0, 1.0, 1.0), 3.0);
    }
}
