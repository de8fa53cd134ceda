//! Van de Geijn broadcast for long messages: scatter, then ring allgather.
//!
//! The root's message is cut into p blocks; the binomial scatter of
//! [`crate::scatter_binomial()`] (the canonical interval tree) delivers to
//! every participant at least its own block, in place in Output (every rank
//! has a full-length Output, so no scratch is needed); a natural-order ring
//! allgather then circulates the blocks. Source: Barnett, Payne, van de
//! Geijn, Watts 1994; MPICH `bcast_intra_scatter_ring_allgather.c`.
//!
//! cost: (⌈log2 p⌉ + p - 1)·ts + 2·((p-1)/p)·tw·m

use crate::schedule::{ceil_log2, displs, even_counts, output, recv, send, Schedule};
use crate::tree::path;

/// Schedule for `rank` of `p` (buffers as in [`crate::bcast_binomial()`]).
pub fn bcast_scatter_allgather(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    let counts = even_counts(count, p);
    let d = displs(&counts);
    let range = |lo: usize, hi: usize| output(d[lo], d[hi] - d[lo]);
    let mut s = Schedule::new();
    // 1. Scatter down the interval tree, straight into Output.
    for lv in path(rank, p, root) {
        if lv.rep == rank {
            s.push(vec![send(lv.other_rep, range(lv.other_lo, lv.other_hi))]);
        } else if lv.my_rep == rank {
            s.push(vec![recv(lv.rep, range(lv.my_lo, lv.my_hi))]);
        }
    }
    // 2. Ring allgather in natural order: step st passes block rank-st on.
    let next = (rank + 1) % p;
    let prev = (rank + p - 1) % p;
    for st in 0..p - 1 {
        let sb = (rank + p - st) % p;
        let rb = (rank + 2 * p - 1 - st) % p;
        s.push(vec![
            send(next, range(sb, sb + 1)),
            recv(prev, range(rb, rb + 1)),
        ]);
    }
    s
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let f = (p - 1) as f64 / p as f64;
    (f64::from(ceil_log2(p)) + (p - 1) as f64) * ts + 2.0 * f * tw * m_bytes as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_bcast, standard_cases};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            check_bcast(p, root, count, &|r| {
                bcast_scatter_allgather(r, p, root, count)
            })
            .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
        }
        assert_eq!(cost(4, 400, 1.0, 1.0), 5.0 + 600.0);
    }
}
