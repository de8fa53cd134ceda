//! Rabenseifner's reduce: recursive-halving reduce-scatter followed by a
//! binomial gather of the reduced blocks to the root, with MPICH's fold for
//! p not a power of two.
//!
//! The reduce-scatter is that of [`crate::allreduce_rabenseifner()`]: after
//! the fold the p' new ranks cut the vector into p' blocks, and in step k
//! partners `new ^ 2^k` each send the half of their range they give up and
//! combine the half they keep (lowest dimension first, so every partial
//! covers a contiguous group of ranks and rank order is kept). The gather
//! retraces the steps in reverse, one way only: at the step of mask m the
//! ranks still holding data that differ from the root's new rank in bit m
//! send their range to their partner and are done, so the root's new rank
//! ends with the whole vector. Each rank combines only its share of the
//! vector (1/p' of it in the last step, half in the first), where a
//! binomial tree combines the whole vector at every level; on two ranks
//! both combine a half at once. A root that the fold dropped gets the
//! result from its neighbour last. Source: Rabenseifner 2004; Thakur,
//! Rabenseifner, Gropp 2005; MPICH `reduce_intra_reduce_scatter_gather.c`.
//!
//! cost: 2·ts·log2 p + 2·((p-1)/p)·tw·m for p a power of two (plus
//! ts + tw·m for the fold otherwise, and as much again when the root is a
//! rank the fold dropped)

use crate::allreduce_rabenseifner::recursive_halving;
use crate::allreduce_recursive_doubling::fold_new;
use crate::entry::{combines_share, Entry};
use crate::schedule::{
    copy, displs, even_counts, floor_pow2, input, output, recv, reduce, send, temp, Buf, Region,
    Schedule,
};
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p` (buffers as in [`crate::reduce_binomial()`]:
/// Input has `count` elements on every rank; the root's Output receives the
/// reduction; non-roots do not touch Output).
pub fn reduce_rabenseifner(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    let mut s = Schedule::new();
    let pof2 = floor_pow2(p);
    let rem = p - pof2;
    let all_in = input(0, count);
    // The root's new rank: a root the fold dropped is stood in for by its
    // odd neighbour, which hands it the result at the end.
    let root_dropped = fold_new(root, rem).is_none();
    let stand_in = if root_dropped { root + 1 } else { root };
    let new_root = fold_new(stand_in, rem).expect("an odd neighbour stays");
    let Some(nr) = fold_new(rank, rem) else {
        // 1'. Dropped even rank: give the input to the odd neighbour.
        s.push(vec![send(rank + 1, all_in)]);
        if rank == root {
            s.push(vec![recv(rank + 1, output(0, count))]);
        }
        return s;
    };
    // The running partials: the root's Output, else scratch.
    let acc_buf = if rank == root {
        Buf::Output
    } else {
        Buf::Temp(s.add_temp(count))
    };
    let acc = |off: usize, len: usize| Region::new(acc_buf, off, len);
    let t = s.add_temp(count);
    let counts = even_counts(count, pof2);
    let d = displs(&counts);
    let range = |lo: usize, hi: usize| acc(d[lo], d[hi] - d[lo]);
    // 1. Fold (as in recursive doubling): the odd rank of a folded pair
    //    combines its even neighbour's input on the left of its own.
    if rank < 2 * rem {
        let tmp = temp(t, 0, count);
        s.push(vec![
            recv(rank - 1, tmp),
            copy(all_in, acc(0, count)),
            reduce(tmp, acc(0, count), true),
        ]);
    } else {
        s.push(vec![copy(all_in, acc(0, count))]);
    }
    // 2. Recursive halving over block ranges (as in the allreduce).
    let mut steps = recursive_halving(&mut s, nr, rem, pof2, &range, &|n| temp(t, 0, n));
    // 3. Binomial gather to the root's new rank, largest mask first: a rank
    //    that differs from it in bit m hands its range over and is done.
    while let Some(h) = steps.pop() {
        if nr & h.mask != new_root & h.mask {
            s.push(vec![send(h.partner, range(h.keep.0, h.keep.1))]);
            return s;
        }
        s.push(vec![recv(h.partner, range(h.give.0, h.give.1))]);
    }
    // 4. The stand-in of a dropped root hands it the result.
    if root_dropped && rank == stand_in {
        s.push(vec![send(root, acc(0, count))]);
    }
    s
}

/// Cost in the seed-001 model (the root not dropped by the fold): the
/// allreduce's, whose allgather costs what the gather does, without its
/// unfold.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let c = crate::allreduce_rabenseifner::cost(p, m_bytes, ts, tw);
    if floor_pow2(p.max(1)) == p.max(1) {
        c
    } else {
        c - (ts + tw * m_bytes as f64)
    }
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Reduce,
    algorithm: Algorithm::Rabenseifner,
    generate: |x| reduce_rabenseifner(x.me, x.p, x.root, x.count),
    cost,
    combined: combines_share,
    commutative_only: false,
    pipelined: false,
    topologies: &[],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_reduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            check_reduce(p, root, count, Order::Exact, &|r| {
                reduce_rabenseifner(r, p, root, count)
            })
            .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
        }
    }

    #[test]
    fn cost_hand_values() {
        // p = 4, m = 400: 2·2·ts + 2·(3/4)·400·tw
        assert_eq!(cost(4, 400, 1.0, 1.0), 4.0 + 600.0);
        // p = 5: same plus the fold 1 + 400
        assert_eq!(cost(5, 400, 1.0, 1.0), 604.0 + 401.0);
    }

    #[test]
    fn two_ranks_each_combine_half_and_one_half_moves_to_the_root() {
        // Rank 1 of 2 with root 0 and 8 elements: send the lower half,
        // combine the upper half, send it to the root.
        let s = reduce_rabenseifner(1, 2, 0, 8);
        let msgs: Vec<(usize, usize, usize)> = s
            .rounds
            .iter()
            .flat_map(|r| &r.ops)
            .filter_map(|op| match *op {
                crate::Op::Send { to, region } => Some((to, region.offset, region.len)),
                _ => None,
            })
            .collect();
        assert_eq!(msgs, vec![(0, 0, 4), (0, 4, 4)]);
    }
}
