//! Process topologies and the SUPRENUM grid layer (see
//! `tests/common/grids.rs`): the same test names on every transport
//! (threads, shared memory, TCP).

mod common;

/// Ranks as threads of this process.
mod thread {
    crate::common::grids::grids_suite!(crate::common::Threads);
}

/// Ranks as processes of this test binary, over shared memory.
mod shm {
    crate::common::grids::grids_suite!(crate::common::Processes<crate::common::procs::Shm>);
}

/// Ranks as processes of this test binary, over TCP.
mod tcp {
    crate::common::grids::grids_suite!(crate::common::Processes);
}
