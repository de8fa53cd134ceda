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
//! single-consumer ring per ordered pair of endpoints: fixed slots of 4 KiB
//! whose first word carries a sequence number, so the reader polls one word
//! of one slot per peer and the writer publishes a message with one release
//! store. A slot holds the encoded wire header ([`crate::wire::Header`]) and
//! up to 4040 payload bytes; longer payloads continue in the following slots
//! (any size, pipelined: the reader drains slots while the writer fills
//! them). When a ring is full, frames wait in a per-destination queue of the
//! sender that every later call (send, receive, wait, close) pushes on; the
//! reader raises the writer when it frees slots the writer asked for. A lent
//! buffer streamed this way completes when the reader has taken its last
//! slot out of the ring, not when it is written, so a sender of
//! above-eager messages cannot run unboundedly ahead of its receiver.
//!
//! **Large messages** are copied once: the sender lends its buffer (the
//! engine's [`crate::transport::Borrowed`] / [`crate::transport::Completion`]
//! protocol, its state kept in a lend slot of the segment, see `lend.rs`) and
//! the receiver copies straight from the sender's address space into the
//! user's buffer with `process_vm_readv`. Whether that works is detected once
//! per process at attach (a read of our own memory; also
//! `PR_SET_PTRACER_ANY` so Yama allows our siblings) and published in the
//! endpoint record; when it does not (or `HYPERCOMM_SHM_CMA=0`), large
//! messages are copied through the ring slots instead (two copies,
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
//! Not done yet: a receiver-side zero-allocation path for mid-sized eager
//! messages (they are copied out of the ring into a vector first); chunked
//! single-copy reads that overlap with the receiver's own work; huge pages.

mod lend;
mod segment;
mod sys;

use super::{Borrowed, Frame, Lent, OwnedBytes, Payload, PeerState, Transport, DONE, PENDING};
use crate::comm::Comm;
use crate::engine::{env_timeout, Engine};
use crate::error::{Error, Result};
use crate::launch::control::{self, Ctl};
use crate::rank::Rank;
use crate::run::BoxError;
use crate::transport::AnyTransport;
use crate::wire::Header;
use segment::{Mapping, SLOTS, SLOT_DATA, S_ALIVE, S_FAILED, S_FINISHED, S_MARKING, S_UNATTACHED};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::net::TcpStream;
use std::os::fd::{FromRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Longest single sleep; bounds the cost of a missed wake-up and the delay
/// of a liveness check.
const MAX_SLEEP: Duration = Duration::from_millis(50);
/// Jobs with more endpoints than this have a doorbell per endpoint: a
/// waiting reader looks at one word instead of a ring per peer (16 ranks
/// on 2 cores spent a quarter of their time reading rings). Smaller jobs
/// poll the rings directly, which keeps a message to one cache line.
const DOORBELL_MIN: usize = 4;

/// How often a waiting rank checks that a peer process still exists.
const LIVENESS_EVERY: Duration = Duration::from_millis(50);
/// Borrowed buffers at least this long are read with `process_vm_readv`;
/// shorter ones are copied through the ring straight from the lent buffer
/// (two pipelined copies beat the system call's fixed cost up to here).
const CMA_MIN: usize = 128 * 1024;
/// Longest spin while a reader copies one of our buffers.
const COPY_SPIN: Duration = Duration::from_millis(2);
/// Handed-off vectors at least this long are lent (single copy).
const LEND_VEC_MIN: usize = 16 * 1024;

/// Slot kinds (in the control word).
const K_FIRST: u64 = 1;
const K_CONT: u64 = 2;
const K_RNDV: u64 = 3;
/// The rest of a partly written message will not come (sender withdrew).
const K_CANCEL: u64 = 4;
/// Bytes of a rendezvous record: header, address, slot, pad, generation.
const RNDV_LEN: usize = Header::SIZE + 24;

fn ctrl(seq: u64, kind: u64, used: usize) -> u64 {
    (seq as u32 as u64) | kind << 32 | (used as u64) << 40
}

fn io_err(op: &str, e: io::Error) -> Error {
    Error::Io {
        op: op.to_string(),
        message: e.to_string(),
    }
}

/// Create the shared segment for a job of `endpoints` endpoints (nodes plus
/// host): an initialised memfd, close-on-exec (clear the flag, or `dup2`
/// it, for the children that should inherit it).
pub fn create_segment(endpoints: usize) -> io::Result<OwnedFd> {
    segment::create(endpoints)
}

/// Let child processes inherit `fd` (clears close-on-exec). A launcher calls
/// it on the segment before spawning the ranks and passes the number in
/// `HYPERCOMM_SHM_FD`.
pub fn share_with_children(fd: &impl std::os::fd::AsFd) -> io::Result<()> {
    Ok(rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?)
}

static FD_TAKEN: AtomicBool = AtomicBool::new(false);

/// Take the segment descriptor the launcher passed in `HYPERCOMM_SHM_FD`.
///
/// Checks that the number names an open memfd made by [`create_segment`]
/// and marks it close-on-exec. Succeeds once per process.
pub fn fd_from_env() -> Result<OwnedFd> {
    let bad = |what: String| Error::InvalidArgument {
        op: "HYPERCOMM_SHM_FD",
        what,
    };
    let s = std::env::var("HYPERCOMM_SHM_FD")
        .map_err(|_| bad("is not set (start the program with `hypercomm run`)".into()))?;
    let raw: i32 = s
        .trim()
        .parse()
        .ok()
        .filter(|&v| v >= 0)
        .ok_or_else(|| bad(format!("{s:?} is not a file descriptor number")))?;
    let target = std::fs::read_link(format!("/proc/self/fd/{raw}"))
        .map_err(|e| bad(format!("descriptor {raw} is not open: {e}")))?;
    if !target.to_string_lossy().starts_with("/memfd:hypercomm-shm") {
        return Err(bad(format!(
            "descriptor {raw} is {}, not a hypercomm segment",
            target.display()
        )));
    }
    if FD_TAKEN.swap(true, Ordering::SeqCst) {
        return Err(bad("the descriptor was already taken".into()));
    }
    // SAFETY: the descriptor is open (checked above), was handed to this
    // process by its launcher for exactly this purpose, and is owned by
    // nothing else here: FD_TAKEN lets only one caller take it.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let _ = rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC);
    Ok(fd)
}

/// Attach to a segment as endpoint `me` of `nodes` nodes (plus the host when
/// `host`), run `f` with the world communicator, and leave the job: a normal
/// finish when `f` returns `Ok`, a failure (seen by the peers) otherwise.
/// A panic in `f` marks the endpoint failed and continues unwinding.
///
/// This is what a launched process does (`hypercomm::init` builds on the
/// same pieces); tests use it to start ranks as real processes.
pub fn run_process<R, E, F>(fd: OwnedFd, nodes: usize, host: bool, me: usize, f: F) -> Result<R>
where
    E: Into<BoxError>,
    F: FnOnce(&Comm) -> std::result::Result<R, E>,
{
    let endpoints = nodes + host as usize;
    let ep = ShmEndpoint::attach(fd, endpoints, me)?;
    let engine = Rc::new(Engine::new(AnyTransport::Shm(ep), env_timeout()?));
    let comm = Comm::world(engine.clone(), nodes, host);
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&comm)));
    match res {
        Ok(Ok(v)) => {
            engine.t.close(Ok(()));
            Ok(v)
        }
        Ok(Err(e)) => {
            let e: BoxError = e.into();
            engine.t.close(Err(e.to_string()));
            match e.downcast::<Error>() {
                Ok(e) => Err(*e),
                Err(e) => Err(Error::RankFailed {
                    rank: if host && me == nodes {
                        Rank::Host
                    } else {
                        Rank::Node(me)
                    },
                    message: e.to_string(),
                }),
            }
        }
        Err(p) => {
            let msg = if let Some(s) = p.downcast_ref::<&str>() {
                format!("panicked: {s}")
            } else if let Some(s) = p.downcast_ref::<String>() {
                format!("panicked: {s}")
            } else {
                "panicked".to_string()
            };
            engine.t.close(Err(msg));
            std::panic::resume_unwind(p)
        }
    }
}

