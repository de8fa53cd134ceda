//! The MPI transport when the library was built without the `mpi` feature:
//! the kind exists (so `--transport mpi` and `HYPERCOMM_TRANSPORT=mpi` are
//! understood), and everything that would need MPI says how to get it.

#[path = "detect.rs"]
mod detect;
pub use detect::{mpi_rank, started_by_mpi, LAUNCH_VARS};

/// An endpoint of an MPI job: none can exist without the `mpi` feature.
pub enum MpiEndpoint {}

/// What every use of MPI says in a build without it.
pub(crate) fn not_built() -> crate::error::Error {
    crate::error::Error::InvalidArgument {
        op: "transport",
        what: "this program was built without MPI: build it with the `mpi` feature of hypercomm (cargo build --features hypercomm/mpi; needs libopenmpi-dev or libmpich-dev)".into(),
    }
}

impl crate::transport::Transport for MpiEndpoint {
    fn endpoint(&self) -> usize {
        match *self {}
    }
    fn endpoints(&self) -> usize {
        match *self {}
    }
    fn send(&self, _: crate::transport::Frame) -> crate::error::Result<()> {
        match *self {}
    }
    fn try_recv(&self) -> Option<crate::transport::Frame> {
        match *self {}
    }
    fn wait(&self, _: Option<std::time::Instant>) {
        match *self {}
    }
    fn peer_state(&self, _: usize) -> crate::transport::PeerState {
        match *self {}
    }
    fn fault(&self) -> Option<crate::transport::Fault> {
        match *self {}
    }
    fn abort(&self, _: &str) {
        match *self {}
    }
    fn close(&self, _: std::result::Result<(), String>) {
        match *self {}
    }
    fn link(&self) -> crate::transport::Link {
        match *self {}
    }
}

pub(crate) mod setup {
    use crate::error::Result;
    use crate::transport::{Builder, JoinInfo, Joining, Prepared, Setup};

    /// The MPI transport's [`Setup`] without MPI.
    pub(crate) struct MpiSetup;

    /// The one instance.
    pub(crate) static SETUP: MpiSetup = MpiSetup;

    impl Setup for MpiSetup {
        fn threads(&self, _endpoints: usize) -> Option<Vec<Box<dyn Builder>>> {
            None
        }
        fn prepare(&self, _endpoints: usize) -> Result<Prepared> {
            // The launcher's side needs no MPI of its own: mpirun starts
            // the ranks, and they need the feature.
            Ok(Prepared::default())
        }
        fn join(&self, _info: &JoinInfo) -> Result<Box<dyn Joining>> {
            Err(super::not_built())
        }
    }
}
