//! Recursive-halving reduce-scatter that keeps rank order (variable block
//! sizes, any p).
//!
//! MPICH's fold turns p into a power of two p' (even ranks below 2r hand
//! their vector to the odd neighbour). Each new rank's blocks (its one or
//! two real ranks' blocks) are laid out in scratch in *bit-reversed* order,
//! so that halving over the lowest dimension first (which keeps every
//! partial over a contiguous group of ranks, hence rank order) leaves new
//! rank i holding exactly its own blocks. The odd ranks of the fold then
//! pass their even neighbour its block. Source: Thakur, Rabenseifner, Gropp
//! 2005; MPICH `reduce_scatter_intra_noncommutative.c` (bit-reversal trick).
//!
//! cost: ⌈log2 p⌉·ts + ((p-1)/p)·tw·m for p a power of two (m = whole vector);
//! otherwise add ts + tw·m for the fold and ts + tw·m/p for the unfold

use crate::allreduce_rabenseifner::recursive_halving;
use crate::allreduce_recursive_doubling::{fold_new, fold_real};
use crate::entry::{combines_share, Entry};
use crate::schedule::{
    copy, displs, floor_pow2, input, output, recv, reduce, send, temp, Op, Schedule,
};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

fn bitrev(x: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS - bits)
    }
}

/// Schedule for `rank` of `counts.len()` (buffers as in
/// [`crate::reduce_scatter_ring()`]); any associative operator.
pub fn reduce_scatter_recursive_halving(rank: usize, counts: &[usize]) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let total = d[p];
    let pof2 = floor_pow2(p);
    let rem = p - pof2;
    let bits = pof2.trailing_zeros();
    let mut s = Schedule::new();
    let Some(nr) = fold_new(rank, rem) else {
        // 1'. Dropped even rank: hand over, then receive my block.
        s.push(vec![send(rank + 1, input(0, total))]);
        s.push(vec![recv(rank + 1, output(0, counts[rank]))]);
        return s;
    };
    // Element range of new rank j's blocks in the natural layout.
    let nat = |j: usize| {
        let a = fold_real(j, rem) - usize::from(j < rem);
        let b = fold_real(j, rem) + 1;
        (d[a], d[b] - d[a])
    };
    // Permuted layout: position q holds new rank bitrev(q)'s blocks.
    let mut poff = Vec::with_capacity(pof2 + 1);
    poff.push(0usize);
    for q in 0..pof2 {
        poff.push(poff[q] + nat(bitrev(q, bits)).1);
    }
    let acc = s.add_temp(total);
    let t = s.add_temp(total);
    // 1. Build the permuted accumulator (after absorbing the even neighbour).
    let mut ops: Vec<Op> = Vec::new();
    let fold = rank < 2 * rem;
    if fold {
        ops.push(recv(rank - 1, temp(t, 0, total)));
    }
    for (q, &pq) in poff.iter().take(pof2).enumerate() {
        let (off, len) = nat(bitrev(q, bits));
        let dst = temp(acc, pq, len);
        ops.push(copy(input(off, len), dst));
        if fold {
            ops.push(reduce(temp(t, off, len), dst, true));
        }
    }
    s.push(ops);
    // 2. Recursive halving over positions, lowest dimension first.
    let range = |lo: usize, hi: usize| temp(acc, poff[lo], poff[hi] - poff[lo]);
    let steps = recursive_halving(&mut s, nr, rem, pof2, &range, &|n| temp(t, 0, n));
    let lo = steps.last().map_or(0, |h| h.keep.0);
    // 3. Position lo == bitrev(nr) now holds my new rank's blocks.
    let base = poff[lo];
    if fold {
        let c0 = counts[rank - 1];
        s.push(vec![send(rank - 1, temp(acc, base, c0))]);
        s.push_local(copy(
            temp(acc, base + c0, counts[rank]),
            output(0, counts[rank]),
        ));
    } else {
        s.push_local(copy(temp(acc, base, counts[rank]), output(0, counts[rank])));
    }
    s
}

/// Cost in the seed-001 model (m = bytes of the whole vector).
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let pof2 = floor_pow2(p.max(1));
    let m = m_bytes as f64;
    let mut c = pof2.trailing_zeros() as f64 * ts + (pof2 - 1) as f64 / pof2 as f64 * tw * m;
    if pof2 != p {
        c += 2.0 * ts + tw * m + tw * m / p as f64;
    }
    c
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::ReduceScatter,
    algorithm: Algorithm::RecursiveHalving,
    generate: |x| reduce_scatter_recursive_halving(x.me, x.counts),
    cost,
    combined: combines_share,
    commutative_only: false,
    pipelined: false,
    topologies: &[
        TopologyKind::Hypercube,
        TopologyKind::Full,
        TopologyKind::Mesh2D,
    ],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_reduce_scatter, standard_cases, varied_counts, Order};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                check_reduce_scatter(&counts, Order::Exact, &|r| {
                    reduce_scatter_recursive_halving(r, &counts)
                })
                .unwrap_or_else(|e| panic!("counts={counts:?}: {e}"));
            }
        }
        assert_eq!(cost(8, 800, 1.0, 1.0), 3.0 + 700.0);
    }

    #[test]
    fn bit_reversal() {
        assert_eq!(bitrev(1, 3), 4);
        assert_eq!(bitrev(6, 3), 3);
        assert_eq!(bitrev(0, 0), 0);
    }
}
