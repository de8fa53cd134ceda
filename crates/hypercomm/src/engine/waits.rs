//! The one wait loop of the engine: drain, advance tasks, poll; check
//! abort, peer failure and the deadline; spin, then yield, then block in the
//! transport (at once when the transport says polling cannot help,
//! [`crate::transport::Transport::polls`]).

use super::{Engine, Group};
use crate::error::{Error, Result};
use crate::trace::recorder::{self, Event};
use crate::transport::cores;
use crate::transport::{Fault, PeerState, Transport};
use crate::wire::Kind;
use std::time::{Duration, Instant};

/// What the current pass of a wait loop asks of [`Engine::test_step`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    /// Not inside a wait: test fully (progress, completion, failures).
    Outside,
    /// A spinning pass: the loop has just drained the transport and checks
    /// failures itself on its check passes, so only look at completion.
    Quiet,
    /// A check pass: completion and, if pending, abort and peer failure.
    Check,
}

/// While spinning, a wait checks abort, peer failures and its deadline on
/// every this many passes (every [`YIELD_CHECK_EVERY`] while yielding, and
/// every pass once blocking): the checks read the clock and the peers'
/// states, which costs more than a pass.
pub(super) const CHECK_EVERY: u32 = 32;

/// While yielding, a wait checks on every this many passes.
pub(super) const YIELD_CHECK_EVERY: u32 = 4;

/// How long a wait spins before yielding (then it yields for
/// [`YIELD_FOR`] before blocking). With no more ranks than cores a waiting rank's partner is running, so
/// polling pays off for a while (about 50–100 µs); with more ranks than
/// cores the partner may need this core, so yield almost at once.
pub(super) const SPINS_DEDICATED: u32 = 2000;
pub(super) const SPINS_OVERSUBSCRIBED: u32 = 20;

/// How long a wait keeps yielding before it blocks in the transport
/// (`HYPERCOMM_YIELD_US` overrides, in microseconds). A yielding rank gives
/// its core to the ranks that have work and sees their messages within
/// microseconds; a blocked one needs a wake-up call and a trip through the
/// scheduler (tens of microseconds), which would be paid on every message
/// when ranks outnumber cores.
pub(super) const YIELD_FOR: Duration = Duration::from_micros(500);

pub(super) fn yield_for() -> Duration {
    static D: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    // A bad value was reported when the rank started (`env_yield`).
    *D.get_or_init(|| env_yield().unwrap_or(YIELD_FOR))
}

/// `HYPERCOMM_YIELD_US` (microseconds), or [`YIELD_FOR`] when it is unset
/// or empty; an error naming a value that is not a whole number.
pub(super) fn env_yield() -> Result<Duration> {
    match std::env::var("HYPERCOMM_YIELD_US") {
        Err(_) => Ok(YIELD_FOR),
        Ok(s) if s.trim().is_empty() => Ok(YIELD_FOR),
        Ok(s) => s
            .trim()
            .parse::<u64>()
            .map(Duration::from_micros)
            .map_err(|_| Error::InvalidArgument {
                op: "HYPERCOMM_YIELD_US",
                what: format!("{s:?} is not a whole number of microseconds"),
            }),
    }
}

/// Poll iterations before yielding, for a job of `endpoints` ranks.
pub(super) fn spin_budget(endpoints: usize) -> u32 {
    if endpoints <= cores() {
        SPINS_DEDICATED
    } else {
        SPINS_OVERSUBSCRIBED
    }
}

impl Engine {
    // ------------------------------------------------------------- failures

    /// Fail if the job was aborted. Also used by the non-blocking calls
    /// (`iprobe`, `Request::test`) so that a polling loop ends after an abort.
    #[inline(always)]
    pub(crate) fn check_abort(&self, g: &Group) -> Result<()> {
        if !self.t.faulted() && self.st.borrow().abort.is_none() {
            return Ok(());
        }
        self.check_abort_slow(g)
    }

