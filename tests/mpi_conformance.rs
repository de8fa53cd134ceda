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

/// The bodies of two nodes on the world of a two-process job.
mod mpi_world2 {
    crate::common::conformance::conformance_suite!(@world2
        crate::common::World<crate::common::procs::Mpi, 2>
    );
}

/// The bodies of three nodes on the world of a three-process job.
mod mpi_world3 {
    crate::common::conformance::conformance_suite!(@tests
        crate::common::World<crate::common::procs::Mpi, 3>;
        a_receive_from_any_source_takes_nothing_out_of_turn,
        nonblocking_wait_any_test
    );
}

/// Receives from any source and with any tag on the world of four.
mod mpi_world4 {
    crate::common::conformance::conformance_suite!(@tests
        crate::common::World<crate::common::procs::Mpi, 4>;
        wildcards
    );
}

/// Nodes and the host (the last MPI rank) on the world of three and a
/// host.
mod mpi_world3_host {
    crate::common::conformance::conformance_suite!(@tests
        crate::common::World<crate::common::procs::Mpi, 3, true>;
        host_messages
    );
}
