//! Transports: the one small trait that moves frames between endpoints.
//!
//! Endpoints are numbered `0..endpoints()`: the nodes `0..n` first, then the
//! host (when the job has one) as endpoint `n`. A transport knows nothing of
//! communicators, tags or matching; the p2p engine above it does all that.
//!
//! The trait has eight methods: [`Transport::endpoint`],
//! [`Transport::endpoints`], [`Transport::send`], [`Transport::try_recv`],
//! [`Transport::wait`], [`Transport::peer_state`], [`Transport::abort`] and
//! [`Transport::close`]. The engine dispatches through one enum of the known
//! transports (`AnyTransport`) so that there is no dynamic dispatch on the
//! fast path.
//!
//! A [`Frame`] is a [`Header`] plus a [`Payload`]. A payload may be owned
//! bytes, a handed-off typed vector (zero copy between threads), or a borrow
//! of the sender's buffer that the receiver copies from directly (single
//! copy); a byte-stream transport turns the latter two into bytes while
//! sending.
//!
//! A borrowed payload may also live in another process: the shared-memory
//! transport lends the sender's buffer to a receiver in another address
//! space (`RemoteBorrow` on the receiving side, `RemoteCompletion` on the
//! lending side), and the engine sees the same [`Borrowed`]/[`Completion`]
//! protocol as between threads.
//!
//! Transports: `thread` (ranks as threads), `shm` (processes on one
//! machine, [`shm`]) and `tcp` (processes, [`tcp`]).
//!
//! Not done yet: the MPI and simulated transports.

pub mod shm;
mod spsc;
pub mod tcp;
pub(crate) mod thread;

use crate::error::Result;
use crate::wire::Header;
use std::any::Any;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

pub(crate) use thread::{ThreadEndpoint, ThreadJob};

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
}

const PENDING: u8 = 0;
const COPYING: u8 = 1;
const DONE: u8 = 2;
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
    state: AtomicU8,
    taken: AtomicUsize,
    owner: std::thread::Thread,
    remote: OnceLock<Box<dyn RemoteCompletion>>,
}

impl Completion {
    /// A new completion that wakes the calling thread when it changes.
    pub fn new() -> Arc<Completion> {
        Arc::new(Completion {
            state: AtomicU8::new(PENDING),
            taken: AtomicUsize::new(0),
            owner: std::thread::current(),
            remote: OnceLock::new(),
        })
    }
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
    fn set(&self, s: u8) {
        self.state.store(s, Ordering::Release);
        self.owner.unpark();
    }
}

/// A borrow of the sender's buffer: in this process (threads), or in
/// another process (shared memory), read by the receiver directly.
pub struct Borrowed {
    lent: Lent,
}

enum Lent {
    /// The sender is a thread of this process.
    Local {
        ptr: *const u8,
        len: usize,
        done: Arc<Completion>,
    },
    /// The sender is another process (`None` once used).
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
        if done
            .state
            .compare_exchange(PENDING, COPYING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return None;
        }
        // SAFETY: state is COPYING, so the sender keeps the buffer alive and
        // unmodified (revoke waits for us); ptr/len came from a live slice.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        let n = f(bytes);
        done.taken.store(n, Ordering::Relaxed);
        done.set(DONE);
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
            if done
                .state
                .compare_exchange(PENDING, DROPPED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                done.owner.unpark();
            }
        }
    }
}

/// What a transport knows about a peer endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerState {
    /// Running.
    Alive,
    /// Finished normally: it will send nothing more.
    Finished,
    /// Failed (panic, error, crash), with what is known.
    Failed(String),
}

