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
