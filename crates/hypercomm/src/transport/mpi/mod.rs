//! The MPI transport: ranks are the processes of an MPI job (`mpirun`,
//! `srun --mpi=pmix`, a cluster's own launcher), and frames travel as MPI
//! messages through the site's MPI library, so whatever network it is
//! tuned for (shared memory, InfiniBand, Slingshot, Omni-Path) carries
//! them. Built with the `mpi` feature; without it the kind exists and says
//! so (`off.rs`).
//!
//! * **Binding.** A small C shim (`shim.c`, compiled by the build script
//!   against the system's `mpi.h`) makes the MPI calls with plain C types;
//!   `sys.rs` declares it by hand. No bindings are generated, so no
//!   libclang, and the same Rust works against Open MPI (pointer handles)
//!   and MPICH (integer handles).
//! * **Messages.** Our traffic uses three private duplicates of
//!   `MPI_COMM_WORLD`. The world communicator's point-to-point data
//!   (context 0, what most programs send) goes on MPI's own matching
//!   (`user.rs`): as plain MPI messages with our tag as MPI's on the
//!   *user* communicator, or announced there (long, synchronous or
//!   high-tagged ones) with the rest on the *bulk* communicator.
//!   Everything else is a frame on the *frame* communicator: one MPI
//!   message on tag [`TAG_FRAME`]:
//!   the 48-byte header of [`crate::wire`] followed by the payload, when
//!   the payload is at most [`EAGER`] bytes; a larger payload follows its
//!   header as its own message(s) on tag [`TAG_BULK`], sent straight from
//!   the sender's buffer (a lent buffer stays lent until MPI is done with
//!   it; nothing is copied on our side), in pieces of at most 1 GiB (MPI
//!   counts are `int`). MPI keeps messages of one source, communicator and
//!   tag in order, so frames stay FIFO per pair and a bulk payload is the
//!   next one on its tag from that source. Contexts, tags, wildcards,
//!   probe and truncation are the engine's, above the transport, exactly
//!   as on every other transport.
//! * **Receiving.** [`POSTED`] persistent receives (`MPI_Recv_init`) for
//!   any source on [`TAG_FRAME`] stay started; progress tests the oldest
//!   (so frames are taken in the order MPI matched them), decodes it,
//!   fetches a bulk payload that follows, and starts the receive again
//!   (`MPI_Start`, `recv.rs`). A data message the engine has a posted
//!   receive for goes straight into it: a short one copied out of the
//!   frame message, a bulk payload received into the receive's own buffer
//!   (no buffer of ours, no second copy). A blocking receive (from one
//!   source or any) with nothing else pending tests the oldest receive itself
//!   ([`Transport::take_from`]) and takes a short message that matches
//!   straight from it, without the engine's posting and general wait;
//!   anything else it finds is queued for the general path as usual.
//!   Sends in flight are tested on
//!   every pass (`MPI_Test`), which is also what drives MPI's own progress.
//!   User messages come through one receive on the user communicator at
//!   a time, posted for a blocking receive's source and tag (its fast
//!   path) or for any source and tag (the general path), so they reach
//!   the engine in MPI's order (`user.rs`).
//!   A frame message of up to [`BLOCKING_SEND`] bytes goes by `MPI_Send`
//!   (no request: it leaves eagerly everywhere, and cannot deadlock as
//!   every peer keeps receives started); a longer eager one is tested once
//!   right after `MPI_Isend`: MPI libraries copy short messages out at
//!   once, and then its buffer serves the next frame, with nothing
//!   allocated or tracked.
//! * **Waiting.** MPI has no blocking wait that can also time out, so
//!   `wait` polls (yielding the processor between polls, as Open MPI's own
//!   progress loop does) for up to a millisecond and returns.
//! * **Liveness.** MPI tells nothing of peers until they are gone, and
//!   then the MPI launcher ends the job (naming the rank). A clean finish
//!   sends a goodbye to every peer (saying how many user messages it sent
//!   that peer, as MPI does not order the frame communicator against the
//!   user one) and drains until every peer's goodbye and user messages
//!   have come and every send has completed, then finalises MPI (when we
//!   initialised it). A rank that fails (`close` with an error) calls
//!   `MPI_Abort`, which ends the job everywhere. `abort(msg)` sends an
//!   abort frame to every peer first, so that they report `Aborted` with
//!   the message.
//! * **Diagnostics.** A timeout's message asks every live peer what it
//!   waits for, and a job whose every rank is blocked with nothing in
//!   flight is reported as a deadlock on every rank: questions and answers
//!   as over TCP, answered from the asked rank's own polling
//!   (`deadlock.rs`).
//! * **Collectives.** By default our schedules run over these messages
//!   (check mode, reproducible mode, topologies and tracing as on every
//!   transport); a communicator may hand a collective to the MPI library's
//!   own implementation (`native.rs`).
//!
//! Files: `mod.rs` (the endpoint), `send.rs` and `recv.rs` (frames),
//! `deadlock.rs` (what the peers wait for, deadlocks),
//! `user.rs` (the user context on MPI's matching), `sys.rs` (the shim's
//! functions),
//! `setup.rs` (the builder), `detect.rs` (was this process started by an
//! MPI launcher?),
//! `native.rs` (the library's collectives), `shim.c`; `off.rs` replaces
//! them all without the feature.
//!
//! Not done yet: other communicators' point-to-point traffic (`dup`,
//! `split`) is still frames; receives posted with `irecv` are matched by
//! the engine, so a window of them takes user messages one at a time
//! through the one receive; a blocking 8-byte round trip still costs
//! about 1.4× Open MPI's, the engine's layers (BENCHMARKS.md, "What the
//! engine adds to an 8-byte message over MPI"); dynamic processes
//! (`MPI_Comm_spawn`); messages of more than 2^31 − 1 bytes in one piece
//! (they are split). (A job with a host has it as its last MPI rank,
//! `HYPERCOMM_HOST=1`; see `hypercomm::init`.)

