//! Tree barrier: fan-in to participant 0 over the canonical interval
//! (binomial) tree, then fan-out with the hypercube broadcast.
//!
//! Suited to the host + nodes barrier (CMMD `sync_host_with_nodes`, seed
//! 004): map the host to participant 0 and it only exchanges ⌈log2 p⌉
//! messages in each phase. Source: seed 000 GOP (fan-in) and GSENDW/GRECVW
//! (fan-out) with zero-length messages.
//!
//! cost: 2·ts·⌈log2 p⌉

use crate::bcast_binomial::bcast_binomial;
use crate::entry::{combines_nothing, Entry};
use crate::schedule::{ceil_log2, output, recv, send, Schedule};
use crate::tree::path;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`. Messages are zero-length regions of Output.
pub fn barrier_tree(rank: usize, p: usize) -> Schedule {
    let mut s = Schedule::new();
    // 1. Fan-in: bottom-up along the tree path, receive from the other half's
    //    representative while we represent the whole interval, else send up.
    for lv in path(rank, p, 0).iter().rev() {
        if lv.my_rep != rank {
            continue;
        }
        if lv.rep == rank {
            s.push(vec![recv(lv.other_rep, output(0, 0))]);
        } else {
            s.push(vec![send(lv.rep, output(0, 0))]);
            break;
        }
    }
    // 2. Fan-out: empty broadcast from 0.
    s.then(bcast_binomial(rank, p, 0, 0))
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, _m_bytes: usize, ts: f64, _tw: f64) -> f64 {
    2.0 * ts * f64::from(ceil_log2(p))
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Barrier,
    algorithm: Algorithm::Tree,
    generate: |x| barrier_tree(x.me, x.p),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check_barrier;

    #[test]
    fn all_sizes() {
        for p in 1..=33 {
            check_barrier(p, &|r| barrier_tree(r, p)).unwrap();
        }
        assert_eq!(cost(16, 0, 1.5, 1.0), 12.0);
    }
}
