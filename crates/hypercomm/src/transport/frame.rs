//! Frames and payloads: what a transport moves, and the protocol by which
//! a receiver copies straight out of a sender's lent buffer.
//!
//! A [`Frame`] is a [`Header`] plus a [`Payload`]. A payload may be short
//! bytes inline in the frame, owned bytes, a handed-off typed vector (zero
//! copy between threads), or a borrow of the sender's buffer that the
//! receiver copies from directly (single copy); a byte-stream transport
//! turns the latter two into bytes while sending.
//!
//! A borrowed payload may also live in another process: the shared-memory
//! transport lends the sender's buffer to a receiver in another address
//! space (`RemoteBorrow` on the receiving side, `RemoteCompletion` on the
//! lending side), and the engine sees the same [`Borrowed`]/[`Completion`]
//! protocol as between threads.

use crate::wire::Header;
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A frame in flight: header and payload.
pub struct Frame {
    /// The header (its `len` equals the payload's length).
    pub header: Header,
    /// The bytes.
    pub payload: Payload,
}

impl std::fmt::Debug for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frame")
            .field("header", &self.header)
            .field("len", &self.payload.len())
            .finish()
    }
}

/// A typed vector handed over whole (threads: no copy at all).
pub trait OwnedBytes: Send {
    /// The bytes of the vector.
    fn bytes(&self) -> &[u8];
    /// For downcasting back to the concrete `Vec<T>`.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// `TypeId` of the concrete `Vec<T>`.
    fn vec_type(&self) -> std::any::TypeId;
}

impl<T: bytemuck::Pod + Send> OwnedBytes for Vec<T> {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn vec_type(&self) -> std::any::TypeId {
        std::any::TypeId::of::<Vec<T>>()
    }
}

/// Longest payload carried inline in a frame (no allocation).
pub const INLINE_MAX: usize = 32;

/// A short payload stored in the frame itself.
#[derive(Clone, Copy)]
pub struct Inline {
    len: u8,
    data: [u8; INLINE_MAX],
}

impl Inline {
    /// Copy `b` (at most [`INLINE_MAX`] bytes) into an inline payload.
    #[inline]
    pub fn new(b: &[u8]) -> Option<Inline> {
        if b.len() > INLINE_MAX {
            return None;
        }
        let mut data = [0u8; INLINE_MAX];
        data[..b.len()].copy_from_slice(b);
        Some(Inline {
            len: b.len() as u8,
            data,
        })
    }
    /// The bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.len as usize]
    }
}

/// A frame's payload.
pub enum Payload {
    /// A short payload inside the frame.
    Inline(Inline),
    /// Owned bytes.
    Bytes(Vec<u8>),
    /// A vector handed over without copying.
    Vec(Box<dyn OwnedBytes>),
    /// The sender's own buffer, to be copied by the receiver.
    Borrowed(Borrowed),
}

impl Payload {
    /// Short data inline, longer data as owned bytes.
    #[inline]
    pub fn copy_of(b: &[u8]) -> Payload {
        match Inline::new(b) {
            Some(i) => Payload::Inline(i),
            None => Payload::Bytes(b.to_vec()),
        }
    }

    /// Payload length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Payload::Inline(i) => i.len as usize,
            Payload::Bytes(b) => b.len(),
            Payload::Vec(v) => v.bytes().len(),
            Payload::Borrowed(b) => b.len(),
        }
    }
    /// True when the payload has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The payload with a borrowed buffer copied into owned bytes (and its
    /// send completed), for a transport that keeps frames past the send
    /// call; `None` when the sender withdrew the buffer (nothing to send).
    /// Other payloads are returned as they are.
    pub fn detach(self) -> Option<Payload> {
        match self {
            Payload::Borrowed(b) => {
                let mut v = Vec::with_capacity(b.len());
                b.with_bytes(|bytes| {
                    v.extend_from_slice(bytes);
                    bytes.len()
                })?;
                Some(Payload::Bytes(v))
            }
            p => Some(p),
        }
    }

    /// The bytes as an owned vector (a borrowed payload is copied and
    /// completed; one the sender revoked gives zeros).
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Payload::Inline(i) => i.bytes().to_vec(),
            Payload::Bytes(b) => b,
            Payload::Vec(v) => v.bytes().to_vec(),
            Payload::Borrowed(b) => {
                let mut v = vec![0u8; b.len()];
                b.copy_into(&mut v);
                v
            }
        }
    }
}

