//! Making a simulated job: one [`SimBuilder`] per endpoint, sent to the
//! thread that will be that rank. The job starts (rank 0's turn at virtual
//! time 0) when every endpoint is built.

use super::config::{Config, ENV, REPORT_ENV};
use super::world::{lock, Job};
use super::SimEndpoint;
use crate::error::{Error, Result};
use crate::transport::{
    not_for, AnyTransport, Builder, JobClock, JoinInfo, Joining, Prepared, Setup, TransportKind,
};
use std::io::Write;
use std::sync::Arc;

/// Builds endpoint `me` of a simulated [`Job`] on the thread that will use
/// it.
pub struct SimBuilder {
    job: std::result::Result<Arc<Job>, Error>,
    me: usize,
}

impl SimBuilder {
    /// A job of `endpoints` endpoints on the machine `config` describes,
    /// and one builder per endpoint. Errors: the configuration does not
    /// make a machine for that many endpoints ([`Config::model`]).
    pub fn job(config: Config, endpoints: usize) -> Result<(Arc<Job>, Vec<SimBuilder>)> {
        let job = Arc::new(Job::new(config, endpoints)?);
        let b = (0..endpoints)
            .map(|me| SimBuilder {
                job: Ok(job.clone()),
                me,
            })
            .collect();
        Ok((job, b))
    }
}

impl Builder for SimBuilder {
    fn build(self: Box<Self>) -> Result<AnyTransport> {
        let job = self.job?;
        let me = self.me;
        let mut w = lock(&job.world);
        w.ranks[me].thread = Some(std::thread::current());
        w.built += 1;
        if w.built == w.ranks.len() {
            // Everyone is here: all start at virtual time 0.
            for r in 0..w.ranks.len() {
                w.resume(r, 0.0);
            }
            job.pass(me, w, false);
        } else {
            drop(w);
            job.await_turn(me);
        }
        Ok(SimEndpoint::new(job, me).into())
    }

    fn clock(&self) -> Option<JobClock> {
        let job = self.job.as_ref().ok()?.clone();
        Some(Arc::new(move || job.now_ns()))
    }
}

/// The simulator's [`Setup`].
pub(crate) struct SimSetup;

/// The one instance.
pub(crate) static SETUP: SimSetup = SimSetup;

/// Builders for a job of `endpoints` endpoints on the machine
/// `HYPERCOMM_SIM` describes (the default machine when unset), `nodes` of
/// them when the description leaves the size open; a bad description
/// fails every rank with its message. Notes the start in `sim run`'s
/// report, so that it knows the program did start a job.
fn builders(endpoints: usize, nodes: usize) -> Vec<Box<dyn Builder>> {
    if let Some(path) = std::env::var_os(REPORT_ENV) {
        // A report that cannot be written loses a line of output, not the
        // job.
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "start endpoints={endpoints}"));
    }
    let made = Config::from_env()
        .map(Option::unwrap_or_default)
        .and_then(|mut c| {
            c.nodes.get_or_insert(nodes);
            SimBuilder::job(c, endpoints)
        });
    match made {
        Ok((_, b)) => b
            .into_iter()
            .map(|b| Box::new(b) as Box<dyn Builder>)
            .collect(),
        Err(e) => (0..endpoints)
            .map(|me| {
                Box::new(SimBuilder {
                    job: Err(e.clone()),
                    me,
                }) as Box<dyn Builder>
            })
            .collect(),
    }
}

/// Builders for a job of `nodes` nodes and a host (the last endpoint) on
/// the machine `HYPERCOMM_SIM` describes. Left to its default size, the
/// machine has a node per node rank, and the host hangs off node 0 by a
/// link of its own, as on a machine given `p = nodes`.
pub(crate) fn with_host(nodes: usize) -> Vec<Box<dyn Builder>> {
    builders(nodes + 1, nodes)
}

impl Setup for SimSetup {
    /// Builders for a job on the machine `HYPERCOMM_SIM` describes (the
    /// default machine, one node per endpoint, when unset); a bad
    /// description fails every rank with its message.
    fn threads(&self, endpoints: usize) -> Option<Vec<Box<dyn Builder>>> {
        Some(builders(endpoints, endpoints))
    }
    fn prepare(&self, _endpoints: usize) -> Result<Prepared> {
        Err(not_for(
            TransportKind::Sim,
            &format!(
                "start processes (its ranks are threads of one process in virtual time: \
                 use hypercomm::sim::run, or {ENV} with hypercomm::run)"
            ),
        ))
    }
    fn join(&self, _info: &JoinInfo) -> Result<Box<dyn Joining>> {
        Err(not_for(
            TransportKind::Sim,
            "join a launched job of processes (its ranks are threads of one process)",
        ))
    }
}
