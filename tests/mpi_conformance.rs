//! The transport conformance suite (`tests/common/conformance.rs`) over the
//! site's MPI: each test body runs as a job of this test binary started by
//! `mpirun` (16 nodes and a host, the host being the last MPI rank).
//!
//! Built only with the `mpi` feature (`required-features`); `tests/mpi.rs`
//! runs it against each installed MPI with that MPI's `mpirun`
//! (`HYPERCOMM_MPIRUN`).

mod common;

/// Ranks as processes of an MPI job.
mod mpi {
    crate::common::conformance::conformance_suite!(
        crate::common::Processes<crate::common::procs::Mpi>
    );
}