mod deadlock;
mod detect;
pub(crate) mod native;
mod recv;
mod send;
pub(crate) mod setup;
pub(crate) mod sys;
mod user;

pub use detect::{mpi_rank, started_by_mpi, LAUNCH_VARS};
pub use setup::MpiBuilder;
pub use user::{ANNOUNCE, PLAIN};

use super::{Arrival, Direct, Fault, Frame, Link, Payload, PeerState, Plain, Taker};
use super::{Transport, TransportKind};
use crate::error::{Error, Result};
use crate::wire::{Header, Kind};
use send::InFlight;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use sys::Handle;

/// The tag of frames (header and short payload).
pub const TAG_FRAME: i32 = 1;
/// The tag of large payloads that follow their header.
pub const TAG_BULK: i32 = 2;
/// Largest payload carried in the frame's own message.
pub const EAGER: usize = 16 << 10;
/// Largest frame message sent with a blocking `MPI_Send` (header and a
/// short payload) rather than `MPI_Isend` and a test.
pub const BLOCKING_SEND: usize = 256;
/// Receives kept posted for incoming frames.
pub const POSTED: usize = 16;
/// Largest piece of a bulk payload (MPI counts are `int`).
const PIECE: usize = 1 << 30;
/// Longest poll in one `wait`.
const POLL: Duration = Duration::from_millis(1);

/// A receive kept posted, with its buffer (both boxed: MPI holds their
/// addresses until the receive completes).
struct Posted {
    req: Box<Handle>,
    buf: Box<[u8]>,
}

/// What the supervisor's notices (another thread) and the endpoint share.
#[derive(Default)]
pub(crate) struct Shared {
    /// Set once `abort` holds something (a cheap test on every wait).
    aborted: AtomicBool,
    abort: std::sync::Mutex<Option<(usize, String)>>,
    /// Peers the supervisor saw die, with what it saw.
    failed: std::sync::Mutex<Vec<(usize, String)>>,
    /// Set once `failed` holds something (a cheap test on every send).
    any_failed: AtomicBool,
}

