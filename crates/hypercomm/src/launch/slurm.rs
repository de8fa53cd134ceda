//! Bootstrap under Slurm (`srun ./prog`) without our launcher: task 0
//! serves the rendezvous on the first host of the step's node list, on a
//! port derived from the job and step ids (see [`crate::launch`]).
//!
//! The node list is expanded by [`hostlist`] (Slurm's whole syntax).
//!
//! Not done yet: PMI/PMIx (the rendezvous is our own), a host rank under
//! Slurm.

use super::join::{connect_rendezvous, io_err, join_job, JoinSpec};
use super::monitor::{self, Monitor, MonitorSetup};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::transport::tcp::auth::from_hex;
use crate::transport::TransportKind;
use sha2::{Digest, Sha256};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub(crate) mod hostlist;

/// What Slurm tells a task.
#[derive(Debug, Clone)]
pub(crate) struct SlurmEnv {
    pub(crate) procid: usize,
    pub(crate) ntasks: usize,
    pub(crate) first_host: String,
    pub(crate) job_id: String,
    pub(crate) step_id: String,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|s| !s.trim().is_empty())
}

/// The first host of a Slurm host list (`node[07-10,12],gpu3` → `node07`);
/// the whole list must be well formed.
pub(crate) fn first_host(list: &str) -> std::result::Result<String, String> {
    hostlist::expand(list)?
        .into_iter()
        .next()
        .ok_or_else(|| format!("the host list {list:?} is empty"))
}

/// The rendezvous port of a job step.
pub(crate) fn port(job_id: &str, step_id: &str) -> u16 {
    let j: u64 = job_id.trim().parse().unwrap_or_else(|_| {
        job_id
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64))
    });
    let s: u64 = step_id.trim().parse().unwrap_or(0);
    (10000 + (j.wrapping_mul(1000).wrapping_add(s)) % 20000) as u16
}

impl SlurmEnv {
    /// `None` when not a Slurm task (or `HYPERCOMM_NO_SLURM` is set);
    /// `Some(Err)` when Slurm's variables are inconsistent.
    pub(crate) fn detect() -> Option<Result<SlurmEnv>> {
        if var(super::env::NO_SLURM).is_some_and(|v| v != "0") {
            return None;
        }
        let procid = var("SLURM_PROCID")?;
        let ntasks = var("SLURM_NTASKS").or_else(|| var("SLURM_NPROCS"))?;
        let nodelist = var("SLURM_STEP_NODELIST").or_else(|| var("SLURM_NODELIST"))?;
        let bad = |what: String| Error::InvalidArgument {
            op: "hypercomm::init (Slurm)",
            what,
        };
        Some((|| {
            let procid: usize = procid
                .trim()
                .parse()
                .map_err(|_| bad(format!("SLURM_PROCID {procid:?} is not a number")))?;
            let ntasks: usize = ntasks
                .trim()
                .parse()
                .map_err(|_| bad(format!("SLURM_NTASKS {ntasks:?} is not a number")))?;
            if ntasks == 0 || procid >= ntasks {
                return Err(bad(format!("task {procid} of {ntasks}")));
            }
            let first_host = first_host(&nodelist).map_err(|e| bad(format!("node list: {e}")))?;
            Ok(SlurmEnv {
                procid,
                ntasks,
                first_host,
                job_id: var("SLURM_JOB_ID")
                    .or_else(|| var("SLURM_JOBID"))
                    .unwrap_or_else(|| "0".into()),
                step_id: var("SLURM_STEP_ID")
                    .or_else(|| var("SLURM_STEPID"))
                    .unwrap_or_else(|| "0".into()),
            })
        })())
    }

