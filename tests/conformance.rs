//! Transport conformance suite (see `tests/common/conformance.rs`): the same
//! test names for every transport. Each transport adds one module that
//! instantiates the suite with its launcher.

mod common;

/// Ranks as threads of this process (`hypercomm::run`).
mod thread {
    crate::common::conformance::conformance_suite!(crate::common::Threads);
}
