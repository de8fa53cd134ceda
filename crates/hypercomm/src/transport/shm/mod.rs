//! The shared-memory transport: endpoints are processes on one machine.
//!
//! **Segment.** [`create_segment`] makes an anonymous memory file (memfd):
//! there is no name in `/dev/shm`, so nothing can be left behind, whatever
//! happens; the kernel frees it when the last process holding it ends. The
//! launcher creates it and passes the descriptor to the ranks
//! (`HYPERCOMM_SHM_FD`, taken with [`fd_from_env`]); each rank maps it with
//! [`ShmEndpoint::attach`]. The layout is in `segment.rs`.
//!
//! **Small messages** travel through a lock-free single-producer
//! single-consumer ring per ordered pair of endpoints: 4096 cells of 32
//! bytes (two to a cache line). A message is a record — a control word
//! carrying the record's ring position, kind and length, then the encoded
//! wire header ([`crate::wire::Header`]) and the payload — that takes
//! whole cells, so small messages follow one another in consecutive
//! cells. A plain data message that fits one record (no synchronous send)
//! goes as a *short* record instead, whose 16-byte header holds only the
//! context and the tag (the ring names the sender and the receiver, the
//! record's length the payload's): up to 8 bytes of payload are one cell,
//! up to 40 two, and the reader has no wire header to decode. The reader
//! polls the control word of the next record of each peer; the writer
//! publishes a record with one release store. A record holds at most 4 088
//! bytes after its control word (4 072 of payload in a short record, 4 040
//! after a whole header); longer payloads continue in further records (any
//! size, pipelined: the reader drains records while the writer fills
//! them). A record that starts near the end of the cells runs on into 4
//! KiB of slack after them, so every record is contiguous. A record
//! takes one cell or whole lines (a longer one starts on a line, after a
//! pad cell when needed). Only a record's first cell holds a control
//! word: the reader clears the first word of each further line of a
//! record before it frees it, and a writer that puts a one-cell record in
//! a line's first half clears the second half's, so that data is never
//! taken for a record. When a ring is full, frames wait in a
//! per-destination queue of the sender that every later call (send,
//! receive, wait, close) pushes on; the reader raises the writer when it
//! frees cells the writer asked for. A lent buffer streamed this way
//! completes when the reader has taken its last record out of the ring,
//! not when it is written, so a sender of above-eager messages cannot run
//! unboundedly ahead of its receiver.
//!
//! **Large messages** are copied once: the sender lends its buffer (the
//! engine's [`crate::transport::Borrowed`] / [`crate::transport::Completion`]
//! protocol, its state kept in a lend slot of the segment, see `lend.rs`) and
//! the receiver copies straight from the sender's address space into the
//! user's buffer with `process_vm_readv` (from 128 KiB; from 32 KiB in a
//! window of sends — the ring to the reader is full, holds records it has
//! not taken, or frames wait for it, or a buffer of ours is still being read —
//! where a copy through the ring costs the sender's core too and two cores
//! copying both ways halved the rate). Whether that works is detected once
//! per process at attach (a read of our own memory; also
//! `PR_SET_PTRACER_ANY` so Yama allows our siblings) and published in the
//! endpoint record; when it does not (or `HYPERCOMM_SHM_CMA=0`), large
//! messages are copied through the ring instead (two copies,
//! pipelined). Vectors handed off with `send_vec` are lent the same way.
//!
//! **Waiting.** The engine spins and yields first; the transport then
//! blocks on a futex word in the endpoint's record. A sender raises the
//! receiver only when its "sleeping" flag is set (a store, a fence and a
//! load on the fast path; no system call unless the peer sleeps), so 8 or 16
//! processes on 2 cores make progress.
//!
//! **Failure.** `close(Ok)` / `close(Err)` set the endpoint's state word
//! (FINISHED / FAILED with the message); `abort` writes the job's abort word
//! and message and wakes everyone. A process killed with `kill -9` can do
//! neither: a rank that waits on a peer checks the peer's pidfd every 50 ms
//! (at most 50 ms of sleep between checks) and, when the process has ended,
//! marks it FAILED for everyone, so `PeerFailed` arrives well within a
//! second.
//!
//! **Deadlock.** As between threads (`transport/deadlock.rs`): each
//! endpoint publishes its counts of frames sent and taken in, an epoch and
//! the job's count of ended endpoints in its record when it blocks in a
//! wait with no deadline; the last to block finds every endpoint blocked
//! (and, asking the kernel through the pidfds, alive) with nothing in
//! flight, writes the deadlock into the segment and wakes everyone.
//!
//! **Files**: `mod.rs` (the endpoint and its `Transport` impl),
//! `segment.rs` (the segment's layout), `ring.rs` (rings and the send
//! queue), `read.rs` (reading the rings), `lend.rs` (lent buffers across
//! processes), `wake.rs` (futex waits and wake-ups), `liveness.rs` (peer
//! states, pidfd checks, abort),
//! `setup.rs` (making the segment, joining a launched job), `sys.rs` (the
//! system calls).
//!
//! **Eager fast path.** A message whose header and payload fit one record
//! (up to 4 072 bytes; a synchronous one up to 4 040) is written into it
//! in one go when nothing waits in the queue to its receiver
//! ([`Transport::send_copied`]), and a reader
//! offers it, straight from the ring, to the engine's posted receives
//! before building any frame ([`Transport::try_recv_offer`]): a receive
//! already waiting gets one copy, from the ring into its buffer. A
//! blocking receive from one sender with nothing else posted polls that
//! sender's ring alone and takes such a record there
//! ([`Transport::take_from`]), without the engine's general wait.
//!
//! **Streams into posted receives.** A message longer than a record (an
//! eager one is written into its records straight from the sender's buffer
//! when the ring has room for all of it) is offered at its first record to
//! the posted receives ([`Taker::claim`]); one that
//! matches and can hold it gets every record copied straight into its
//! buffer. A receive withdrawn midway takes its buffer back
//! ([`Transport::unclaim`]): what was written is copied out and the
//! message finishes in a vector, as one that found no receive does.
//!
//! Not done yet: a message that arrives before its receive is posted is
//! still reassembled into a vector before the copy into the receiver's
//! buffer; a reduction does not combine records as they arrive; chunked single-copy
//! reads that overlap with the receiver's own work; huge pages; collectives
//! through the segment itself (flags and data slots per rank) instead of
//! messages.

