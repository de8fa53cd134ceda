//! Hypercube utilities (seed 000, the iPSC communication utilities): Gray
//! code and inverse (GRAY/GINV), BETWEEN and SPLIT (the helpers of the
//! sparse global send SPGSNW) re-exported from `hypercomm_algo::hypercube`,
//! where the collectives' schedules use them, plus neighbours and subcube
//! membership.
//!
//! Not done yet: routing helpers (the e-cube path between two nodes) and
//! hypercube embeddings other than MESH's meshes.

pub use hypercomm_algo::hypercube::{between, gray, gray_inverse, spgsnw_fanout, split};

/// The dimension of the smallest hypercube with at least `n` nodes
/// (`⌈log2 n⌉`; 0 for `n ≤ 1`).
pub fn cube_dim(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

/// The hypercube neighbours of `node` in a cube of dimension `dim`: the
/// nodes that differ from it in one bit, lowest bit first.
pub fn neighbours(node: usize, dim: u32) -> Vec<usize> {
    (0..dim).map(|b| node ^ (1 << b)).collect()
}

/// Whether `node` belongs to the subcube of dimension `d` that contains
/// `member`: the two agree in every bit above the low `d` bits (the
/// grouping of `Comm::subcube`).
pub fn in_subcube(node: usize, member: usize, d: u32) -> bool {
    if d >= usize::BITS {
        return true;
    }
    node >> d == member >> d
}

/// The nodes of the subcube of dimension `d` that contains `member`, in
/// order of their low `d` bits (the subcube's own numbering).
pub fn subcube_members(member: usize, d: u32) -> std::ops::Range<usize> {
    assert!(d < usize::BITS, "a subcube of dimension {d} does not fit");
    let base = (member >> d) << d;
    base..base + (1usize << d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_differ_in_one_bit() {
        assert_eq!(neighbours(5, 3), vec![4, 7, 1]);
        for n in 0..64usize {
            for m in neighbours(n, 6) {
                assert_eq!((n ^ m).count_ones(), 1);
            }
        }
    }

    #[test]
    fn cube_dims_and_subcubes() {
        let dims: Vec<u32> = [0, 1, 2, 3, 4, 5, 8, 9]
            .iter()
            .map(|&n| cube_dim(n))
            .collect();
        assert_eq!(dims, vec![0, 0, 1, 2, 2, 3, 3, 4]);
        assert!(in_subcube(6, 7, 1) && !in_subcube(5, 7, 1) && in_subcube(4, 7, 2));
        assert_eq!(subcube_members(6, 2), 4..8);
        assert!(subcube_members(6, 2).all(|n| in_subcube(n, 6, 2)));
    }
}