pub(crate) const PENDING: u8 = 0;
pub(crate) const COPYING: u8 = 1;
pub(crate) const DONE: u8 = 2;
const DROPPED: u8 = 3;
const REVOKED: u8 = 4;
/// The state lives elsewhere (another process): ask the [`RemoteCompletion`].
const REMOTE: u8 = 5;

/// The lending side of a borrow whose reader is in another process: the
/// state is kept outside this process (e.g. in a shared segment).
pub(crate) trait RemoteCompletion: Send + Sync {
    /// As [`Completion::finished`].
    fn finished(&self) -> Option<std::result::Result<usize, ()>>;
    /// As [`Completion::revoke`]: afterwards nobody reads the buffer.
    fn revoke(&self) -> bool;
}

/// The receiving side of a buffer lent by another process.
pub(crate) trait RemoteBorrow: Send {
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Copy the first `dst.len()` bytes (at most `len`) into `dst` straight
    /// from the lender, completing the borrow; `None` when revoked or failed.
    fn copy_into(self: Box<Self>, dst: &mut [u8]) -> Option<usize>;
    /// Fetch the bytes, run `f` on them and complete the borrow with the
    /// count `f` returns; `None` when revoked or failed.
    fn with_bytes(self: Box<Self>, f: &mut dyn FnMut(&[u8]) -> usize) -> Option<usize>;
}

/// Shared completion state of a borrowed payload.
///
/// The sender keeps its buffer alive and unmodified until [`Completion::finished`]
/// says so, and may only give up through [`Completion::revoke`], which waits
/// out a copy that is already under way.
pub struct Completion {
    pub(crate) state: AtomicU8,
    pub(crate) taken: AtomicUsize,
    owner: std::thread::Thread,
    remote: OnceLock<Box<dyn RemoteCompletion>>,
    share: SharedCopy,
    /// The job's count of lends ended and seen ended (deadlock detection).
    count: Option<Arc<LendCount>>,
    /// This lend's end is counted as seen.
    settled: AtomicBool,
}

/// A job's lends between threads that ended (the reader took or dropped
/// the buffer) and that their lenders have seen end. An ended lend wakes
/// its lender without a frame, so while the two differ a lender found
/// blocked may be about to run: the deadlock detector waits
/// (`transport/deadlock.rs`).
#[derive(Debug, Default)]
pub struct LendCount {
    ended: std::sync::atomic::AtomicU64,
    seen: std::sync::atomic::AtomicU64,
}

impl LendCount {
    /// Whether some lend ended that its lender has not seen end yet.
    pub(crate) fn unsettled(&self) -> bool {
        self.ended.load(Ordering::SeqCst) != self.seen.load(Ordering::SeqCst)
    }
}

/// A large copy from a buffer lent between threads, shared by the reader
/// and the lender (which would otherwise only wait for it): both claim
/// chunks of [`SHARE_CHUNK`] bytes until none is left, so two cores copy.
/// Published by the reader (`open`) once it has begun; the reader returns
/// only when every chunk is counted in `copied`.
#[derive(Default)]
struct SharedCopy {
    open: AtomicBool,
    src: AtomicPtr<u8>,
    dst: AtomicPtr<u8>,
    len: AtomicUsize,
    next: AtomicUsize,
    copied: AtomicUsize,
}

/// Copies from a buffer lent between threads from this size on are shared
/// with the waiting lender.
const SHARE_MIN: usize = 256 << 10;
/// The chunk each side claims at a time.
const SHARE_CHUNK: usize = 64 << 10;

