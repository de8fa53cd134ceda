//! The canonical interval tree: a binomial-shaped tree over rank order whose
//! subtrees are *contiguous rank intervals*, rooted at any rank.
//!
//! The interval `[lo, hi)` (length ≥ 2) splits at `mid = lo + 2^⌊log2(len-1)⌋`
//! (the left part is the largest power of two strictly smaller than the
//! length). The root of `[lo, hi)` is the representative of the half that
//! contains it; the other half's representative is the member nearest the
//! split (`mid` or `mid - 1`). For root 0 this is exactly the binomial tree of
//! the iPSC GOP/GCAT listings (seed 000): node 0 receives from 1, 2, 4, …
//!
//! Because subtrees are contiguous intervals, reductions combine adjacent
//! partial results (rank order is kept for non-commutative operators) and
//! gathers/scatters move contiguous ranges of the concatenated buffer. The
//! bracketing of the reduction, `((x0⊕x1)⊕(x2⊕x3))⊕…`, depends only on `p`,
//! never on the root: that is what makes [`crate::reproducible`] possible.
//! Depth: ⌈log2 p⌉.

use crate::schedule::floor_pow2;

/// One level of the tree, seen from a participant on its path to the top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// The interval `[lo, hi)` at this level.
    pub lo: usize,
    /// End of the interval.
    pub hi: usize,
    /// The split point.
    pub mid: usize,
    /// Representative (subtree root) of `[lo, hi)`.
    pub rep: usize,
    /// The half containing the participant: `[my_lo, my_hi)`, representative `my_rep`.
    pub my_lo: usize,
    /// End of the participant's half.
    pub my_hi: usize,
    /// Representative of the participant's half.
    pub my_rep: usize,
    /// The other half: `[other_lo, other_hi)`, representative `other_rep`.
    pub other_lo: usize,
    /// End of the other half.
    pub other_hi: usize,
    /// Representative of the other half.
    pub other_rep: usize,
}

impl Level {
    /// Whether the other half holds lower ranks than the participant's half.
    pub fn other_is_left(&self) -> bool {
        self.other_lo < self.my_lo
    }
}

/// The split point of `[lo, hi)` (`hi - lo ≥ 2`).
pub fn canonical_split(lo: usize, hi: usize) -> usize {
    lo + floor_pow2(hi - lo - 1)
}

/// The levels from the top (`[0, p)` rooted at `root`) down to the level
/// whose half is `{rank}` alone. Empty when `p == 1`.
pub fn path(rank: usize, p: usize, root: usize) -> Vec<Level> {
    assert!(rank < p && root < p);
    let (mut lo, mut hi, mut rep) = (0, p, root);
    let mut out = Vec::new();
    while hi - lo >= 2 {
        let mid = canonical_split(lo, hi);
        let (l_rep, r_rep) = if rep < mid {
            (rep, mid)
        } else {
            (mid - 1, rep)
        };
        let lv = if rank < mid {
            Level {
                lo,
                hi,
                mid,
                rep,
                my_lo: lo,
                my_hi: mid,
                my_rep: l_rep,
                other_lo: mid,
                other_hi: hi,
                other_rep: r_rep,
            }
        } else {
            Level {
                lo,
                hi,
                mid,
                rep,
                my_lo: mid,
                my_hi: hi,
                my_rep: r_rep,
                other_lo: lo,
                other_hi: mid,
                other_rep: l_rep,
            }
        };
        out.push(lv);
        lo = lv.my_lo;
        hi = lv.my_hi;
        rep = lv.my_rep;
    }
    out
}

/// The fold of `xs` (length ≥ 1) with the canonical bracketing (the
/// reference for bitwise-reproducible reductions).
pub fn canonical_fold<T: Clone>(xs: &[T], op: &dyn Fn(&T, &T) -> T) -> T {
    assert!(!xs.is_empty());
    if xs.len() == 1 {
        return xs[0].clone();
    }
    let mid = canonical_split(0, xs.len());
    op(
        &canonical_fold(&xs[..mid], op),
        &canonical_fold(&xs[mid..], op),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root0_is_binomial() {
        for p in 1..=40 {
            for r in 1..p {
                let lv = path(r, p, 0);
                let l = lv
                    .iter()
                    .find(|l| l.my_rep == r && l.rep != r)
                    .expect("parent level");
                // GOP's rule: the parent clears the lowest set bit.
                assert_eq!(l.rep, r & (r - 1));
            }
        }
    }

    #[test]
    fn canonical_fold_shape() {
        let s: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        let f = canonical_fold(&s, &|a, b| format!("({a}+{b})"));
        assert_eq!(f, "(((0+1)+(2+3))+4)");
    }
}
