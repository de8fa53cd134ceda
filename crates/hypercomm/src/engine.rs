//! The point-to-point engine of one endpoint: matching, requests, progress.
//!
//! Design:
//! * Incoming data frames are matched against posted receives (`irecv`) in
//!   post order, else queued as *unexpected* in arrival order. Blocking
//!   receives and probes look only at the unexpected queue (after draining the
//!   transport), so nothing is posted for them. Per-pair FIFO of the transport
//!   plus in-order queues give MPI's non-overtaking rule.
//! * Sends up to [`EAGER_LIMIT`] bytes are copied into the frame and complete
//!   at once. Larger sends lend the sender's buffer (single copy, the receiver
//!   copies from it) on transports that keep borrows; the sender waits for the
//!   copy. Synchronous sends wait for an acknowledgement frame.
//! * Every wait runs the same loop: drain the transport, test the condition,
//!   check abort, peer failure and the deadline, then spin briefly, yield, and
//!   finally block in the transport. Nothing busy-loops forever.
//! * Each send, receive and wait event goes through one recorder hook
//!   ([`crate::recorder`]).
//!
//! Not done yet: cancellation of a matched receive; message-size based
//! pipelining for byte-stream transports (they will chunk below this layer).

use crate::collective::executor::Task;
use crate::error::{Error, Result};
use crate::rank::{Rank, Status};
use crate::recorder::{self, Event};
use crate::transport::{AnyTransport, Borrowed, Completion, Frame, Payload, PeerState, Transport};
use crate::wire::{Header, Kind};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sends up to this many bytes are copied (eager); larger ones lend the buffer.
pub const EAGER_LIMIT: usize = 16 * 1024;

/// How a communicator maps endpoints to its ranks (shared by the engine and
/// `Comm`).
#[derive(Debug)]
pub(crate) struct Group {
    /// Endpoint of each node rank (shared: every collective call names
    /// its participants by it).
    pub(crate) eps: Arc<[u32]>,
    /// Endpoint of the host, if the communicator has one.
    pub(crate) host: Option<u32>,
    /// Rank of every endpoint of the job (`None`: not a member).
    pub(crate) rank_of: Vec<Option<Rank>>,
}

impl Group {
    pub(crate) fn new(eps: Vec<u32>, host: Option<u32>, endpoints: usize) -> Group {
        let mut rank_of = vec![None; endpoints];
        for (r, &e) in eps.iter().enumerate() {
            rank_of[e as usize] = Some(Rank::Node(r));
        }
        if let Some(h) = host {
            rank_of[h as usize] = Some(Rank::Host);
        }
        Group {
            eps: eps.into(),
            host,
            rank_of,
        }
    }
    pub(crate) fn rank(&self, ep: u32) -> Rank {
        self.rank_of
            .get(ep as usize)
            .copied()
            .flatten()
            .unwrap_or(Rank::Node(ep as usize))
    }
    pub(crate) fn members(&self) -> impl Iterator<Item = u32> + '_ {
        self.eps.iter().copied().chain(self.host)
    }
}

/// Match criteria of a receive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Match {
    pub(crate) ctx: u64,
    pub(crate) src: Option<u32>,
    pub(crate) tag: Option<u32>,
}

impl Match {
    #[inline]
    fn hits(&self, m: &Msg) -> bool {
        m.ctx == self.ctx
            && self.src.is_none_or(|s| s == m.src)
            && self.tag.is_none_or(|t| t == m.tag)
    }
}

/// A message that arrived.
pub(crate) struct Msg {
    pub(crate) ctx: u64,
    pub(crate) src: u32,
    pub(crate) tag: u32,
    pub(crate) sync: Option<u64>,
    pub(crate) payload: Payload,
}

/// An arrived message as the engine reports it (endpoint numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawStatus {
    pub(crate) src: u32,
    pub(crate) tag: u32,
    pub(crate) len: usize,
}

impl RawStatus {
    pub(crate) fn to_status(self, g: &Group) -> Status {
        Status {
            source: g.rank(self.src),
            tag: self.tag,
            len: self.len,
        }
    }
}

/// How received bytes are laid into the destination.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Layout {
    /// Contiguous; the message must fit (`Truncated` otherwise).
    Contiguous,
    /// Contiguous; copy `min(len, cap)` (CMMD negotiation).
    Partial,
    /// CMMD vector receive: `count` elements of `elem_len` bytes, `stride`
    /// apart; the message must fill them exactly or be shorter.
    Strided {
        elem_len: usize,
        stride: usize,
        count: usize,
    },
}

impl Layout {
    /// Bytes this layout can take.
    fn capacity(&self, buf_len: usize) -> usize {
        match *self {
            Layout::Contiguous | Layout::Partial => buf_len,
            Layout::Strided {
                elem_len, count, ..
            } => elem_len * count,
        }
    }
}

