//! Starting a job of threads: [`run`], [`run_with_host`], and the same on
//! any transport that can run its ranks as threads ([`run_on`]) or on
//! builders of one's own ([`run_builders`]).
//!
//! With `HYPERCOMM_SIM` set (`hypercomm sim run` sets it), [`run`] and
//! [`run_on`] for threads run the job on the simulator instead (its
//! transport reads the machine from the variable), so an unchanged program
//! runs in virtual time. A transport with a clock of its own (the
//! simulator's) gives it to the job's trace.
//!
//! Each rank runs on its own thread of this process. A rank that panics or
//! returns an error is marked failed; the others' operations that need it
//! fail with [`Error::PeerFailed`] (or [`Error::Aborted`] after
//! [`Comm::abort`]), and `run` returns an error naming the rank that failed
//! first, with its message.

use crate::comm::Comm;
use crate::engine::env_settings;
use crate::error::{Error, Result, Source};
use crate::launch::rank::{panic_message, run_rank, Ended, Outcome};
use crate::launch::spmd::{run_launched, Either};
use crate::rank::Rank;
use crate::trace;
use crate::transport::{Builder, Fault, JobClock, TransportKind};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::atomic::AtomicUsize;

pub use crate::error::BoxError;

/// Pick the error that explains the run: an abort, else the earliest primary
/// failure, else the earliest failure.
fn verdict<R>(nodes: usize, ended: &[(Rank, &Ended<R>)]) -> Option<Error> {
    let rank_of = |ep: usize| {
        if ep == nodes {
            Rank::Host
        } else {
            Rank::Node(ep)
        }
    };
    for (_, e) in ended {
        if let Some(Fault::Aborted { endpoint, message }) = &e.fault {
            return Some(Error::Aborted {
                rank: rank_of(*endpoint),
                message: message.clone(),
            });
        }
    }
    let mut best: Option<(bool, usize, Rank, &str, &Option<Source>)> = None;
    for (rank, e) in ended {
        if let Outcome::Failed {
            message,
            source,
            primary,
            seq,
        } = &e.outcome
        {
            let key = (!*primary, *seq);
            if best.is_none_or(|b| key < (!b.0, b.1)) {
                best = Some((*primary, *seq, *rank, message, source));
            }
        }
    }
    best.map(|(_, _, rank, message, source)| Error::RankFailed {
        rank,
        message: message.to_string(),
        source: source.clone(),
    })
}

fn no_nodes(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        what: "a job needs at least one node (n = 0)".into(),
    }
}

/// Run `n` ranks as threads of this process and return each rank's result in
/// rank order (the embedded default: no launcher, no set-up).
///
/// ```
/// let squares = hypercomm::run(4, |comm| Ok::<_, hypercomm::Error>(comm.rank() * comm.rank())).unwrap();
/// assert_eq!(squares, vec![0, 1, 4, 9]);
/// ```
///
/// The threads start only once all of them exist: when the system
/// refuses one (its limit on threads or address space), none runs `f`,
/// and `run` returns [`Error::Io`] naming the rank that could not start.
///
/// **Started by a launcher** (`hypercomm run -n 4 ./prog`, `mpirun -n 4
/// ./prog`, `srun -n 4 ./prog`) the same call joins the job instead: this
/// process runs `f` as its rank, node 0 gets every rank's result in rank
/// order and returns them, and the other processes exit when they have
/// handed in theirs — so the code after `run` runs once, as with threads.
/// The job must have `n` nodes and no host; anything else is an error
/// saying what the program asked for and what the job has. Results cross
/// processes, hence the serde bounds. (`run_on` always runs threads.)
pub fn run<R, E, F>(n: usize, f: F) -> Result<Vec<R>>
where
    R: Send + Serialize + DeserializeOwned,
    E: Into<BoxError>,
    F: Fn(&Comm) -> std::result::Result<R, E> + Sync,
{
    if n == 0 {
        return Err(no_nodes("run"));
    }
    if crate::launch::is_launched() {
        let (_, nodes) = run_launched::<(), R>("run", n, false, &|c: &Comm| {
            f(c).map(Either::Node).map_err(Into::into)
        })?;
        return Ok(nodes);
    }
    run_on(TransportKind::Thread, n, f)
}

