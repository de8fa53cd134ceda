//! Recursive-doubling allgather(v) for any p.
//!
//! MPICH's fold makes p a power of two p': the even ranks below 2r give
//! their block to the odd neighbour and drop out. New rank i's group after
//! step k is the aligned group of 2^k new ranks, whose blocks form one
//! contiguous range of the concatenation (new ranks map to contiguous real
//! ranks), so each exchange with partner `new ^ 2^k` is a single message
//! written straight into place. Finally the odd ranks send the full result
//! to their even neighbour. Source: Thakur, Rabenseifner, Gropp 2005;
//! Kumar (seed 001) all-to-all broadcast on a hypercube; seed 000 GCAT.
//!
//! cost: ts·log2 p + tw·m·(p-1) for p a power of two (m bytes per rank);
//! otherwise add ts + tw·m and ts + tw·m·p for the fold and the unfold

use crate::allreduce_recursive_doubling::{fold_new, fold_real};
use crate::entry::{combines_nothing, Entry};
use crate::schedule::{copy, displs, floor_pow2, input, output, recv, send, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()`: Input = own block, Output = all
/// blocks in rank order.
pub fn allgather_recursive_doubling(rank: usize, counts: &[usize]) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let total = d[p];
    let pof2 = floor_pow2(p);
    let rem = p - pof2;
    let mut s = Schedule::new();
    let own = input(0, counts[rank]);
    let Some(nr) = fold_new(rank, rem) else {
        // 1'. Dropped even rank.
        s.push(vec![send(rank + 1, own)]);
        s.push(vec![recv(rank + 1, output(0, total))]);
        return s;
    };
    // Real-rank range [first, last] of new rank j.
    let first = |j: usize| fold_real(j, rem) - usize::from(j < rem);
    let last = |j: usize| fold_real(j, rem);
    let group = |g: usize, size: usize| {
        let (a, b) = (first(g), last(g + size - 1) + 1);
        output(d[a], d[b] - d[a])
    };
    // 1. Fold: my block (and my even neighbour's) into place.
    let mut ops = vec![copy(own, output(d[rank], counts[rank]))];
    if rank < 2 * rem {
        ops.insert(0, recv(rank - 1, output(d[rank - 1], counts[rank - 1])));
    }
    s.push(ops);
    // 2. Exchange groups of doubling size.
    let mut mask = 1;
    while mask < pof2 {
        let mine = nr & !(mask - 1);
        let theirs = mine ^ mask;
        let dst = fold_real(nr ^ mask, rem);
        s.push(vec![
            send(dst, group(mine, mask)),
            recv(dst, group(theirs, mask)),
        ]);
        mask <<= 1;
    }
    // 3. Unfold.
    if rank < 2 * rem {
        s.push(vec![send(rank - 1, output(0, total))]);
    }
    s
}

/// Cost in the seed-001 model, m bytes per rank.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let pof2 = floor_pow2(p.max(1));
    let m = m_bytes as f64;
    let mut c = pof2.trailing_zeros() as f64 * ts + tw * m * (p - 1) as f64;
    if pof2 != p {
        c += 2.0 * ts + tw * m * (1 + p) as f64;
    }
    c
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Allgather,
    algorithm: Algorithm::RecursiveDoubling,
    generate: |x| allgather_recursive_doubling(x.me, x.counts),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Hypercube],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_allgather, standard_cases, varied_counts};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                check_allgather(&counts, &|r| allgather_recursive_doubling(r, &counts))
                    .unwrap_or_else(|e| panic!("counts={counts:?}: {e}"));
            }
        }
        assert_eq!(cost(8, 10, 1.0, 1.0), 73.0);
    }
}