/// Bump `e`'s futex word and wake it if it sleeps (for rare events: the
/// bump alone makes a sleep that is about to start return at once).
fn wake_always(map: &Mapping, e: usize) {
    map.futex(e).fetch_add(1, Ordering::SeqCst);
    if map.sleeping(e).load(Ordering::SeqCst) != 0 {
        sys::futex_wake(map.futex(e));
    }
}

/// Wake every endpoint of the job.
fn wake_all(map: &Mapping) {
    for e in 0..map.endpoints {
        wake_always(map, e);
    }
}

/// Mark `ep` failed with `message` (unless it already ended) and wake all.
fn mark_failed(map: &Mapping, ep: usize, message: &str) {
    let st = map.state(ep);
    if st
        .compare_exchange(S_ALIVE, S_MARKING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
        || st
            .compare_exchange(S_UNATTACHED, S_MARKING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        map.set_failure(ep, message);
        st.store(S_FAILED, Ordering::Release);
        wake_all(map);
    }
}

/// Record that `ep` aborted the job (the first abort wins) and wake all.
fn set_abort(map: &Mapping, ep: usize, message: &str) {
    let a = map.abort();
    if a.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        map.set_abort_text(message);
        a.store(2 + ep as u32, Ordering::Release);
    }
    wake_all(map);
}

/// A frame waiting to be written into a ring.
enum Outgoing {
    /// Header and payload, `off` payload bytes written so far.
    Frame {
        header: Header,
        payload: Payload,
        off: usize,
        started: bool,
    },
    /// A lent buffer: only its address travels; `keep` holds a handed-off
    /// vector alive until the reader is done.
    Rndv {
        header: Header,
        addr: usize,
        slot: usize,
        gen: u64,
        keep: Option<Box<dyn OwnedBytes>>,
    },
}

/// Producer side of one ring.
#[derive(Default)]
struct RingOut {
    /// Slots written so far.
    tail: u64,
    /// Last head (slots freed by the reader) seen.
    head_seen: u64,
}

#[derive(Default)]
struct Out {
    ring: RingOut,
    queue: VecDeque<Outgoing>,
}

/// Consumer side of one ring.
#[derive(Default)]
struct In {
    head: u64,
    partial: Option<(Header, Vec<u8>)>,
}