impl Shared {
    fn set_abort(&self, endpoint: usize, message: &str) -> bool {
        let mut a = self.abort.lock().unwrap_or_else(|p| p.into_inner());
        if a.is_some() {
            return false;
        }
        *a = Some((endpoint, message.to_string()));
        self.aborted.store(true, Ordering::Release);
        true
    }
    fn abort(&self) -> Option<(usize, String)> {
        if !self.aborted.load(Ordering::Acquire) {
            return None;
        }
        self.abort.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    /// What the supervisor saw of `endpoint`'s death, if it died (a
    /// quick look first: asked on every send).
    #[inline]
    fn failure(&self, endpoint: usize) -> Option<String> {
        if !self.any_failed.load(Ordering::Acquire) {
            return None;
        }
        self.failure_of(endpoint)
    }
    #[cold]
    fn failure_of(&self, endpoint: usize) -> Option<String> {
        let f = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        f.iter()
            .find(|(e, _)| *e == endpoint)
            .map(|(_, m)| m.clone())
    }
}

impl super::Notices for Shared {
    fn peer_failed(&self, endpoint: usize, message: &str) {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((endpoint, message.to_string()));
        self.any_failed.store(true, Ordering::Release);
    }
    fn aborted(&self, endpoint: usize, message: &str) {
        self.set_abort(endpoint, message);
    }
}

/// One process's endpoint of an MPI job.
pub struct MpiEndpoint {
    me: usize,
    n: usize,
    /// The most ranks on one node and the fewest cores of a rank, agreed
    /// by every rank at start-up (collective selection's inputs).
    node_size: usize,
    cores: usize,
    comm: Handle,
    ours: bool,
    posted: RefCell<VecDeque<Posted>>,
    in_flight: RefCell<Vec<Arc<InFlight>>>,
    queue: RefCell<VecDeque<Frame>>,
    /// The buffer of the next eager frame: reused while MPI completes each
    /// one at once (it copies short messages out before `MPI_Isend`
    /// returns), handed to the send in flight when it does not.
    scratch: RefCell<Vec<u8>>,
    /// Peers whose goodbye has come, with every user message they sent.
    finished: RefCell<Vec<bool>>,
    /// The user context on MPI's matching (`user.rs`; boxed, as every
    /// transport's endpoint shares one enum).
    u: Box<user::UserSide>,
    shared: Arc<Shared>,
    /// The job's supervisor (`hypercomm run --transport mpi`), if any.
    supervisor: RefCell<Option<Box<dyn super::Supervisor>>>,
    protocol: RefCell<Option<String>>,
    closed: Cell<bool>,
    /// Questions and answers: what the peers wait for, deadlocks
    /// (`deadlock.rs`; boxed, as every transport's endpoint shares one
    /// enum).
    census: Box<deadlock::Census>,
    /// The library's collectives, per communicator context.
    pub(crate) native: native::Natives,
}

fn protocol(peer: usize, what: impl std::fmt::Display) -> String {
    format!("endpoint {peer} sent a malformed MPI message: {what}")
}

impl MpiEndpoint {
    /// Join the MPI job this process belongs to (initialising MPI unless
    /// the program did).
    pub(crate) fn new() -> Result<MpiEndpoint> {
        let w = sys::init()?;
        let user = sys::comm_dup(&w.comm)?;
        let bulk = sys::comm_dup(&w.comm)?;
        let tag_ub = sys::tag_ub(&user)?;
        let e = MpiEndpoint {
            me: w.rank,
            n: w.size,
            node_size: w.node_size,
            cores: w.cores,
            comm: w.comm,
            ours: w.ours,
            posted: RefCell::new(VecDeque::with_capacity(POSTED)),
            in_flight: RefCell::new(Vec::new()),
            queue: RefCell::new(VecDeque::new()),
            scratch: RefCell::new(Vec::new()),
            finished: RefCell::new(vec![false; w.size]),
            u: Box::new(user::UserSide {
                user,
                bulk,
                tag_ub,
                tally: RefCell::new(user::Tally::new(w.size)),
                keys: RefCell::new(vec![0; w.size]),
                direct: RefCell::new(user::DirectRecv::new()),
            }),
            shared: Arc::new(Shared::default()),
            supervisor: RefCell::new(None),
            protocol: RefCell::new(None),
            closed: Cell::new(false),
            census: Box::new(deadlock::Census::new(w.size)),
            native: native::Natives::default(),
        };
        for _ in 0..POSTED {
            let mut p = Posted {
                req: Box::new(Handle::zeroed()),
                buf: vec![0u8; Header::SIZE + EAGER].into_boxed_slice(),
            };
            // SAFETY: the buffer and request are boxed and kept in
            // `posted` until `shut_down` cancels and frees the request.
            unsafe { sys::recv_init(&e.comm, &mut p.buf, TAG_FRAME, &mut p.req) }?;
            e.post(&mut p)?;
            e.posted.borrow_mut().push_back(p);
        }
        Ok(e)
    }

