//! The thread transport: every endpoint is a thread of this process.
//!
//! Every ordered pair of endpoints that has exchanged a message has its own
//! lock-free single-producer single-consumer queue (`spsc.rs`); a receiver
//! polls the queues of the senders that have written to it. Short payloads
//! travel inline in the frame, so a small message costs no allocation, no
//! lock and no shared counter; a data message of up to 8 bytes is written
//! as its header and bytes only, in the same cache line as the slot's
//! sequence number. The receiver offers an inline message to the engine's
//! posted receives where it lies in the queue
//! ([`Transport::try_recv_offer`]), so a waiting receive gets it without a
//! trip through the unexpected queue, and never writes to a slot. Senders
//! unpark a receiver only if it is asleep. Large messages travel as
//! borrowed payloads (the receiver copies straight out of the sender's
//! buffer) or handed-off vectors (no copy).
//!
//! Failure: when an endpoint's closure panics or returns an error, `close`
//! marks it failed and wakes everyone; the engine turns that into
//! `PeerFailed` for operations that need it (`liveness.rs`).
//!
//! Deadlock: every endpoint counts the frames it sends and takes in and
//! publishes them, with an epoch, when it blocks in a wait with no
//! deadline; the endpoint that blocks last finds the whole job blocked
//! with nothing in flight and declares the deadlock
//! (`transport/deadlock.rs`, `liveness.rs`).
//!
//! Files: `mod.rs` (the job, the endpoint, sending and receiving),
//! `spsc.rs` (the queue), `liveness.rs` (peer states, abort, what each
//! endpoint waits for), `setup.rs` (builders for a job of threads).
//!
//! What a receiver holds for each sender is bounded by the engine's flow
//! control (credit per receiver, given back as receives take messages),
//! the same for every transport.
//!
//! Not done yet: binding rank threads to cores.

mod liveness;
pub(crate) mod setup;
mod spsc;

pub use setup::ThreadBuilder;

use super::board::{Board, BoardLocal};
use super::{Arrival, Direct, Fault, Frame, Link, Payload, PeerState, Taker, Transport};
use crate::error::Result;
use crate::wire::{Header, Kind};
use spsc::{Popped, Spsc};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const ALIVE: u8 = 0;
const FINISHED: u8 = 1;
const FAILED: u8 = 2;

/// Longest single sleep; bounds the cost of any missed wake-up.
const MAX_SLEEP: Duration = Duration::from_millis(20);

struct Slot {
    /// Queues from each sender that has ever sent here (sender endpoint, queue).
    incoming: Mutex<Vec<(usize, Arc<Spsc>)>>,
    /// Bumped whenever `incoming` grows, so the receiver re-reads it.
    generation: AtomicUsize,
    state: AtomicU8,
    failure: Mutex<Option<String>>,
    sleeping: AtomicBool,
    thread: Mutex<Option<std::thread::Thread>>,
    waiting: Mutex<Option<String>>,
    /// Deadlock detection (`liveness.rs`, `transport/deadlock.rs`): odd
    /// while blocked in a wait with no deadline.
    epoch: AtomicU64,
    /// Frames sent and drained, as of the last block or the end.
    sent: AtomicU64,
    drained: AtomicU64,
    /// The job's `ends` when this endpoint last blocked.
    ends_seen: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these short locks cannot leave the data
    // inconsistent (every critical section is a single push/assign).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shared state of a job whose endpoints are threads.
pub struct ThreadJob {
    slots: Vec<CachePadded<Slot>>,
    aborted: Mutex<Option<(usize, String)>>,
    abort_flag: AtomicBool,
    /// Endpoints that have ended so far.
    ends: AtomicU64,
    /// Endpoints in a blocked wait, counted before their epoch turns odd
    /// and until after it turns even again: with `ends`, at least the
    /// number the deadlock detector would find quiet, so that it reads
    /// every endpoint only when all may be (with a thousand threads, each
    /// blocked wait reading every endpoint took most of a barrier's time).
    blocked: AtomicU64,
    /// A declared deadlock: each endpoint's blocked epoch (0: not in it)
    /// and what every endpoint waited for.
    deadlock: Mutex<Option<(Vec<u64>, String)>>,
    /// Lends between the job's threads that ended, and that were seen to.
    lends: Arc<crate::transport::LendCount>,
    /// The board of small collectives (`transport/board.rs`).
    board: Box<[AtomicU64]>,
}

impl ThreadJob {
    /// A job with `endpoints` endpoints.
    pub fn new(endpoints: usize) -> Arc<ThreadJob> {
        Arc::new(ThreadJob {
            slots: (0..endpoints)
                .map(|_| {
                    CachePadded::new(Slot {
                        incoming: Mutex::new(Vec::new()),
                        generation: AtomicUsize::new(0),
                        state: AtomicU8::new(ALIVE),
                        failure: Mutex::new(None),
                        sleeping: AtomicBool::new(false),
                        thread: Mutex::new(None),
                        waiting: Mutex::new(None),
                        epoch: AtomicU64::new(0),
                        sent: AtomicU64::new(0),
                        drained: AtomicU64::new(0),
                        ends_seen: AtomicU64::new(0),
                    })
                })
                .collect(),
            aborted: Mutex::new(None),
            abort_flag: AtomicBool::new(false),
            ends: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
            deadlock: Mutex::new(None),
            lends: Arc::default(),
            board: crate::transport::board::board_memory(endpoints),
        })
    }

