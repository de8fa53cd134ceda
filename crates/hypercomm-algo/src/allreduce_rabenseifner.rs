//! Rabenseifner's allreduce: recursive-halving reduce-scatter followed by
//! recursive-doubling allgather, with MPICH's fold for p not a power of two.
//!
//! After the fold of [`crate::allreduce_recursive_doubling()`] the p' new
//! ranks cut the vector into p' blocks. In step k (k = 0, 1, …) partners
//! `new ^ 2^k` split their current block range in two, each sends the half
//! it gives up and combines the half it keeps; exchanging over the *lowest*
//! dimension first makes each partial cover a contiguous group of ranks, so
//! rank order is kept (the lower group on the left). The allgather retraces
//! the steps in reverse. Source: Rabenseifner 2004; Thakur, Rabenseifner,
//! Gropp 2005; MPICH `allreduce_intra_reduce_scatter_allgather.c`.
//!
//! cost: 2·ts·log2 p + 2·((p-1)/p)·tw·m for p a power of two (plus
//! 2·(ts + tw·m) for the fold otherwise)

use crate::allreduce_recursive_doubling::{fold_new, fold_real};
use crate::entry::{combines_share, Entry};
use crate::schedule::{
    copy, displs, even_counts, floor_pow2, input, output, recv, reduce, send, temp, Region,
    Schedule,
};
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p` (buffers as in
/// [`crate::allreduce_recursive_doubling()`]).
pub fn allreduce_rabenseifner(rank: usize, p: usize, count: usize) -> Schedule {
    let mut s = Schedule::new();
    let pof2 = floor_pow2(p);
    let rem = p - pof2;
    let all_in = input(0, count);
    let all_out = output(0, count);
    let Some(nr) = fold_new(rank, rem) else {
        // 1'. Dropped even rank.
        s.push(vec![send(rank + 1, all_in)]);
        s.push(vec![recv(rank + 1, all_out)]);
        return s;
    };
    let t = s.add_temp(count);
    let counts = even_counts(count, pof2);
    let d = displs(&counts);
    let range = |lo: usize, hi: usize| output(d[lo], d[hi] - d[lo]);
    // 1. Fold (as in recursive doubling).
    if rank < 2 * rem {
        let tmp = temp(t, 0, count);
        s.push(vec![
            recv(rank - 1, tmp),
            copy(all_in, all_out),
            reduce(tmp, all_out, true),
        ]);
    } else {
        s.push(vec![copy(all_in, all_out)]);
    }
    // 2. Recursive halving over block ranges, lowest dimension first.
    let mut steps = recursive_halving(&mut s, nr, rem, pof2, &range, &|n| temp(t, 0, n));
    // 3. Recursive doubling allgather: undo the halving steps.
    while let Some(h) = steps.pop() {
        s.push(vec![
            send(h.partner, range(h.keep.0, h.keep.1)),
            recv(h.partner, range(h.give.0, h.give.1)),
        ]);
    }
    // 4. Unfold.
    if rank < 2 * rem {
        s.push(vec![send(rank - 1, all_out)]);
    }
    s
}

/// One step of a recursive halving: the partner (a real rank) and the
/// block positions kept and given up, for a gather or allgather that
/// retraces it.
pub(crate) struct Halving {
    pub(crate) mask: usize,
    pub(crate) partner: usize,
    pub(crate) keep: (usize, usize),
    pub(crate) give: (usize, usize),
}

/// Recursive halving over block positions `0..pof2`, lowest dimension
/// first, for new rank `nr` of a fold of `rem`: in each step partners
/// `nr ^ mask` send the half of their range they give up and combine the
/// half they keep (the lower group's partial on the left), so that every
/// partial covers a contiguous group of ranks and rank order is kept.
/// `range(lo, hi)` is the region of positions `lo..hi`, `scratch(len)` a
/// receive buffer of `len` elements. Returns the steps in order; after the
/// last, this rank holds the positions of its `keep` (all of them, `0..1`,
/// when `pof2` is 1).
pub(crate) fn recursive_halving(
    s: &mut Schedule,
    nr: usize,
    rem: usize,
    pof2: usize,
    range: &dyn Fn(usize, usize) -> Region,
    scratch: &dyn Fn(usize) -> Region,
) -> Vec<Halving> {
    let (mut lo, mut hi) = (0usize, pof2);
    let mut steps = Vec::new();
    let mut mask = 1;
    while mask < pof2 {
        let nd = nr ^ mask;
        let partner = fold_real(nd, rem);
        let half = (hi - lo) / 2;
        let (keep, give) = if nr & mask == 0 {
            ((lo, lo + half), (lo + half, hi))
        } else {
            ((lo + half, hi), (lo, lo + half))
        };
        let k = range(keep.0, keep.1);
        let tmp = scratch(k.len);
        s.push(vec![
            send(partner, range(give.0, give.1)),
            recv(partner, tmp),
            reduce(tmp, k, nd < nr),
        ]);
        steps.push(Halving {
            mask,
            partner,
            keep,
            give,
        });
        (lo, hi) = keep;
        mask <<= 1;
    }
    steps
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let pof2 = floor_pow2(p.max(1));
    let lg = pof2.trailing_zeros() as f64;
    let m = m_bytes as f64;
    let mut c = 2.0 * ts * lg + 2.0 * (pof2 - 1) as f64 / pof2 as f64 * tw * m;
    if pof2 != p {
        c += 2.0 * (ts + tw * m);
    }
    c
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Allreduce,
    algorithm: Algorithm::Rabenseifner,
    generate: |x| allreduce_rabenseifner(x.me, x.p, x.count),
    cost,
    combined: combines_share,
    commutative_only: false,
    pipelined: false,
    topologies: &[],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_allreduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            check_allreduce(p, count, Order::Exact, &|r| {
                allreduce_rabenseifner(r, p, count)
            })
            .unwrap_or_else(|e| panic!("p={p} count={count}: {e}"));
        }
    }

    #[test]
    fn cost_hand_values() {
        // p = 4, m = 400: 2·2·ts + 2·(3/4)·400·tw
        assert_eq!(cost(4, 400, 1.0, 1.0), 4.0 + 600.0);
        // p = 5: same plus the fold 2·(1 + 400)
        assert_eq!(cost(5, 400, 1.0, 1.0), 604.0 + 802.0);
    }
}