    /// Report to `sup` from now on; its notices reach us through the
    /// returned handle.
    pub(crate) fn supervise(&self, sup: Box<dyn super::Supervisor>) -> Arc<Shared> {
        *self.supervisor.borrow_mut() = Some(sup);
        self.shared.clone()
    }

    /// This job's private communicator.
    pub(crate) fn comm(&self) -> &Handle {
        &self.comm
    }

    /// Start `p`'s persistent receive (again).
    fn post(&self, p: &mut Posted) -> Result<()> {
        // SAFETY: set up by `sys::recv_init` on this boxed buffer, which is
        // not touched while the receive is started.
        unsafe { sys::start(&mut p.req) }
    }

    fn fail_protocol(&self, msg: String) {
        eprintln!("hypercomm: {msg}");
        self.protocol.borrow_mut().get_or_insert(msg);
    }

    /// Whether a blocking receive's fast path may look now: not after
    /// close, nor while frames queued before wait for the general path
    /// (then a receive posted on `user` for it is withdrawn).
    fn may_look(&self) -> bool {
        if self.closed.get() || !self.queue.borrow().is_empty() {
            self.end_direct();
            return false;
        }
        true
    }

    /// Test the sends in flight, if any, on a look at the user context
    /// (each test drives MPI's progress).
    fn test_in_flight(&self) {
        if !self.in_flight.borrow().is_empty() {
            self.test_sends();
        }
    }

    /// Test sends in flight and take every frame and user message that has
    /// arrived, in order; returns whether anything arrived.
    fn progress(&self) -> bool {
        let mut any = self.progress_frames();
        while self.arrive_user(None).is_some() {
            any = true;
        }
        any
    }

    /// [`MpiEndpoint::progress`] of sends and frames only.
    fn progress_frames(&self) -> bool {
        self.test_sends();
        let mut any = false;
        while self.arrive(None).is_some() {
            any = true;
        }
        any
    }