impl Completion {
    /// A new completion that wakes the calling thread when it changes.
    pub fn new() -> Arc<Completion> {
        Completion::counted(None)
    }
    /// [`Completion::new`], its end counted in `count`.
    pub(crate) fn counted(count: Option<Arc<LendCount>>) -> Arc<Completion> {
        Arc::new(Completion {
            state: AtomicU8::new(PENDING),
            taken: AtomicUsize::new(0),
            owner: std::thread::current(),
            remote: OnceLock::new(),
            share: SharedCopy::default(),
            count,
            settled: AtomicBool::new(false),
        })
    }
    #[cfg_attr(not(all(feature = "shm", target_os = "linux")), allow(dead_code))]
    /// Hand the state over to a reader in another process: from now on
    /// `finished` and `revoke` ask `r`. Only for a pending completion.
    pub(crate) fn hand_over(&self, r: Box<dyn RemoteCompletion>) {
        if self.remote.set(r).is_ok() {
            self.state.store(REMOTE, Ordering::Release);
        }
    }
    /// `Some(Ok(bytes taken))` when the receiver copied the data,
    /// `Some(Err(()))` when the payload was dropped unread, `None` while pending.
    pub fn finished(&self) -> Option<std::result::Result<usize, ()>> {
        match self.state.load(Ordering::Acquire) {
            DONE => Some(Ok(self.taken.load(Ordering::Relaxed))),
            DROPPED | REVOKED => Some(Err(())),
            REMOTE => self.remote.get().and_then(|r| r.finished()),
            _ => None,
        }
    }
    /// The sender gives up: afterwards no receiver will touch the buffer.
    /// Waits (briefly) for a copy already in progress. Returns true when the
    /// receiver had already taken the data.
    pub fn revoke(&self) -> bool {
        loop {
            match self
                .state
                .compare_exchange(PENDING, REVOKED, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return false,
                Err(COPYING) => std::thread::yield_now(),
                Err(DONE) => return true,
                Err(REMOTE) => return self.remote.get().is_some_and(|r| r.revoke()),
                Err(_) => return false,
            }
        }
    }
    /// A reader in this process starts reading the lent memory: false when
    /// the lender revoked it (or it was dropped), and then it may not be
    /// touched. Until [`Completion::end_access`] the lender's `revoke` waits.
    pub(crate) fn begin_access(&self) -> bool {
        self.state
            .compare_exchange(PENDING, COPYING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
    /// The reader is done with the lent memory, having taken `n` bytes.
    pub(crate) fn end_access(&self, n: usize) {
        self.taken.store(n, Ordering::Relaxed);
        self.set(DONE);
    }
    /// The lender, waiting for this borrow, copies chunks of a copy the
    /// reader shares (nothing when there is none, or none is left).
    pub(crate) fn help(&self) {
        let s = &self.share;
        if !s.open.load(Ordering::Acquire) {
            return;
        }
        let (src, dst, len) = (
            s.src.load(Ordering::Relaxed),
            s.dst.load(Ordering::Relaxed),
            s.len.load(Ordering::Relaxed),
        );
        let chunks = len.div_ceil(SHARE_CHUNK);
        loop {
            let k = s.next.fetch_add(1, Ordering::Relaxed);
            if k >= chunks {
                return;
            }
            let off = k * SHARE_CHUNK;
            // SAFETY: chunk `k` is ours alone; the reader published live
            // buffers of `len` bytes and waits for every chunk to be counted
            // before it lets go of `dst` (and the lender of `src`, until the
            // state says DONE).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.add(off),
                    dst.add(off),
                    SHARE_CHUNK.min(len - off),
                )
            };
            s.copied.fetch_add(1, Ordering::Release);
        }
    }
    pub(crate) fn set(&self, s: u8) {
        self.ended(s);
        self.state.store(s, Ordering::Release);
        self.owner.unpark();
    }
    /// The reader ends the lend with state `s`: count it (before the lender
    /// can see it).
    fn ended(&self, s: u8) {
        if let (Some(c), DONE | DROPPED) = (&self.count, s) {
            c.ended.fetch_add(1, Ordering::SeqCst);
        }
    }
    /// The lender has seen the lend end (or gives it up): count that once.
    pub(crate) fn settle(&self) {
        let Some(c) = &self.count else {
            return;
        };
        let s = self.state.load(Ordering::Acquire);
        if matches!(s, DONE | DROPPED) && !self.settled.swap(true, Ordering::SeqCst) {
            c.seen.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        // A lend nobody looked at after it ended is settled here.
        self.settle();
    }
}

/// A borrow of the sender's buffer: in this process (threads), or in
/// another process (shared memory), read by the receiver directly.
pub struct Borrowed {
    pub(crate) lent: Lent,
}

pub(crate) enum Lent {
    /// The sender is a thread of this process.
    Local {
        ptr: *const u8,
        len: usize,
        done: Arc<Completion>,
    },
    /// The sender is another process (`None` once used).
    #[cfg_attr(not(all(feature = "shm", target_os = "linux")), allow(dead_code))]
    Remote(Option<Box<dyn RemoteBorrow>>),
}

// SAFETY: the pointer refers to memory the sender keeps alive and unmodified
// until the completion says DONE, DROPPED or REVOKED; reading it from another
// thread is then sound, and the state machine serialises access. The remote
// variant is `Send` by its trait bound.
unsafe impl Send for Borrowed {}

impl Borrowed {
    /// Borrow `data` until `done` completes.
    ///
    /// # Safety
    /// The caller must keep `data` alive and unmodified until
    /// `done.finished()` is `Some` or `done.revoke()` has returned.
    pub unsafe fn new(data: &[u8], done: Arc<Completion>) -> Borrowed {
        Borrowed {
            lent: Lent::Local {
                ptr: data.as_ptr(),
                len: data.len(),
                done,
            },
        }
    }
    /// A buffer lent by another process.
    #[cfg_attr(not(all(feature = "shm", target_os = "linux")), allow(dead_code))]
    pub(crate) fn remote(r: Box<dyn RemoteBorrow>) -> Borrowed {
        Borrowed {
            lent: Lent::Remote(Some(r)),
        }
    }
    /// Copy the first `dst.len()` bytes (at most `len`) into `dst`, completing
    /// the borrow. Returns `None` when the sender revoked it (or, across
    /// processes, failed).
    pub fn copy_into(mut self, dst: &mut [u8]) -> Option<usize> {
        if let Lent::Remote(r) = &mut self.lent {
            return r.take()?.copy_into(dst);
        }
        if let Lent::Local { ptr, len, done } = &self.lent {
            let n = (*len).min(dst.len());
            if n >= SHARE_MIN {
                if !done.begin_access() {
                    return None;
                }
                // Every write to `dst` goes through this pointer.
                let d = dst.as_mut_ptr();
                let s = &done.share;
                s.src.store(ptr.cast_mut(), Ordering::Relaxed);
                s.dst.store(d, Ordering::Relaxed);
                s.len.store(n, Ordering::Relaxed);
                s.open.store(true, Ordering::Release);
                done.owner.unpark();
                done.help();
                let chunks = n.div_ceil(SHARE_CHUNK);
                let mut spins = 0u32;
                while s.copied.load(Ordering::Acquire) < chunks {
                    spins += 1;
                    if spins.is_multiple_of(64) {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
                done.end_access(n);
                return Some(n);
            }
        }
        self.with_bytes(|b| {
            let n = b.len().min(dst.len());
            dst[..n].copy_from_slice(&b[..n]);
            n
        })
    }
    /// Run `f` on the borrowed bytes and complete the borrow with the count
    /// `f` returns. Returns `None` when the sender revoked it.
    pub fn with_bytes(mut self, f: impl FnOnce(&[u8]) -> usize) -> Option<usize> {
        let (ptr, len, done) = match &mut self.lent {
            Lent::Remote(r) => {
                let mut f = Some(f);
                return r.take()?.with_bytes(&mut |b| f.take().map_or(0, |f| f(b)));
            }
            Lent::Local { ptr, len, done } => (*ptr, *len, done),
        };
        if !done.begin_access() {
            return None;
        }
        // SAFETY: state is COPYING, so the sender keeps the buffer alive and
        // unmodified (revoke waits for us); ptr/len came from a live slice.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        let n = f(bytes);
        done.end_access(n);
        // Drop will see DONE and do nothing more.
        n.into()
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match &self.lent {
            Lent::Local { len, .. } => *len,
            Lent::Remote(r) => r.as_ref().map_or(0, |r| r.len()),
        }
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        // A remote borrow reports itself dropped through its own `Drop`.
        if let Lent::Local { done, .. } = &self.lent {
            done.ended(DROPPED);
            if done
                .state
                .compare_exchange(PENDING, DROPPED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                done.owner.unpark();
            } else if let Some(c) = &done.count {
                // Not ours to end after all (taken or revoked already).
                c.ended.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}