    /// [`Engine::check_abort`] once something may be wrong.
    #[cold]
    #[inline(never)]
    fn check_abort_slow(&self, g: &Group) -> Result<()> {
        match self.t.fault() {
            Some(Fault::Protocol(msg)) => return Err(Error::Protocol(msg)),
            Some(Fault::Aborted { endpoint, message }) => {
                return Err(Error::Aborted {
                    rank: g.rank(endpoint as u32),
                    message,
                })
            }
            None => {}
        }
        let st = self.st.borrow();
        if let Some((ep, msg)) = &st.abort {
            return Err(Error::Aborted {
                rank: g.rank(*ep),
                message: msg.clone(),
            });
        }
        Ok(())
    }

    /// Is the endpoint (or, for `None`, any member needed by a wildcard)
    /// gone? Its endpoint number.
    pub(super) fn dead_peer(&self, g: &Group, peer: Option<u32>) -> Option<u32> {
        match peer {
            Some(p) if p == self.me => None,
            Some(p) => match self.t.peer_state(p as usize) {
                PeerState::Alive => None,
                _ => Some(p),
            },
            None => {
                // A wildcard fails when any other member failed, or when every
                // other member has finished (nobody can still send).
                let (mut finished, mut alive) = (None, false);
                for m in g.members().filter(|&m| m != self.me) {
                    match self.t.peer_state(m as usize) {
                        PeerState::Failed(_) => return Some(m),
                        PeerState::Finished => {
                            finished.get_or_insert(m);
                        }
                        PeerState::Alive => alive = true,
                    }
                }
                if alive {
                    None
                } else {
                    finished
                }
            }
        }
    }

    /// The endpoint to blame for `ep` being gone: follow what the gone
    /// endpoints reported as the cause of their own end, to the first.
    fn root_cause(&self, ep: u32) -> u32 {
        let st = self.st.borrow();
        let mut cur = ep;
        for _ in 0..st.blamed.len() {
            match st.blamed.get(cur as usize).copied().flatten() {
                Some(next) if next != cur && next != self.me => cur = next,
                _ => break,
            }
        }
        cur
    }

    /// The error for an operation of `g` that needs endpoint `ep`, which is
    /// gone: `PeerFailed` naming the root cause (when it is a member of
    /// `g`; otherwise `ep`). The first time a root cause is reported, every
    /// other endpoint is told (so that whoever sees this endpoint end
    /// because of it names the root cause too), and so is `on_cause`.
    pub(super) fn peer_failed(&self, g: &Group, ep: u32) -> Error {
        let root = self.root_cause(ep);
        let named = if g.rank_of.get(root as usize).copied().flatten().is_some() {
            root
        } else {
            ep
        };
        let first = {
            let mut st = self.st.borrow_mut();
            match st.announced.get_mut(root as usize) {
                Some(a) if !*a => {
                    *a = true;
                    true
                }
                _ => false,
            }
        };
        if first {
            if let Some(f) = self.on_cause.borrow().as_ref() {
                f(root);
            }
            let n = self.t.endpoints() as u32;
            for j in (0..n).filter(|&j| j != self.me && j != root) {
                self.control(j, Kind::Gone, u64::from(root), Vec::new());
            }
        }
        Error::PeerFailed {
            rank: g.rank(named),
        }
    }

    /// How many passes a wait spins before it yields the core (few when
    /// the job's ranks outnumber the cores).
    pub(crate) fn spins(&self) -> u32 {
        self.spins
    }

    /// Whether the running wait loop blocks in the transport after this
    /// pass (for a `poll` that must ask to be woken: one whose condition
    /// does not come as a frame, like the board's).
    pub(crate) fn about_to_block(&self) -> bool {
        self.armed.get()
    }

