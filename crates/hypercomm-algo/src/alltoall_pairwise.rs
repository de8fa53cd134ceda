//! Pairwise-exchange all-to-all(v).
//!
//! In step s = 1 … p-1 every participant sends its block for `rank + s` and
//! receives the block from `rank - s` (mod p), both in the same round; its
//! own block is a local copy. Source: MPI practice (MPICH
//! `alltoall_intra_pairwise.c`); Kumar (seed 001) all-to-all personalized
//! communication.
//!
//! cost: (p-1)·(ts + tw·m), m bytes per block

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{copy, displs, input, output, recv, send, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p = send_counts.len()`: Input = p blocks (block
/// q, `send_counts[q]` elements, goes to q), Output = p blocks (block q,
/// `recv_counts[q]` elements, comes from q). `recv_counts[q]` must equal
/// rank q's `send_counts[rank]`.
pub fn alltoallv_pairwise(rank: usize, send_counts: &[usize], recv_counts: &[usize]) -> Schedule {
    let p = send_counts.len();
    assert_eq!(recv_counts.len(), p);
    let sd = displs(send_counts);
    let rd = displs(recv_counts);
    let mut s = Schedule::new();
    // 1. Own block.
    s.push(vec![copy(
        input(sd[rank], send_counts[rank]),
        output(rd[rank], recv_counts[rank]),
    )]);
    // 2. Pairwise steps.
    for st in 1..p {
        let to = (rank + st) % p;
        let from = (rank + p - st) % p;
        s.push(vec![
            send(to, input(sd[to], send_counts[to])),
            recv(from, output(rd[from], recv_counts[from])),
        ]);
    }
    s
}

/// Fixed-count all-to-all: `count` elements per block.
pub fn alltoall_pairwise(rank: usize, p: usize, count: usize) -> Schedule {
    let c = vec![count; p];
    alltoallv_pairwise(rank, &c, &c)
}

/// Cost in the seed-001 model, m bytes per block.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    p.saturating_sub(1) as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[
    Entry {
        collective: Collective::Alltoall,
        algorithm: Algorithm::Pairwise,
        generate: |x| alltoall_pairwise(x.me, x.p, x.count),
        cost,
        combined: combines_nothing,
        commutative_only: false,
        pipelined: false,
        topologies: &[
            TopologyKind::Ring,
            TopologyKind::BiRing,
            TopologyKind::Mesh2D,
        ],
    },
    Entry {
        collective: Collective::Alltoallv,
        algorithm: Algorithm::Pairwise,
        generate: |x| alltoallv_pairwise(x.me, x.counts, x.recv_counts),
        cost,
        combined: combines_nothing,
        commutative_only: false,
        pipelined: false,
        topologies: &TopologyKind::ALL,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_alltoall, standard_cases};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            let fixed = vec![vec![count; p]; p];
            check_alltoall(&fixed, &|r| alltoall_pairwise(r, p, count))
                .unwrap_or_else(|e| panic!("p={p} count={count}: {e}"));
            let m: Vec<Vec<usize>> = (0..p)
                .map(|a| (0..p).map(|b| (a * 7 + b * 3 + count) % 5).collect())
                .collect();
            let col = |r: usize| -> Vec<usize> { (0..p).map(|q| m[q][r]).collect() };
            check_alltoall(&m, &|r| alltoallv_pairwise(r, &m[r], &col(r)))
                .unwrap_or_else(|e| panic!("m={m:?}: {e}"));
        }
        assert_eq!(cost(4, 10, 1.0, 1.0), 33.0);
    }
}
