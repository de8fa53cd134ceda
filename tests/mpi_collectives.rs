//! The collectives matrix (`tests/common/collectives.rs`) over the site's
//! MPI, as `tests/mpi_conformance.rs` runs the conformance suite.

mod common;

/// Ranks as processes of an MPI job.
mod mpi {
    crate::common::collectives::collectives_suite!(
        crate::common::Processes<crate::common::procs::Mpi>
    );
}