/// Scatter a packed byte stream into a strided destination (CMMD receive_v).
pub(crate) fn unpack_strided(src: &[u8], dst: &mut [u8], elem_len: usize, stride: usize) -> usize {
    if elem_len == 0 {
        return 0;
    }
    for (i, chunk) in src.chunks(elem_len).enumerate() {
        let at = i * stride;
        dst[at..at + chunk.len()].copy_from_slice(chunk);
    }
    src.len()
}

/// Run `f` on the bytes of a payload, completing a borrow. `None` when the
/// sender revoked a borrowed payload.
fn with_payload(p: Payload, f: impl FnOnce(&[u8]) -> usize) -> Option<usize> {
    match p {
        Payload::Inline(i) => Some(f(i.bytes())),
        Payload::Bytes(b) => Some(f(&b)),
        Payload::Vec(v) => Some(f(v.bytes())),
        Payload::Borrowed(b) => b.with_bytes(f),
    }
}

/// Raw destination of a posted receive.
struct RawBuf {
    ptr: *mut u8,
    len: usize,
}

struct Posted {
    req: u64,
    m: Match,
    buf: RawBuf,
    layout: Layout,
}

enum ReqState {
    /// A receive waiting in `posted`.
    Recv,
    /// A send whose borrowed buffer is still lent.
    Lent { done: Arc<Completion> },
    /// A synchronous send waiting for its acknowledgement (and possibly
    /// lending its buffer until then).
    AwaitAck {
        id: u64,
        lent: Option<Arc<Completion>>,
    },
    /// Finished with this result.
    Done(Result<RawStatus>),
}

struct Req {
    state: ReqState,
    /// The endpoint this request depends on (`None`: any member of the group).
    peer: Option<u32>,
    group: Arc<Group>,
    send: bool,
    tag: u32,
    len: usize,
}

#[derive(Default)]
struct State {
    unexpected: VecDeque<Msg>,
    posted: Vec<Posted>,
    reqs: Slab,
    next_sync: u64,
    acks: Vec<(u64, usize)>,
    global_or: Vec<bool>,
    abort: Option<(u32, String)>,
}

/// A request handle inside the engine; never reused within a run.
pub(crate) type ReqId = u64;

/// The requests of one endpoint: a vector of slots with a free list, so
/// that starting and completing a request costs no hashing and, in the
/// steady state, no allocation. An id is the slot index in the low 32 bits
/// and the slot's generation in the high 32 bits: a slot is reused, an id
/// never is (until 2³² reuses of one slot).
#[derive(Default)]
struct Slab {
    slots: Vec<(u32, Option<Req>)>,
    free: Vec<u32>,
}

impl Slab {
    fn insert(&mut self, r: Req) -> ReqId {
        let i = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                // Generations start at 1, so no id is 0 (requests that
                // completed at once carry 0 and must never match a slot).
                self.slots.push((1, None));
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[i];
        slot.1 = Some(r);
        (u64::from(slot.0) << 32) | i as u64
    }

    fn slot(&self, id: ReqId) -> Option<&(u32, Option<Req>)> {
        self.slots
            .get((id & 0xffff_ffff) as usize)
            .filter(|s| u64::from(s.0) == id >> 32)
    }

    fn get(&self, id: ReqId) -> Option<&Req> {
        self.slot(id)?.1.as_ref()
    }

    fn get_mut(&mut self, id: ReqId) -> Option<&mut Req> {
        let s = self.slots.get_mut((id & 0xffff_ffff) as usize)?;
        if u64::from(s.0) != id >> 32 {
            return None;
        }
        s.1.as_mut()
    }

    fn remove(&mut self, id: ReqId) -> Option<Req> {
        let i = (id & 0xffff_ffff) as usize;
        let s = self.slots.get_mut(i)?;
        if u64::from(s.0) != id >> 32 {
            return None;
        }
        let r = s.1.take()?;
        s.0 = s.0.checked_add(1).unwrap_or(1);
        self.free.push(i as u32);
        Some(r)
    }

    fn contains(&self, id: ReqId) -> bool {
        self.get(id).is_some()
    }
}

/// The engine of one endpoint.
pub(crate) struct Engine {
    pub(crate) t: AnyTransport,
    st: RefCell<State>,
    pub(crate) default_timeout: Option<Duration>,
    me: u32,
    /// Non-blocking collectives in flight: advanced by every wait.
    tasks: RefCell<Vec<Weak<RefCell<dyn Task>>>>,
    /// Poll iterations of a wait before it yields (see `spin_budget`).
    spins: u32,
    /// Which pass of a wait loop is running (see [`Pass`]).
    pass: std::cell::Cell<Pass>,
}

/// What the current pass of a wait loop asks of [`Engine::test_step`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
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
const CHECK_EVERY: u32 = 32;

/// While yielding, a wait checks on every this many passes.
const YIELD_CHECK_EVERY: u32 = 4;

