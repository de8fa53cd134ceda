//! What a caller can ask of selection, as plain data: the virtual
//! [`Topology`] a communicator follows (PICL setarc0), a forced
//! [`Algorithm`], the options of one call ([`CollOpts`]) and the
//! [`Collective`] a question is about. This file imports nothing from the
//! rest of the crate, so the communicator can hold a topology setting
//! without depending on the collectives.

use hypercomm_algo::RingOrder;

/// The virtual topology collectives follow (PICL setarc0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// A specific algorithm, to force one per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// Use the communicator's topology setting (and the cost model).
    #[default]
    Auto,
    /// Binomial / hypercube spanning tree.
    Binomial,
    /// Star (PICL full connectivity).
    Star,
    /// Pipelined chain along the ring order.
    Chain,
    /// Bidirectional pipelined ring.
    BiRing,
    /// Ring (reduce-scatter + allgather for allreduce).
    Ring,
    /// Recursive doubling / dimension exchange.
    RecursiveDoubling,
    /// Recursive halving (reduce-scatter).
    RecursiveHalving,
    /// Reduce-scatter + allgather by halving and doubling.
    Rabenseifner,
    /// Reduce to one rank, then broadcast.
    ReduceBcast,
    /// Bruck's algorithm.
    Bruck,
    /// Pairwise exchange.
    Pairwise,
    /// Dissemination barrier.
    Dissemination,
    /// Tree barrier.
    Tree,
}

/// Options of a collective call.
#[derive(Debug, Clone, Default)]
pub struct CollOpts {
    /// Force an algorithm (default: `Auto`).
    pub algorithm: Algorithm,
    /// Bitwise-reproducible reductions: the bracketing depends only on the
    /// inputs and the number of nodes.
    pub reproducible: bool,
    /// Segment size in bytes for pipelined algorithms (default: chosen).
    pub segment_bytes: Option<usize>,
}

/// The collectives selection knows about (for [`Comm::chosen_algorithm`](crate::Comm::chosen_algorithm)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collective {
    /// Barrier.
    Barrier,
    /// Broadcast; bytes are the whole message.
    Bcast,
    /// Reduce to a root; bytes are the whole vector.
    Reduce,
    /// Allreduce; bytes are the whole vector.
    Allreduce,
    /// Gather(v); bytes are one rank's contribution (the average for gatherv).
    Gather,
    /// Scatter(v); bytes are one rank's block (the average for scatterv).
    Scatter,
    /// Allgather(v); bytes are one rank's contribution (the average for
    /// allgatherv).
    Allgather,
    /// All-to-all; bytes are one block.
    Alltoall,
    /// Variable-count all-to-all (pairwise only: per-rank counts differ, so
    /// the choice must not depend on them).
    Alltoallv,
    /// Reduce-scatter(v); bytes are the whole vector.
    ReduceScatter,
    /// Scans; bytes are the vector.
    Scan,
}

/// Short name inside this crate.
pub(crate) type Coll = Collective;

impl Collective {
    /// Its name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Bcast => "bcast",
            Coll::Reduce => "reduce",
            Coll::Allreduce => "allreduce",
            Coll::Gather => "gather",
            Coll::Scatter => "scatter",
            Coll::Allgather => "allgather",
            Coll::Alltoall => "alltoall",
            Coll::Alltoallv => "alltoallv",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::Scan => "scan",
        }
    }
}