/// [`run`] over another transport whose ranks can be threads of this
/// process: `shm` (one segment shared by the threads) and `tcp` (loopback
/// connections) can, to test a program against them without a launcher.
pub fn run_on<R, E, F>(kind: TransportKind, n: usize, f: F) -> Result<Vec<R>>
where
    R: Send,
    E: Into<BoxError>,
    F: Fn(&Comm) -> std::result::Result<R, E> + Sync,
{
    if n == 0 {
        return Err(no_nodes("run"));
    }
    run_builders(simulated(kind)?.thread_builders(n)?, f)
}

/// The kind a job of threads runs on: the simulator when `HYPERCOMM_SIM`
/// is set and the threads' own transport was asked for.
fn simulated(kind: TransportKind) -> Result<TransportKind> {
    let sim = std::env::var(crate::transport::sim::ENV).is_ok_and(|v| !v.trim().is_empty());
    Ok(if sim && kind == TransportKind::Thread {
        TransportKind::Sim
    } else {
        kind
    })
}

/// A transport's own clock as the trace's time source.
struct JobTime(JobClock);

impl trace::TimeSource for JobTime {
    fn now_ns(&self) -> i64 {
        (self.0)()
    }
    fn shared(&self) -> bool {
        true
    }
}

/// The trace of a job about to start on `builders` (their clock, if the
/// transport has one).
fn trace_begin(
    builders: &[Box<dyn Builder>],
    nodes: usize,
    host: bool,
) -> Result<Option<std::sync::Arc<trace::JobTrace>>> {
    let clock = builders.first().and_then(|b| b.clock());
    trace::job_begin_clocked(
        nodes,
        host,
        clock.map(|c| std::sync::Arc::new(JobTime(c)) as std::sync::Arc<dyn trace::TimeSource>),
    )
}

/// Run one rank per builder, each on its own thread, with no host (the
/// number of nodes is the number of builders); results in rank order. This
/// is how a transport from outside the crate runs a job.
pub fn run_builders<R, E, F>(builders: Vec<Box<dyn Builder>>, f: F) -> Result<Vec<R>>
where
    R: Send,
    E: Into<BoxError>,
    F: Fn(&Comm) -> std::result::Result<R, E> + Sync,
{
    let n = builders.len();
    if n == 0 {
        return Err(no_nodes("run"));
    }
    // A bad HYPERCOMM_TIMEOUT or HYPERCOMM_YIELD_US is the caller's error, not every rank's.
    env_settings()?;
    let tr = trace_begin(&builders, n, false)?;
    let order = AtomicUsize::new(0);
    let gate = Gate::default();
    let ended = std::thread::scope(|s| {
        let handles = spawn_nodes(s, builders, false, &f, &order, &tr, &gate)?;
        gate.open();
        Ok(handles.into_iter().map(join).collect())
    });
    let r = ended.and_then(|ended| finish(ended, None::<Ended<()>>).map(|(v, _)| v));
    trace::job_end(tr)?;
    r
}

/// Start a thread per node builder in scope `s`, each waiting at `gate`
/// before it runs `f` as its rank (`host`: the job has a host). A thread
/// the system refuses sends the started ones home and is the error.
fn spawn_nodes<'scope, 'env, R, E, F>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    builders: Vec<Box<dyn Builder>>,
    host: bool,
    f: &'env F,
    order: &'env AtomicUsize,
    tr: &'env Option<std::sync::Arc<trace::JobTrace>>,
    gate: &'env Gate,
) -> Result<Vec<std::thread::ScopedJoinHandle<'scope, Option<Ended<R>>>>>
where
    R: Send + 'scope,
    E: Into<BoxError>,
    F: Fn(&Comm) -> std::result::Result<R, E> + Sync,
{
    let n = builders.len();
    let mut handles = Vec::with_capacity(n);
    for (i, b) in builders.into_iter().enumerate() {
        let t = std::thread::Builder::new()
            .name(format!("hypercomm-rank-{i}"))
            .spawn_scoped(s, move || {
                gate.pass().then(|| run_rank(b, host, order, tr, f))
            });
        match t {
            Ok(h) => handles.push(h),
            Err(e) => return Err(gate.refuse(&format!("rank {i}"), n, e)),
        }
    }
    Ok(handles)
}