mod lend;
mod liveness;
mod read;
mod ring;
mod segment;
pub(crate) mod setup;
mod sys;
#[cfg(test)]
mod tests;
mod wake;

pub use setup::{create_segment, fd_from_env, share_with_children, ShmBuilder, SHM_FD};

use super::board::{Board, BoardLocal};
use super::{
    Arrival, Borrowed, Direct, Fault, Frame, Link, PeerState, Supervisor, Taker, Transport,
    TransportKind,
};
use crate::error::io_err;
use crate::error::{Error, Result};
use crate::wire::Header;
use ring::{In, Out, OwnedLend};
use segment::{Mapping, SLOT_DATA, S_ALIVE, S_FINISHED, S_MARKING, S_UNATTACHED};
use std::cell::{Cell, RefCell};
use std::os::fd::OwnedFd;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest single sleep; bounds the cost of a missed wake-up and the delay
/// of a liveness check.
const MAX_SLEEP: Duration = Duration::from_millis(50);
/// Jobs with more endpoints than this have a doorbell per endpoint: a
/// waiting reader looks at one word instead of a ring per peer (16 ranks
/// on 2 cores spent a quarter of their time reading rings). Smaller jobs
/// poll the rings directly, which keeps a small message to one cache line.
const DOORBELL_MIN: usize = 4;

