//! Starting over MPI: whether this process was started by an MPI launcher,
//! and the builder that joins the MPI job.
//!
//! An MPI job's processes are started by the MPI launcher (`mpirun`,
//! `mpiexec`, `srun --mpi=pmix`). Under `hypercomm run --transport mpi`
//! (which runs `mpirun`) they also join our rendezvous, for reports and
//! notices: `prepare` has nothing to make, and `join` initialises MPI once
//! the table has come, checking that the MPI rank is the endpoint the
//! launcher expects.

use super::MpiEndpoint;
use crate::error::{Error, Result};
use crate::transport::{
    AnyTransport, Builder, JoinInfo, JoinTable, Joined, Joining, Prepared, Setup, Supervisor,
    Transport,
};

/// Builds this process's endpoint of the MPI job (MPI_Init on the thread
/// that will use it).
pub struct MpiBuilder;

impl Builder for MpiBuilder {
    fn build(self: Box<Self>) -> Result<AnyTransport> {
        Ok(MpiEndpoint::new()?.into())
    }
}

/// The MPI transport's [`Setup`].
pub(crate) struct MpiSetup;

/// The one instance.
pub(crate) static SETUP: MpiSetup = MpiSetup;

impl Setup for MpiSetup {
    fn threads(&self, _endpoints: usize) -> Option<Vec<Box<dyn Builder>>> {
        None
    }
    fn prepare(&self, _endpoints: usize) -> Result<Prepared> {
        Ok(Prepared::default())
    }
    fn join(&self, info: &JoinInfo) -> Result<Box<dyn Joining>> {
        if !super::started_by_mpi() {
            return Err(Error::InvalidArgument {
                op: "hypercomm::init",
                what: "HYPERCOMM_TRANSPORT=mpi, but this process was not started by an MPI launcher (mpirun, mpiexec, srun --mpi=pmix)".into(),
            });
        }
        Ok(Box::new(MpiJoining {
            endpoint: info.endpoint,
            endpoints: info.endpoints,
        }))
    }
}

/// An MPI rank half-way into a job of our launcher.
struct MpiJoining {
    endpoint: usize,
    endpoints: usize,
}

impl Joining for MpiJoining {
    fn address(&self) -> String {
        String::new()
    }
    // MPI agrees on the job's shape itself (`sys::init`), for jobs it
    // starts without our launcher too.
    fn complete(self: Box<Self>, _table: &JoinTable, sup: Box<dyn Supervisor>) -> Result<Joined> {
        let e = MpiEndpoint::new()?;
        let (me, n) = (e.endpoint(), e.endpoints());
        if me != self.endpoint || n != self.endpoints {
            return Err(Error::InvalidArgument {
                op: "hypercomm::init",
                what: format!(
                    "MPI says this is rank {me} of {n}, the launcher expected endpoint {} of {}",
                    self.endpoint, self.endpoints
                ),
            });
        }
        let notices = e.supervise(sup);
        Ok(Joined {
            transport: e.into(),
            notices,
        })
    }
}
