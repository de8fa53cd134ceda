//! The transport conformance suite (`tests/common/conformance.rs`) over the
//! site's MPI: each test body runs as a job of this test binary started by
//! `mpirun` (16 nodes and a host, the host being the last MPI rank), on a
//! communicator split off the job's world; and the bodies of two and of
//! three nodes (the wildcards' four, the host's three and a host) again
//! on the world itself (jobs of as many nodes), whose
//! point-to-point messages are MPI's own rather than our frames.
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

// The bodies of two, three and four nodes and the host's on worlds of as
// many processes.
crate::common::conformance::world_bodies!(
    mpi_world2,
    mpi_world3,
    mpi_world4,
    mpi_world3_host,
    crate::common::procs::Mpi
);