/// How often a waiting rank checks that a peer process still exists.
const LIVENESS_EVERY: Duration = Duration::from_millis(50);
/// Borrowed buffers at least this long are read with `process_vm_readv`;
/// shorter ones are copied through the ring straight from the lent buffer
/// (two pipelined copies beat the system call's fixed cost up to here)
/// unless the ring is busy (see [`CMA_BUSY_MIN`]).
const CMA_MIN: usize = 128 * 1024;
/// Borrowed buffers at least this long are read with `process_vm_readv`
/// in a window of sends both ways: when the reader has sent us records we
/// have not read yet (traffic both ways), and the ring to it has no room
/// for all of them, holds records it has not taken yet, or frames wait for
/// it, or a buffer this process lent is still being read (a message that
/// found the ring empty between two of a window's sends streamed, and in
/// `bibw` of 64 KiB some hundreds of them did). A copy through the ring then
/// costs the sender's core as much as the reader's, whose core copies the
/// other way too, while the reader's single copy leaves the sender free.
/// One way only (`bw`), both cores are free to copy and the ring is about
/// twice as fast (BENCHMARKS.md); a lone message (a ping-pong, a
/// broadcast) streams too.
const CMA_BUSY_MIN: usize = 32 * 1024;
/// Longest spin while a reader copies one of our buffers.
const COPY_SPIN: Duration = Duration::from_millis(2);
/// Handed-off vectors at least this long are lent (single copy).
const LEND_VEC_MIN: usize = 16 * 1024;

/// One process's endpoint of a shared-memory job. See the module docs.
pub struct ShmEndpoint {
    map: Arc<Mapping>,
    me: usize,
    n: usize,
    cma: bool,
    out: RefCell<Vec<Out>>,
    inc: RefCell<Vec<In>>,
    /// Frames waiting in `out` queues (all destinations).
    queued: Cell<usize>,
    owned: RefCell<Vec<OwnedLend>>,
    /// Lent buffers streamed whole into a ring, completed only once the
    /// reader has taken them out (`unpulled_reap`): (reader, ring position
    /// after the last slot, completion, length).
    unpulled: RefCell<Vec<(usize, u64, Borrowed, usize)>>,
    /// Buffers for the copies of messages that wait in a queue (boxed:
    /// the endpoint is a variant of `AnyTransport`, kept small).
    spare: Box<RefCell<ring::Spare>>,
    lend_cursor: Cell<usize>,
    next_poll: Cell<usize>,
    /// Whether this endpoint ever sent itself a frame (until then its own
    /// ring is not polled: one ring fewer per pass of every wait).
    to_self: Cell<bool>,
    /// Doorbell value before the last scan of the rings that found them
    /// empty (jobs of more than `DOORBELL_MIN` endpoints).
    bell_seen: Cell<u64>,
    /// The last scan stopped at a frame: scan again whatever the doorbell.
    rescan: Cell<bool>,
    /// When each peer's process was last checked (`sys::coarse_nanos`).
    last_check: RefCell<Vec<u64>>,
    pidfds: RefCell<Vec<Option<OwnedFd>>>,
    closed: Cell<bool>,
    warned: Cell<bool>,
    /// The job's supervisor (a launcher), when there is one.
    supervisor: RefCell<Option<Box<dyn Supervisor>>>,
    /// Frames handed to live receivers and frames taken in (deadlock
    /// detection counts them, `liveness.rs`).
    sent: Cell<u64>,
    drained: Cell<u64>,
    /// The epoch of this endpoint's last blocked wait.
    last_epoch: Cell<u64>,
    /// The job's count of ended endpoints when the engine last looked.
    ends_seen: Cell<u64>,
    /// This endpoint's bookkeeping of its board buffers.
    board: BoardLocal,
    /// [`Link::cores_per_node`]: the job's agreed figure once joined, this
    /// process's until then.
    cores: Cell<usize>,
}

impl super::board::PeerRead for ShmEndpoint {
    fn read_peer(&self, e: usize, addr: usize, out: &mut [u8]) -> std::io::Result<()> {
        let pid = self.map.pid(e).load(Ordering::Relaxed) as i32;
        sys::read_remote(pid, addr, out)
    }
}