    /// The endpoint `me`, to be created on the thread that will use it.
    pub fn endpoint(self: &Arc<Self>, me: usize) -> ThreadEndpoint {
        *lock(&self.slots[me].thread) = Some(std::thread::current());
        ThreadEndpoint {
            job: self.clone(),
            me,
            out: RefCell::new(vec![None; self.slots.len()]),
            incoming: RefCell::default(),
            seen_generation: Cell::new(usize::MAX),
            next_poll: Cell::new(0),
            sent: Cell::new(0),
            drained: Cell::new(0),
            last_epoch: Cell::new(0),
            ends_seen: Cell::new(0),
            board: BoardLocal::default(),
        }
    }

    fn wake_all(&self) {
        for s in &self.slots {
            if let Some(t) = lock(&s.thread).as_ref() {
                t.unpark();
            }
        }
    }
}

/// The queues an endpoint consumes. (Boxed slices: the endpoint is a
/// variant of [`crate::transport::AnyTransport`], kept small.)
#[derive(Default)]
struct Incoming {
    /// In the order their senders first sent (polled round robin).
    polled: Box<[Arc<Spsc>]>,
    /// By sender (a receive from one sender polls its queue alone).
    from: Box<[Option<Arc<Spsc>>]>,
}

/// One thread's endpoint.
pub struct ThreadEndpoint {
    job: Arc<ThreadJob>,
    me: usize,
    /// Queue to each destination, once used (this endpoint is its producer).
    out: RefCell<Vec<Option<Arc<Spsc>>>>,
    /// The incoming queues (this endpoint is their consumer).
    incoming: RefCell<Incoming>,
    seen_generation: Cell<usize>,
    next_poll: Cell<usize>,
    /// Frames handed to live receivers and frames taken in (deadlock
    /// detection counts them).
    sent: Cell<u64>,
    drained: Cell<u64>,
    /// The epoch of this endpoint's last blocked wait.
    last_epoch: Cell<u64>,
    /// The job's `ends` when this endpoint's engine last had a look.
    ends_seen: Cell<u64>,
    /// This endpoint's bookkeeping of its board buffers.
    board: BoardLocal,
}

impl ThreadEndpoint {
    /// The queue from this endpoint to `dst`, created on first use.
    fn queue_to(&self, dst: usize) -> Arc<Spsc> {
        if let Some(q) = &self.out.borrow()[dst] {
            return q.clone();
        }
        let q = Arc::new(Spsc::new());
        let slot = &self.job.slots[dst];
        lock(&slot.incoming).push((self.me, q.clone()));
        slot.generation.fetch_add(1, Ordering::SeqCst);
        self.out.borrow_mut()[dst] = Some(q.clone());
        q
    }

    /// Write into the queue to `dst` with `push`, then wake the receiver
    /// if it sleeps; whether it was written. When the receiver has ended,
    /// `push` is dropped uncalled (and with it what it carries).
    #[inline(always)]
    fn put(&self, dst: usize, push: impl FnOnce(&Spsc)) -> bool {
        let slot = &self.job.slots[dst];
        if slot.state.load(Ordering::Acquire) != ALIVE {
            // Dropped: a borrowed payload reports DROPPED to its sender.
            return false;
        }
        {
            let out = self.out.borrow();
            if let Some(q) = &out[dst] {
                push(q);
            } else {
                drop(out);
                push(&self.queue_to(dst));
            }
        }
        self.sent.set(self.sent.get() + 1);
        // Pairs with the fence in `wait`: either the receiver sees the frame
        // before it sleeps, or we see that it sleeps and wake it.
        fence(Ordering::SeqCst);
        if slot.sleeping.load(Ordering::Relaxed) {
            if let Some(t) = lock(&slot.thread).as_ref() {
                t.unpark();
            }
        }
        true
    }

    /// Refresh the list of incoming queues if a sender added one.
    #[inline(always)]
    fn refresh(&self) {
        let g = self.job.slots[self.me].generation.load(Ordering::Acquire);
        if g != self.seen_generation.get() {
            self.reload(g);
        }
    }

