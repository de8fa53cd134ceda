//! The virtual topology a communicator's collectives follow (PICL setarc0)
//! and its kinds, which registry entries name to say which settings select
//! them.

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
}

impl TopologyKind {
    /// Every kind.
    pub const ALL: [TopologyKind; 4] = [
        TopologyKind::Hypercube,
        TopologyKind::Full,
        TopologyKind::Ring,
        TopologyKind::BiRing,
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
        }
    }
}
