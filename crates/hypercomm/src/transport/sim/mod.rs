//! The simulator transport: every endpoint is a thread of this process, and
//! time is virtual — a simulated machine's (seed 001's model: a hypercube,
//! ring, 2-D mesh or fully connected network with store-and-forward or
//! cut-through routing, ts, tw, th, one port or all, link contention;
//! `hypercomm_algo::sim`).
//!
//! A frame sent at virtual time t arrives when the model says (its
//! sender's start-up, the links on its route, its receiver's port), and
//! the sender is busy until its port is free again. Ranks take turns: only
//! one runs at a time, the one whose virtual time comes next, so every
//! rank sees exactly the frames that arrived by its own virtual time, the
//! run is deterministic, and contention is resolved in time order
//! (`world.rs`). A rank that waits for a message gets it without sleeping:
//! waiting hands the turn on, and the arrival hands it back (waits block at
//! once, [`Transport::polls`]). A rank that polls without waiting (`iprobe`
//! or `test` in a loop) lets virtual time move on to the next event every
//! [`POLLS_PER_STEP`] empty polls. Computation between calls costs nothing
//! unless the program declares it ([`compute`]) or the configuration
//! measures it ([`Compute::Cpu`]). A job whose every rank waits with
//! nothing on the way is a deadlock: the job is aborted with what each
//! rank waited for.
//!
//! Message semantics are the thread transport's (FIFO per pair, whole
//! frames; a borrowed payload is copied when sent). The job's trace clock
//! is the virtual clock ([`crate::transport::Builder::clock`]).
//!
//! Files: `mod.rs` (the endpoint), `world.rs` (the virtual clock: events,
//! network state, turns), `config.rs` (the machine, `HYPERCOMM_SIM`),
//! `liveness.rs` (peer states, abort, what each rank waits for),
//! `setup.rs` (builders for a job of threads).
//!
//! Not done yet: ranks as processes (the turn is shared memory of one
//! process); real-time timeouts (`HYPERCOMM_TIMEOUT`) count real time, not
//! virtual; receiver-side flow control.

mod config;
mod liveness;
pub(crate) mod setup;
mod world;

pub use config::{Compute, Config, ENV, REPORT_ENV};
pub use liveness::Summary;
pub use setup::SimBuilder;
pub use world::Job;

use super::{Fault, Frame, Link, PeerState, Transport, TransportKind};
use crate::error::Result;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use world::lock;

/// Empty polls (`try_recv` with nothing there, no send or wait between)
/// after which a polling rank lets virtual time move on.
pub const POLLS_PER_STEP: u32 = 64;

/// This thread's rank of a simulated job.
struct Local {
    job: Arc<Job>,
    me: usize,
    polls: Cell<u32>,
    /// The thread's CPU time when it last got its turn (CPU mode).
    cpu_mark: Cell<Option<Duration>>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Local>>> = const { RefCell::new(None) };
}

/// CPU time of the calling thread (what a rank's compute costs).
#[cfg(unix)]
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a
    // constant every unix of the libc crate defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Elsewhere, the time since the thread first asked: ranks of a simulated
/// job take turns, so while one computes no other runs.
#[cfg(not(unix))]
fn thread_cpu() -> Duration {
    thread_local! {
        static START: std::time::Instant = std::time::Instant::now();
    }
    START.with(|s| s.elapsed())
}

impl Local {
    fn holder(&self) -> bool {
        self.job.is_turn(self.me)
    }

    /// Start measuring computation afresh (after a turn came back).
    fn mark(&self) {
        if matches!(self.job.config.compute, Compute::Cpu(_)) {
            self.cpu_mark.set(Some(thread_cpu()));
        }
    }

    /// Charge the computation since the last mark (CPU mode).
    fn account(&self) {
        if let Compute::Cpu(f) = self.job.config.compute {
            let now = thread_cpu();
            if let Some(last) = self.cpu_mark.replace(Some(now)) {
                let d = now.saturating_sub(last).as_secs_f64() * f;
                if d > 0.0 {
                    self.advance(d);
                }
            }
        }
    }

    /// Spend `d` seconds of virtual time computing.
    fn advance(&self, d: f64) {
        if !(self.holder() && d.is_finite() && d > 0.0) {
            return;
        }
        let mut w = lock(&self.job.world);
        let t = w.queue.now() + d;
        w.resume(self.me, t);
        self.job.pass(self.me, w, false);
        self.mark();
    }
}

/// Spend `d` of virtual time computing, when this thread is a rank of a
/// simulated job (its virtual clock moves on by `d` and the other ranks
/// run meanwhile); otherwise nothing. Returns whether it was.
pub fn compute(d: Duration) -> bool {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(l) => {
            l.advance(d.as_secs_f64());
            true
        }
        None => false,
    })
}

