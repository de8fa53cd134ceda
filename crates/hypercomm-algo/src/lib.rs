//! Collective communication algorithms as pure schedules (no I/O).
//!
//! (Crate documentation is completed as algorithm families land.)

pub mod check;
pub mod hypercube;
pub mod ring;
pub mod schedule;
pub mod tree;

pub use ring::RingOrder;
pub use schedule::{Buf, Op, Region, Round, Schedule};

/// Whether a scan includes each participant's own value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inclusion {
    /// Result at n combines the values up to and including n.
    Inclusive,
    /// Result at n combines the values strictly before n; the first
    /// participant's Output is left untouched (the executor fills in the
    /// operator's identity).
    Exclusive,
}

/// Direction of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Rank order 0, 1, …, p-1 (CMMD upward).
    Upward,
    /// Reverse rank order p-1, …, 0 (CMMD downward).
    Downward,
}

pub mod barrier_dissemination;
pub mod barrier_tree;
pub mod bcast_binomial;
pub mod bcast_chain;
pub mod bcast_ring;
pub mod bcast_star;

pub use barrier_dissemination::barrier_dissemination;
pub use barrier_tree::barrier_tree;
pub use bcast_binomial::bcast_binomial;
pub use bcast_chain::bcast_chain;
pub use bcast_ring::bcast_ring_bidirectional;
pub use bcast_star::bcast_star;

pub mod allreduce_rabenseifner;
pub mod allreduce_recursive_doubling;
pub mod allreduce_reduce_bcast;
pub mod allreduce_ring;
pub mod reduce_binomial;
pub mod reduce_scatter_recursive_halving;
pub mod reduce_scatter_ring;
pub mod reduce_star;
mod ring_reduce_scatter;

pub use allreduce_rabenseifner::allreduce_rabenseifner;
pub use allreduce_recursive_doubling::allreduce_recursive_doubling;
pub use allreduce_reduce_bcast::allreduce_reduce_bcast;
pub use allreduce_ring::allreduce_ring;
pub use reduce_binomial::reduce_binomial;
pub use reduce_scatter_recursive_halving::reduce_scatter_recursive_halving;
pub use reduce_scatter_ring::reduce_scatter_ring;
pub use reduce_star::reduce_star;
pub mod reproducible;

pub mod allgather_bruck;
pub mod allgather_recursive_doubling;
pub mod allgather_ring;
pub mod alltoall_bruck;
pub mod alltoall_pairwise;
pub mod gather_binomial;
pub mod gather_ring;
pub mod gather_star;
pub mod scatter_binomial;
pub mod scatter_star;

pub use allgather_bruck::allgather_bruck;
pub use allgather_recursive_doubling::allgather_recursive_doubling;
pub use allgather_ring::allgather_ring;
pub use alltoall_bruck::alltoall_bruck;
pub use alltoall_pairwise::{alltoall_pairwise, alltoallv_pairwise};
pub use gather_binomial::gather_binomial;
pub use gather_ring::gather_ring;
pub use gather_star::gather_star;
pub use scatter_binomial::scatter_binomial;
pub use scatter_star::scatter_star;

pub mod scan_chain;
pub mod scan_recursive_doubling;
pub mod segmented;

pub use scan_chain::scan_chain;
pub use scan_recursive_doubling::scan_recursive_doubling;

pub mod multicast_spgsnw;
pub use multicast_spgsnw::{spgsnw_plan, spgsnw_receiver, spgsnw_sender};
