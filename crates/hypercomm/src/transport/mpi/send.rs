//! The sending side of [`MpiEndpoint`]: frame messages (header and a
//! short payload) and the payloads that follow a header on their own, and
//! the sends MPI may still be reading.

use super::{sys, Handle, MpiEndpoint, BLOCKING_SEND, EAGER, PIECE, TAG_BULK, TAG_FRAME};
use crate::error::Result;
use crate::transport::{Completion, Frame, Lent, Payload, RemoteCompletion};
use crate::wire::Kind;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A send MPI may still be reading: its requests, what keeps its bytes
/// alive, and whether it completed. Shared with a lender's completion.
pub(super) struct InFlight {
    pub(super) reqs: UnsafeCell<Vec<Handle>>,
    pub(super) done: AtomicBool,
    pub(super) len: usize,
    /// The bytes, when they are ours (`None`: lent by the sender, who keeps
    /// them until this completes).
    pub(super) _keep: Keep,
}

pub(super) enum Keep {
    Bytes(#[allow(dead_code)] Vec<u8>),
    Vec(#[allow(dead_code)] Box<dyn crate::transport::OwnedBytes>),
    Lent,
}

// SAFETY: the requests are only touched under the MPI lock (`sys::lock`,
// taken inside `sys::test`), and the kept bytes are never touched at all
// until the value is dropped.
unsafe impl Sync for InFlight {}
// SAFETY: as above; the kept values are `Send`.
unsafe impl Send for InFlight {}

impl InFlight {
    /// Whether MPI is done with every piece (testing the ones still open).
    pub(super) fn test(&self) -> Result<bool> {
        if self.done.load(Ordering::Acquire) {
            return Ok(true);
        }
        let _serial = TEST.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: `TEST` serialises access to the requests, which live as
        // long as `self`; each was started by `sys::isend`.
        let reqs = unsafe { &mut *self.reqs.get() };
        for r in reqs.iter_mut() {
            // SAFETY: a started (or already completed, then null) request.
            if unsafe { sys::test(r) }?.is_none() {
                return Ok(false);
            }
        }
        self.done.store(true, Ordering::Release);
        Ok(true)
    }
}

/// Serialises testing of in-flight sends between the transport's progress
/// and a lender's completion.
static TEST: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lender's view of a lent payload MPI is sending.
struct LentSend(Arc<InFlight>);

impl RemoteCompletion for LentSend {
    fn finished(&self) -> Option<std::result::Result<usize, ()>> {
        match self.0.test() {
            Ok(true) => Some(Ok(self.0.len)),
            Ok(false) => None,
            Err(_) => Some(Err(())),
        }
    }
    fn revoke(&self) -> bool {
        // MPI may be reading the buffer: the only safe way out is to let
        // the send finish (every live peer keeps receiving; a dead one ends
        // the MPI job).
        loop {
            match self.0.test() {
                Ok(true) => return true,
                Ok(false) => std::thread::yield_now(),
                Err(_) => return false,
            }
        }
    }
}

/// A payload to send from where it lies: what keeps its bytes alive, and
/// for a lent buffer the bytes and the lender's completion (`'static`
/// stands for "until MPI is done with them": the lender keeps the buffer
/// until the completion handed over with the send says so).
pub(super) type Held = (Keep, Option<(&'static [u8], Arc<Completion>)>);

impl MpiEndpoint {
    /// Start sending `frame` to `dst` (another endpoint). Data of the
    /// world's user context goes on MPI's own matching (`user.rs`).
    pub(super) fn send_to(&self, dst: usize, frame: Frame) -> Result<()> {
        let Frame { header, payload } = frame;
        if header.kind == Kind::Data && header.context == 0 {
            return self.send_user(dst, header, payload);
        }
        self.census.sending(dst, header.kind);
        let hdr = header.encode();
        let len = payload.len();
        if len <= EAGER {
            let mut buf = self.scratch_with(&hdr, len);
            if !append_payload(&mut buf, payload) {
                // Revoked before we started: send nothing.
                *self.scratch.borrow_mut() = buf;
                return Ok(());
            }
            return self.send_eager(&self.comm, TAG_FRAME, dst, buf);
        }
        // The header alone, then the payload from where it lies.
        self.start(
            &self.comm,
            dst,
            TAG_FRAME,
            (Keep::Bytes(hdr.to_vec()), None),
            0,
        )?;
        self.start(&self.comm, dst, TAG_BULK, hold(payload), 0)
    }

    /// The eager frame buffer, emptied, with `hdr` written and room for
    /// `len` payload bytes after it.
    #[inline]
    pub(super) fn scratch_with(&self, hdr: &[u8], len: usize) -> Vec<u8> {
        let mut buf = std::mem::take(&mut *self.scratch.borrow_mut());
        buf.clear();
        buf.reserve(hdr.len() + len);
        buf.extend_from_slice(hdr);
        buf
    }

    /// `MPI_Isend` one eager message on `comm` with `tag`; when MPI
    /// completes it at once (it usually does: a short message is copied
    /// out before the call returns), keep `buf` for the next one instead
    /// of tracking a send.
    pub(super) fn send_eager(
        &self,
        comm: &Handle,
        tag: i32,
        dst: usize,
        buf: Vec<u8>,
    ) -> Result<()> {
        if buf.len() <= BLOCKING_SEND {
            // Returns at once: a message this short leaves eagerly in every
            // MPI library, and even one that waited for the match could not
            // deadlock, as every peer keeps frame receives started (and
            // drives its progress while it sends). No request to test.
            let sent = sys::send(comm, &buf, dst, tag);
            *self.scratch.borrow_mut() = buf;
            return sent;
        }
        let mut req = Handle::zeroed();
        // SAFETY: `buf` stays alive and unmodified until the request is
        // tested complete below, or moves (its heap memory unmoved) into
        // the send in flight.
        unsafe { sys::isend(comm, &buf, dst, tag, &mut req) }?;
        // SAFETY: the request just started.
        if unsafe { sys::test(&mut req) }?.is_some() {
            *self.scratch.borrow_mut() = buf;
            return Ok(());
        }
        self.in_flight.borrow_mut().push(Arc::new(InFlight {
            reqs: UnsafeCell::new(vec![req]),
            done: AtomicBool::new(false),
            len: buf.len(),
            _keep: Keep::Bytes(buf),
        }));
        Ok(())
    }

    /// `MPI_Isend` the held bytes from byte `skip` on to `dst` on `comm`
    /// with `tag` (in pieces, unless `tag` is [`TAG_FRAME`]), and track the
    /// send until MPI is done with it.
    pub(super) fn start(
        &self,
        comm: &Handle,
        dst: usize,
        tag: i32,
        held: Held,
        skip: usize,
    ) -> Result<()> {
        let bytes = held_bytes(&held);
        let bytes = &bytes[skip.min(bytes.len())..];
        let pieces = if tag == TAG_FRAME {
            1
        } else {
            bytes.len().div_ceil(PIECE).max(1)
        };
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        let (keep, lent) = held;
        let f = Arc::new(InFlight {
            reqs: UnsafeCell::new(vec![Handle::zeroed(); pieces]),
            done: AtomicBool::new(false),
            len,
            _keep: keep,
        });
        // SAFETY: nobody else sees `f` yet; the requests vector is never
        // resized, so the handles stay where MPI was told they are.
        let reqs = unsafe { &mut *f.reqs.get() };
        // SAFETY: the bytes are the kept value's own heap memory (moved
        // into `f`, not copied, so the pointer is unchanged) or the
        // lender's buffer, alive until `f` completes.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        let chunks: Vec<&[u8]> = if tag == TAG_FRAME || bytes.is_empty() {
            vec![bytes]
        } else {
            bytes.chunks(PIECE).collect()
        };
        for (piece, req) in chunks.into_iter().zip(reqs.iter_mut()) {
            // SAFETY: as above; `req` lives in `f`, which lives until the
            // send completes (held by `in_flight` and by the lender).
            unsafe { sys::isend(comm, piece, dst, tag, req) }?;
        }
        if let Some((_, done)) = lent {
            done.hand_over(Box::new(LentSend(f.clone())));
        }
        self.in_flight.borrow_mut().push(f);
        Ok(())
    }
}

/// The bytes a held payload sends.
pub(super) fn held_bytes(held: &Held) -> &[u8] {
    match held {
        (_, Some((b, _))) => b,
        (Keep::Bytes(b), None) => b,
        (Keep::Vec(v), None) => v.bytes(),
        (Keep::Lent, None) => &[],
    }
}

/// Append `payload`'s bytes to `buf`; false when a lent buffer was
/// revoked before we started (nothing to send).
pub(super) fn append_payload(buf: &mut Vec<u8>, payload: Payload) -> bool {
    match payload {
        Payload::Inline(i) => buf.extend_from_slice(i.bytes()),
        Payload::Bytes(b) => buf.extend_from_slice(&b),
        Payload::Vec(v) => buf.extend_from_slice(v.bytes()),
        Payload::Borrowed(b) => {
            return b
                .with_bytes(|bytes| {
                    buf.extend_from_slice(bytes);
                    bytes.len()
                })
                .is_some()
        }
    }
    true
}

/// A payload to send from where it lies: owned bytes moved into the
/// send, a lent buffer (the lender waits until MPI is done with it).
pub(super) fn hold(payload: Payload) -> Held {
    match payload {
        Payload::Inline(i) => (Keep::Bytes(i.bytes().to_vec()), None),
        Payload::Bytes(b) => (Keep::Bytes(b), None),
        Payload::Vec(v) => (Keep::Vec(v), None),
        Payload::Borrowed(b) => match b.lent {
            Lent::Local { ptr, len, ref done } => {
                let done = done.clone();
                if done
                    .state
                    .compare_exchange(
                        crate::transport::PENDING,
                        crate::transport::frame::COPYING,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_err()
                {
                    // Revoked: the peer expects bytes, so send zeros.
                    return (Keep::Bytes(vec![0; len]), None);
                }
                // SAFETY: COPYING keeps the sender's buffer alive and
                // unmodified; the completion handed over with it keeps it
                // so until MPI is done with it (revoke waits for that).
                let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
                (Keep::Lent, Some((bytes, done)))
            }
            Lent::Remote(_) => {
                let len = b.len();
                let mut v = Vec::with_capacity(len);
                let _ = b.with_bytes(|bytes| {
                    v.extend_from_slice(bytes);
                    bytes.len()
                });
                v.resize(len, 0);
                (Keep::Bytes(v), None)
            }
        },
    }
}