    /// The shared wait loop. `poll` is tried after each drain of the
    /// transport; `peer` is what the wait depends on.
    pub(crate) fn wait_loop<R>(
        &self,
        g: &Group,
        peer: Option<u32>,
        timeout: Option<Duration>,
        op: &str,
        what: &dyn Fn() -> String,
        mut poll: impl FnMut(&Self) -> Option<Result<R>>,
    ) -> Result<R> {
        // The clock is read only when a wait did not end at once (most end
        // within a few passes): `start` is taken on the first check pass
        // after the first, microseconds late at most.
        let mut start: Option<Instant> = None;
        let mut deadline: Option<Instant> = None;
        let mut yield_until: Option<Instant> = None;
        let mut spins = 0u32;
        let mut published = false;
        let outer = self.pass.get();
        let outer_armed = self.armed.replace(false);
        let out = loop {
            // Spinning: every CHECK_EVERY passes; yielding: every
            // YIELD_CHECK_EVERY (a collective's wait looks at every member);
            // blocking: every pass.
            // The first check comes after CHECK_EVERY passes, not on the
            // first: most waits end within a few passes (a ping-pong's
            // receive), and the checks cost about as much as the message.
            let check = (spins + 1).is_multiple_of(CHECK_EVERY)
                || (spins >= self.spins && spins.is_multiple_of(YIELD_CHECK_EVERY))
                || published;
            self.pass.set(if check { Pass::Check } else { Pass::Quiet });
            self.progress();
            self.advance_tasks();
            if let Some(r) = poll(self) {
                break r;
            }
            if check {
                if let Err(e) = self.check_abort(g) {
                    break Err(e);
                }
                if published {
                    // Blocked with every other endpoint of the job? (Before the
                    // peers' states: a rank told first may already have
                    // ended because of it.) Not while this wait lets a
                    // sender it holds messages of go on past its credit.
                    if self.lift_bound(peer) {
                        // The sender has credit on its way: not a deadlock.
                    } else if let Some(waits) = self.t.deadlock() {
                        break Err(Error::Deadlock {
                            rank: g.rank(self.me),
                            op: op.to_string(),
                            waiting_for: what(),
                            waits,
                        });
                    }
                }
                if let Some(ep) = self.dead_peer(g, peer) {
                    // Frames may have arrived before the peer finished (its
                    // report of a root cause among them): look once more.
                    self.progress();
                    if let Some(r) = poll(self) {
                        break r;
                    }
                    // The peer may have failed *because* of an abort that came
                    // after our check above: then report the abort.
                    if let Err(e) = self.check_abort(g) {
                        break Err(e);
                    }
                    break Err(self.peer_failed(g, ep));
                }
                if spins > 0 {
                    if let Some(t) = timeout {
                        let now = Instant::now();
                        let begun = *start.get_or_insert(now);
                        // A timeout beyond the clock's range never ends.
                        let dl = begun.checked_add(t);
                        deadline = dl;
                        if dl.is_some_and(|dl| now >= dl) {
                            break Err(Error::Timeout {
                                rank: g.rank(self.me),
                                op: op.to_string(),
                                waiting_for: what(),
                                after: now - begun,
                                others: self.t.describe_waits(),
                            });
                        }
                    }
                }
            }
            if spins == 0 {
                recorder::hook(Event::Blocked);
            }
            spins += 1;
            let yielding = self.polls && spins >= self.spins && {
                let now = Instant::now();
                now < *yield_until.get_or_insert_with(|| now + yield_for())
            };
            if spins < self.spins {
                std::hint::spin_loop();
            } else if yielding {
                std::thread::yield_now();
            } else {
                if !published {
                    // About to block: give back the credit this rank owes,
                    // so that no sender waits for it while this rank waits
                    // for that sender.
                    self.grant_owed();
                    let w = format!("{} is in {op}, waiting for {}", g.rank(self.me), what());
                    self.t.set_waiting(Some(&w));
                    published = true;
                    // One more pass before blocking, in which `poll` sees
                    // `about_to_block` (a board wait raises its flag then,
                    // and looks once more).
                    self.armed.set(true);
                    continue;
                }
                self.t.wait(deadline);
            }
        };
        self.pass.set(outer);
        self.armed.set(outer_armed);
        if published {
            self.t.set_waiting(None);
        }
        out
    }
}