    /// Read the list of incoming queues as of generation `g` (rare: once
    /// per new sender).
    #[cold]
    #[inline(never)]
    fn reload(&self, g: usize) {
        let list = lock(&self.job.slots[self.me].incoming);
        let mut from = vec![None; self.job.slots.len()];
        for (src, q) in list.iter() {
            from[*src] = Some(q.clone());
        }
        *self.incoming.borrow_mut() = Incoming {
            polled: list.iter().map(|(_, q)| q.clone()).collect(),
            from: from.into_boxed_slice(),
        };
        self.seen_generation.set(g);
    }

    #[inline(always)]
    fn anything_waiting(&self) -> bool {
        self.refresh();
        // SAFETY: this endpoint is the only consumer of its incoming queues.
        self.incoming
            .borrow()
            .polled
            .iter()
            .any(|q| !unsafe { q.is_empty() })
    }

    /// The next frame from the incoming queues, round robin from the last
    /// one that had something, shown to `used` in place first
    /// ([`Spsc::pop_unless`]).
    #[inline]
    fn poll(&self, mut used: impl FnMut(&Header, &[u8]) -> bool) -> Popped {
        self.refresh();
        let incoming = self.incoming.borrow();
        let polled = &incoming.polled;
        let n = polled.len();
        let start = self.next_poll.get();
        for k in 0..n {
            let i = (start + k) % n;
            // SAFETY: this endpoint is the only consumer of its queues.
            match unsafe { polled[i].pop_unless(&mut used) } {
                Popped::Nothing => continue,
                got => {
                    self.next_poll.set(i);
                    self.drained.set(self.drained.get() + 1);
                    return got;
                }
            }
        }
        Popped::Nothing
    }

    fn drain_incoming(&self) {
        self.refresh();
        for q in self.incoming.borrow().polled.iter() {
            // SAFETY: this endpoint is the only consumer of its queues.
            while let Some(f) = unsafe { q.pop() } {
                self.drained.set(self.drained.get() + 1);
                drop(f);
            }
        }
    }
}

impl Transport for ThreadEndpoint {
    #[inline]
    fn endpoint(&self) -> usize {
        self.me
    }
    #[inline]
    fn endpoints(&self) -> usize {
        self.job.slots.len()
    }

    #[inline]
    fn send(&self, frame: Frame) -> Result<()> {
        let dst = frame.header.dst as usize;
        // SAFETY: `put` calls it with the queue this endpoint produces into.
        self.put(dst, |q| unsafe { q.push(frame) });
        Ok(())
    }

    #[inline]
    fn send_copied(&self, header: Header, data: &[u8]) -> Result<bool> {
        let dst = header.dst as usize;
        if data.len() <= spsc::SHORT && header.kind == Kind::Data {
            // SAFETY: as in `send`.
            return Ok(self.put(dst, |q| unsafe { q.push_short(&header, data) }));
        }
        // The copy is made only for a live receiver (inside `push`).
        let push = |q: &Spsc| {
            let payload = Payload::copy_of(data);
            // SAFETY: as in `send`.
            unsafe { q.push(Frame { header, payload }) }
        };
        Ok(self.put(dst, push))
    }

    #[inline]
    fn try_recv_offer(&self, taker: &mut dyn Taker) -> Arrival {
        // A short message is offered where it lies in the queue.
        match self.poll(|h, b| h.kind == Kind::Data && taker.take(h, b)) {
            Popped::Nothing => Arrival::Nothing,
            Popped::Frame(f) => Arrival::Frame(f),
            Popped::Used => Arrival::Taken,
        }
    }

    #[inline]
    fn take_from(&self, src: Option<usize>, taker: &mut dyn Taker) -> Direct {
        self.refresh();
        let incoming = self.incoming.borrow();
        let mut offer = |q: &Spsc| {
            // SAFETY: this endpoint is the only consumer of its queues.
            match unsafe { q.take_if(|h, b| h.kind == Kind::Data && taker.take(h, b)) } {
                None => Direct::Empty,
                Some(true) => {
                    self.drained.set(self.drained.get() + 1);
                    Direct::Taken
                }
                Some(false) => Direct::Other,
            }
        };
        if let Some(src) = src {
            return match incoming.from.get(src).and_then(Option::as_ref) {
                Some(q) => offer(q),
                None => Direct::Empty, // nothing from `src` yet
            };
        }
        // Any source: the queues in the general poll's order, from where
        // it left off; a message to this endpoint itself is the general
        // path's.
        let own = incoming.from.get(self.me).and_then(Option::as_ref);
        let polled = &incoming.polled;
        let n = polled.len();
        let start = self.next_poll.get();
        for k in 0..n {
            let i = (start + k) % n;
            let q = &polled[i];
            let got = if own.is_some_and(|o| Arc::ptr_eq(o, q)) {
                // SAFETY: as above.
                match unsafe { q.is_empty() } {
                    true => Direct::Empty,
                    false => Direct::Other,
                }
            } else {
                offer(q)
            };
            match got {
                Direct::Empty => {}
                Direct::Taken => {
                    // The next look starts after it, as a fair poll would.
                    self.next_poll.set((i + 1) % n);
                    return Direct::Taken;
                }
                Direct::Other => return Direct::Other,
            }
        }
        Direct::Empty
    }

