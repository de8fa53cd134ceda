//! Allreduce as reduce to participant 0 followed by broadcast from it.
//!
//! The reduce is [`crate::reduce_binomial()`] (rank order kept, bracketing
//! fixed by p), the broadcast [`crate::bcast_binomial()`] (seed 000 rule).
//! This is what the iPSC normalize example does by hand (GOP then GSENDW;
//! seed 000 section 10), and it is the crate's reproducible allreduce.
//!
//! cost: 2·(ts + tw·m)·⌈log2 p⌉

use crate::bcast_binomial::bcast_binomial;
use crate::entry::{combines_per_step, Entry};
use crate::reduce_binomial::reduce_binomial;
use crate::schedule::{ceil_log2, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p` (buffers as in
/// [`crate::allreduce_recursive_doubling()`]).
pub fn allreduce_reduce_bcast(rank: usize, p: usize, count: usize) -> Schedule {
    // 1. Reduce to 0 (non-roots leave Output alone). 2. Broadcast Output from 0.
    reduce_binomial(rank, p, 0, count).then(bcast_binomial(rank, p, 0, count))
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    2.0 * (ts + tw * m_bytes as f64) * f64::from(ceil_log2(p))
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Allreduce,
    algorithm: Algorithm::ReduceBcast,
    generate: |x| allreduce_reduce_bcast(x.me, x.p, x.count),
    cost,
    combined: combines_per_step,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Full],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_allreduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            check_allreduce(p, count, Order::Exact, &|r| {
                allreduce_reduce_bcast(r, p, count)
            })
            .unwrap_or_else(|e| panic!("p={p} count={count}: {e}"));
        }
        assert_eq!(cost(4, 1, 1.0, 1.0), 8.0);
    }
}