    fn secret(&self) -> Result<Vec<u8>> {
        if let Some(s) = var(super::env::SECRET) {
            return from_hex(&s).ok_or_else(|| Error::InvalidArgument {
                op: "hypercomm::init (Slurm)",
                what: "HYPERCOMM_SECRET is not hex".into(),
            });
        }
        // SAFETY: getuid(2) cannot fail and touches no memory.
        let uid = unsafe { libc::getuid() };
        let mut h = Sha256::new();
        h.update(b"hypercomm slurm secret\0");
        h.update(self.job_id.as_bytes());
        h.update(b"\0");
        h.update(self.step_id.as_bytes());
        h.update(uid.to_le_bytes());
        Ok(h.finalize().to_vec())
    }

    fn rendezvous(&self) -> Result<SocketAddr> {
        if let Some(a) = var(super::env::RENDEZVOUS) {
            return a.parse().map_err(|_| Error::InvalidArgument {
                op: "hypercomm::init (Slurm)",
                what: format!("HYPERCOMM_RENDEZVOUS {a:?} is not ip:port"),
            });
        }
        let p = port(&self.job_id, &self.step_id);
        (self.first_host.as_str(), p)
            .to_socket_addrs()
            .map_err(|e| {
                io_err(
                    "resolving the first Slurm host",
                    format!("{}: {e}", self.first_host),
                )
            })?
            .next()
            .ok_or_else(|| {
                io_err(
                    "resolving the first Slurm host",
                    format!("{} has no address", self.first_host),
                )
            })
    }
}

/// Join (and for task 0, serve) the Slurm job step; with `host`, its last
/// task is the host and the others are the nodes.
pub(crate) fn join(s: &SlurmEnv, host: bool) -> Result<Comm> {
    if host && s.ntasks < 2 {
        return Err(Error::InvalidArgument {
            op: "hypercomm::run_with_host (Slurm)",
            what: "a job with a host needs at least 2 tasks (the nodes and the host)".into(),
        });
    }
    let nodes = s.ntasks - host as usize;
    let secret = s.secret()?;
    let job = format!("slurm-{}.{}", s.job_id, s.step_id);
    let addr = s.rendezvous()?;
    if s.procid == 0 {
        let l = TcpListener::bind(addr)
            .map_err(|e| io_err("opening the Slurm rendezvous", format!("{addr}: {e}")))?;
        let rv = monitor::serve(l, secret.clone(), job.clone(), s.ntasks)
            .map_err(|e| io_err("opening the Slurm rendezvous", e))?;
        let m = Monitor::new(MonitorSetup {
            nodes,
            host,
            pids: vec![None; s.ntasks],
            remote: Vec::new(),
            starter: None,
            timeout: None,
            interrupted: None,
            stop: Arc::new(AtomicBool::new(false)),
            verbose: true,
            transport: TransportKind::Tcp,
        });
        let events = rv.events;
        std::thread::Builder::new()
            .name("hypercomm-slurm-rendezvous".into())
            .spawn(move || m.run(&events))
            .map_err(|e| io_err("starting the Slurm rendezvous", e))?;
    }
    let ctl = connect_rendezvous(&addr.to_string(), &secret, &job, s.procid)?;
    join_job(
        ctl,
        JoinSpec {
            kind: TransportKind::Tcp,
            endpoint: s.procid,
            nodes,
            host,
            bind: None,
            secret,
            job,
            after_finish: None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_hosts() {
        assert_eq!(first_host("localhost").as_deref(), Ok("localhost"));
        assert_eq!(first_host("a,b").as_deref(), Ok("a"));
        assert_eq!(first_host("node[07-10,12],gpu3").as_deref(), Ok("node07"));
        assert_eq!(first_host("n[3,5]-ib").as_deref(), Ok("n3-ib"));
        assert_eq!(first_host("r[2-3]n[4-5]").as_deref(), Ok("r2n4"));
        assert!(first_host("").is_err());
        assert!(first_host("n[1-2],m[").unwrap_err().contains("unclosed"));
    }

    #[test]
    fn ports_are_in_range_and_differ_by_step() {
        let a = port("123456", "0");
        let b = port("123456", "1");
        assert!((10000..30000).contains(&a));
        assert_ne!(a, b);
    }
}
