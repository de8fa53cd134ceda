//! Helpers shared by the integration suites: how a job is started (the
//! [`Launcher`] a transport provides), a watchdog so that a hang fails a test
//! instead of blocking CI, a per-operation timeout on every communicator,
//! and a few small utilities (a test barrier, polling with a deadline).
//!
//! Each suite includes this module with `mod common;`; not every suite uses
//! every helper, hence the `dead_code` allowance.
#![allow(dead_code)]

pub(crate) mod browser;
pub(crate) mod collectives;
pub(crate) mod conformance;
pub(crate) mod grids;
pub(crate) mod procs;
pub(crate) mod service;
pub(crate) mod slurm;

#[allow(unused_imports)]
pub(crate) use procs::{Processes, World};

use hypercomm::{BoxError, Comm, Rank};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Every blocking operation made through a communicator handed out by
/// [`launch`] / [`launch_with_host`] fails with `Error::Timeout` after this.
pub(crate) const OP_TIMEOUT: Duration = Duration::from_secs(30);

/// A test body that has not finished after this long fails.
pub(crate) const WATCHDOG: Duration = Duration::from_secs(60);

/// How a transport starts a job. The thread transport implements it with
/// `hypercomm::run`; later transports (shared memory, TCP, launched
/// processes) implement it their way and instantiate the same conformance
/// suite, so that every transport runs under the same test names.
///
/// Results cross process boundaries for launchers that start processes,
/// hence the serde bounds.
pub(crate) trait Launcher {
    /// Whether the ranks' time is real time. A simulated machine's is
    /// virtual: sleeping and timeouts there mean nothing to the other
    /// ranks, so the tests of real-time behaviour (a receiver that sleeps
    /// while a sender runs ahead, a timeout's report) do not apply.
    const REAL_TIME: bool = true;

    /// Whether the ranks talk through a foreign library (MPI) rather than
    /// one of our own transports. The library buffers and progresses
    /// messages itself: the flow-control bound is tested on our transports
    /// only (not done over MPI yet).
    const LIBRARY_TRANSPORT: bool = false;

    /// Whether the ranks are threads of this test process (they share
    /// memory: the grid layer's exchange copies between their arrays).
    const THREADS: bool = false;

    /// Whether check mode is left as the library sets it (on). [`Unchecked`]
    /// runs the same bodies with it off.
    const CHECK: bool = true;

    /// Run one conformance test body (named `name`). Threads: under the
    /// [`watchdog`]. Process launchers start a job whose processes run it.
    fn test(name: &'static str, body: fn()) {
        watchdog(name, body)
    }

    /// Start `n` nodes running `f`; their results in rank order.
    fn run<R, E, F>(n: usize, f: F) -> hypercomm::Result<Vec<R>>
    where
        R: Send + Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: Fn(&Comm) -> Result<R, E> + Sync;

    /// Start `n` nodes running `node_fn` and a host running `host_fn`.
    fn run_with_host<H, R, EH, EN, FH, FN>(
        n: usize,
        host_fn: FH,
        node_fn: FN,
    ) -> hypercomm::Result<(H, Vec<R>)>
    where
        H: Send + Serialize + DeserializeOwned,
        R: Send + Serialize + DeserializeOwned,
        EH: Into<BoxError>,
        EN: Into<BoxError>,
        FH: FnOnce(&Comm) -> Result<H, EH> + Send,
        FN: Fn(&Comm) -> Result<R, EN> + Sync;
}

/// The thread transport: ranks are threads of this process.
pub(crate) struct Threads;

impl Launcher for Threads {
    const THREADS: bool = true;

    fn run<R, E, F>(n: usize, f: F) -> hypercomm::Result<Vec<R>>
    where
        R: Send + Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: Fn(&Comm) -> Result<R, E> + Sync,
    {
        hypercomm::run(n, f)
    }

    fn run_with_host<H, R, EH, EN, FH, FN>(
        n: usize,
        host_fn: FH,
        node_fn: FN,
    ) -> hypercomm::Result<(H, Vec<R>)>
    where
        H: Send + Serialize + DeserializeOwned,
        R: Send + Serialize + DeserializeOwned,
        EH: Into<BoxError>,
        EN: Into<BoxError>,
        FH: FnOnce(&Comm) -> Result<H, EH> + Send,
        FN: Fn(&Comm) -> Result<R, EN> + Sync,
    {
        hypercomm::run_with_host(n, host_fn, node_fn)
    }
}

/// Launcher `L` with check mode off: blocking collectives then take their
/// direct path (no signature exchange, no task), which the default leaves
/// untested. Its tests live in a module `unchecked` inside `L`'s (a
/// process launcher's copies find a body by its path).
pub(crate) struct Unchecked<L>(std::marker::PhantomData<L>);

impl<L: Launcher> Launcher for Unchecked<L> {
    const REAL_TIME: bool = L::REAL_TIME;
    const LIBRARY_TRANSPORT: bool = L::LIBRARY_TRANSPORT;
    const THREADS: bool = L::THREADS;
    const CHECK: bool = false;