/// How long a wait spins before yielding (then it yields for
/// [`YIELD_FOR`] before blocking). With no more ranks than cores a waiting rank's partner is running, so
/// polling pays off for a while (about 50–100 µs); with more ranks than
/// cores the partner may need this core, so yield almost at once.
const SPINS_DEDICATED: u32 = 2000;
const SPINS_OVERSUBSCRIBED: u32 = 20;

/// How long a wait keeps yielding before it blocks in the transport
/// (`HYPERCOMM_YIELD_US` overrides, in microseconds). A yielding rank gives
/// its core to the ranks that have work and sees their messages within
/// microseconds; a blocked one needs a wake-up call and a trip through the
/// scheduler (tens of microseconds), which would be paid on every message
/// when ranks outnumber cores.
const YIELD_FOR: Duration = Duration::from_micros(500);

fn yield_for() -> Duration {
    static D: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *D.get_or_init(|| {
        std::env::var("HYPERCOMM_YIELD_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(YIELD_FOR, Duration::from_micros)
    })
}

/// The number of cores this process may use (asked once: the answer
/// costs system calls and file reads).
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

/// Poll iterations before yielding, for a job of `endpoints` ranks.
fn spin_budget(endpoints: usize) -> u32 {
    if endpoints <= cores() {
        SPINS_DEDICATED
    } else {
        SPINS_OVERSUBSCRIBED
    }
}

/// Parse `HYPERCOMM_TIMEOUT` (seconds, may be fractional).
pub(crate) fn env_timeout() -> Result<Option<Duration>> {
    match std::env::var("HYPERCOMM_TIMEOUT") {
        Err(_) => Ok(None),
        Ok(s) if s.trim().is_empty() => Ok(None),
        Ok(s) => match s.trim().parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => Ok(Some(Duration::from_secs_f64(v))),
            _ => Err(Error::InvalidArgument {
                op: "HYPERCOMM_TIMEOUT",
                what: format!("{s:?} is not a positive number of seconds"),
            }),
        },
    }
}

impl Engine {
    pub(crate) fn new(t: AnyTransport, default_timeout: Option<Duration>) -> Engine {
        let n = t.endpoints();
        let me = t.endpoint() as u32;
        Engine {
            t,
            st: RefCell::new(State {
                global_or: vec![false; n],
                ..Default::default()
            }),
            default_timeout,
            me,
            tasks: RefCell::new(Vec::new()),
            spins: spin_budget(n),
            pass: std::cell::Cell::new(Pass::Outside),
        }
    }

    /// Register a non-blocking collective so that every wait advances it.
    pub(crate) fn register(&self, t: &Rc<RefCell<dyn Task>>) {
        let mut v = self.tasks.borrow_mut();
        v.retain(|w| w.strong_count() > 0);
        v.push(Rc::downgrade(t));
    }

    /// Advance every registered task that is not already being advanced.
    fn advance_tasks(&self) {
        if self.tasks.borrow().is_empty() {
            return;
        }
        let live: Vec<Rc<RefCell<dyn Task>>> = {
            let mut v = self.tasks.borrow_mut();
            v.retain(|w| w.strong_count() > 0);
            v.iter().filter_map(|w| w.upgrade()).collect()
        };
        for t in live {
            if let Ok(mut t) = t.try_borrow_mut() {
                t.advance(self);
            }
        }
    }

    /// Run a task to completion (blocking collectives, and waits on
    /// non-blocking ones). On error or timeout the task is withdrawn.
    pub(crate) fn run_task(
        &self,
        task: &RefCell<dyn Task>,
        timeout: Option<Duration>,
        op: &str,
    ) -> Result<()> {
        let group = task.borrow().group().clone();
        let what = || task.try_borrow().map(|t| t.describe()).unwrap_or_default();
        recorder::hook(Event::Wait);
        let r = self.wait_loop(&group, None, timeout, op, &what, |e| {
            let mut t = task.borrow_mut();
            if t.advance(e) {
                Some(t.take_result().unwrap_or(Ok(())))
            } else {
                None
            }
        });
        recorder::hook(Event::Done);
        if r.is_err() {
            task.borrow_mut().withdraw(self);
        }
        r
    }

    #[inline]
    pub(crate) fn me(&self) -> u32 {
        self.me
    }

    // ---------------------------------------------------------------- progress

    /// Drain every arrived frame into the matching structures.
    pub(crate) fn progress(&self) {
        while let Some(f) = self.t.try_recv() {
            self.handle(f);
        }
    }

    fn handle(&self, f: Frame) {
        let h = f.header;
        match h.kind {
            Kind::Data => {
                let msg = Msg {
                    ctx: h.context,
                    src: h.src,
                    tag: h.tag,
                    sync: (h.flags & Header::FLAG_SYNC != 0).then_some(h.id),
                    payload: f.payload,
                };
                self.arrive(msg);
            }
            Kind::SyncAck => self.st.borrow_mut().acks.push((h.id, h.len as usize)),
            Kind::GlobalOr => {
                let mut st = self.st.borrow_mut();
                if let Some(b) = st.global_or.get_mut(h.src as usize) {
                    *b = h.id != 0;
                }
            }
            Kind::Abort => {
                let text = match &f.payload {
                    Payload::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                    _ => String::new(),
                };
                let mut st = self.st.borrow_mut();
                if st.abort.is_none() {
                    st.abort = Some((h.src, text));
                }
            }
            Kind::Goodbye => {}
        }
    }

