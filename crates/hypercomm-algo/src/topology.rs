//! The virtual topology a communicator's collectives follow (PICL setarc0)
//! and its kinds, which registry entries name to say which settings select
//! them, and the shape of the 2-D mesh setting ([`mesh_dims`]).

use crate::RingOrder;

/// The virtual topology collectives follow (PICL setarc0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Topology {
    /// Pick per call by the cost model.
    #[default]
    Auto,
    /// Hypercube spanning trees and dimension exchange.
    Hypercube,
    /// Full connectivity: the root talks to everyone directly (star).
    Full,
    /// A unidirectional ring in the given order.
    Ring(RingOrder),
    /// A bidirectional ring in the given order.
    BiRing(RingOrder),
    /// A 2-D mesh of [`mesh_dims`]`(p)` rows and columns, participants
    /// numbered row by row (Kumar, seed 001: rows, then columns).
    Mesh2D,
}

/// A [`Topology`] setting without its ring order: what registry entries
/// say they are selected by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopologyKind {
    /// [`Topology::Hypercube`].
    Hypercube,
    /// [`Topology::Full`].
    Full,
    /// [`Topology::Ring`], any order.
    Ring,
    /// [`Topology::BiRing`], any order.
    BiRing,
    /// [`Topology::Mesh2D`].
    Mesh2D,
}

impl TopologyKind {
    /// Every kind.
    pub const ALL: [TopologyKind; 5] = [
        TopologyKind::Hypercube,
        TopologyKind::Full,
        TopologyKind::Ring,
        TopologyKind::BiRing,
        TopologyKind::Mesh2D,
    ];
}

impl Topology {
    /// The setting without its ring order; `None` for [`Topology::Auto`].
    pub const fn kind(self) -> Option<TopologyKind> {
        match self {
            Topology::Auto => None,
            Topology::Hypercube => Some(TopologyKind::Hypercube),
            Topology::Full => Some(TopologyKind::Full),
            Topology::Ring(_) => Some(TopologyKind::Ring),
            Topology::BiRing(_) => Some(TopologyKind::BiRing),
            Topology::Mesh2D => Some(TopologyKind::Mesh2D),
        }
    }
}

/// The rows and columns of the 2-D mesh of `p` participants: the most
/// nearly square factorisation with rows ≥ columns, as MPI_Dims_create
/// makes it (16 → 4 × 4, 8 → 4 × 2, 12 → 4 × 3, a prime p → p × 1).
/// Participant `r` sits in row `r / cols`, column `r % cols`. `p = 0`
/// gives (0, 0).
pub fn mesh_dims(p: usize) -> (usize, usize) {
    if p == 0 {
        return (0, 0);
    }
    let mut cols = (p as f64).sqrt() as usize;
    while cols * cols > p {
        cols -= 1;
    }
    while (cols + 1) * (cols + 1) <= p {
        cols += 1;
    }
    while !p.is_multiple_of(cols) {
        cols -= 1;
    }
    (p / cols, cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesh_dims_are_the_most_square_factorisation() {
        assert_eq!(mesh_dims(1), (1, 1));
        assert_eq!(mesh_dims(2), (2, 1));
        assert_eq!(mesh_dims(8), (4, 2));
        assert_eq!(mesh_dims(9), (3, 3));
        assert_eq!(mesh_dims(12), (4, 3));
        assert_eq!(mesh_dims(13), (13, 1));
        assert_eq!(mesh_dims(4096), (64, 64));
        for p in 1..2000 {
            let (r, c) = mesh_dims(p);
            assert_eq!(r * c, p);
            assert!(r >= c);
            // No divisor of p lies strictly between c and √p.
            assert!((c + 1..=r).all(|d| p % d != 0 || d * d > p), "p={p}");
        }
    }
}