impl ShmEndpoint {
    /// Map the segment `fd` (made by [`create_segment`] for `endpoints`
    /// endpoints) and join as endpoint `me`.
    pub fn attach(fd: OwnedFd, endpoints: usize, me: usize) -> Result<ShmEndpoint> {
        if me >= endpoints {
            return Err(Error::InvalidArgument {
                op: "shm attach",
                what: format!("endpoint {me} of a job with {endpoints} endpoints"),
            });
        }
        let len = segment::segment_len(endpoints);
        let st = rustix::fs::fstat(&fd)
            .map_err(|e| io_err("shm attach: fstat", std::io::Error::from(e)))?;
        if st.st_size as u64 != len as u64 {
            return Err(Error::InvalidArgument {
                op: "shm attach",
                what: format!(
                    "the segment has {} bytes, a job of {endpoints} endpoints needs {len}",
                    st.st_size
                ),
            });
        }
        let map = Mapping::map(fd, len, endpoints).map_err(|e| io_err("shm attach: mmap", e))?;
        map.check_header()
            .map_err(|e| io_err("shm attach: header", e))?;
        let cma = std::env::var("HYPERCOMM_SHM_CMA").map_or(true, |v| v.trim() != "0")
            && sys::enable_cma();
        map.pid(me).store(std::process::id(), Ordering::Relaxed);
        map.cma(me).store(cma as u32, Ordering::Relaxed);
        if map
            .state(me)
            .compare_exchange(S_UNATTACHED, S_ALIVE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::InvalidArgument {
                op: "shm attach",
                what: format!("endpoint {me} is already attached (or has ended)"),
            });
        }
        map.populate_rings(me);
        let inc = (0..endpoints)
            .map(|src| In {
                ring: map.ring(src, me),
                ..In::default()
            })
            .collect();
        Ok(ShmEndpoint {
            map: Arc::new(map),
            me,
            n: endpoints,
            cma,
            out: RefCell::new((0..endpoints).map(|_| Out::default()).collect()),
            inc: RefCell::new(inc),
            queued: Cell::new(0),
            owned: RefCell::new(Vec::new()),
            unpulled: RefCell::new(Vec::new()),
            spare: Box::default(),
            lend_cursor: Cell::new(0),
            next_poll: Cell::new(0),
            to_self: Cell::new(false),
            bell_seen: Cell::new(u64::MAX),
            rescan: Cell::new(true),
            last_check: RefCell::new(vec![sys::coarse_nanos(); endpoints]),
            pidfds: RefCell::new((0..endpoints).map(|_| None).collect()),
            closed: Cell::new(false),
            warned: Cell::new(false),
            supervisor: RefCell::new(None),
            sent: Cell::new(0),
            drained: Cell::new(0),
            last_epoch: Cell::new(0),
            ends_seen: Cell::new(0),
            board: BoardLocal::default(),
            cores: Cell::new(super::cores()),
        })
    }

    /// Whether large messages from this process are read with
    /// `process_vm_readv` (single copy).
    pub fn single_copy(&self) -> bool {
        self.cma
    }

    // ------------------------------------------------------------- sending

    /// `send_copied` through a frame (the ring is busy or the payload
    /// needs more than one slot).
    fn send_copied_slow(&self, header: Header, data: &[u8]) -> Result<bool> {
        let dst = header.dst as usize;
        if dst < self.n && !self.receiver_open(dst) {
            return Ok(false);
        }
        self.send(Frame {
            header,
            payload: self.queued_copy(data),
        })
        .map(|()| true)
    }

    /// Still worth sending to (not finished or failed)?
    fn receiver_open(&self, dst: usize) -> bool {
        matches!(
            self.map.state(dst).load(Ordering::Acquire),
            S_UNATTACHED | S_ALIVE | S_MARKING
        )
    }

    // ----------------------------------------------------------- receiving

    /// Nothing to flush or reap, and no slot waiting in any ring (or, in a
    /// larger job, the doorbell unchanged since a scan found them empty):
    /// what [`ShmEndpoint::next_arrival`] would find out the long way.
    #[inline]
    fn nothing_to_do(&self) -> bool {
        if self.queued.get() > 0
            || !self.owned.borrow().is_empty()
            || !self.unpulled.borrow().is_empty()
        {
            return false;
        }
        if self.n > DOORBELL_MIN {
            return !self.rescan.get()
                && self.map.doorbell(self.me).load(Ordering::Acquire) == self.bell_seen.get();
        }
        let to_self = self.to_self.get();
        !(0..self.n).any(|src| (src != self.me || to_self) && self.slot_waiting(src))
    }

    /// The next arrival from any ring (round robin), offered to `offer`.
    #[inline]
    fn next_arrival(&self, mut offer: ring::Offer<'_, '_>) -> Option<Arrival> {
        if self.queued.get() > 0 {
            self.flush();
        }
        if !self.owned.borrow().is_empty() {
            self.reap_owned();
        }
        if !self.unpulled.borrow().is_empty() {
            self.unpulled_reap();
        }
        if self.n > DOORBELL_MIN && !self.rescan.get() {
            // Writers ring after publishing slots: an unchanged doorbell
            // means every ring is as empty as at the last scan.
            let bell = self.map.doorbell(self.me).load(Ordering::Acquire);
            if bell == self.bell_seen.get() {
                return None;
            }
            self.bell_seen.set(bell);
        }
        let to_self = self.to_self.get();
        let mut src = self.next_poll.get();
        for _ in 0..self.n {
            if (src != self.me || to_self) && self.slot_waiting(src) {
                if let Some(f) = self.poll_ring(src, offer.as_deref_mut()) {
                    self.next_poll.set(src);
                    self.rescan.set(true);
                    self.drained.set(self.drained.get() + 1);
                    return Some(f);
                }
            }
            src += 1;
            if src == self.n {
                src = 0;
            }
        }
        self.rescan.set(false);
        None
    }

    // ------------------------------------------------------------- failure

    // ---------------------------------------------------------- diagnostics
}

