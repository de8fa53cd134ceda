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
