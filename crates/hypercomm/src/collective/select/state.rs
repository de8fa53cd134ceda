//! What a communicator keeps for its collectives: the topology setting
//! (PICL setarc0), check mode (PICL check0), the host-misfit flag of a
//! host-rooted call and the [`Memo`] of recent choices and schedules.
//!
//! The communicator holds one [`CollState`]; this file and the ones it
//! imports (`memo.rs`, `options.rs`, `../kind.rs`) import nothing from the
//! communicator, so `comm.rs` depends on the collectives through this one
//! type and no file-level import cycle runs through `comm.rs`.

use super::memo::Memo;
use super::options::Topology;
use std::cell::Cell;

/// The collective state of one communicator.
pub(crate) struct CollState {
    /// The virtual topology collectives follow.
    pub(crate) topology: Cell<Topology>,
    /// Whether every collective first compares a signature across ranks.
    pub(crate) check: Cell<bool>,
    /// Set while node 0 runs the node stage of a host-rooted call whose
    /// data from the host it could not take: the stage's signature says
    /// so, and every node fails (see `Comm::after_host_handoff`).
    pub(crate) host_misfit: Cell<bool>,
    /// Recent algorithm choices and schedules of collective calls.
    pub(crate) memo: Memo,
}

impl Default for CollState {
    /// Topology `Auto`, check mode on, nothing remembered.
    fn default() -> Self {
        CollState {
            topology: Cell::new(Topology::Auto),
            check: Cell::new(true),
            host_misfit: Cell::new(false),
            memo: Memo::default(),
        }
    }
}