impl Transport for ShmEndpoint {
    #[inline]
    fn endpoint(&self) -> usize {
        self.me
    }

    #[inline]
    fn endpoints(&self) -> usize {
        self.n
    }

    fn send(&self, frame: Frame) -> Result<()> {
        let dst = frame.header.dst as usize;
        if dst == self.me {
            self.to_self.set(true);
        }
        if dst >= self.n {
            return Err(Error::InvalidArgument {
                op: "send",
                what: format!("endpoint {dst} of a job with {} endpoints", self.n),
            });
        }
        if !self.receiver_open(dst) {
            // Dropped: a borrowed payload reports DROPPED to its sender.
            return Ok(());
        }
        self.sent.set(self.sent.get() + 1);
        let mut outs = self.out.borrow_mut();
        let o = &mut outs[dst];
        let was_empty = o.queue.is_empty();
        let len = frame.payload.len();
        let busy = len >= CMA_BUSY_MIN
            && self.sent_us_unread(dst)
            && (!was_empty
                || self.map.lends_out.load(Ordering::Relaxed) > 0
                || !self.ring_empty(dst, &mut o.ring)
                || !self.has_room(dst, &mut o.ring, false, len));
        let mut item = self.prepare(frame, busy);
        if was_empty {
            // Nothing queued before it: write straight into the ring (the
            // common case; no trip through the queue).
            let start = o.ring.tail;
            let all = self.write_item(dst, &mut o.ring, &mut item);
            if o.ring.tail != start {
                self.wake_receiver(dst);
            }
            if all {
                self.written(dst, item);
                return Ok(());
            }
        }
        o.queue.push_back(item);
        self.queued.set(self.queued.get() + 1);
        if was_empty {
            // The ring filled up: the queue's protocol (ask the reader to
            // raise us when it frees slots) takes over.
            self.drain_queue(dst, o);
        }
        Ok(())
    }

