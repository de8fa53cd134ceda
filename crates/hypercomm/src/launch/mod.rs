//! Processes: [`init`], [`finalize`], [`spawn`](fn@spawn), the launcher's engine and
//! Slurm bootstrap.
//!
//! The same program body runs in every start mode (SPEC section 1):
//!
//! ```no_run
//! fn body(comm: &hypercomm::Comm) -> hypercomm::Result<()> {
//!     println!("rank {} of {}", comm.rank(), comm.size());
//!     Ok(())
//! }
//! fn main() -> hypercomm::Result<()> {
//!     if hypercomm::launch::is_launched() {
//!         // `hypercomm run -n 4 ./prog`, srun, or started alone (size 1).
//!         let comm = hypercomm::init()?;
//!         body(&comm)?;
//!         hypercomm::finalize(comm)
//!     } else {
//!         hypercomm::run(4, body).map(|_| ())
//!     }
//! }
//! ```
//!
//! ## How `init()` finds its job
//!
//! 1. **Under the launcher** ([`env::RANK`] is set): join the job described
//!    by the environment contract below.
//! 2. **Under Slurm** (`SLURM_PROCID`, `SLURM_NTASKS` and
//!    `SLURM_STEP_NODELIST` or `SLURM_NODELIST` are set, and
//!    `HYPERCOMM_NO_SLURM` is not): TCP without our launcher. Task 0 opens
//!    the rendezvous on the **first host of the step's node list**, port
//!    `10000 + (SLURM_JOB_ID · 1000 + SLURM_STEP_ID) mod 20000` (below Linux's ephemeral range) (or the
//!    `ip:port` in `HYPERCOMM_RENDEZVOUS` when set); every task connects to
//!    it (retrying for up to 60 s), reports its listening address and gets
//!    the table. The secret is `HYPERCOMM_SECRET` when the user exported
//!    one (srun passes the environment on), otherwise it is derived from
//!    the job and step ids and the user id — enough to keep jobs apart, not
//!    a defence against another user who knows the job id, so export a
//!    random `HYPERCOMM_SECRET` on shared clusters. Tasks are nodes; a
//!    Slurm job has no host.
//! 3. **Alone**: a world of one node and no host (an MPI singleton).
//!
//! ## The environment contract (launcher → each process)
//!
//! | variable | value |
//! |---|---|
//! | `HYPERCOMM_RANK` | endpoint index: nodes `0..n`, the host `n` |
//! | `HYPERCOMM_NODES` | `n` |
//! | `HYPERCOMM_HOST` | `1` if the job has a host, else `0` |
//! | `HYPERCOMM_TRANSPORT` | the transport kind: `shm` or `tcp` |
//! | `HYPERCOMM_RENDEZVOUS` | `ip:port` of the launcher's rendezvous listener |
//! | `HYPERCOMM_SECRET` | the per-job secret, 32 random bytes in hex |
//! | `HYPERCOMM_JOB` | the job id |
//! | `HYPERCOMM_BIND` | optional: the IP this endpoint listens on (`--hosts`) |
//! | `HYPERCOMM_WATCH_STDIN` | `1` for a rank started over ssh: stop when stdin ends (`ssh.rs`) |
//! | `HYPERCOMM_SHM_FD` | shm only: an inherited descriptor of the memfd segment the launcher made (the shm transport's `setup.rs`) |
//!
//! Every process, whatever the transport, first opens a **control
//! connection** to the rendezvous, authenticates with the secret
//! (challenge-response HMAC, see `transport::tcp::auth`; the endpoint index
//! is the client id), sends `Hello { endpoint, addr }` and waits for the
//! `Table` of all endpoints' addresses (empty strings for shm). The
//! connection then stays open: an endpoint reports `Abort` and `Finished`
//! on it, the launcher sends `Aborted` and `PeerFailed` (see
//! `launch::control`). TCP endpoints then connect to each other directly.
//!
//! ## Ending
//!
//! Call [`finalize`] when done, or just drop the communicator: dropping the
//! last handle of a process's world communicator (normally at the end of
//! `main`) closes the endpoint cleanly (a goodbye to every peer, then up to
//! 5 s for the peers' goodbyes so that nothing in flight is lost), or as
//! failed when the thread is panicking. A process that exits without
//! either (`std::process::exit`, a signal) is reported to its peers as
//! failed. Under [`run`](fn@crate::run) the threads are closed by `run`, and
//! `finalize` does nothing.
//!
//! ## Spawn
//!
//! [`spawn`](fn@spawn) is PICL's `open0` + `load0`: a host program started by hand
//! starts `n` node processes of a program and gets a communicator with
//! itself as the host. It runs the launcher's machinery in the calling
//! process (rendezvous, output forwarding with `[rank]` prefixes, failure
//! monitoring); the nodes are TCP endpoints on loopback. Finishing the host
//! waits (up to a grace period) for the nodes to end. Nodes receive
//! SIGTERM if the thread that spawned them exits, so call `spawn` from the
//! thread that uses the communicator (it must anyway).
//!
//! ## Ranks as processes of this program
//!
//! [`run_processes`] (and [`Processes`] for more options) is [`run`](fn@crate::run)
//! with processes: it starts `n` copies of the running executable as a job
//! of the chosen transport; each copy runs the program from `main` again
//! until it reaches the same call, where it runs the closure as its rank,
//! hands the result back to the parent and exits. The benchmark and the
//! multi-process tests are built on it.
//!
//! ## Files
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | `init`, `finalize`, start-mode detection |
//! | `rank.rs` | [`start_rank`]: one rank's engine and world; the rank lifecycle |
//! | `join.rs` | the rendezvous handshake every transport kind goes through; reports to the launcher |
//! | `job.rs` | the launcher's engine: [`job::run_job`] starts processes, forwards output, monitors |
//! | `processes.rs` | [`run_processes`]: ranks as processes of this program |
//! | `spawn.rs` | [`spawn`](fn@spawn): a host program starting its own nodes |
//! | `monitor.rs`, `control.rs`, `exits.rs` | the rendezvous server and job monitor; the control protocol; rank labels and how a process ended |
//! | `env.rs`, `slurm.rs` | the environment contract; Slurm bootstrap |
//! | `ssh.rs` | where ranks run; starting them on other machines over ssh |
//! | `mpirun.rs` | jobs whose ranks `mpirun` starts (`--transport mpi`) |
//! | `output.rs` | the processes' output, forwarded line by line with rank labels |
//!
//! `launch` owns processes: nothing else in the library starts one. It
//! builds on the transports (their `setup.rs` says what a process of each
//! kind needs) and on communicators; nothing below it imports it.
//!
//! Not done yet: spawning more nodes into a running job (MPI `Comm_spawn` with inter-communicators).

