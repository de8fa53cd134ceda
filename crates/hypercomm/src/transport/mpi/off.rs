//! The MPI transport when the library was built without the `mpi` feature:
//! the kind exists (so `--transport mpi` and `HYPERCOMM_TRANSPORT=mpi` are
//! understood), and everything that would need MPI says how to get it.

#[path = "detect.rs"]
mod detect;
pub use detect::{mpi_rank, started_by_mpi, LAUNCH_VARS};

crate::transport::off::absent!(
    MpiEndpoint,
    "this program was built without MPI: build it with the `mpi` feature of hypercomm (cargo build --features hypercomm/mpi; needs libopenmpi-dev or libmpich-dev)",
    Ok(Prepared::default())
);