    #[inline]
    fn try_recv(&self) -> Option<Frame> {
        match self.next_arrival(None) {
            Some(Arrival::Frame(f)) => Some(f),
            _ => None,
        }
    }

    #[inline]
    fn try_recv_offer(&self, taker: &mut dyn Taker) -> Arrival {
        self.next_arrival(Some(taker)).unwrap_or(Arrival::Nothing)
    }

    #[inline]
    fn take_from(&self, src: Option<usize>, taker: &mut dyn Taker) -> Direct {
        match src {
            Some(src) => self.take_next_from(src, taker),
            None => self.take_next_any(taker),
        }
    }

    #[inline]
    fn idle(&self) -> bool {
        self.nothing_to_do()
    }

    fn unclaim(&self, src: usize) {
        self.unclaim_from(src);
    }

    fn send_copied(&self, header: Header, data: &[u8]) -> Result<bool> {
        let dst = header.dst as usize;
        if dst >= self.n {
            return self.send_copied_slow(header, data);
        }
        if !self.receiver_open(dst) {
            return Ok(false);
        }
        if dst == self.me {
            self.to_self.set(true);
        }
        let mut outs = self.out.borrow_mut();
        let o = &mut outs[dst];
        let short = ring::short_form(&header, data.len());
        if !o.queue.is_empty() || !self.has_room(dst, &mut o.ring, short, data.len()) {
            drop(outs);
            return self.send_copied_slow(header, data);
        }
        // Nothing queued and room for all of it: header and payload go
        // into their slots in one go, no frame built (and, for a message
        // longer than a slot, no copy of it made first).
        self.sent.set(self.sent.get() + 1);
        if short {
            self.put_slot(dst, &mut o.ring, ring::K_SHORT, Some(&header), data);
            self.wake_receiver(dst);
            return Ok(true);
        }
        let first = data.len().min(SLOT_DATA - Header::SIZE);
        self.put_slot(
            dst,
            &mut o.ring,
            ring::K_FIRST,
            Some(&header),
            &data[..first],
        );
        if data.len() > first {
            for rest in data[first..].chunks(SLOT_DATA) {
                self.put_slot(dst, &mut o.ring, ring::K_CONT, None, rest);
            }
        }
        self.wake_receiver(dst);
        Ok(true)
    }

    fn wait(&self, deadline: Option<Instant>) {
        // A reader is copying one of our lent buffers right now: it will be
        // done within microseconds, sooner than a futex round trip.
        if self.copy_under_way() {
            let until = Instant::now() + COPY_SPIN;
            while self.copy_under_way() && !self.ready() && Instant::now() < until {
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
                std::thread::yield_now();
            }
            return;
        }
        // With no deadline this wait may be part of a deadlock.
        let blocked = match deadline {
            None => match self.block() {
                Some(b) => b,
                None => return, // a peer ended: let the engine look first
            },
            Some(_) => false,
        };
        let futex = self.map.futex(self.me);
        let v = futex.load(Ordering::Acquire);
        self.map.sleeping(self.me).store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        // The last to block finds (and declares) a deadlock: no sleep then.
        let quiet = !self.ready();
        let sleep = quiet && !(blocked && self.declare_deadlock());
        if sleep {
            let mut d = MAX_SLEEP;
            if let Some(dl) = deadline {
                d = d.min(dl.saturating_duration_since(Instant::now()));
            }
            if !d.is_zero() {
                sys::futex_wait(futex, v, d);
            }
        }
        self.map.sleeping(self.me).store(0, Ordering::Relaxed);
        if blocked {
            self.map.epoch(self.me).fetch_add(1, Ordering::SeqCst);
        }
    }