/// `eprintln!` for the launcher's and a rank's own messages, without its
/// panic: when standard error is gone (the reader of a pipe exited, the
/// disk is full) `eprintln!` panics, and the launcher must go on
/// supervising its ranks and end with their exit code. The message is
/// lost then; there is nowhere left to say it.
#[cfg(processes)]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[cfg(processes)]
pub(crate) mod control;
#[cfg(processes)]
pub mod env;
#[cfg(processes)]
pub(crate) mod exits;
#[cfg(processes)]
pub mod hosts;
#[cfg(processes)]
// The launcher's engine, for the `hypercomm` command: not part of the API.
#[doc(hidden)]
pub mod job;
#[cfg(processes)]
pub(crate) mod join;
#[cfg(processes)]
pub(crate) mod monitor;
#[cfg(processes)]
#[doc(hidden)]
pub mod mpirun;
#[cfg(processes)]
mod output;
#[cfg(processes)]
pub(crate) mod processes;
pub(crate) mod rank;
mod shape;
#[cfg(processes)]
pub(crate) mod slurm;
#[cfg(processes)]
mod spawn;
#[cfg(processes)]
pub(crate) mod spmd;
#[cfg(not(processes))]
#[path = "spmd_off.rs"]
pub(crate) mod spmd;
#[cfg(processes)]
#[doc(hidden)]
pub mod ssh;
pub(crate) mod trace;

#[cfg(processes)]
pub use processes::{run_processes, Processes, RankEnd};
pub use rank::start_rank;
pub use shape::{job_shape, JobShape};
#[cfg(processes)]
pub use spawn::spawn;

use crate::comm::Comm;
use crate::error::{Error, Result};
#[cfg(processes)]
use crate::transport::mpi;
use crate::transport::{Fault, Transport, TransportKind};
#[cfg(processes)]
use env::JobEnv;
#[cfg(processes)]
use join::{connect_rendezvous, join_job, JoinSpec};
use std::sync::atomic::{AtomicBool, Ordering};

static JOINED: AtomicBool = AtomicBool::new(false);

/// True when this process was started as part of a job (by the launcher or
/// by Slurm), i.e. when [`init`] will join a job of more than itself.
#[cfg(processes)]
pub fn is_launched() -> bool {
    env::launched_by_us() || slurm::SlurmEnv::detect().is_some() || mpi::started_by_mpi()
}

/// True when a launcher started this process as part of a job. A build
/// without processes (no `tcp` feature) cannot join one: [`init`] and
/// [`run`](fn@crate::run) say so instead of running alone.
#[cfg(not(processes))]
pub fn is_launched() -> bool {
    launched_by().is_some()
}

/// Which launcher started this process, in a build that cannot join its
/// job.
#[cfg(not(processes))]
fn launched_by() -> Option<&'static str> {
    job_shape().map(|s| s.started_by)
}

