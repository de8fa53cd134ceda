//! The point-to-point engine of one endpoint: matching, requests, progress,
//! waits.
//!
//! Design:
//! * Incoming data frames are matched against posted receives (`irecv`) in
//!   post order, else queued as *unexpected* in arrival order. A blocking
//!   receive takes a matching unexpected message if there is one, else it
//!   posts itself (no request: one place in the posted list) and waits.
//!   Probes look only at the unexpected queue (after draining the
//!   transport). Per-pair FIFO of the transport plus in-order queues give
//!   MPI's non-overtaking rule.
//! * The eager fast path: the transport offers every data frame whose
//!   bytes are at hand (a ring slot, an inline payload) to the posted
//!   receives before it builds a frame
//!   ([`Transport::try_recv_offer`]);
//!   a match is copied straight into the receiver's buffer. A blocking
//!   receive with nothing else posted first polls its source's channel
//!   alone, or the channels in turn ([`Transport::take_from`]), and copies a
//!   matching message there straight into its buffer, without posting
//!   itself or running the general wait (for a spinning wait's passes;
//!   then it posts and waits as any receive). A small send
//!   goes through [`Transport::send_copied`],
//!   which writes header and payload into the channel in one go. Neither
//!   takes a request, an allocation or a lock. A message that streams in
//!   (in ring slots, one after another) is matched at its first part: the
//!   first posted receive it matches lends the transport its buffer
//!   ([`Transport::try_recv_offer`]'s
//!   claim) and leaves the posted list; the transport reports the message
//!   when all of it is there, and a withdrawn receive takes its buffer back
//!   first (`Engine::unclaim`).
//! * Sends up to [`EAGER_LIMIT`] bytes are copied into the frame and complete
//!   at once. Larger sends lend the sender's buffer (single copy, the receiver
//!   copies from it); the sender waits for the copy. Synchronous sends wait
//!   for an acknowledgement frame.
//! * Flow control bounds what a receiver holds for each sender
//!   ([`SENDER_CREDIT`] bytes, `flow.rs`): a data frame goes to the
//!   transport only with credit at its receiver, which gives credit back as
//!   its receives take messages; without credit a send waits, and its
//!   wait keeps the sender's own receives going. A receiver that waits for
//!   a sender's later message while holding its earlier ones lets it past
//!   the bound (MPI's progress rule).
//! * Every wait runs the same loop: drain the transport, advance the
//!   registered [`Task`]s, test the condition, check abort, a deadlock, peer
//!   failure and the deadline, then spin briefly, yield, and finally block
//!   in the transport. Nothing busy-loops forever. A blocking wait publishes
//!   what it waits for (`rank 1 is in recv, waiting for a message from rank
//!   0 with tag 5`) for the other ranks' timeout and deadlock messages; a
//!   transport that sees the whole job (threads, shared memory) tells a
//!   wait with no deadline when every rank is blocked and nothing is in
//!   flight, and the wait fails with [`Error::Deadlock`].
//! * Each send, receive and wait event goes through one recorder hook
//!   ([`crate::trace::recorder::hook`]).
//! * A peer that is gone is named by its root cause: an endpoint that
//!   reports `PeerFailed` first tells every other endpoint which one it
//!   found gone (a [`Kind::Gone`](crate::wire::Kind::Gone) frame, ahead of
//!   its own end on every transport's FIFO), so a rank that then sees
//!   *it* gone names the endpoint that failed first, not the neighbour
//!   that exited after noticing.
//!
//! ## Files
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the [`Engine`] of one endpoint, its state, construction |
//! | `group.rs` | [`Group`]: how a communicator maps endpoints to ranks |
//! | `matching.rs` | match criteria, arrival, delivery |
//! | `blocking.rs` | blocking receives (and their fast path) and probes |
//! | `requests.rs` | sends, posted receives, the request slab, test / wait / withdraw |
//! | `progress.rs` | draining the transport, control frames, the [`Task`] trait for work advanced by every wait (non-blocking collectives) |
//! | `flow.rs` | flow control: credit per receiver, frames waiting for it, credit given back |
//! | `waits.rs` | the one wait loop: spin, yield, block; abort, failure and deadline checks |
//!
//! ## What may import what
//!
//! The engine sits on the transport ([`crate::transport`]), the wire format
//! and the trace recorder's hook; it imports nothing from the layers above
//! it (communicators, collectives, launch). Work of those layers that must
//! progress while a rank waits enters through the [`Task`] trait.
//!
//! Not done yet: cancellation of a matched receive; message-size based
//! pipelining for byte-stream transports (they chunk below this layer); a
//! fast path for synchronous sends (they build a frame and a request, and
//! their acknowledgement is a frame); a blocking receive inside another's
//! wait (a task's) looks only at the unexpected queue; the blocking
//! receive's fast path ([`Transport::take_from`]) is only on threads,
//! shared memory and MPI, and not for a receive of a whole message as a
//! vector (`recv_payload`) or with a strided layout.

