//! Recursive-doubling allreduce with MPICH's handling of p not a power of two.
//!
//! Let p' be the largest power of two ≤ p and r = p - p'. First the even
//! ranks below 2r send their vector to the odd neighbour, which combines
//! (x(2i) ⊕ x(2i+1)) and takes part as "new rank" i; the other ranks take
//! part as new rank `rank - r`. The p' new ranks exchange and combine with
//! partner `new ^ 2^k` for k = 0, 1, … (dimension exchange on the hypercube,
//! seed 001 all-reduce; seed 000 GOP generalised), the lower group always
//! on the left, so rank order is kept. Finally the odd ranks send the result
//! back to their even neighbours. Source: Thakur, Rabenseifner, Gropp 2005;
//! MPICH `allreduce_intra_recursive_doubling.c`.
//!
//! cost: (ts + tw·m)·log2 p for p a power of two, (ts + tw·m)·(⌊log2 p⌋ + 2) otherwise

use crate::entry::{combines_per_step, Entry};
use crate::schedule::{copy, floor_pow2, input, output, recv, reduce, send, temp, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// The real rank of new rank `nr` in the MPICH fold.
pub(crate) fn fold_real(nr: usize, rem: usize) -> usize {
    if nr < rem {
        2 * nr + 1
    } else {
        nr + rem
    }
}

/// My new rank in the MPICH fold, `None` for the even ranks that drop out.
pub(crate) fn fold_new(rank: usize, rem: usize) -> Option<usize> {
    if rank < 2 * rem {
        (rank % 2 == 1).then_some(rank / 2)
    } else {
        Some(rank - rem)
    }
}

/// Schedule for `rank` of `p`: Input and Output have `count` elements; every
/// Output receives x0 ⊕ … ⊕ x(p-1).
pub fn allreduce_recursive_doubling(rank: usize, p: usize, count: usize) -> Schedule {
    let mut s = Schedule::new();
    let pof2 = floor_pow2(p);
    let rem = p - pof2;
    let all_in = input(0, count);
    let acc = output(0, count);
    let Some(nr) = fold_new(rank, rem) else {
        // 1'. Dropped even rank: hand my vector over, get the result back.
        s.push(vec![send(rank + 1, all_in)]);
        s.push(vec![recv(rank + 1, acc)]);
        return s;
    };
    let tmp = temp(s.add_temp(count), 0, count);
    // 1. Fold: odd ranks below 2r absorb their even neighbour (on the left).
    if rank < 2 * rem {
        s.push(vec![
            recv(rank - 1, tmp),
            copy(all_in, acc),
            reduce(tmp, acc, true),
        ]);
    } else {
        s.push(vec![copy(all_in, acc)]);
    }
    // 2. Dimension exchange among the p' new ranks.
    let mut mask = 1;
    while mask < pof2 {
        let dst = fold_real(nr ^ mask, rem);
        s.push(vec![
            send(dst, acc),
            recv(dst, tmp),
            reduce(tmp, acc, dst < rank),
        ]);
        mask <<= 1;
    }
    // 3. Unfold: give the result back to the dropped neighbour.
    if rank < 2 * rem {
        s.push(vec![send(rank - 1, acc)]);
    }
    s
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let pof2 = floor_pow2(p.max(1));
    let steps = pof2.trailing_zeros() as usize + if pof2 == p { 0 } else { 2 };
    steps as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Allreduce,
    algorithm: Algorithm::RecursiveDoubling,
    generate: |x| allreduce_recursive_doubling(x.me, x.p, x.count),
    cost,
    combined: combines_per_step,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Hypercube, TopologyKind::Mesh2D],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_allreduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            check_allreduce(p, count, Order::Exact, &|r| {
                allreduce_recursive_doubling(r, p, count)
            })
            .unwrap_or_else(|e| panic!("p={p} count={count}: {e}"));
        }
    }

    #[test]
    fn cost_hand_values() {
        assert_eq!(cost(8, 10, 1.0, 1.0), 33.0);
        assert_eq!(cost(6, 10, 1.0, 1.0), 44.0); // 2 + 2 steps
        assert_eq!(cost(1, 10, 1.0, 1.0), 0.0);
    }
}