    fn test(name: &'static str, body: fn()) {
        L::test(
            Box::leak(format!("unchecked::{name}").into_boxed_str()),
            body,
        )
    }

    fn run<R, E, F>(n: usize, f: F) -> hypercomm::Result<Vec<R>>
    where
        R: Send + Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: Fn(&Comm) -> Result<R, E> + Sync,
    {
        L::run(n, f)
    }

    fn run_with_host<H, R, EH, EN, FH, FN>(
        n: usize,
        host_fn: FH,
        node_fn: FN,
    ) -> hypercomm::Result<(H, Vec<R>)>
    where
        H: Send + Serialize + DeserializeOwned,
        R: Send + Serialize + DeserializeOwned,
        EH: Into<BoxError>,
        EN: Into<BoxError>,
        FH: FnOnce(&Comm) -> Result<H, EH> + Send,
        FN: Fn(&Comm) -> Result<R, EN> + Sync,
    {
        L::run_with_host(n, host_fn, node_fn)
    }
}

/// Run a job through `L` with [`OP_TIMEOUT`] on every blocking operation.
pub(crate) fn launch<L, R, F>(n: usize, f: F) -> hypercomm::Result<Vec<R>>
where
    L: Launcher,
    R: Send + Serialize + DeserializeOwned,
    F: Fn(&Comm) -> hypercomm::Result<R> + Sync,
{
    L::run(n, |c: &Comm| f(&prepared::<L>(c)))
}

/// The communicator a test body gets: [`OP_TIMEOUT`] on every blocking
/// operation, and check mode off for an [`Unchecked`] launcher.
fn prepared<L: Launcher>(c: &Comm) -> Comm {
    let c = c.with_timeout(Some(OP_TIMEOUT));
    if !L::CHECK {
        c.set_check(false);
    }
    c
}

/// [`launch`] with a host.
pub(crate) fn launch_with_host<L, H, R, FH, FN>(
    n: usize,
    host_fn: FH,
    node_fn: FN,
) -> hypercomm::Result<(H, Vec<R>)>
where
    L: Launcher,
    H: Send + Serialize + DeserializeOwned,
    R: Send + Serialize + DeserializeOwned,
    FH: FnOnce(&Comm) -> hypercomm::Result<H> + Send,
    FN: Fn(&Comm) -> hypercomm::Result<R> + Sync,
{
    L::run_with_host(
        n,
        |c: &Comm| host_fn(&prepared::<L>(c)),
        |c: &Comm| node_fn(&prepared::<L>(c)),
    )
}

/// Run `body` on its own thread and fail if it does not finish within
/// `limit`. A panic in the body is re-raised here, so assertion messages
/// reach the test harness unchanged.
pub(crate) fn watchdog_for(limit: Duration, name: &str, body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name(format!("test-body-{name}"))
        .spawn(move || {
            body();
            let _ = tx.send(());
        })
        .expect("spawning the test body");
    match rx.recv_timeout(limit) {
        // Finished, or panicked (the sender was dropped during unwinding).
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = handle.join() {
                std::panic::resume_unwind(p);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("test {name} did not finish within {limit:?}: a hang")
        }
    }
}

/// [`watchdog_for`] with the default limit [`WATCHDOG`].
pub(crate) fn watchdog(name: &str, body: impl FnOnce() + Send + 'static) {
    watchdog_for(WATCHDOG, name, body)
}

/// A simple barrier over all members of `comm` (nodes and host) built from
/// point-to-point messages with specific sources and a reserved tag; the
/// suites call it on a `dup` of the communicator under test so that it
/// cannot interfere with wildcard receives.
pub(crate) fn barrier(comm: &Comm) -> hypercomm::Result<()> {
    const TAG: u32 = 0xB00B;
    let mut members: Vec<Rank> = (0..comm.size()).map(Rank::Node).collect();
    if comm.has_host() {
        members.push(Rank::Host);
    }
    let root = members[0];
    if comm.me() == root {
        for &m in &members[1..] {
            comm.recv_into::<u8>(&mut [], m, TAG)?;
        }
        for &m in &members[1..] {
            comm.send::<u8>(&[], m, TAG)?;
        }
    } else {
        comm.send::<u8>(&[], root, TAG)?;
        comm.recv_into::<u8>(&mut [], root, TAG)?;
    }
    Ok(())
}

/// A property-test runner of `cases` cases that writes no regression
/// files (the suites' runs are all in-process jobs, cheap to repeat).
#[allow(dead_code)]
pub(crate) fn runner(cases: u32) -> proptest::test_runner::TestRunner {
    use proptest::test_runner::{Config, TestRunner};
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Poll `cond` until it holds; panics after `limit` with `what`.
pub(crate) fn poll_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !cond() {
        assert!(
            Instant::now() < end,
            "gave up after {limit:?} waiting for {what}"
        );
        std::thread::yield_now();
    }
}

/// A deterministic byte pattern for message `k` (so that a misdelivered or
/// reordered message is detected by content as well as by length).
pub(crate) fn pattern(k: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ k.wrapping_mul(131) ^ (i >> 8)) as u8)
        .collect()
}