mod blocking;
mod flow;
mod group;
mod matching;
mod progress;
mod requests;
mod waits;

pub use flow::{MESSAGE_COST, SENDER_CREDIT};
pub(crate) use group::{map_err, Group};
pub(crate) use matching::{Layout, Match, RawStatus};
pub(crate) use progress::Task;
pub(crate) use requests::ReqId;

use crate::error::{Error, Result};
use crate::transport::{AnyTransport, Transport};
use matching::Msg;
use requests::{Posted, Slab};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Weak;
use std::time::Duration;
use waits::{spin_budget, Pass};

/// Sends up to this many bytes are copied (eager); larger ones lend the buffer.
pub const EAGER_LIMIT: usize = 16 * 1024;

/// The request id of a blocking receive in the posted list (no request
/// is made for it; no slab id is 0).
pub(super) const BLOCKING: u64 = 0;

#[derive(Default)]
pub(super) struct State {
    unexpected: VecDeque<Msg>,
    posted: VecDeque<Posted>,
    /// The blocking receive in `posted` (as [`BLOCKING`]), if one waits.
    blocking_posted: bool,
    /// Its outcome, once a message was delivered into it.
    blocking: Option<Result<matching::RawStatus>>,
    /// Posted receives (blocking or not) whose messages stream into their
    /// buffers: out of `posted`, not yet complete.
    claims: Vec<matching::Claimed>,
    reqs: Slab,
    next_sync: u64,
    acks: Vec<(u64, usize)>,
    /// The global-OR bits of every endpoint, per communicator (its user
    /// context): each communicator has a flag of its own.
    global_or: std::collections::HashMap<u64, Vec<bool>>,
    abort: Option<(u32, String)>,
    /// Per endpoint: the endpoint it reported as the cause of its failure
    /// ([`Kind::Gone`](crate::wire::Kind::Gone)), if it did.
    blamed: Vec<Option<u32>>,
    /// Per endpoint: whether this one has told the others that it is gone.
    announced: Vec<bool>,
}

/// Told the endpoint found gone first (see [`Engine::on_cause`]).
pub(crate) type CauseHook = Box<dyn Fn(u32)>;

/// The engine of one endpoint.
pub(crate) struct Engine {
    pub(crate) t: AnyTransport,
    st: RefCell<State>,
    /// Credit at each receiver, what is owed to each sender, frames that
    /// wait for credit (`flow.rs`).
    flow: RefCell<flow::Flow>,
    /// Told the root cause of every peer failure this endpoint reports
    /// (a launched process tells its launcher, see `launch::join`).
    pub(crate) on_cause: RefCell<Option<CauseHook>>,
    pub(crate) default_timeout: Option<Duration>,
    /// The job runner closes this endpoint (threads of `run`), not the
    /// rank: `finalize` leaves it open.
    pub(crate) managed: bool,
    me: u32,
    /// Non-blocking collectives in flight: advanced by every wait.
    tasks: RefCell<Vec<Weak<RefCell<dyn Task>>>>,
    /// Poll iterations of a wait before it yields (see `spin_budget`).
    spins: u32,
    /// Whether a wait polls (spins, then yields) before it blocks in the
    /// transport ([`crate::transport::Transport::polls`]).
    polls: bool,
    /// Which pass of a wait loop is running (see [`Pass`]).
    pass: std::cell::Cell<Pass>,
    /// The running wait loop will block in the transport after this pass
    /// ([`Engine::about_to_block`]).
    armed: std::cell::Cell<bool>,
}