/// A handed-off vector lent to a reader.
struct OwnedLend {
    reader: usize,
    slot: usize,
    gen: u64,
    _keep: Box<dyn OwnedBytes>,
}

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
    lend_cursor: Cell<usize>,
    next_poll: Cell<usize>,
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
    /// The launcher's control connection, when started by `hypercomm run`.
    control: RefCell<Option<TcpStream>>,
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
        let st = rustix::fs::fstat(&fd).map_err(|e| io_err("shm attach: fstat", e.into()))?;
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
        Ok(ShmEndpoint {
            map: Arc::new(map),
            me,
            n: endpoints,
            cma,
            out: RefCell::new((0..endpoints).map(|_| Out::default()).collect()),
            inc: RefCell::new((0..endpoints).map(|_| In::default()).collect()),
            queued: Cell::new(0),
            owned: RefCell::new(Vec::new()),
            unpulled: RefCell::new(Vec::new()),
            lend_cursor: Cell::new(0),
            next_poll: Cell::new(0),
            bell_seen: Cell::new(u64::MAX),
            rescan: Cell::new(true),
            last_check: RefCell::new(vec![sys::coarse_nanos(); endpoints]),
            pidfds: RefCell::new((0..endpoints).map(|_| None).collect()),
            closed: Cell::new(false),
            warned: Cell::new(false),
            control: RefCell::new(None),
        })
    }

    /// Keep the launcher's control connection (after the table arrived):
    /// abort and close are reported on it, and the launcher's `Aborted` /
    /// `PeerFailed` messages are written into the segment by a small reader
    /// thread (deaths before a process attached are seen that way).
    pub(crate) fn set_control(&self, ctl: TcpStream) -> Result<()> {
        let mut r = ctl
            .try_clone()
            .map_err(|e| io_err("shm: control connection", e))?;
        let map = self.map.clone();
        let me = self.me;
        std::thread::Builder::new()
            .name(format!("hypercomm-shm-control-{me}"))
            .spawn(move || {
                while let Ok(Some(m)) = control::read(&mut r) {
                    match m {
                        Ctl::Aborted { endpoint, message }
                            if (endpoint as usize) < map.endpoints =>
                        {
                            set_abort(&map, endpoint as usize, &message)
                        }
                        Ctl::PeerFailed { endpoint, message }
                            if (endpoint as usize) < map.endpoints && endpoint as usize != me =>
                        {
                            mark_failed(&map, endpoint as usize, &message)
                        }
                        _ => {}
                    }
                }
            })
            .map_err(|e| io_err("shm: spawning the control thread", e))?;
        *self.control.borrow_mut() = Some(ctl);
        Ok(())
    }

    fn tell_control(&self, m: &Ctl) {
        if let Some(c) = self.control.borrow_mut().as_mut() {
            let _ = control::write(c, m);
        }
    }

    /// Whether large messages from this process are read with
    /// `process_vm_readv` (single copy).
    pub fn single_copy(&self) -> bool {
        self.cma
    }

    // ------------------------------------------------------------- sending

    /// Still worth sending to (not finished or failed)?
    fn receiver_open(&self, dst: usize) -> bool {
        matches!(
            self.map.state(dst).load(Ordering::Acquire),
            S_UNATTACHED | S_ALIVE | S_MARKING
        )
    }

    fn alloc_lend(&self) -> Option<(usize, u64)> {
        let mut c = self.lend_cursor.get();
        let r = lend::alloc(&self.map, self.me, &mut c);
        self.lend_cursor.set(c);
        r
    }

    /// Turn a frame into what goes into the ring: lend large buffers when
    /// the reader can read them, copy everything else.
    fn prepare(&self, frame: Frame) -> Outgoing {
        let header = frame.header;
        let dst = header.dst as usize;
        let can_lend = self.cma && self.map.cma(dst).load(Ordering::Relaxed) != 0;
        let payload = match frame.payload {
            Payload::Borrowed(b) => match &b.lent {
                Lent::Local { ptr, len, done } if can_lend && *len >= CMA_MIN => {
                    match self.alloc_lend() {
                        Some((slot, gen)) => {
                            done.hand_over(Box::new(lend::Lend {
                                map: self.map.clone(),
                                me: self.me,
                                reader: dst,
                                slot,
                                gen,
                                result: OnceLock::new(),
                            }));
                            return Outgoing::Rndv {
                                header,
                                addr: *ptr as usize,
                                slot,
                                gen,
                                keep: None,
                            };
                        }
                        None => Payload::Borrowed(b),
                    }
                }
                // Through the ring, straight from the lent buffer.
                Lent::Local { .. } => Payload::Borrowed(b),
                Lent::Remote(_) => {
                    let mut v = vec![0u8; b.len()];
                    let n = b.copy_into(&mut v).unwrap_or(0);
                    v.truncate(n);
                    Payload::Bytes(v)
                }
            },
            Payload::Vec(v) if can_lend && v.bytes().len() >= LEND_VEC_MIN => {
                match self.alloc_lend() {
                    Some((slot, gen)) => {
                        return Outgoing::Rndv {
                            header,
                            addr: v.bytes().as_ptr() as usize,
                            slot,
                            gen,
                            keep: Some(v),
                        }
                    }
                    None => Payload::Vec(v),
                }
            }
            p => p,
        };
        Outgoing::Frame {
            header,
            payload,
            off: 0,
            started: false,
        }
    }

    /// Is there a free slot in the ring to `dst`?
    #[inline]
    fn has_space(&self, dst: usize, r: &mut RingOut) -> bool {
        if r.tail - r.head_seen < SLOTS as u64 {
            return true;
        }
        r.head_seen = self.map.head(self.me, dst).load(Ordering::Acquire);
        r.tail - r.head_seen < SLOTS as u64
    }

    /// Write one slot of `kind` holding the concatenation of `parts`.
    #[inline]
    fn put_slot(&self, dst: usize, r: &mut RingOut, kind: u64, parts: &[&[u8]]) {
        let off = self.map.slot(self.me, dst, r.tail as usize);
        let used: usize = parts.iter().map(|p| p.len()).sum();
        debug_assert!(used <= SLOT_DATA);
        let data = self.map.bytes(off + 8, used);
        let mut at = 0;
        for p in parts {
            // SAFETY: the slot belongs to the writer (the reader's head has
            // passed it: `has_space`), `data` has room for `used` bytes
            // (bounds checked by `bytes`), and `p` is a separate local slice.
            unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), data.wrapping_add(at), p.len()) };
            at += p.len();
        }
        r.tail += 1;
        self.map
            .at::<AtomicU64>(off)
            .store(ctrl(r.tail, kind, used), Ordering::Release);
    }

    /// Write as much of `item` as fits; true when all of it is written.
    fn write_item(&self, dst: usize, r: &mut RingOut, item: &mut Outgoing) -> bool {
        loop {
            if !self.has_space(dst, r) {
                return false;
            }
            match item {
                Outgoing::Rndv {
                    header,
                    addr,
                    slot,
                    gen,
                    ..
                } => {
                    let mut rec = [0u8; 24];
                    rec[0..8].copy_from_slice(&(*addr as u64).to_le_bytes());
                    rec[8..12].copy_from_slice(&(*slot as u32).to_le_bytes());
                    rec[16..24].copy_from_slice(&gen.to_le_bytes());
                    self.put_slot(dst, r, K_RNDV, &[&header.encode(), &rec]);
                    return true;
                }
                Outgoing::Frame {
                    header,
                    payload,
                    off,
                    started,
                } => {
                    let mut lent = None;
                    let bytes: &[u8] = match payload {
                        Payload::Inline(i) => i.bytes(),
                        Payload::Bytes(b) => b,
                        Payload::Vec(v) => v.bytes(),
                        Payload::Borrowed(b) => match &b.lent {
                            Lent::Local { ptr, len, done } => {
                                if done.state.load(Ordering::Acquire) != PENDING {
                                    // The sender withdrew: end what was begun.
                                    if *started {
                                        self.put_slot(dst, r, K_CANCEL, &[]);
                                    }
                                    return true;
                                }
                                lent = Some(done);
                                // SAFETY: the completion is still pending
                                // (checked just above, and only this thread
                                // could change it before we finish this
                                // call), so the engine keeps the buffer alive
                                // and unmodified.
                                unsafe { std::slice::from_raw_parts(*ptr, *len) }
                            }
                            // `prepare` copies a re-sent remote borrow.
                            Lent::Remote(_) => &[],
                        },
                    };
                    if !*started {
                        let n = bytes.len().min(SLOT_DATA - Header::SIZE);
                        self.put_slot(dst, r, K_FIRST, &[&header.encode(), &bytes[..n]]);
                        *off = n;
                        *started = true;
                    } else {
                        let n = (bytes.len() - *off).min(SLOT_DATA);
                        self.put_slot(dst, r, K_CONT, &[&bytes[*off..*off + n]]);
                        *off += n;
                    }
                    if *off >= bytes.len() {
                        let len = bytes.len();
                        if lent.is_some() {
                            // Not DONE yet: a lent (above-eager) send must
                            // not run ahead of its receiver. Completing here
                            // let a rooted collective (bcast, reduce) send
                            // message after message while the receiver
                            // drained them into ever more unexpected vectors
                            // (hundreds of MB, every page a fresh fault:
                            // 64 KiB bcast 43 µs). Complete it once the
                            // reader's head passes our last slot instead.
                            // (Kept alive: dropping it would report DROPPED.)
                            if let Payload::Borrowed(b) =
                                std::mem::replace(payload, Payload::Bytes(Vec::new()))
                            {
                                self.unpulled.borrow_mut().push((dst, r.tail, b, len));
                            }
                        }
                        return true;
                    }
                }
            }
        }
    }

    /// Raise `dst` if it sleeps (after publishing slots).
    #[inline]
    fn wake_receiver(&self, dst: usize) {
        if self.n > DOORBELL_MIN {
            self.map.doorbell(dst).fetch_add(1, Ordering::Release);
        }
        // Pairs with the fence in `wait`: either the receiver sees our slot
        // before it sleeps, or we see its sleeping flag and wake it.
        fence(Ordering::SeqCst);
        if self.map.sleeping(dst).load(Ordering::Relaxed) != 0 {
            self.map.futex(dst).fetch_add(1, Ordering::SeqCst);
            sys::futex_wake(self.map.futex(dst));
        }
    }

    /// Push the queue to `dst` into its ring as far as it goes.
    fn drain_queue(&self, dst: usize, o: &mut Out) {
        let start = o.ring.tail;
        while let Some(item) = o.queue.front_mut() {
            if self.write_item(dst, &mut o.ring, item) {
                let item = o.queue.pop_front().expect("front exists");
                self.queued.set(self.queued.get() - 1);
                self.written(dst, item);
                continue;
            }
            // Full: ask the reader to raise us when it frees slots, then
            // look once more (it may have freed them meanwhile).
            self.map
                .space_wanted(self.me, dst)
                .store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            o.ring.head_seen = self.map.head(self.me, dst).load(Ordering::Acquire);
            if o.ring.tail - o.ring.head_seen >= SLOTS as u64 {
                break;
            }
        }
        if o.ring.tail != start {
            self.wake_receiver(dst);
        }
    }

    /// An item is fully in the ring: keep a lent vector alive.
    fn written(&self, dst: usize, item: Outgoing) {
        if let Outgoing::Rndv {
            slot,
            gen,
            keep: Some(keep),
            ..
        } = item
        {
            self.owned.borrow_mut().push(OwnedLend {
                reader: dst,
                slot,
                gen,
                _keep: keep,
            });
        }
    }

    /// The receiver is gone: drop what waits for it.
    fn discard(&self, dst: usize, item: Outgoing) {
        if let Outgoing::Rndv { slot, gen, .. } = &item {
            // Nobody will read it: report it dropped to the lender's
            // completion (or to the owned-vector reaper).
            let w = self.map.lend(self.me, *slot).0;
            let _ = w.compare_exchange(
                (gen << 8) | lend::L_PENDING,
                (gen << 8) | lend::L_DROPPED,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        self.written(dst, item);
    }

    /// Push every queue on (dropping those of receivers that are gone).
    fn flush(&self) {
        let mut outs = self.out.borrow_mut();
        for (dst, o) in outs.iter_mut().enumerate() {
            if o.queue.is_empty() {
                continue;
            }
            if !self.receiver_open(dst) {
                while let Some(item) = o.queue.pop_front() {
                    self.queued.set(self.queued.get() - 1);
                    self.discard(dst, item);
                }
                continue;
            }
            self.drain_queue(dst, o);
        }
    }

    /// Free the lend slots of handed-off vectors that were read (or dropped).
    fn reap_owned(&self) {
        let mut owned = self.owned.borrow_mut();
        owned.retain(|l| {
            let fin = lend::state(&self.map, self.me, l.slot, l.gen);
            if fin.is_some() {
                lend::free(&self.map, self.me, l.slot, l.gen);
                return false;
            }
            if !self.receiver_open(l.reader) {
                let _ = lend::revoke(&self.map, self.me, l.slot, l.gen, l.reader);
                return false;
            }
            true
        });
    }

    /// Complete the streamed lent buffers the reader has taken out of the
    /// ring (or that nobody will take: reader gone, sender withdrew).
    fn unpulled_reap(&self) {
        self.unpulled.borrow_mut().retain(|(dst, end, b, len)| {
            let Lent::Local { done, .. } = &b.lent else {
                return false;
            };
            if done.state.load(Ordering::Acquire) != PENDING {
                return false;
            }
            let head = self.map.head(self.me, *dst).load(Ordering::Acquire);
            if head >= *end || !self.receiver_open(*dst) {
                done.taken.store(*len, Ordering::Relaxed);
                done.set(DONE);
                return false;
            }
            true
        });
    }

    /// Is a streamed lent buffer taken out of its ring? Before sleeping:
    /// asks the reader to raise us when it takes slots (`space_wanted`).
    fn unpulled_ready(&self) -> bool {
        self.unpulled.borrow().iter().any(|(dst, end, b, _)| {
            let Lent::Local { done, .. } = &b.lent else {
                return true;
            };
            self.map
                .space_wanted(self.me, *dst)
                .store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            done.state.load(Ordering::Acquire) != PENDING
                || self.map.head(self.me, *dst).load(Ordering::Acquire) >= *end
                || !self.receiver_open(*dst)
        })
    }

    // ----------------------------------------------------------- receiving

    /// Take the frame a slot completes, if any.
    fn take_slot(&self, src: usize, inc: &mut In, kind: u64, data: &[u8]) -> Option<Frame> {
        match kind {
            K_FIRST | K_RNDV => {
                let h = match Header::decode(data) {
                    Ok(h) if h.src as usize == src && h.dst as usize == self.me => h,
                    Ok(h) => {
                        self.protocol(&format!(
                            "frame from endpoint {} to {} arrived in the ring {src} → {}",
                            h.src, h.dst, self.me
                        ));
                        return None;
                    }
                    Err(e) => {
                        self.protocol(&e.to_string());
                        return None;
                    }
                };
                let body = &data[Header::SIZE..];
                // A SyncAck's `len` is a count, not a payload length.
                let len = usize::try_from(h.stream_payload_len()).unwrap_or(usize::MAX);
                if kind == K_RNDV {
                    if body.len() < RNDV_LEN - Header::SIZE {
                        self.protocol("short rendezvous record");
                        return None;
                    }
                    let u64_at =
                        |o: usize| u64::from_le_bytes(body[o..o + 8].try_into().expect("8 bytes"));
                    let slot = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
                    if slot as usize >= segment::LENDS {
                        self.protocol("rendezvous names a lend slot out of range");
                        return None;
                    }
                    let remote = lend::Remote {
                        map: self.map.clone(),
                        lender: src,
                        pid: self.map.pid(src).load(Ordering::Relaxed) as i32,
                        addr: u64_at(0) as usize,
                        len,
                        slot: slot as usize,
                        gen: u64_at(16),
                        settled: false,
                    };
                    return Some(Frame {
                        header: h,
                        payload: Payload::Borrowed(Borrowed::remote(Box::new(remote))),
                    });
                }
                if body.len() >= len {
                    return Some(Frame {
                        header: h,
                        payload: Payload::copy_of(&body[..len]),
                    });
                }
                let mut v = Vec::with_capacity(len.min(64 << 20));
                v.extend_from_slice(body);
                inc.partial = Some((h, v));
                None
            }
            K_CANCEL => {
                inc.partial = None;
                None
            }
            K_CONT => {
                let (h, v) = inc.partial.as_mut()?;
                let total = h.stream_payload_len();
                let need = (total as usize).saturating_sub(v.len());
                v.extend_from_slice(&data[..need.min(data.len())]);
                if v.len() as u64 >= total {
                    let (header, v) = inc.partial.take().expect("present");
                    return Some(Frame {
                        header,
                        payload: Payload::Bytes(v),
                    });
                }
                None
            }
            _ => {
                self.protocol(&format!("unknown slot kind {kind}"));
                None
            }
        }
    }

    fn protocol(&self, what: &str) {
        if !self.warned.replace(true) {
            eprintln!(
                "hypercomm shm endpoint {}: protocol error, frame skipped: {what}",
                self.me
            );
        }
    }

    /// Read the ring from `src` up to the next complete frame.
    #[inline]
    fn poll_ring(&self, src: usize) -> Option<Frame> {
        let mut incs = self.inc.borrow_mut();
        let inc = &mut incs[src];
        let mut consumed = false;
        let out = loop {
            let off = self.map.slot(src, self.me, inc.head as usize);
            let c = self.map.at::<AtomicU64>(off).load(Ordering::Acquire);
            if c as u32 != (inc.head + 1) as u32 {
                break None;
            }
            let kind = (c >> 32) & 0xff;
            let used = ((c >> 40) as usize).min(SLOT_DATA);
            // SAFETY: the control word (acquire) says the writer finished
            // this slot; it will not write it again before we advance the
            // head below, after the last use of `data`.
            let data = unsafe { std::slice::from_raw_parts(self.map.bytes(off + 8, used), used) };
            let f = self.take_slot(src, inc, kind, data);
            inc.head += 1;
            self.map
                .head(src, self.me)
                .store(inc.head, Ordering::Release);
            consumed = true;
            if f.is_some() {
                break f;
            }
        };
        if consumed {
            fence(Ordering::SeqCst);
            let want = self.map.space_wanted(src, self.me);
            if want.load(Ordering::Relaxed) != 0 {
                want.store(0, Ordering::Relaxed);
                wake_always(&self.map, src);
            }
        }
        out
    }

    /// Is a slot waiting in the ring from `src`?
    #[inline]
    fn ring_ready(&self, src: usize) -> bool {
        let head = self.inc.borrow()[src].head;
        let off = self.map.slot(src, self.me, head as usize);
        self.map.at::<AtomicU64>(off).load(Ordering::Acquire) as u32 == (head + 1) as u32
    }

    /// Anything to do instead of sleeping?
    fn ready(&self) -> bool {
        if (0..self.n).any(|s| self.ring_ready(s)) {
            return true;
        }
        if self.map.abort().load(Ordering::Acquire) >= 2 {
            return true;
        }
        if self.queued.get() > 0 {
            let mut outs = self.out.borrow_mut();
            for (dst, o) in outs.iter_mut().enumerate() {
                if !o.queue.is_empty()
                    && (!self.receiver_open(dst) || self.has_space(dst, &mut o.ring))
                {
                    return true;
                }
            }
        }
        if self.unpulled_ready() {
            return true;
        }
        if self.map.lends_out.load(Ordering::Relaxed) > 0 {
            for k in self.map.lent_slots(self.me) {
                let s = self.map.lend(self.me, k).0.load(Ordering::Acquire) & 0xff;
                if s == lend::L_DONE || s == lend::L_DROPPED {
                    return true;
                }
            }
        }
        false
    }

    /// Is a reader copying one of our lent buffers at this moment?
    fn copy_under_way(&self) -> bool {
        self.map.lends_out.load(Ordering::Relaxed) > 0
            && self.map.lent_slots(self.me).any(|k| {
                self.map.lend(self.me, k).0.load(Ordering::Acquire) & 0xff == lend::L_COPYING
            })
    }

    /// Drop every frame that arrived (lent buffers are reported dropped).
    fn drain_incoming(&self) {
        for src in 0..self.n {
            while let Some(f) = self.poll_ring(src) {
                drop(f);
            }
            self.inc.borrow_mut()[src].partial = None;
        }
    }

    // ------------------------------------------------------------- failure

    fn wake_all(&self) {
        wake_all(&self.map);
    }

    /// Mark `ep` failed with `message` (unless it already ended).
    fn mark_failed(&self, ep: usize, message: &str) {
        mark_failed(&self.map, ep, message);
    }

    /// Has the process of endpoint `ep` ended?
    fn process_ended(&self, ep: usize) -> bool {
        let pid = self.map.pid(ep).load(Ordering::Relaxed);
        if pid == 0 {
            return false;
        }
        let mut fds = self.pidfds.borrow_mut();
        if fds[ep].is_none() {
            match sys::pidfd(pid) {
                Ok(fd) => fds[ep] = Some(fd),
                Err(e) => return e.raw_os_error() == Some(libc::ESRCH),
            }
        }
        fds[ep].as_ref().is_some_and(sys::exited)
    }

    /// Current state of `ep` as a [`PeerState`] (no liveness check).
    fn state_of(&self, ep: usize) -> PeerState {
        match self.map.state(ep).load(Ordering::Acquire) {
            S_FINISHED => PeerState::Finished,
            S_FAILED => PeerState::Failed(self.map.failure(ep)),
            _ => PeerState::Alive,
        }
    }

    // ---------------------------------------------------------- diagnostics

    /// If some endpoint aborted the job: who and why.
    pub(crate) fn aborted(&self) -> Option<(usize, String)> {
        let a = self.map.abort().load(Ordering::Acquire);
        (a >= 2).then(|| ((a - 2) as usize, self.map.abort_text()))
    }

    /// Publish what this endpoint waits for.
    pub(crate) fn set_waiting(&self, what: Option<String>) {
        self.map.set_waiting(self.me, what.as_deref().unwrap_or(""));
    }

    /// What the other endpoints are doing or waiting for.
    pub(crate) fn describe_waits(&self) -> String {
        let mut out = String::new();
        for e in (0..self.n).filter(|&e| e != self.me) {
            let st = match self.map.state(e).load(Ordering::Acquire) {
                S_UNATTACHED => "not started".to_string(),
                S_FINISHED => "finished".to_string(),
                S_FAILED => format!("failed ({})", self.map.failure(e)),
                _ => match self.map.waiting(e) {
                    w if w.is_empty() => "running".to_string(),
                    w => format!("waiting for {w}"),
                },
            };
            out.push_str(&format!("; endpoint {e}: {st}"));
        }
        out
    }
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
        let mut item = self.prepare(frame);
        let mut outs = self.out.borrow_mut();
        let o = &mut outs[dst];
        let was_empty = o.queue.is_empty();
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
        let start = self.next_poll.get();
        for k in 0..self.n {
            let src = (start + k) % self.n;
            if let Some(f) = self.poll_ring(src) {
                self.next_poll.set(src);
                self.rescan.set(true);
                return Some(f);
            }
        }
        self.rescan.set(false);
        None
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
        let futex = self.map.futex(self.me);
        let v = futex.load(Ordering::Acquire);
        self.map.sleeping(self.me).store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if !self.ready() {
            let mut d = MAX_SLEEP;
            if let Some(dl) = deadline {
                d = d.min(dl.saturating_duration_since(Instant::now()));
            }
            if !d.is_zero() {
                sys::futex_wait(futex, v, d);
            }
        }
        self.map.sleeping(self.me).store(0, Ordering::Relaxed);
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

    fn abort(&self, message: &str) {
        set_abort(&self.map, self.me, message);
        self.tell_control(&Ctl::Abort {
            message: message.to_string(),
        });
    }

    fn close(&self, outcome: std::result::Result<(), String>) {
        if self.closed.replace(true) {
            return;
        }
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
                let _ = self.map.state(self.me).compare_exchange(
                    S_ALIVE,
                    S_FINISHED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
            Err(m) => self.mark_failed(self.me, m),
        }
        self.drain_incoming();
        self.wake_all();
        if let Some(mut c) = self.control.borrow_mut().take() {
            let (ok, message) = match outcome {
                Ok(()) => (true, String::new()),
                Err(m) => (false, m.clone()),
            };
            let _ = control::write(&mut c, &Ctl::Finished { ok, message });
            let _ = c.shutdown(std::net::Shutdown::Write);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Kind;

    fn frame(src: usize, dst: usize, tag: u32, data: &[u8]) -> Frame {
        Frame {
            header: Header {
                kind: Kind::Data,
                flags: 0,
                src: src as u32,
                dst: dst as u32,
                context: 0,
                tag,
                id: 0,
                len: data.len() as u64,
            },
            payload: Payload::copy_of(data),
        }
    }

    fn payload_vec(p: Payload) -> Vec<u8> {
        crate::p2p::payload_bytes(p)
    }

    #[test]
    fn one_process_two_endpoints_fifo_and_sizes() {
        let fd = create_segment(2).unwrap();
        let a = ShmEndpoint::attach(fd.try_clone().unwrap(), 2, 0).unwrap();
        let b = ShmEndpoint::attach(fd, 2, 1).unwrap();
        // More than a ring's worth, of many sizes (some span slots).
        let sizes = [0usize, 1, 32, 33, 4000, 4040, 4041, 9000, 70_000];
        let mut sent = Vec::new();
        for i in 0..200 {
            let len = sizes[i % sizes.len()];
            let data: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
            a.send(frame(0, 1, i as u32, &data)).unwrap();
            sent.push(data);
        }
        let mut got = 0;
        let t0 = Instant::now();
        while got < sent.len() {
            a.flush();
            if let Some(f) = b.try_recv() {
                assert_eq!(f.header.tag as usize, got);
                assert_eq!(payload_vec(f.payload), sent[got]);
                got += 1;
            }
            assert!(t0.elapsed() < Duration::from_secs(20));
        }
        assert!(b.try_recv().is_none());
        assert_eq!(a.peer_state(1), PeerState::Alive);
        b.close(Err("test failure".into()));
        assert_eq!(a.peer_state(1), PeerState::Failed("test failure".into()));
    }

    #[test]
    fn abort_and_texts() {
        let fd = create_segment(3).unwrap();
        let a = ShmEndpoint::attach(fd.try_clone().unwrap(), 3, 0).unwrap();
        let c = ShmEndpoint::attach(fd.try_clone().unwrap(), 3, 2).unwrap();
        assert!(ShmEndpoint::attach(fd.try_clone().unwrap(), 3, 2).is_err());
        assert!(ShmEndpoint::attach(fd.try_clone().unwrap(), 4, 1).is_err());
        c.set_waiting(Some("a message from 0 with tag 5".into()));
        assert!(a
            .describe_waits()
            .contains("endpoint 2: waiting for a message from 0 with tag 5"));
        assert!(a.describe_waits().contains("endpoint 1: not started"));
        assert!(a.aborted().is_none());
        c.abort("boom");
        assert_eq!(a.aborted(), Some((2, "boom".to_string())));
    }

    #[test]
    fn lend_protocol_within_one_process() {
        // A borrowed payload read through process_vm_readv from ourselves.
        let fd = create_segment(2).unwrap();
        let a = ShmEndpoint::attach(fd.try_clone().unwrap(), 2, 0).unwrap();
        let b = ShmEndpoint::attach(fd, 2, 1).unwrap();
        if !a.single_copy() {
            return;
        }
        let data: Vec<u8> = (0..CMA_MIN * 2).map(|i| (i % 251) as u8).collect();
        let done = crate::transport::Completion::new();
        // SAFETY: `data` outlives the borrow: we wait for completion below.
        let borrowed = unsafe { Borrowed::new(&data, done.clone()) };
        let mut f = frame(0, 1, 9, &[]);
        f.header.len = data.len() as u64;
        f.payload = Payload::Borrowed(borrowed);
        a.send(f).unwrap();
        assert!(done.finished().is_none());
        let got = b.try_recv().expect("rendezvous frame");
        let Payload::Borrowed(bw) = got.payload else {
            panic!("expected a borrowed payload")
        };
        let mut dst = vec![0u8; data.len()];
        assert_eq!(bw.copy_into(&mut dst), Some(data.len()));
        assert_eq!(dst, data);
        assert_eq!(done.finished(), Some(Ok(data.len())));
        assert_eq!(a.map.lends_out.load(Ordering::Relaxed), 0);
        // Revoked before it was read: the reader gets nothing.
        let done = crate::transport::Completion::new();
        // SAFETY: as above; revoke ends the borrow before `data` is dropped.
        let borrowed = unsafe { Borrowed::new(&data, done.clone()) };
        let mut f = frame(0, 1, 10, &[]);
        f.header.len = data.len() as u64;
        f.payload = Payload::Borrowed(borrowed);
        a.send(f).unwrap();
        assert!(!done.revoke());
        let got = b.try_recv().expect("rendezvous frame");
        let Payload::Borrowed(bw) = got.payload else {
            panic!("expected a borrowed payload")
        };
        assert_eq!(bw.copy_into(&mut dst), None);
    }

    #[test]
    fn borrow_through_the_ring_withdrawn_midway() {
        let fd = create_segment(2).unwrap();
        let mut a = ShmEndpoint::attach(fd.try_clone().unwrap(), 2, 0).unwrap();
        let b = ShmEndpoint::attach(fd, 2, 1).unwrap();
        a.cma = false;
        // Larger than a ring: the rest waits in the sender's queue.
        let data: Vec<u8> = (0..300_000).map(|i| (i % 253) as u8).collect();
        let done = crate::transport::Completion::new();
        // SAFETY: `data` outlives the borrow: it is revoked below.
        let borrowed = unsafe { Borrowed::new(&data, done.clone()) };
        let mut f = frame(0, 1, 1, &[]);
        f.header.len = data.len() as u64;
        f.payload = Payload::Borrowed(borrowed);
        a.send(f).unwrap();
        assert!(done.finished().is_none());
        assert!(!done.revoke());
        a.send(frame(0, 1, 2, b"after")).unwrap();
        let t0 = Instant::now();
        let got = loop {
            a.flush();
            if let Some(f) = b.try_recv() {
                break f;
            }
            assert!(t0.elapsed() < Duration::from_secs(10));
        };
        assert_eq!(got.header.tag, 2, "the withdrawn message never arrives");
        assert_eq!(payload_vec(got.payload), b"after");
        // The same through the ring, not withdrawn: completes once the
        // reader has taken it out of the ring (seen by the sender's next call).
        let done = crate::transport::Completion::new();
        // SAFETY: `data` outlives the borrow: we wait for completion.
        let borrowed = unsafe { Borrowed::new(&data, done.clone()) };
        let mut f = frame(0, 1, 3, &[]);
        f.header.len = data.len() as u64;
        f.payload = Payload::Borrowed(borrowed);
        a.send(f).unwrap();
        let got = loop {
            a.flush();
            if let Some(f) = b.try_recv() {
                break f;
            }
            assert!(t0.elapsed() < Duration::from_secs(10));
        };
        assert!(a.try_recv().is_none());
        assert_eq!(done.finished(), Some(Ok(data.len())));
        assert_eq!(payload_vec(got.payload), data);
    }
}