/// [`init`] in a build without processes: a world of one, or an error
/// when a launcher started this process as one rank of several.
#[cfg(not(processes))]
pub(crate) fn init_shaped(_host: bool) -> Result<Comm> {
    if let Some(by) = launched_by() {
        let why = if cfg!(unix) {
            "this program was built without processes: enable the `tcp` feature of hypercomm (on by default)"
        } else {
            "jobs of processes need a unix system; here ranks are threads (hypercomm::run)"
        };
        return Err(Error::InvalidArgument {
            op: "hypercomm::init",
            what: format!("this process was started by {by} as one rank of a job, but {why}"),
        });
    }
    claim()?;
    let comm = singleton()?;
    trace::process_begin(&comm)?;
    Ok(comm)
}

/// This process's rank of the MPI job that started it (with `host`, the
/// last MPI rank is the host).
#[cfg(feature = "mpi")]
fn mpi_world(host: bool) -> Result<Comm> {
    start_rank(Box::new(mpi::MpiBuilder), host)
}

/// Without the `mpi` feature: say how to get it.
#[cfg(all(processes, not(feature = "mpi")))]
fn mpi_world(_host: bool) -> Result<Comm> {
    Err(mpi::not_built())
}

/// Join the job this process belongs to and return its world communicator:
/// under `hypercomm run` from the environment, under Slurm by its own
/// rendezvous, and alone as a world of size 1. See the module docs.
///
/// May be called once per process (under the launcher or Slurm); the
/// communicator belongs to the calling thread.
///
/// Under `mpirun` and `srun`, which start no host of their own, a job
/// started with `HYPERCOMM_HOST=1` in its environment (`mpirun -x
/// HYPERCOMM_HOST=1`, `srun --export=ALL,HYPERCOMM_HOST=1`) makes its last
/// process the host, so a host-and-nodes program runs unchanged.
pub fn init() -> Result<Comm> {
    init_shaped(std::env::var("HYPERCOMM_HOST").is_ok_and(|v| v.trim() == "1"))
}

/// [`init`]; under `mpirun` and `srun`, which start no host, `host` makes
/// the last rank the host (for `run_with_host`). Our launcher says itself
/// whether the job has a host.
#[cfg(processes)]
pub(crate) fn init_shaped(host: bool) -> Result<Comm> {
    let comm = if env::launched_by_us() {
        claim()?;
        if std::env::var_os(ssh::WATCH_STDIN).is_some_and(|v| v == "1") {
            ssh::watch_stdin();
        }
        let e = JobEnv::from_env()?;
        join(&e)?
    } else if mpi::started_by_mpi()
        && (cfg!(feature = "mpi") || slurm::SlurmEnv::detect().is_none())
    {
        // Without the feature this says how to build with it: worlds of
        // one in every process would be silently wrong. (Under srun, such
        // a build takes the Slurm bootstrap below instead.)
        claim()?;
        mpi_world(host)?
    } else if let Some(s) = slurm::SlurmEnv::detect() {
        claim()?;
        slurm::join(&s?, host)?
    } else {
        singleton()?
    };
    // Tracing by environment (HYPERCOMM_TRACE): every process starts its
    // rank's stream here and writes it in `finalize`.
    trace::process_begin(&comm)?;
    Ok(comm)
}

fn claim() -> Result<()> {
    if JOINED.swap(true, Ordering::SeqCst) {
        return Err(Error::InvalidArgument {
            op: "hypercomm::init",
            what: "this process has already joined its job (init or spawn was called before)"
                .into(),
        });
    }
    Ok(())
}

fn singleton() -> Result<Comm> {
    let mut b = TransportKind::Thread.thread_builders(1)?;
    start_rank(b.pop().expect("one builder"), false)
}

/// Leave the job cleanly: every peer is told this process finished (the
/// same happens when the last handle of the communicator is dropped). Under
/// [`run`](fn@crate::run) it only ends tracing, if any.
pub fn finalize(comm: Comm) -> Result<()> {
    let traced = trace::process_end(&comm, true);
    let e = comm.engine();
    if e.managed {
        return traced.map(|_| ());
    }
    let fault = e.t.fault();
    e.t.close(Ok(()));
    match fault {
        Some(Fault::Aborted { endpoint, message }) => Err(Error::Aborted {
            rank: comm.group().rank(endpoint as u32),
            message,
        }),
        Some(Fault::Protocol(m)) => Err(Error::Protocol(m)),
        None => traced.map(|_| ()),
    }
}

/// Join a launched job from its environment.
#[cfg(processes)]
fn join(e: &JobEnv) -> Result<Comm> {
    let ctl = connect_rendezvous(&e.rendezvous, &e.secret, &e.job, e.endpoint)?;
    join_job(
        ctl,
        JoinSpec {
            kind: e.transport,
            endpoint: e.endpoint,
            nodes: e.nodes,
            host: e.host,
            bind: e.bind,
            secret: e.secret.clone(),
            job: e.job.clone(),
            after_finish: None,
        },
    )
}