    /// Poll until something arrives (or a peer's question is answered and
    /// a deadlock declared), for at most [`POLL`] or until `deadline`.
    fn poll_wait(&self, deadline: Option<Instant>) {
        let start = Instant::now();
        loop {
            // A user message that came stays for the engine's next look,
            // which offers it to its posted receives (taken here, one
            // would be copied twice).
            if self.closed.get()
                || self.progress_frames()
                || self.user_waiting()
                || !self.queue.borrow().is_empty()
                || self.shared.aborted.load(Ordering::Acquire)
                || self.census.declared()
                || self.census.stirred()
            {
                return;
            }
            let now = Instant::now();
            if now - start >= POLL || deadline.is_some_and(|d| now >= d) {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Forget the sends MPI is done with (the engine has news then: a
    /// wait returns).
    fn test_sends(&self) {
        let mut f = self.in_flight.borrow_mut();
        let before = f.len();
        f.retain(|f| !matches!(f.test(), Ok(true)));
        if f.len() != before {
            self.census.stir();
        }
    }

    fn control(&self, kind: Kind, dst: usize, id: u64, body: &[u8]) -> Frame {
        Frame {
            header: Header {
                kind,
                flags: 0,
                src: self.me as u32,
                dst: dst as u32,
                context: 0,
                tag: 0,
                id,
                len: body.len() as u64,
            },
            payload: Payload::copy_of(body),
        }
    }

    /// Cancel the posted receives, free our communicators (a program that
    /// initialised MPI itself goes on with it) and finalise MPI (when
    /// ours).
    fn shut_down(&self) {
        self.free_natives();
        self.end_direct();
        for p in self.posted.borrow_mut().iter_mut() {
            // SAFETY: a persistent receive started by `post` and not
            // completed; its buffer outlives it.
            unsafe { sys::cancel(&mut p.req) };
        }
        self.posted.borrow_mut().clear();
        for c in [&self.u.user, &self.u.bulk, &self.comm] {
            // SAFETY: made by `new` and freed only here; `close`, the one
            // caller, runs once and nothing sends or receives after it.
            if let Err(e) = unsafe { sys::comm_free(c) } {
                eprintln!("hypercomm: {e}");
            }
        }
        if self.ours {
            if let Err(e) = sys::finalize() {
                eprintln!("hypercomm: {e}");
            }
        }
    }
}

/// A taker offered only whole messages: its claims are refused, so a
/// message that streams in is queued as a frame ([`Transport::take_from`]).
struct Whole<'a, 'b>(pub(super) &'a mut (dyn Taker + 'b));

impl Taker for Whole<'_, '_> {
    fn take(&mut self, header: &Header, bytes: &[u8]) -> bool {
        self.0.take(header, bytes)
    }
}

impl Transport for MpiEndpoint {
    fn endpoint(&self) -> usize {
        self.me
    }
    fn endpoints(&self) -> usize {
        self.n
    }

    fn send(&self, frame: Frame) -> Result<()> {
        let dst = frame.header.dst as usize;
        if dst >= self.n {
            return Err(Error::Protocol(format!(
                "frame for endpoint {dst}, but the job has {}",
                self.n
            )));
        }
        if dst == self.me {
            let Frame { header, payload } = frame;
            let Some(payload) = payload.detach() else {
                // The sender withdrew the buffer: nothing to send.
                return Ok(());
            };
            self.queue.borrow_mut().push_back(Frame { header, payload });
            return Ok(());
        }
        self.send_to(dst, frame)
    }

    #[inline]
    fn send_copied(&self, header: Header, data: &[u8]) -> Result<bool> {
        let dst = header.dst as usize;
        if self.peer_state(dst) != PeerState::Alive {
            return Ok(false);
        }
        if dst == self.me || data.len() > EAGER {
            let payload = Payload::copy_of(data);
            return self.send(Frame { header, payload }).map(|()| true);
        }
        if header.kind == Kind::Data && header.context == 0 {
            return self.send_user_copied(dst, header, data).map(|()| true);
        }
        // Header and bytes straight into the frame message: no frame.
        self.census.sending(dst, header.kind);
        let mut buf = self.scratch_with(&header.encode(), data.len());
        buf.extend_from_slice(data);
        self.send_eager(&self.comm, TAG_FRAME, dst, buf)
            .map(|()| true)
    }

    fn try_recv(&self) -> Option<Frame> {
        if let Some(f) = self.queue.borrow_mut().pop_front() {
            return Some(f);
        }
        if self.closed.get() {
            return None;
        }
        self.progress();
        self.queue.borrow_mut().pop_front()
    }

    fn try_recv_offer(&self, taker: &mut dyn Taker) -> Arrival {
        // Frames queued before go first (order per sender).
        if let Some(f) = self.queue.borrow_mut().pop_front() {
            return Arrival::Frame(f);
        }
        if self.closed.get() {
            return Arrival::Nothing;
        }
        self.test_sends();
        // Frames, then user messages (their orders are independent).
        loop {
            match self.arrive(Some(&mut *taker)) {
                None => break,
                Some(Some(a)) => return a,
                Some(None) => {
                    if let Some(f) = self.queue.borrow_mut().pop_front() {
                        return Arrival::Frame(f);
                    }
                    // A control message, acted on: look again.
                }
            }
        }
        loop {
            match self.arrive_user(Some(&mut *taker)) {
                None => return Arrival::Nothing,
                Some(Some(a)) => return a,
                Some(None) => {
                    if let Some(f) = self.queue.borrow_mut().pop_front() {
                        return Arrival::Frame(f);
                    }
                }
            }
        }
    }

    fn take_from(&self, src: Option<usize>, taker: &mut dyn Taker) -> Direct {
        // Frames queued before go first: `try_recv_offer`'s.
        if !self.may_look() {
            return Direct::Other;
        }
        // The user context: MPI matches (`user.rs`).
        if let Some((0, tag)) = taker.wants() {
            self.test_in_flight();
            return self.take_direct(src, tag, taker);
        }
        // Sends in flight want the general path's progress.
        if !self.in_flight.borrow().is_empty() {
            return Direct::Other;
        }
        // All frame messages come through the same wildcard receives, in
        // order: the next one is the head of every source's channel, `src`'s
        // included (or of any source's, `src` being `None`). One `taker`
        // does not take (from elsewhere, a control message, one that
        // streams in) goes to the queue or is acted on, and the general
        // path goes on from there.
        match self.arrive(Some(&mut Whole(taker))) {
            None => Direct::Empty,
            Some(Some(Arrival::Taken)) => Direct::Taken,
            // `Whole` claims no buffer, so no other arrival can come back.
            Some(_) => Direct::Other,
        }
    }

    fn take_plain(&self, src: usize, tag: u32, dst: &mut [u8], polls: u32) -> Plain {
        if !self.may_look() {
            return Plain::Other;
        }
        self.test_in_flight();
        self.take_plain_user(src, tag, dst, polls)
    }

    fn take_from_end(&self) {
        self.end_take();
    }

    fn wait(&self, deadline: Option<Instant>) {
        self.census.settle();
        if deadline.is_none() {
            if !self.block() {
                return;
            }
            self.in_wait(true);
            if !self.look_for_deadlock() {
                self.poll_wait(None);
            }
            self.in_wait(false);
        } else {
            self.poll_wait(deadline);
        }
    }

    fn set_waiting(&self, what: Option<&str>) {
        self.census.set_waiting(what);
    }

    fn deadlock(&self) -> Option<String> {
        self.deadlock_report()
    }

    #[inline]
    fn peer_state(&self, endpoint: usize) -> PeerState {
        match self.finished.borrow().get(endpoint) {
            None => PeerState::Failed(format!("no endpoint {endpoint} in this job")),
            Some(true) => PeerState::Finished,
            Some(false) => match self.shared.failure(endpoint) {
                Some(m) => PeerState::Failed(m),
                None => PeerState::Alive,
            },
        }
    }

    #[inline]
    fn faulted(&self) -> bool {
        self.protocol.borrow().is_some() || self.shared.aborted.load(Ordering::Acquire)
    }

    fn fault(&self) -> Option<Fault> {
        if let Some(m) = self.protocol.borrow().clone() {
            return Some(Fault::Protocol(m));
        }
        self.shared
            .abort()
            .map(|(endpoint, message)| Fault::Aborted { endpoint, message })
    }

    fn abort(&self, message: &str) {
        if !self.shared.set_abort(self.me, message) {
            return;
        }
        for j in (0..self.n).filter(|&j| j != self.me) {
            let f = self.control(Kind::Abort, j, 0, message.as_bytes());
            let _ = self.send_to(j, f);
        }
        if let Some(s) = self.supervisor.borrow().as_ref() {
            s.aborting(message);
        }
    }

    fn close(&self, outcome: std::result::Result<(), String>) {
        if self.closed.replace(true) {
            return;
        }
        if let Err(why) = &outcome {
            eprintln!(
                "hypercomm: rank {} failed ({why}); aborting the MPI job",
                self.me
            );
            if let Some(s) = self.supervisor.borrow_mut().take() {
                s.finished(&outcome);
            }
            sys::abort(&self.comm, 1);
        }
        for j in (0..self.n).filter(|&j| j != self.me) {
            // It says how many user messages we sent (`user.rs`).
            let sent = self.u.tally.borrow().sent[j];
            let f = self.control(Kind::Goodbye, j, sent, &[]);
            if let Err(e) = self.send_to(j, f) {
                eprintln!("hypercomm: saying goodbye to {j}: {e}");
            }
        }
        // Drain: every peer's goodbye, every send done. Frames that nobody
        // will read are dropped.
        let mut polls = 0u32;
        loop {
            self.progress();
            self.queue.borrow_mut().clear();
            let all_gone = self
                .finished
                .borrow()
                .iter()
                .enumerate()
                .all(|(j, &f)| f || j == self.me || self.shared.failure(j).is_some());
            if all_gone && self.in_flight.borrow().is_empty() {
                break;
            }
            if self.protocol.borrow().is_some() {
                break;
            }
            polls += 1;
            if polls < 1000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        if let Some(s) = self.supervisor.borrow_mut().take() {
            s.finished(&outcome);
        }
        self.shut_down();
    }

    fn link(&self) -> Link {
        Link {
            kind: Some(TransportKind::Mpi),
            // Seed 001's model, with a small start-up for an MPI library's
            // shared-memory or RDMA path.
            ts: 2e-6,
            tw: 0.2e-9,
            shared_memory: false,
            ranks_per_node: self.node_size,
            cores_per_node: self.cores,
        }
    }

    fn describe_waits(&self) -> String {
        self.waits_of_others()
    }

    fn native(&self) -> Option<&dyn super::native::Native> {
        Some(self)
    }
}

impl Drop for MpiEndpoint {
    fn drop(&mut self) {
        let outcome = if std::thread::panicking() {
            Err("panicked".to_string())
        } else {
            Ok(())
        };
        self.close(outcome);
    }
}
