//! The simulator (SPEC.md section 8): programs and collectives on a
//! machine nobody has, in virtual time, with seed 001's model.
//!
//! Two halves:
//!
//! * **Programs** ([`run`]): a real SPMD program runs with its ranks as
//!   threads on the `sim` transport ([`crate::transport::sim`]); a message
//!   arrives when the simulated network says, computation costs nothing
//!   unless declared ([`compute`]) or measured ([`Compute::Cpu`]), and
//!   traces are in virtual time (their records, the PICL files, the Chrome
//!   JSON and the HTML report). An unchanged program runs on the simulator
//!   with `HYPERCOMM_SIM=network=hypercube,ts=…` set ([`Config`]'s
//!   `Display` form), which is what `hypercomm sim run` does.
//! * **Schedules** ([`simulate`], [`simulate_entry`]): any registered
//!   collective schedule run on the model directly, without threads, for
//!   machines of millions of nodes; seed 001's closed forms ([`FORMS`]) and
//!   the seed's algorithm per network ([`seed_algorithm`]). This half is
//!   `hypercomm_algo::sim`, re-exported here.
//!
//! ```
//! use hypercomm::sim::{self, Config, Network};
//! use hypercomm::collective::Sum;
//!
//! let config = Config { network: Network::Hypercube, ..Config::default() };
//! let out = sim::run(&config, 8, |comm| {
//!     let mut x = vec![comm.rank() as u64; 4];
//!     comm.bcast(&mut x, 0usize)?;
//!     sim::compute(std::time::Duration::from_micros(10));
//!     comm.allreduce(&x, Sum)
//! })?;
//! assert!(out.results.iter().all(|v| v == &vec![0u64; 4]));
//! assert!(out.summary.time() > 10e-6); // virtual seconds
//! # Ok::<(), hypercomm::Error>(())
//! ```
//!
//! Virtual time is in seconds, with ts, tw and th in seconds and tw per
//! word of [`Config::word_bytes`] bytes; schedule simulation takes any one
//! unit.
//!
//! Not done yet: hosts (`run_with_host`) on the simulator go through
//! `run_builders_with_host` with [`SimBuilder`]s; simulated ranks as
//! processes; collective check mode's signature exchange is simulated like
//! any message (turn it off with `Comm::set_check(false)` to time the
//! collective alone).

use crate::error::{BoxError, Result};
use crate::run::run_builders;
use crate::transport::{Builder, TransportKind};

pub use crate::transport::sim::{
    compute, now, Compute, Config, Job, SimBuilder, Summary, ENV, REPORT_ENV,
};
pub use hypercomm_algo::sim::{
    check_algorithm, closed_form, seed_algorithm, simulate, simulate_entry, Call, Costs, Form,
    Model, ModelError, Network, Outcome, Ports, Routing, SimError, Traffic, FORMS,
};

/// What a simulated run gives back.
#[derive(Debug)]
pub struct Simulated<R> {
    /// Each rank's result, in rank order.
    pub results: Vec<R>,
    /// Virtual end times and traffic.
    pub summary: Summary,
}

/// Run `n` ranks of `f` on the simulated machine `config` describes, in
/// virtual time (traced when tracing is on: [`crate::trace::enable`] or
/// `HYPERCOMM_TRACE`, with the virtual clock). Errors: a configuration
/// that makes no machine for `n` ranks (a hypercube of 12, a negative
/// cost, …), and every error [`crate::run`](fn@crate::run) gives.
pub fn run<R, E, F>(config: &Config, n: usize, f: F) -> Result<Simulated<R>>
where
    R: Send,
    E: Into<BoxError>,
    F: Fn(&crate::Comm) -> std::result::Result<R, E> + Sync,
{
    let (job, builders) = SimBuilder::job(config.clone(), n)?;
    let builders: Vec<Box<dyn Builder>> = builders
        .into_iter()
        .map(|b| Box::new(b) as Box<dyn Builder>)
        .collect();
    let results = run_builders(builders, f)?;
    Ok(Simulated {
        results,
        summary: job.summary(),
    })
}

/// The transport kind of the simulator, for [`crate::run_on`] (the default
/// machine, or `HYPERCOMM_SIM`'s).
pub const KIND: TransportKind = TransportKind::Sim;