/// Check the engine's environment variables (`HYPERCOMM_TIMEOUT`,
/// `HYPERCOMM_YIELD_US`, and the switches `HYPERCOMM_CHECK`,
/// `HYPERCOMM_SHM_CMA` and `HYPERCOMM_HOST`): an error names a bad value;
/// the default timeout.
pub(crate) fn env_settings() -> Result<Option<Duration>> {
    waits::env_yield()?;
    env_switch("HYPERCOMM_CHECK", &["on", "off", "1", "0", "true", "false"])?;
    env_switch("HYPERCOMM_SHM_CMA", &["1", "0"])?;
    env_switch("HYPERCOMM_HOST", &["1", "0"])?;
    env_timeout()
}

/// A switch's value, when set, must be one of `accepted` (a value that
/// was not one of them used to be taken silently as one of the two).
fn env_switch(var: &'static str, accepted: &[&str]) -> Result<()> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() && !accepted.contains(&v.trim()) => {
            Err(Error::InvalidArgument {
                op: var,
                what: format!(
                    "the environment variable is {v:?}; it takes one of {}",
                    accepted.join(", ")
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Parse `HYPERCOMM_TIMEOUT` (seconds, may be fractional).
fn env_timeout() -> Result<Option<Duration>> {
    match std::env::var("HYPERCOMM_TIMEOUT") {
        Err(_) => Ok(None),
        Ok(s) if s.trim().is_empty() => Ok(None),
        Ok(s) => parse_timeout(&s)
            .map(Some)
            .map_err(|what| Error::InvalidArgument {
                op: "HYPERCOMM_TIMEOUT",
                what,
            }),
    }
}

/// A timeout given in seconds (may be fractional), as `HYPERCOMM_TIMEOUT`
/// and `hypercomm run --timeout` take it; the error says what is wrong
/// with `s` (not a positive number, or longer than a [`Duration`] holds).
// Public through `launch::job`, which needs the `tcp` feature.
#[cfg_attr(not(processes), allow(unreachable_pub))]
pub fn parse_timeout(s: &str) -> std::result::Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Duration::try_from_secs_f64(v).map_err(|_| {
            format!(
                "{s:?} seconds is too long a timeout (at most {} s; leave it unset for none)",
                Duration::MAX.as_secs()
            )
        }),
        _ => Err(format!("{s:?} is not a positive number of seconds")),
    }
}

impl Engine {
    pub(crate) fn new(t: AnyTransport, default_timeout: Option<Duration>) -> Engine {
        let n = t.endpoints();
        let me = t.endpoint() as u32;
        let polls = t.polls();
        Engine {
            t,
            st: RefCell::new(State {
                blamed: vec![None; n],
                announced: vec![false; n],
                ..Default::default()
            }),
            flow: RefCell::new(flow::Flow::new(n)),
            on_cause: RefCell::new(None),
            default_timeout,
            managed: false,
            me,
            tasks: RefCell::new(Vec::new()),
            spins: if polls { spin_budget(n) } else { 0 },
            polls,
            pass: std::cell::Cell::new(Pass::Outside),
            armed: std::cell::Cell::new(false),
        }
    }

    #[inline]
    pub(crate) fn me(&self) -> u32 {
        self.me
    }

    /// Abort: tell the transport (which tells everyone).
    pub(crate) fn abort(&self, message: &str) {
        self.t.abort(message);
    }

    /// Number of endpoints of the job.
    pub(crate) fn t_endpoints(&self) -> usize {
        self.t.endpoints()
    }
}