    #[inline]
    fn idle(&self) -> bool {
        !self.anything_waiting()
    }

    #[inline]
    fn try_recv(&self) -> Option<Frame> {
        match self.poll(|_, _| false) {
            Popped::Frame(f) => Some(f),
            _ => None,
        }
    }

    fn wait(&self, deadline: Option<Instant>) {
        let slot = &self.job.slots[self.me];
        // With no deadline this wait may be part of a deadlock.
        let blocked = match deadline {
            None => match self.block() {
                Some(b) => b,
                None => return, // a peer ended: let the engine look first
            },
            Some(_) => false,
        };
        slot.sleeping.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        // The last to block finds (and declares) a deadlock: no sleep then.
        let quiet = !self.anything_waiting() && !self.job.abort_flag.load(Ordering::SeqCst);
        let sleep = quiet && !(blocked && self.job.declare_deadlock());
        if sleep {
            let mut d = MAX_SLEEP;
            if let Some(dl) = deadline {
                d = d.min(dl.saturating_duration_since(Instant::now()));
            }
            if !d.is_zero() {
                std::thread::park_timeout(d);
            }
        }
        slot.sleeping.store(false, Ordering::Relaxed);
        if blocked {
            slot.epoch.fetch_add(1, Ordering::SeqCst);
            self.job.blocked.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn peer_state(&self, endpoint: usize) -> PeerState {
        self.job.peer_state(endpoint)
    }

    fn fault(&self) -> Option<Fault> {
        self.aborted()
            .map(|(endpoint, message)| Fault::Aborted { endpoint, message })
    }

    #[inline]
    fn faulted(&self) -> bool {
        self.job.abort_flag.load(Ordering::Acquire)
    }

    fn abort(&self, message: &str) {
        self.job.abort(self.me, message);
    }

    fn link(&self) -> Link {
        Link {
            kind: Some(super::TransportKind::Thread),
            ts: 0.5e-6,
            tw: 0.1e-9,
            shared_memory: true,
            ranks_per_node: self.job.slots.len(),
            cores_per_node: super::cores(),
        }
    }

    fn set_waiting(&self, what: Option<&str>) {
        *lock(&self.job.slots[self.me].waiting) = what.map(str::to_owned);
    }

    #[inline]
    fn board(&self) -> Option<Board<'_>> {
        Board::new(&self.job.board, &self.board, self.me, self.job.slots.len())
    }

    fn lend_count(&self) -> Option<Arc<crate::transport::LendCount>> {
        Some(self.job.lends.clone())
    }

    fn deadlock(&self) -> Option<String> {
        self.job.deadlock_of(self.me, self.last_epoch.get())
    }

    fn describe_waits(&self) -> String {
        self.job.describe_waits(self.me)
    }

    fn close(&self, outcome: std::result::Result<(), String>) {
        let slot = &self.job.slots[self.me];
        // Drop undelivered frames so that senders of borrowed data wake up,
        // and publish the final counts before the end is visible.
        self.drain_incoming();
        slot.sent.store(self.sent.get(), Ordering::SeqCst);
        slot.drained.store(self.drained.get(), Ordering::SeqCst);
        match outcome {
            Ok(()) => {
                if slot.state.load(Ordering::Acquire) == ALIVE {
                    slot.state.store(FINISHED, Ordering::Release);
                    self.job.ends.fetch_add(1, Ordering::SeqCst);
                }
            }
            Err(m) => self.job.mark_failed(self.me, m),
        }
        // Frames that came while the end became visible.
        self.drain_incoming();
        slot.drained.store(self.drained.get(), Ordering::SeqCst);
        *lock(&slot.thread) = None;
        self.job.wake_all();
    }
}

/// A value alone on its cache lines (128 bytes: two 64-byte lines, as
/// adjacent-line prefetchers fetch pairs), so that two ends written by
/// different threads never share a line.
#[repr(align(128))]
pub(crate) struct CachePadded<T>(T);

impl<T> CachePadded<T> {
    /// Pad `v`.
    pub(crate) const fn new(v: T) -> CachePadded<T> {
        CachePadded(v)
    }
}

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for CachePadded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