    fn peer_state(&self, ep: usize) -> PeerState {
        let st = self.state_of(ep);
        if st != PeerState::Alive || ep == self.me || ep >= self.n {
            return st;
        }
        {
            let mut last = self.last_check.borrow_mut();
            let now = sys::coarse_nanos();
            if now.saturating_sub(last[ep]) < LIVENESS_EVERY.as_nanos() as u64 {
                return st;
            }
            last[ep] = now;
        }
        if self.map.state(ep).load(Ordering::Acquire) == S_ALIVE && self.process_ended(ep) {
            let pid = self.map.pid(ep).load(Ordering::Relaxed);
            self.mark_failed(
                ep,
                &format!("process {pid} ended without finishing (killed or crashed)"),
            );
        }
        self.state_of(ep)
    }

    fn fault(&self) -> Option<Fault> {
        self.aborted()
            .map(|(endpoint, message)| Fault::Aborted { endpoint, message })
    }

    #[inline]
    fn faulted(&self) -> bool {
        self.map.abort().load(Ordering::Acquire) >= 2
    }

    fn link(&self) -> Link {
        Link {
            kind: Some(TransportKind::Shm),
            ts: 0.6e-6,
            tw: 0.12e-9,
            shared_memory: true,
            ranks_per_node: self.n,
            cores_per_node: self.cores.get(),
        }
    }

    #[inline]
    fn board(&self) -> Option<Board<'_>> {
        let b = Board::new(self.map.board(), &self.board, self.me, self.n)?;
        // Lends where the segment's creator allowed them (the same answer
        // on every endpoint, whenever it asks).
        Some(if self.map.board_lends() {
            b.with_reader(self)
        } else {
            b
        })
    }

    fn set_waiting(&self, what: Option<&str>) {
        self.map.set_waiting(self.me, what.unwrap_or(""));
    }

    fn deadlock(&self) -> Option<String> {
        self.deadlock_report()
    }

    fn describe_waits(&self) -> String {
        self.waits_of_others()
    }

    fn abort(&self, message: &str) {
        liveness::set_abort(&self.map, self.me, message);
        if let Some(s) = self.supervisor.borrow().as_ref() {
            s.aborting(message);
        }
    }

    fn close(&self, outcome: std::result::Result<(), String>) {
        if self.closed.replace(true) {
            return;
        }
        // The counts as they stand at the end (deadlock detection).
        self.map
            .sent(self.me)
            .store(self.sent.get(), Ordering::SeqCst);
        self.map
            .drained(self.me)
            .store(self.drained.get(), Ordering::SeqCst);
        match &outcome {
            Ok(()) => {
                // Deliver what still waits for ring space, and keep lent
                // vectors alive, while the receivers are there to take them.
                loop {
                    self.flush();
                    self.reap_owned();
                    if self.queued.get() == 0 && self.owned.borrow().is_empty() {
                        break;
                    }
                    if self.aborted().is_some() {
                        break;
                    }
                    // Notice receivers that died meanwhile.
                    for dst in 0..self.n {
                        let _ = self.peer_state(dst);
                    }
                    self.wait(Some(Instant::now() + MAX_SLEEP));
                }
                self.map
                    .sent(self.me)
                    .store(self.sent.get(), Ordering::SeqCst);
                if self
                    .map
                    .state(self.me)
                    .compare_exchange(S_ALIVE, S_FINISHED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    self.map.ends().fetch_add(1, Ordering::SeqCst);
                }
            }
            Err(m) => {
                // Frames still queued for a full ring (a report of the
                // root cause among them) go out if they fit now.
                self.flush();
                self.mark_failed(self.me, m)
            }
        }
        self.drain_incoming();
        self.map
            .drained(self.me)
            .store(self.drained.get(), Ordering::SeqCst);
        self.wake_all();
        if let Some(s) = self.supervisor.borrow_mut().take() {
            s.finished(&outcome);
        }
    }
}

impl Drop for ShmEndpoint {
    fn drop(&mut self) {
        // Leaving without `close` is a normal finish (like MPI_Finalize at
        // exit) unless we are unwinding; a process that dies is noticed
        // through its pidfd instead.
        if std::thread::panicking() {
            self.close(Err("panicked".to_string()));
        } else {
            self.close(Ok(()));
        }
    }
}