/// Where a job's threads wait until all of them have been started: when
/// the system refuses one more thread (its limit on threads or memory),
/// the ones already started return without running, and the job ends
/// with an error naming the rank, instead of waiting for ever for ranks
/// that never ran.
#[derive(Default)]
struct Gate {
    open: std::sync::Mutex<Option<bool>>,
    cv: std::sync::Condvar,
}

impl Gate {
    /// Wait until the gate opens (true) or is refused (false).
    fn pass(&self) -> bool {
        let mut g = self.open.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(go) = *g {
                return go;
            }
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn set(&self, go: bool) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = Some(go);
        self.cv.notify_all();
    }

    /// Every thread was started: let them run.
    fn open(&self) {
        self.set(true);
    }

    /// The thread of `who` (of a job of `n` nodes) could not be started:
    /// send the others home, and say so.
    fn refuse(&self, who: &str, n: usize, e: std::io::Error) -> Error {
        self.set(false);
        Error::other_io(
            "run",
            format!(
                "could not start the thread of {who} of {n} nodes ({e}): this process may start no more threads; run fewer ranks, or run them as processes (hypercomm run -n {n})"
            ),
        )
    }
}

fn join<R>(h: std::thread::ScopedJoinHandle<'_, Option<Ended<R>>>) -> Ended<R> {
    h.join()
        .map(|e| e.expect("the gate opened"))
        .unwrap_or_else(|p| Ended {
            outcome: Outcome::Failed {
                message: panic_message(&*p),
                source: None,
                primary: true,
                seq: usize::MAX,
            },
            fault: None,
        })
}

fn finish<R, H>(nodes: Vec<Ended<R>>, host: Option<Ended<H>>) -> Result<(Vec<R>, Option<H>)> {
    let n = nodes.len();
    let mut view: Vec<(Rank, &Ended<R>)> = Vec::new();
    for (i, o) in nodes.iter().enumerate() {
        view.push((Rank::Node(i), o));
    }
    // The host's outcome participates with the same rules.
    let host_view = host.as_ref().map(|h| Ended::<R> {
        outcome: match &h.outcome {
            Outcome::Ok(_) => Outcome::Failed {
                message: String::new(),
                source: None,
                primary: false,
                seq: usize::MAX,
            },
            Outcome::Failed {
                message,
                source,
                primary,
                seq,
            } => Outcome::Failed {
                message: message.clone(),
                source: source.clone(),
                primary: *primary,
                seq: *seq,
            },
        },
        fault: h.fault.clone(),
    });
    if let (Some(h), Some(hv)) = (&host, &host_view) {
        if matches!(h.outcome, Outcome::Failed { .. }) || hv.fault.is_some() {
            view.push((Rank::Host, hv));
        }
    }
    if let Some(e) = verdict(n, &view) {
        return Err(e);
    }
    let v = nodes
        .into_iter()
        .map(|o| match o.outcome {
            Outcome::Ok(v) => v,
            Outcome::Failed { .. } => unreachable!("no failures"),
        })
        .collect();
    let h = host.map(|o| match o.outcome {
        Outcome::Ok(v) => v,
        Outcome::Failed { .. } => unreachable!("no failures"),
    });
    Ok((v, h))
}