    fn arrive(&self, msg: Msg) {
        let mut st = self.st.borrow_mut();
        let Some(i) = st.posted.iter().position(|p| p.m.hits(&msg)) else {
            st.unexpected.push_back(msg);
            return;
        };
        let p = st.posted.remove(i);
        // SAFETY: the posted buffer was a live `&mut [u8]` of the request's
        // scope, which cannot end before the request is completed or removed.
        let dst = unsafe { std::slice::from_raw_parts_mut(p.buf.ptr, p.buf.len) };
        let (result, leftover) = self.deliver(msg, dst, p.layout);
        if let Some(m) = leftover {
            st.unexpected.push_back(m);
        }
        if let Some(r) = st.reqs.get_mut(p.req) {
            r.state = ReqState::Done(result);
        }
    }

    /// Copy a matched message into `dst`. Returns the outcome and, when the
    /// message did not fit, the untouched message to keep.
    fn deliver(
        &self,
        msg: Msg,
        dst: &mut [u8],
        layout: Layout,
    ) -> (Result<RawStatus>, Option<Msg>) {
        let len = msg.payload.len();
        let cap = layout.capacity(dst.len());
        let status = RawStatus {
            src: msg.src,
            tag: msg.tag,
            len,
        };
        if len > cap && !matches!(layout, Layout::Partial) {
            return (
                Err(Error::Truncated {
                    from: Rank::Node(msg.src as usize), // mapped by the caller
                    tag: msg.tag,
                    len,
                    capacity: cap,
                }),
                Some(msg),
            );
        }
        let (src, sync, ctx) = (msg.src, msg.sync, msg.ctx);
        let taken = match (msg.payload, layout) {
            // Single copy straight from the lender (another thread or process).
            (Payload::Borrowed(b), Layout::Contiguous | Layout::Partial) => b.copy_into(dst),
            (p, layout) => with_payload(p, |b| match layout {
                Layout::Contiguous | Layout::Partial => {
                    let n = b.len().min(dst.len());
                    dst[..n].copy_from_slice(&b[..n]);
                    n
                }
                Layout::Strided {
                    elem_len, stride, ..
                } => unpack_strided(b, dst, elem_len, stride),
            }),
        };
        let Some(taken) = taken else {
            return (
                Err(Error::PeerFailed {
                    rank: Rank::Node(src as usize),
                }),
                None,
            );
        };
        if let Some(id) = sync {
            self.ack(src, id, taken);
        }
        recorder::hook(Event::Recv {
            src,
            tag: status.tag,
            len,
            coll: ctx & 1 == 1,
        });
        (Ok(status), None)
    }

    fn ack(&self, to: u32, id: u64, taken: usize) {
        let _ = self.t.send(Frame {
            header: Header {
                kind: Kind::SyncAck,
                flags: 0,
                src: self.me,
                dst: to,
                context: 0,
                tag: 0,
                id,
                len: taken as u64,
            },
            payload: Payload::Bytes(Vec::new()),
        });
    }

    /// Send a control frame (no payload semantics for matching).
    pub(crate) fn control(&self, to: u32, kind: Kind, id: u64, payload: Vec<u8>) {
        let _ = self.t.send(Frame {
            header: Header {
                kind,
                flags: 0,
                src: self.me,
                dst: to,
                context: 0,
                tag: 0,
                id,
                len: payload.len() as u64,
            },
            payload: Payload::Bytes(payload),
        });
    }

    // ------------------------------------------------------------- failures