/// The virtual time in seconds, when this thread is a rank of a simulated
/// job.
pub fn now() -> Option<f64> {
    CURRENT.with(|c| c.borrow().as_ref().map(|l| lock(&l.job.world).queue.now()))
}

/// One rank's endpoint.
pub struct SimEndpoint {
    local: Rc<Local>,
}

impl SimEndpoint {
    fn new(job: Arc<Job>, me: usize) -> SimEndpoint {
        let local = Rc::new(Local {
            job,
            me,
            polls: Cell::new(0),
            cpu_mark: Cell::new(None),
        });
        local.mark();
        CURRENT.with(|c| *c.borrow_mut() = Some(local.clone()));
        SimEndpoint { local }
    }

    fn job(&self) -> &Job {
        &self.local.job
    }
}

impl Transport for SimEndpoint {
    fn endpoint(&self) -> usize {
        self.local.me
    }

    fn endpoints(&self) -> usize {
        // The job's endpoints, not the machine's: a machine may have more
        // nodes than the job has ranks (the rest stay idle).
        self.job().visible.alive.len()
    }

    fn send(&self, frame: Frame) -> Result<()> {
        let l = &self.local;
        l.account();
        l.polls.set(0);
        let Frame { header, payload } = frame;
        let Some(payload) = payload.detach() else {
            // The sender withdrew the buffer: nothing to send.
            return Ok(());
        };
        let words = payload.len() as f64 / self.job().config.word_bytes;
        let holder = l.holder();
        let mut w = lock(&self.job().world);
        if w.send(l.me, Frame { header, payload }, words, holder) {
            self.job().pass(l.me, w, false);
            l.mark();
        }
        Ok(())
    }

    fn try_recv(&self) -> Option<Frame> {
        let l = &self.local;
        if !l.holder() {
            return None;
        }
        l.account();
        let mut w = lock(&self.job().world);
        if let Some(f) = w.ranks[l.me].inbox.pop_front() {
            l.polls.set(0);
            return Some(f);
        }
        let n = l.polls.get() + 1;
        if n < POLLS_PER_STEP {
            l.polls.set(n);
            return None;
        }
        // Polling: let virtual time move on to whatever happens next.
        l.polls.set(0);
        if !w.poll_later(l.me) {
            return None;
        }
        self.job().pass(l.me, w, false);
        l.mark();
        lock(&self.job().world).ranks[l.me].inbox.pop_front()
    }

    fn wait(&self, deadline: Option<Instant>) {
        let l = &self.local;
        if !l.holder() {
            // Not a running rank (it left the job): nothing will come.
            let d = Duration::from_millis(20);
            let d = deadline.map_or(d, |dl| d.min(dl.saturating_duration_since(Instant::now())));
            std::thread::sleep(d);
            return;
        }
        l.account();
        l.polls.set(0);
        let mut w = lock(&self.job().world);
        if !w.ranks[l.me].inbox.is_empty() || w.aborted.is_some() {
            return;
        }
        w.ranks[l.me].waiting = true;
        self.job().pass(l.me, w, false);
        l.mark();
    }

    fn peer_state(&self, endpoint: usize) -> PeerState {
        self.job().peer_state(endpoint)
    }

    fn fault(&self) -> Option<Fault> {
        lock(&self.job().world)
            .aborted
            .clone()
            .map(|(endpoint, message)| Fault::Aborted { endpoint, message })
    }

    fn abort(&self, message: &str) {
        self.job().abort(self.local.me, message);
    }

    fn close(&self, outcome: std::result::Result<(), String>) {
        let l = &self.local;
        CURRENT.with(|c| *c.borrow_mut() = None);
        self.job().close(l.me, outcome, l.holder());
    }

    fn link(&self) -> Link {
        let c = &self.job().config;
        // Every simulated node is a processor of its own: as many cores as
        // ranks, never oversubscribed.
        let n = self.endpoints();
        Link {
            kind: Some(TransportKind::Sim),
            ts: c.costs.ts,
            tw: c.costs.tw / c.word_bytes,
            shared_memory: false,
            ranks_per_node: n,
            cores_per_node: n,
        }
    }

    fn set_waiting(&self, what: Option<&str>) {
        lock(&self.job().world).ranks[self.local.me].waiting_for = what.map(str::to_owned);
    }

    fn describe_waits(&self) -> String {
        self.job().describe_waits(self.local.me)
    }

    fn polls(&self) -> bool {
        false
    }
}
