//! Transport conformance suite (see `tests/common/conformance.rs`): the same
//! test names for every transport. Each transport adds one module that
//! instantiates the suite with its launcher.

mod common;

/// Ranks as threads of this process (`hypercomm::run`).
mod thread {
    crate::common::conformance::conformance_suite!(crate::common::Threads);
}

/// Ranks as processes started by `hypercomm run`, over TCP (see
/// `tests/common/procs.rs` for how a test body runs as a job).
mod tcp {
    crate::common::conformance::conformance_suite!(crate::common::Processes);
}

/// Ranks as processes started by `hypercomm run`, over shared memory.
mod shm {
    crate::common::conformance::conformance_suite!(
        crate::common::Processes<crate::common::procs::Shm>
    );
}