    /// Fail if the job was aborted. Also used by the non-blocking calls
    /// (`iprobe`, `Request::test`) so that a polling loop ends after an abort.
    pub(crate) fn check_abort(&self, g: &Group) -> Result<()> {
        if let Some(msg) = self.t.protocol_error() {
            return Err(Error::Protocol(msg));
        }
        if let Some((ep, msg)) = self.t.aborted() {
            return Err(Error::Aborted {
                rank: g.rank(ep as u32),
                message: msg,
            });
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

    /// Is the endpoint (or, for `None`, any member needed by a wildcard) gone?
    fn dead_peer(&self, g: &Group, peer: Option<u32>) -> Option<Rank> {
        match peer {
            Some(p) if p == self.me => None,
            Some(p) => match self.t.peer_state(p as usize) {
                PeerState::Alive => None,
                _ => Some(g.rank(p)),
            },
            None => {
                // A wildcard fails when any other member failed, or when every
                // other member has finished (nobody can still send).
                let (mut finished, mut alive) = (None, false);
                for m in g.members().filter(|&m| m != self.me) {
                    match self.t.peer_state(m as usize) {
                        PeerState::Failed(_) => return Some(g.rank(m)),
                        PeerState::Finished => {
                            finished.get_or_insert(m);
                        }
                        PeerState::Alive => alive = true,
                    }
                }
                if alive {
                    None
                } else {
                    finished.map(|m| g.rank(m))
                }
            }
        }
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
        let out = loop {
            // Spinning: every CHECK_EVERY passes; yielding: every
            // YIELD_CHECK_EVERY (a collective's wait looks at every member);
            // blocking: every pass.
            let check = spins.is_multiple_of(CHECK_EVERY)
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
                if let Some(rank) = self.dead_peer(g, peer) {
                    // Frames may have arrived before the peer finished: look once more.
                    self.progress();
                    if let Some(r) = poll(self) {
                        break r;
                    }
                    // The peer may have failed *because* of an abort that came
                    // after our check above: then report the abort.
                    if let Err(e) = self.check_abort(g) {
                        break Err(e);
                    }
                    break Err(Error::PeerFailed { rank });
                }
                if spins > 0 {
                    if let Some(t) = timeout {
                        let now = Instant::now();
                        let begun = *start.get_or_insert(now);
                        let dl = *deadline.get_or_insert(begun + t);
                        if now >= dl {
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
            let yielding = spins >= self.spins && {
                let now = Instant::now();
                now < *yield_until.get_or_insert_with(|| now + yield_for())
            };
            if spins < self.spins {
                std::hint::spin_loop();
            } else if yielding {
                std::thread::yield_now();
            } else {
                if !published {
                    self.t
                        .set_waiting(Some(format!("{} in {op}: {}", g.rank(self.me), what())));
                    published = true;
                }
                self.t.wait(deadline);
            }
        };
        self.pass.set(outer);
        if published {
            self.t.set_waiting(None);
        }
        out
    }

    // --------------------------------------------------------------- sends

    fn frame(&self, dst: u32, ctx: u64, tag: u32, sync: Option<u64>, payload: Payload) -> Frame {
        Frame {
            header: Header {
                kind: Kind::Data,
                flags: if sync.is_some() { Header::FLAG_SYNC } else { 0 },
                src: self.me,
                dst,
                context: ctx,
                tag,
                id: sync.unwrap_or(0),
                len: payload.len() as u64,
            },
            payload,
        }
    }

    fn check_dst(&self, g: &Group, dst: u32) -> Result<()> {
        self.check_abort(g)?;
        if let Some(rank) = self.dead_peer(g, Some(dst)) {
            return Err(Error::PeerFailed { rank });
        }
        Ok(())
    }

    /// Start a send of `data`. Returns a request id when the send is not yet
    /// complete (borrowed or synchronous), `None` when it is.
    ///
    /// # Safety
    /// When the result is `Some(id)`, `data` must stay alive and unmodified
    /// until the request completes (`finish`/`wait_req` returned).
    pub(crate) unsafe fn start_send(
        &self,
        g: &Arc<Group>,
        dst: u32,
        ctx: u64,
        tag: u32,
        data: &[u8],
        synchronous: bool,
    ) -> Result<Option<ReqId>> {
        self.check_dst(g, dst)?;
        recorder::hook(Event::Send {
            dst,
            tag,
            len: data.len(),
            coll: ctx & 1 == 1,
        });
        let sync = synchronous.then(|| {
            let mut st = self.st.borrow_mut();
            st.next_sync += 1;
            st.next_sync
        });
        let lent = if data.len() > EAGER_LIMIT && self.t.keeps_borrows() {
            let done = Completion::new();
            // SAFETY: forwarded to our caller's contract.
            let b = unsafe { Borrowed::new(data, done.clone()) };
            self.t
                .send(self.frame(dst, ctx, tag, sync, Payload::Borrowed(b)))
                .map(|()| Some(done))
        } else {
            let p = Payload::copy_of(data);
            self.t
                .send(self.frame(dst, ctx, tag, sync, p))
                .map(|()| None)
        };
        recorder::hook(Event::Done);
        let lent = lent?;
        let state = match (sync, lent) {
            (Some(id), lent) => ReqState::AwaitAck { id, lent },
            (None, Some(done)) => ReqState::Lent { done },
            (None, None) => return Ok(None),
        };
        Ok(Some(self.push_req(Req {
            state,
            peer: Some(dst),
            group: g.clone(),
            send: true,
            tag,
            len: data.len(),
        })))
    }

    /// Send an owned payload (vector hand-off); completes at once.
    pub(crate) fn send_owned(
        &self,
        g: &Group,
        dst: u32,
        ctx: u64,
        tag: u32,
        p: Payload,
    ) -> Result<()> {
        self.check_dst(g, dst)?;
        recorder::hook(Event::Send {
            dst,
            tag,
            len: p.len(),
            coll: ctx & 1 == 1,
        });
        let r = self.t.send(self.frame(dst, ctx, tag, None, p));
        recorder::hook(Event::Done);
        r
    }

    fn push_req(&self, r: Req) -> ReqId {
        self.st.borrow_mut().reqs.insert(r)
    }

    // ------------------------------------------------------------ receives

    /// Take the first unexpected message matching `m` if `pred` accepts it.
    fn find(&self, m: &Match) -> Option<usize> {
        self.st.borrow().unexpected.iter().position(|x| m.hits(x))
    }

    /// Deliver unexpected message `i` into `dst`; a message that does not
    /// fit goes back where it was (nothing else was taken meanwhile).
    fn take_unexpected(&self, i: usize, dst: &mut [u8], layout: Layout) -> Result<RawStatus> {
        let msg = self
            .st
            .borrow_mut()
            .unexpected
            .remove(i)
            .expect("index just found");
        let (r, leftover) = self.deliver(msg, dst, layout);
        if let Some(msg) = leftover {
            self.st.borrow_mut().unexpected.insert(i, msg);
        }
        r
    }

    /// Non-blocking probe.
    pub(crate) fn iprobe(&self, m: &Match) -> Option<RawStatus> {
        recorder::hook(Event::Probe);
        self.progress();
        let st = self.st.borrow();
        st.unexpected.iter().find(|x| m.hits(x)).map(|x| RawStatus {
            src: x.src,
            tag: x.tag,
            len: x.payload.len(),
        })
    }

    /// Blocking receive into `dst` with `layout`.
    pub(crate) fn recv(
        &self,
        g: &Group,
        m: Match,
        dst: &mut [u8],
        layout: Layout,
        timeout: Option<Duration>,
        op: &str,
    ) -> Result<RawStatus> {
        let what = || describe_match(g, &m);
        recorder::hook(Event::RecvBegin {
            tag: m.tag,
            coll: m.ctx & 1 == 1,
        });
        let i = self.wait_loop(g, m.src, timeout, op, &what, |e| e.find(&m).map(Ok));
        let r = i.and_then(|i| self.take_unexpected(i, dst, layout));
        recorder::hook(Event::Done);
        r.map_err(|e| map_err(e, g))
    }

    /// Blocking receive of a whole message as an owned payload (zero copy for
    /// handed-off vectors).
    pub(crate) fn recv_payload(
        &self,
        g: &Group,
        m: Match,
        timeout: Option<Duration>,
        op: &str,
    ) -> Result<(RawStatus, Payload)> {
        let what = || describe_match(g, &m);
        recorder::hook(Event::RecvBegin {
            tag: m.tag,
            coll: m.ctx & 1 == 1,
        });
        let i = self.wait_loop(g, m.src, timeout, op, &what, |e| e.find(&m).map(Ok));
        let i = match i {
            Ok(i) => i,
            Err(e) => {
                recorder::hook(Event::Done);
                return Err(e);
            }
        };
        let msg = self
            .st
            .borrow_mut()
            .unexpected
            .remove(i)
            .expect("index just found");
        let ctx = msg.ctx;
        let status = RawStatus {
            src: msg.src,
            tag: msg.tag,
            len: msg.payload.len(),
        };
        let payload = match msg.payload {
            Payload::Borrowed(b) => {
                let mut v = vec![0u8; b.len()];
                if b.copy_into(&mut v).is_none() {
                    return Err(Error::PeerFailed {
                        rank: g.rank(msg.src),
                    });
                }
                Payload::Bytes(v)
            }
            p => p,
        };
        if let Some(id) = msg.sync {
            self.ack(msg.src, id, status.len);
        }
        recorder::hook(Event::Recv {
            src: status.src,
            tag: status.tag,
            len: status.len,
            coll: ctx & 1 == 1,
        });
        recorder::hook(Event::Done);
        Ok((status, payload))
    }

    /// Blocking probe.
    pub(crate) fn probe(
        &self,
        g: &Group,
        m: Match,
        timeout: Option<Duration>,
    ) -> Result<RawStatus> {
        let what = || describe_match(g, &m);
        recorder::hook(Event::Probe);
        self.wait_loop(g, m.src, timeout, "probe", &what, |e| {
            let st = e.st.borrow();
            st.unexpected.iter().find(|x| m.hits(x)).map(|x| {
                Ok(RawStatus {
                    src: x.src,
                    tag: x.tag,
                    len: x.payload.len(),
                })
            })
        })
    }

    /// Post a non-blocking receive.
    ///
    /// # Safety
    /// `dst` must stay alive, and not be accessed otherwise, until the request
    /// completes or is cancelled.
    pub(crate) unsafe fn post_recv(
        &self,
        g: &Arc<Group>,
        m: Match,
        dst: &mut [u8],
        layout: Layout,
    ) -> Result<ReqId> {
        self.check_abort(g)?;
        self.progress();
        let req = self.push_req(Req {
            state: ReqState::Recv,
            peer: m.src,
            group: g.clone(),
            send: false,
            tag: m.tag.unwrap_or(u32::MAX),
            len: dst.len(),
        });
        if let Some(i) = self.find(&m) {
            let r = self.take_unexpected(i, dst, layout);
            if let Some(q) = self.st.borrow_mut().reqs.get_mut(req) {
                q.state = ReqState::Done(r);
            }
        } else {
            self.st.borrow_mut().posted.push(Posted {
                req,
                m,
                buf: RawBuf {
                    ptr: dst.as_mut_ptr(),
                    len: dst.len(),
                },
                layout,
            });
        }
        Ok(req)
    }

    // ------------------------------------------------------------ requests

    /// Test a request: `Some(result)` when complete (and then released).
    pub(crate) fn test(&self, id: ReqId) -> Option<Result<RawStatus>> {
        self.progress();
        self.test_settled(id)
    }

    /// [`Engine::test`] for tasks (collective schedules): inside a wait
    /// loop, which has just drained the transport, only what the pass asks
    /// for; outside one, a full test.
    pub(crate) fn test_step(&self, id: ReqId) -> Option<Result<RawStatus>> {
        match self.pass.get() {
            Pass::Outside => self.test(id),
            Pass::Quiet => self.poll_req(id),
            Pass::Check => self.test_settled(id),
        }
    }

    /// [`Engine::test`] without draining the transport first.
    fn test_settled(&self, id: ReqId) -> Option<Result<RawStatus>> {
        if let Some(r) = self.poll_req(id) {
            return Some(r);
        }
        // A pending request that can never complete (the job was aborted,
        // or its peer is gone) fails and is withdrawn, as a wait would, in
        // the same order of checks; otherwise a `test` loop spins forever.
        let group = self.st.borrow().reqs.get(id)?.group.clone();
        let err = match self.check_abort(&group) {
            Err(e) => e,
            Ok(()) => {
                let rank = self.req_dead_peer(id)?;
                self.progress(); // frames may have arrived before the peer left
                if let Some(r) = self.poll_req(id) {
                    return Some(r);
                }
                // As in `wait_loop`: the peer may have failed after an abort.
                self.check_abort(&group)
                    .err()
                    .unwrap_or(Error::PeerFailed { rank })
            }
        };
        self.withdraw(id);
        Some(Err(err))
    }

    /// The rank a pending request depends on, if it is gone (for a wildcard
    /// receive, as for a blocking wildcard receive).
    fn req_dead_peer(&self, id: ReqId) -> Option<Rank> {
        let (group, peer) = {
            let st = self.st.borrow();
            let r = st.reqs.get(id)?;
            (r.group.clone(), r.peer)
        };
        self.dead_peer(&group, peer)
    }

    fn poll_req(&self, id: ReqId) -> Option<Result<RawStatus>> {
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let r = st.reqs.get_mut(id)?;
        let finished = match &r.state {
            ReqState::Done(_) => true,
            ReqState::Recv => false,
            ReqState::Lent { done } => match done.finished() {
                None => false,
                Some(Ok(_)) => {
                    r.state = ReqState::Done(Ok(RawStatus {
                        src: self.me,
                        tag: r.tag,
                        len: r.len,
                    }));
                    true
                }
                Some(Err(())) => {
                    // Endpoint numbering; `map_err` turns it into a rank.
                    let rank = Rank::Node(r.peer.unwrap_or(self.me) as usize);
                    r.state = ReqState::Done(Err(Error::PeerFailed { rank }));
                    true
                }
            },
            ReqState::AwaitAck { id, .. } => match st.acks.iter().position(|a| a.0 == *id) {
                None => false,
                Some(i) => {
                    let (_, taken) = st.acks.swap_remove(i);
                    r.state = ReqState::Done(Ok(RawStatus {
                        src: self.me,
                        tag: r.tag,
                        len: taken,
                    }));
                    true
                }
            },
        };
        if !finished {
            return None;
        }
        let r = st.reqs.remove(id).expect("present");
        match r.state {
            ReqState::Done(res) => Some(res.map_err(|e| map_err(e, &r.group))),
            _ => unreachable!("finished requests are Done"),
        }
    }

    /// Wait for a request to complete. On failure or timeout the request is
    /// withdrawn (its buffer is no longer used by anyone).
    pub(crate) fn wait_req(
        &self,
        id: ReqId,
        timeout: Option<Duration>,
        op: &str,
    ) -> Result<RawStatus> {
        let (group, peer, what) = match self.st.borrow().reqs.get(id) {
            Some(r) => (
                r.group.clone(),
                r.peer,
                if r.send {
                    format!(
                        "a send of {} bytes with tag {} to {} to complete",
                        r.len,
                        r.tag,
                        r.group.rank(r.peer.unwrap_or(self.me))
                    )
                } else {
                    let src = match r.peer {
                        Some(p) => r.group.rank(p).to_string(),
                        None => "any source".into(),
                    };
                    let tag = if r.tag == u32::MAX {
                        "any tag".to_string()
                    } else {
                        format!("tag {}", r.tag)
                    };
                    format!("a message from {src} with {tag}")
                },
            ),
            None => {
                return Err(Error::InvalidArgument {
                    op: "wait",
                    what: format!("request {id} is not active"),
                })
            }
        };
        recorder::hook(Event::Wait);
        let what = move || what.clone();
        let r = self.wait_loop(&group, peer, timeout, op, &what, |e| e.poll_req(id));
        recorder::hook(Event::Done);
        if r.is_err() {
            self.withdraw(id);
        }
        r
    }

    /// Wait until one of `ids` completes: its index and result. A request
    /// whose peer is gone is reported (and withdrawn) with `PeerFailed`; on
    /// timeout or abort the first request is reported with the error (and
    /// withdrawn).
    pub(crate) fn wait_any(
        &self,
        g: &Group,
        ids: &[ReqId],
        timeout: Option<Duration>,
    ) -> (usize, Result<RawStatus>) {
        let what = || format!("any of {} requests", ids.len());
        let done = |e: &Self| {
            ids.iter()
                .enumerate()
                .find_map(|(i, &id)| e.poll_req(id).map(|r| (i, r)))
        };
        // Peer failures are checked per request (the loop itself depends on
        // no one, hence `Some(self.me)`): a request fails, under its own
        // index, only when *its* peer is gone; a failed rank that none of
        // the requests depends on does not disturb the others.
        let r = self.wait_loop(g, Some(self.me), timeout, "wait_any", &what, |e| {
            if let Some(x) = done(e) {
                return Some(Ok(x));
            }
            if e.check_abort(g).is_err() {
                return None; // the loop reports the abort next
            }
            let (i, rank) = ids
                .iter()
                .enumerate()
                .find_map(|(i, &id)| e.req_dead_peer(id).map(|rank| (i, rank)))?;
            e.progress(); // frames may have arrived before the peer left
            if let Some(x) = done(e) {
                return Some(Ok(x));
            }
            if e.check_abort(g).is_err() {
                return None; // the peer failed after an abort: report that
            }
            e.withdraw(ids[i]);
            Some(Ok((i, Err(Error::PeerFailed { rank }))))
        });
        match r {
            Ok((i, r)) => (i, r),
            Err(err) => {
                self.withdraw(ids[0]);
                (0, Err(err))
            }
        }
    }

    /// Withdraw an unfinished request: remove a posted receive, revoke a lent
    /// buffer. Afterwards no one touches the request's buffer.
    pub(crate) fn withdraw(&self, id: ReqId) {
        let mut st = self.st.borrow_mut();
        let Some(r) = st.reqs.remove(id) else {
            return;
        };
        match &r.state {
            ReqState::Lent { done }
            | ReqState::AwaitAck {
                lent: Some(done), ..
            } => {
                done.revoke();
            }
            _ => {}
        }
        st.posted.retain(|p| p.req != id);
    }

    /// Is the request still active?
    pub(crate) fn active(&self, id: ReqId) -> bool {
        self.st.borrow().reqs.contains(id)
    }

    // ------------------------------------------------------------ global OR

    /// Set this endpoint's global-OR bit and tell the members of `g`.
    pub(crate) fn set_global_or(&self, g: &Group, v: bool) {
        let changed = {
            let mut st = self.st.borrow_mut();
            let me = self.me as usize;
            let old = st.global_or[me];
            st.global_or[me] = v;
            old != v
        };
        if changed {
            for m in g.members().filter(|&m| m != self.me) {
                self.control(m, Kind::GlobalOr, v as u64, Vec::new());
            }
        }
    }

    /// The OR of the latest bits known from the members of `g`.
    pub(crate) fn get_global_or(&self, g: &Group) -> bool {
        self.progress();
        let st = self.st.borrow();
        g.members().any(|m| st.global_or[m as usize])
    }

    /// Abort: tell the transport (which tells everyone).
    pub(crate) fn abort(&self, message: &str) {
        self.t.abort(message);
    }
}

/// Translate endpoint numbers in an engine error into ranks of `g`.
pub(crate) fn map_err(e: Error, g: &Group) -> Error {
    match e {
        Error::Truncated {
            from: Rank::Node(ep),
            tag,
            len,
            capacity,
        } => Error::Truncated {
            from: g.rank(ep as u32),
            tag,
            len,
            capacity,
        },
        Error::PeerFailed {
            rank: Rank::Node(ep),
        } if g.rank_of.get(ep).is_some() => Error::PeerFailed {
            rank: g.rank(ep as u32),
        },
        e => e,
    }
}

fn describe_match(g: &Group, m: &Match) -> String {
    let src = match m.src {
        Some(s) => g.rank(s).to_string(),
        None => "any source".into(),
    };
    let tag = match m.tag {
        Some(t) => format!("tag {t}"),
        None => "any tag".into(),
    };
    format!("a message from {src} with {tag} (context {:#x})", m.ctx)
}

impl Engine {
    /// Number of endpoints of the job.
    pub(crate) fn t_endpoints(&self) -> usize {
        self.t.endpoints()
    }
}