/// The transport interface. See the module docs.
pub trait Transport {
    /// This endpoint's index.
    fn endpoint(&self) -> usize;
    /// Number of endpoints (nodes plus host).
    fn endpoints(&self) -> usize;
    /// Send a frame to `frame.header.dst`. FIFO per ordered endpoint pair.
    fn send(&self, frame: Frame) -> Result<()>;
    /// Take the next arrived frame, if any. Never blocks.
    fn try_recv(&self) -> Option<Frame>;
    /// Block until a frame may have arrived, a peer's state changed, or the
    /// deadline passed. May return early (spuriously).
    fn wait(&self, deadline: Option<Instant>);
    /// What is known about a peer.
    fn peer_state(&self, endpoint: usize) -> PeerState;
    /// Abort the whole job: every endpoint's next operation fails with
    /// `Aborted` naming this endpoint and `message`.
    fn abort(&self, message: &str);
    /// Leave the job: `Ok` for a normal finish, `Err(msg)` for a failure.
    fn close(&self, outcome: std::result::Result<(), String>);
}

/// The known transports (enum dispatch).
pub(crate) enum AnyTransport {
    Thread(ThreadEndpoint),
    Shm(shm::ShmEndpoint),
    Tcp(tcp::TcpEndpoint),
}

impl AnyTransport {
    /// If some endpoint aborted the job: who and why.
    pub(crate) fn aborted(&self) -> Option<(usize, String)> {
        match self {
            AnyTransport::Thread(t) => t.aborted(),
            AnyTransport::Shm(t) => t.aborted(),
            AnyTransport::Tcp(t) => t.aborted(),
        }
    }
    /// A peer sent bytes that are not our protocol: every later operation
    /// fails with `Error::Protocol` and this text.
    pub(crate) fn protocol_error(&self) -> Option<String> {
        match self {
            AnyTransport::Thread(_) => None,
            AnyTransport::Shm(_) => None,
            AnyTransport::Tcp(t) => t.protocol_error(),
        }
    }
    /// What every endpoint is waiting for (diagnostics), when known.
    pub(crate) fn describe_waits(&self) -> String {
        match self {
            AnyTransport::Thread(t) => t.describe_waits(),
            AnyTransport::Shm(t) => t.describe_waits(),
            AnyTransport::Tcp(t) => t.describe_waits(),
        }
    }
    /// Publish what this endpoint is waiting for (`None`: not waiting).
    pub(crate) fn set_waiting(&self, what: Option<String>) {
        match self {
            AnyTransport::Thread(t) => t.set_waiting(what),
            AnyTransport::Shm(t) => t.set_waiting(what),
            // Not visible across processes.
            AnyTransport::Tcp(_) => drop(what),
        }
    }
    /// Whether borrowed payloads stay borrowed after `send` returns.
    pub(crate) fn keeps_borrows(&self) -> bool {
        match self {
            AnyTransport::Thread(_) => true,
            AnyTransport::Shm(_) => true,
            // TCP writes a borrowed payload during `send` (so lending it
            // avoids a copy) and completes the borrow before returning.
            AnyTransport::Tcp(_) => true,
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $t:ident => $e:expr) => {
        match $self {
            AnyTransport::Thread($t) => $e,
            AnyTransport::Shm($t) => $e,
            AnyTransport::Tcp($t) => $e,
        }
    };
}

impl Transport for AnyTransport {
    #[inline]
    fn endpoint(&self) -> usize {
        dispatch!(self, t => t.endpoint())
    }
    #[inline]
    fn endpoints(&self) -> usize {
        dispatch!(self, t => t.endpoints())
    }
    #[inline]
    fn send(&self, frame: Frame) -> Result<()> {
        dispatch!(self, t => t.send(frame))
    }
    #[inline]
    fn try_recv(&self) -> Option<Frame> {
        dispatch!(self, t => t.try_recv())
    }
    #[inline]
    fn wait(&self, deadline: Option<Instant>) {
        dispatch!(self, t => t.wait(deadline))
    }
    #[inline]
    fn peer_state(&self, endpoint: usize) -> PeerState {
        dispatch!(self, t => t.peer_state(endpoint))
    }
    fn abort(&self, message: &str) {
        dispatch!(self, t => t.abort(message))
    }
    fn close(&self, outcome: std::result::Result<(), String>) {
        dispatch!(self, t => t.close(outcome))
    }
}
