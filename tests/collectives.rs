//! Collectives against serial computations (see `tests/common/collectives.rs`):
//! every operation × algorithm × job size × count, under the same test names
//! for every transport. The sizes come from the launcher (`Matrix`): threads
//! run n ∈ {1,2,3,4,5,7,8,13,16} × count ∈ {0,1,64,4099}; shared memory and
//! TCP, where every job is a split of a 17-process world on a possibly small
//! machine, run n ∈ {1,2,3,5,8,16} × count ∈ {0,1,64,4099}.

mod common;

/// Ranks as threads of this process (`hypercomm::run`).
mod thread {
    crate::common::collectives::collectives_suite!(crate::common::Threads);
}

/// Ranks as processes of this test binary, over shared memory (see
/// `tests/common/procs.rs` for how a test body runs as a job).
mod shm {
    crate::common::collectives::collectives_suite!(
        crate::common::Processes<crate::common::procs::Shm>
    );
}

/// Ranks as processes of this test binary, over TCP.
mod tcp {
    crate::common::collectives::collectives_suite!(crate::common::Processes);
}
