//! Collectives against serial computations (see `tests/common/collectives.rs`):
//! every operation × algorithm × job size × count, under the same test names
//! for every transport. The sizes come from the launcher (`Matrix`): threads
//! run n ∈ {1,2,3,4,5,7,8,13,16} × count ∈ {0,1,64,4099}.

mod common;

/// Ranks as threads of this process (`hypercomm::run`).
mod thread {
    crate::common::collectives::collectives_suite!(crate::common::Threads);
}