/// Run `n` nodes and a host ([`Rank::Host`]) as threads. The host runs
/// `host_fn`, the nodes `node_fn`; returns the host's result and the nodes'
/// results in rank order.
///
/// **Started by a launcher**, as [`run`] does: the job must have `n` nodes
/// and a host — `hypercomm run -n 4 --host ./prog -- ./prog`, or under
/// `mpirun -n 5` / `srun -n 5`, which start no host of their own, the last
/// rank is the host — and the host's process returns the results.
pub fn run_with_host<H, R, EH, EN, FH, FN>(
    n: usize,
    host_fn: FH,
    node_fn: FN,
) -> Result<(H, Vec<R>)>
where
    H: Send + Serialize + DeserializeOwned,
    R: Send + Serialize + DeserializeOwned,
    EH: Into<BoxError>,
    EN: Into<BoxError>,
    FH: FnOnce(&Comm) -> std::result::Result<H, EH> + Send,
    FN: Fn(&Comm) -> std::result::Result<R, EN> + Sync,
{
    if n == 0 {
        return Err(no_nodes("run_with_host"));
    }
    if crate::launch::is_launched() {
        // The closure runs once, on one of the two kinds of rank.
        let host_fn = std::cell::Cell::new(Some(host_fn));
        let (h, nodes) = run_launched::<H, R>("run_with_host", n, true, &|c: &Comm| {
            if c.is_host() {
                let f = host_fn.take().ok_or("the host ran twice")?;
                f(c).map(Either::Host).map_err(Into::into)
            } else {
                node_fn(c).map(Either::Node).map_err(Into::into)
            }
        })?;
        let h = h.ok_or_else(|| Error::Protocol("the host delivered no result".into()))?;
        return Ok((h, nodes));
    }
    run_with_host_on(TransportKind::Thread, n, host_fn, node_fn)
}

/// [`run_with_host`] over another transport whose ranks can be threads of
/// this process (see [`run_on`]).
pub fn run_with_host_on<H, R, EH, EN, FH, FN>(
    kind: TransportKind,
    n: usize,
    host_fn: FH,
    node_fn: FN,
) -> Result<(H, Vec<R>)>
where
    H: Send,
    R: Send,
    EH: Into<BoxError>,
    EN: Into<BoxError>,
    FH: FnOnce(&Comm) -> std::result::Result<H, EH> + Send,
    FN: Fn(&Comm) -> std::result::Result<R, EN> + Sync,
{
    if n == 0 {
        return Err(no_nodes("run_with_host"));
    }
    let builders = match simulated(kind)? {
        // The simulated machine's default size counts the nodes, not the
        // host.
        TransportKind::Sim => crate::transport::sim::setup::with_host(n),
        kind => kind.thread_builders(n + 1)?,
    };
    run_builders_with_host(builders, host_fn, node_fn)
}

/// [`run_with_host`] with one builder per endpoint: the nodes' first, the
/// host's last (so `builders.len() - 1` nodes).
pub fn run_builders_with_host<H, R, EH, EN, FH, FN>(
    mut builders: Vec<Box<dyn Builder>>,
    host_fn: FH,
    node_fn: FN,
) -> Result<(H, Vec<R>)>
where
    H: Send,
    R: Send,
    EH: Into<BoxError>,
    EN: Into<BoxError>,
    FH: FnOnce(&Comm) -> std::result::Result<H, EH> + Send,
    FN: Fn(&Comm) -> std::result::Result<R, EN> + Sync,
{
    if builders.len() < 2 {
        return Err(no_nodes("run_with_host"));
    }
    let n = builders.len() - 1;
    env_settings()?;
    let tr = trace_begin(&builders, n, true)?;
    let host_builder = builders.pop().expect("n + 1 builders");
    let order = AtomicUsize::new(0);
    let gate = Gate::default();
    let ended = std::thread::scope(|s| {
        let (orderr, trr, gater) = (&order, &tr, &gate);
        let hh = std::thread::Builder::new()
            .name("hypercomm-host".into())
            .spawn_scoped(s, move || {
                gater
                    .pass()
                    .then(|| run_rank(host_builder, true, orderr, trr, host_fn))
            })
            .map_err(|e| gate.refuse("the host", n, e))?;
        let handles = spawn_nodes(s, builders, true, &node_fn, &order, &tr, &gate)?;
        gate.open();
        let nodes: Vec<Ended<R>> = handles.into_iter().map(join).collect();
        Ok((nodes, join(hh)))
    });
    let r = ended.and_then(|(nodes, host)| finish(nodes, Some(host)));
    trace::job_end(tr)?;
    let (v, h) = r?;
    Ok((h.expect("host outcome"), v))
}
