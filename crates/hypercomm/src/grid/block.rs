//! Index arithmetic of the block distribution: which points of an axis each
//! process owns. Pure functions, tested with proptest.

use std::ops::Range;

/// The points of part `c` when `n` points are dealt to `p` parts in
/// blocks: the first `n mod p` parts get `⌈n/p⌉` points, the others
/// `⌊n/p⌋`, in order (PETSc's and most codes' convention).
pub fn block_range(n: usize, p: usize, c: usize) -> Range<usize> {
    assert!(p > 0 && c < p, "part {c} of {p}");
    let (base, extra) = (n / p, n % p);
    let start = c * base + c.min(extra);
    start..start + base + usize::from(c < extra)
}

/// The `p + 1` boundaries of the block distribution (`splits[c]..splits[c+1]`
/// is part `c`).
pub fn block_splits(n: usize, p: usize) -> Vec<usize> {
    let mut s: Vec<usize> = (0..p).map(|c| block_range(n, p, c).start).collect();
    s.push(n);
    s
}

/// The part that owns point `i` (`i < n`) under `splits`.
pub fn owner(splits: &[usize], i: usize) -> usize {
    // The last boundary not above i (empty parts are skipped over).
    splits.partition_point(|&s| s <= i) - 1
}

/// Boundaries of a coarser level whose point `I` sits on fine point `2I`
/// (vertex-centred multigrid): part `c` owns the coarse points whose fine
/// images it owns, so restriction and prolongation need only a halo of one.
pub fn coarsen_splits(fine: &[usize]) -> Vec<usize> {
    fine.iter().map(|&s| s.div_ceil(2)).collect()
}

/// Every `f`-th boundary: the parts of an agglomeration by factor `f`
/// (part `C` of the result is parts `C·f .. (C+1)·f` together).
pub fn merge_splits(splits: &[usize], f: usize) -> Vec<usize> {
    splits.iter().step_by(f).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn by_hand() {
        assert_eq!(block_splits(10, 4), vec![0, 3, 6, 8, 10]);
        assert_eq!(block_range(10, 4, 1), 3..6);
        assert_eq!(owner(&[0, 3, 6, 8, 10], 7), 2);
        assert_eq!(coarsen_splits(&[0, 3, 6, 9]), vec![0, 2, 3, 5]);
        assert_eq!(merge_splits(&[0, 3, 6, 8, 10], 2), vec![0, 6, 10]);
    }

    proptest! {
        #[test]
        fn blocks_partition_the_axis(n in 0usize..500, p in 1usize..40) {
            let s = block_splits(n, p);
            prop_assert_eq!(s.len(), p + 1);
            prop_assert_eq!(s[0], 0);
            prop_assert_eq!(s[p], n);
            let lens: Vec<usize> = s.windows(2).map(|w| w[1] - w[0]).collect();
            let (lo, hi) = (*lens.iter().min().unwrap(), *lens.iter().max().unwrap());
            prop_assert!(hi - lo <= 1);
            prop_assert!(lens.windows(2).all(|w| w[0] >= w[1]), "larger blocks first");
            for i in 0..n {
                let c = owner(&s, i);
                prop_assert!(block_range(n, p, c).contains(&i));
            }
        }

        #[test]
        fn merged_and_coarsened_splits_partition(n in 1usize..300, p in 1usize..12, f in 1usize..5) {
            let p = p * f;
            let s = block_splits(n, p);
            let m = merge_splits(&s, f);
            prop_assert_eq!(m.len(), p / f + 1);
            for (c, w) in m.windows(2).enumerate() {
                prop_assert_eq!(w[0], s[c * f]);
                prop_assert_eq!(w[1], s[(c + 1) * f]);
            }
            let c = coarsen_splits(&s);
            prop_assert_eq!(*c.last().unwrap(), n.div_ceil(2));
            for i in 0..n.div_ceil(2) {
                // Coarse point i is owned by the owner of fine point 2i.
                prop_assert_eq!(owner(&c, i), owner(&s, (2 * i).min(n - 1)));
            }
        }
    }
}
