//! The environment contract between the launcher and the processes it
//! starts (see the table in [`crate::launch`]).

use crate::error::{Error, Result};
use crate::transport::tcp::auth::from_hex;
use crate::transport::TransportKind;
use std::net::IpAddr;

/// Endpoint index of this process: nodes `0..n`, the host `n`.
pub const RANK: &str = "HYPERCOMM_RANK";
/// Number of nodes `n`.
pub const NODES: &str = "HYPERCOMM_NODES";
/// `1` when the job has a host (endpoint `n`), else `0`.
pub const HOST: &str = "HYPERCOMM_HOST";
/// The transport kind's name ([`TransportKind`]: `shm` or `tcp`).
pub const TRANSPORT: &str = "HYPERCOMM_TRANSPORT";
/// `ip:port` of the rendezvous listener.
pub const RENDEZVOUS: &str = "HYPERCOMM_RENDEZVOUS";
/// The per-job secret: 32 random bytes in hex.
pub const SECRET: &str = "HYPERCOMM_SECRET";
/// The job id (printable, unique per job).
pub const JOB: &str = "HYPERCOMM_JOB";
/// Optional: the address this endpoint listens on for data connections
/// (set by `--hosts`); default: the local address of its connection to the
/// rendezvous.
pub const BIND: &str = "HYPERCOMM_BIND";
/// shm only: an inherited file descriptor of the job's shared segment
/// (the shm transport's own variable).
pub const SHM_FD: &str = crate::transport::shm::SHM_FD;
/// Set to `1` to make `init()` ignore Slurm's variables.
pub const NO_SLURM: &str = "HYPERCOMM_NO_SLURM";

/// Everything a launched process learns from its environment.
#[derive(Debug, Clone)]
pub(crate) struct JobEnv {
    pub(crate) endpoint: usize,
    pub(crate) nodes: usize,
    pub(crate) host: bool,
    pub(crate) transport: TransportKind,
    pub(crate) rendezvous: String,
    pub(crate) secret: Vec<u8>,
    pub(crate) job: String,
    pub(crate) bind: Option<IpAddr>,
}

fn bad(var: &str, what: String) -> Error {
    Error::InvalidArgument {
        op: "hypercomm::init",
        what: format!("environment variable {var}: {what}"),
    }
}

fn get(var: &str) -> Result<String> {
    std::env::var(var).map_err(|_| {
        bad(
            var,
            "not set (is this process started by `hypercomm run`?)".into(),
        )
    })
}

fn num(var: &str) -> Result<usize> {
    let s = get(var)?;
    s.trim()
        .parse()
        .map_err(|_| bad(var, format!("{s:?} is not a number")))
}

/// Whether our launcher started this process: [`RANK`] is set, or the
/// job is an MPI one (`hypercomm run --transport mpi`), whose ranks learn
/// their endpoint from the MPI launcher.
pub(crate) fn launched_by_us() -> bool {
    std::env::var_os(RANK).is_some() || mpi_job_of_ours()
}

fn mpi_job_of_ours() -> bool {
    std::env::var(TRANSPORT).is_ok_and(|t| t.trim() == TransportKind::Mpi.name())
        && std::env::var_os(RENDEZVOUS).is_some()
        && crate::transport::mpi::started_by_mpi()
}

impl JobEnv {
    /// Read the launcher's variables (call only when [`launched_by_us`]).
    pub(crate) fn from_env() -> Result<JobEnv> {
        let endpoint = match crate::transport::mpi::mpi_rank() {
            Some(r) if std::env::var_os(RANK).is_none() && mpi_job_of_ours() => r,
            _ => num(RANK)?,
        };
        let nodes = num(NODES)?;
        let host = match get(HOST)?.trim() {
            "1" => true,
            "0" => false,
            s => return Err(bad(HOST, format!("{s:?} is neither 0 nor 1"))),
        };
        if nodes == 0 {
            return Err(bad(NODES, "a job needs at least one node".into()));
        }
        if endpoint >= nodes + host as usize {
            return Err(bad(
                RANK,
                format!(
                    "{endpoint} is not an endpoint of a job with {nodes} nodes{}",
                    if host { " and a host" } else { "" }
                ),
            ));
        }
        let transport = get(TRANSPORT)?
            .trim()
            .parse()
            .map_err(|e| bad(TRANSPORT, e))?;
        let secret = from_hex(&get(SECRET)?).ok_or_else(|| bad(SECRET, "not hex".into()))?;
        if secret.len() < 16 {
            return Err(bad(SECRET, format!("{} bytes is too short", secret.len())));
        }
        let bind = match std::env::var(BIND) {
            Ok(s) if !s.trim().is_empty() => Some(
                s.trim()
                    .parse()
                    .map_err(|_| bad(BIND, format!("{s:?} is not an IP address")))?,
            ),
            _ => None,
        };
        Ok(JobEnv {
            endpoint,
            nodes,
            host,
            transport,
            rendezvous: get(RENDEZVOUS)?,
            secret,
            job: get(JOB)?,
            bind,
        })
    }
}
