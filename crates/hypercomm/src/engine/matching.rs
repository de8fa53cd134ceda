//! Matching: what a receive looks for, what arrived, delivery into the
//! receiver's buffer (blocking receives and probes are `blocking.rs`).

use super::requests::{Posted, ReqState};
use super::{Engine, Group, State, BLOCKING};
use crate::error::{Error, Result};
use crate::rank::{Rank, Status};
use crate::trace::recorder::{self, Event};
use crate::transport::{Claim, Frame, Payload, Taker, Transport};
use crate::wire::{Header, Kind};
use std::collections::VecDeque;

/// Match criteria of a receive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Match {
    pub(crate) ctx: u64,
    pub(crate) src: Option<u32>,
    pub(crate) tag: Option<u32>,
}

impl Match {
    /// Whether a frame with header `h` matches.
    #[inline]
    pub(super) fn hits_header(&self, h: &Header) -> bool {
        h.context == self.ctx
            && self.src.is_none_or(|s| s == h.src)
            && self.tag.is_none_or(|t| t == h.tag)
    }

    #[inline]
    pub(super) fn hits(&self, m: &Msg) -> bool {
        m.ctx == self.ctx
            && self.src.is_none_or(|s| s == m.src)
            && self.tag.is_none_or(|t| t == m.tag)
    }
}

/// A posted receive whose message streams into its buffer
/// ([`Engine::claim`]).
pub(super) struct Claimed {
    /// The sender.
    src: u32,
    /// Where the receive was in the posted list.
    at: usize,
    p: Posted,
}

/// The engine as what the transport offers messages to
/// ([`Transport::try_recv_offer`]).
pub(super) struct Offers<'e>(pub(super) &'e Engine);

impl Taker for Offers<'_> {
    #[inline]
    fn take(&mut self, header: &Header, bytes: &[u8]) -> bool {
        self.0.offer(header, bytes)
    }

    fn claim(&mut self, header: &Header) -> Option<Claim> {
        self.0.claim(header)
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
    /// Whether a message of `len` bytes goes straight into a buffer of
    /// `cap` bytes with this layout: whole, or (`prefix`, where the whole
    /// message is at hand) as the prefix a CMMD partial receive keeps;
    /// never into a strided one (that is unpacked on the frame path).
    #[inline(always)]
    pub(super) fn takes(&self, len: usize, cap: usize, prefix: bool) -> bool {
        match self {
            Layout::Contiguous => len <= cap,
            Layout::Partial => prefix || len <= cap,
            Layout::Strided { .. } => false,
        }
    }

    /// Bytes this layout can take.
    pub(super) fn capacity(&self, buf_len: usize) -> usize {
        match *self {
            Layout::Contiguous | Layout::Partial => buf_len,
            Layout::Strided {
                elem_len, count, ..
            } => elem_len.saturating_mul(count),
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
pub(super) fn with_payload(p: Payload, f: impl FnOnce(&[u8]) -> usize) -> Option<usize> {
    match p {
        Payload::Inline(i) => Some(f(i.bytes())),
        Payload::Bytes(b) => Some(f(&b)),
        Payload::Vec(v) => Some(f(v.bytes())),
        Payload::Borrowed(b) => b.with_bytes(f),
    }
}

impl Engine {
    pub(super) fn handle(&self, f: Frame) {
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
                if let Some(b) = self.or_bits(&mut st, h.context).get_mut(h.src as usize) {
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
            Kind::Credit => {
                // What waited for this credit goes now, not when the drain
                // ends: a peer that streams large messages keeps the drain
                // going (each one copied gives it credit for the next), and
                // our own sends would wait for its whole window (`bibw` of
                // 1 MiB ran one direction at a time).
                self.credit_back(h.src, h.id);
                self.send_waiting();
            }
            // Answered by the transports that use them.
            Kind::WaitQuery
            | Kind::WaitReply
            | Kind::DeadlockQuery
            | Kind::DeadlockReply
            | Kind::Deadlock => {}
            // Its arrival woke the wait that looks at the board.
            Kind::Wake => {}
            Kind::Gone => {
                let mut st = self.st.borrow_mut();
                let n = st.blamed.len();
                if let Some(b) = st.blamed.get_mut(h.src as usize) {
                    if b.is_none() && (h.id as usize) < n {
                        *b = Some(h.id as u32);
                    }
                }
            }
        }
    }

    /// The eager fast path: a data message whose bytes the transport has
    /// at hand, offered before any frame is built. Copied straight into
    /// the first posted receive it matches, if it fits there (true); else
    /// left to the transport to hand over as a frame (false).
    pub(super) fn offer(&self, h: &Header, b: &[u8]) -> bool {
        let mut st = self.st.borrow_mut();
        let Some(i) = Self::fitting(&st, h, b.len(), true) else {
            return false;
        };
        // A window of receives matches from the front, a blocking receive
        // (posted last) from the back: both without shifting the rest.
        let Some(p) = take_posted(&mut st.posted, i) else {
            return false;
        };
        let n = b.len().min(p.buf.len);
        // SAFETY: the posted buffer is live and unaliased until its receive
        // completes or is withdrawn (as in `arrive`), and has room for `n`
        // bytes; `b` is the transport's, a separate allocation.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), p.buf.ptr, n) };
        self.received(&mut st, p.req, h);
        true
    }

    /// The posted receive a data message with header `h` and `len` bytes
    /// goes straight into, if the first one it matches can take it whole
    /// (`partial`: a CMMD receive that keeps a prefix can).
    #[inline(always)]
    fn fitting(st: &State, h: &Header, len: usize, partial: bool) -> Option<usize> {
        if h.flags != 0 {
            return None; // synchronous: acknowledged on the frame path
        }
        // Usually the first posted receive takes it (a window's, or a lone
        // blocking one): looked at before the scan of the rest.
        let i = match st.posted.front() {
            None => return None,
            Some(p) if p.m.hits_header(h) => 0,
            Some(_) => 1 + st.posted.iter().skip(1).position(|p| p.m.hits_header(h))?,
        };
        let p = &st.posted[i];
        p.layout.takes(len, p.buf.len, partial).then_some(i)
    }

    /// A message with header `h` is in the buffer of posted receive `req`:
    /// complete it, give its sender credit back, record it.
    #[inline(always)]
    fn received(&self, st: &mut State, req: u64, h: &Header) {
        let status = self.took(h);
        if req == BLOCKING {
            st.blocking = Some(Ok(status));
        } else if let Some(r) = st.reqs.get_mut(req) {
            r.state = ReqState::Done(Ok(status));
        }
    }

    /// A data message with header `h` went straight into a receive's
    /// buffer: give its sender credit back, record it; its status.
    #[inline(always)]
    pub(super) fn took(&self, h: &Header) -> RawStatus {
        self.took_from(h.src, h.context, h.tag, h.len as usize)
    }

    /// [`Engine::took`] of a message from `src` on context `ctx` with
    /// `tag` and `len` bytes, taken without a header.
    #[inline]
    pub(super) fn took_from(&self, src: u32, ctx: u64, tag: u32, len: usize) -> RawStatus {
        self.taken(src, len);
        recorder::hook(Event::Recv {
            src,
            tag,
            len,
            coll: ctx & 1 == 1,
        });
        RawStatus { src, tag, len }
    }

    /// A data message that streams in (longer than the transport has at
    /// hand at once): the buffer of the first posted receive it matches,
    /// if that can take it whole, for the transport to write every part
    /// into (one copy less than reassembling it). The receive leaves the
    /// posted list; the message is matched now, as if all of it had come.
    pub(super) fn claim(&self, h: &Header) -> Option<Claim> {
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let i = Self::fitting(st, h, usize::try_from(h.len).ok()?, false)?;
        let p = take_posted(&mut st.posted, i)?;
        if let Some(r) = st.reqs.get_mut(p.req).filter(|_| p.req != BLOCKING) {
            // Matched: it now waits for this sender only.
            r.peer = Some(h.src);
        }
        // SAFETY: the posted buffer is live and unaliased until its receive
        // completes or is withdrawn; a withdrawal takes the claim back
        // (`Engine::unclaim`) before it returns.
        let claim = unsafe { Claim::new(p.buf.ptr, p.buf.len) };
        st.claims.push(Claimed {
            src: h.src,
            at: i,
            p,
        });
        Some(claim)
    }

    /// The claimed message with header `h` is all in its receive's buffer.
    pub(super) fn filled(&self, h: &Header) {
        let mut st = self.st.borrow_mut();
        if let Some(k) = st.claims.iter().position(|c| c.src == h.src) {
            let c = st.claims.swap_remove(k);
            self.received(&mut st, c.p.req, h);
        }
    }

    /// The message streaming in from `src` was withdrawn by its sender:
    /// its receive goes back where it was in the posted list.
    pub(super) fn withdrawn(&self, src: usize) {
        let mut st = self.st.borrow_mut();
        if let Some(k) = st.claims.iter().position(|c| c.src as usize == src) {
            let c = st.claims.swap_remove(k);
            if let Some(r) = st.reqs.get_mut(c.p.req).filter(|_| c.p.req != BLOCKING) {
                r.peer = c.p.m.src;
            }
            let at = c.at.min(st.posted.len());
            st.posted.insert(at, c.p);
        }
    }

    /// Take back the buffer of receive `req` from the transport, if a
    /// message streams into it (the receive is being withdrawn).
    pub(super) fn unclaim(&self, req: u64) {
        let mut st = self.st.borrow_mut();
        if let Some(k) = st.claims.iter().position(|c| c.p.req == req) {
            let c = st.claims.swap_remove(k);
            drop(st);
            self.t.unclaim(c.src as usize);
        }
    }

    pub(super) fn arrive(&self, mut msg: Msg) {
        let mut st = self.st.borrow_mut();
        // A receive too short for the message fails with `Truncated` and
        // leaves it available: the next posted receive that matches it
        // takes it (before any later message of its sender), else it waits
        // among the unexpected ones.
        let mut from = 0;
        loop {
            let Some(i) = st.posted.iter().skip(from).position(|p| p.m.hits(&msg)) else {
                self.count_unexpected(msg.src, msg.payload.len(), true);
                st.unexpected.push_back(msg);
                return;
            };
            let i = from + i;
            let Some(p) = take_posted(&mut st.posted, i) else {
                return;
            };
            // SAFETY: the posted buffer was a live `&mut [u8]` of the
            // request's scope, which cannot end before the request is
            // completed or removed.
            let dst = unsafe { std::slice::from_raw_parts_mut(p.buf.ptr, p.buf.len) };
            let (src, len) = (msg.src, msg.payload.len());
            let (result, leftover) = self.deliver(msg, dst, p.layout);
            if p.req == BLOCKING {
                st.blocking = Some(result);
            } else if let Some(r) = st.reqs.get_mut(p.req) {
                r.state = ReqState::done(result);
            }
            match leftover {
                Some(m) => {
                    msg = m;
                    from = i;
                }
                None => {
                    self.taken(src, len);
                    return;
                }
            }
        }
    }

    /// Copy a matched message into `dst`. Returns the outcome and, when the
    /// message did not fit, the untouched message to keep.
    pub(super) fn deliver(
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

    /// Take the first unexpected message matching `m` if `pred` accepts it.
    #[inline]
    pub(super) fn find(&self, m: &Match) -> Option<usize> {
        let st = self.st.borrow();
        if st.unexpected.is_empty() {
            return None;
        }
        st.unexpected.iter().position(|x| m.hits(x))
    }

    /// Deliver unexpected message `i` into `dst`; a message that does not
    /// fit goes back where it was (nothing else was taken meanwhile).
    pub(super) fn take_unexpected(
        &self,
        i: usize,
        dst: &mut [u8],
        layout: Layout,
    ) -> Result<RawStatus> {
        let msg = self
            .st
            .borrow_mut()
            .unexpected
            .remove(i)
            .expect("index just found");
        let (src, len) = (msg.src, msg.payload.len());
        let (r, leftover) = self.deliver(msg, dst, layout);
        match leftover {
            Some(msg) => self.st.borrow_mut().unexpected.insert(i, msg),
            None => {
                self.count_unexpected(src, len, false);
                self.taken(src, len);
            }
        }
        r
    }
}

/// Take posted receive `i` out of the list: the first (a window's
/// receives match in order) or the last (a blocking receive is posted
/// last) without the shift bookkeeping that `VecDeque::remove` does even
/// when nothing moves (a `memcpy` call and some thirty instructions a
/// message).
#[inline(always)]
fn take_posted<P>(posted: &mut VecDeque<P>, i: usize) -> Option<P> {
    if i == 0 {
        posted.pop_front()
    } else if i + 1 == posted.len() {
        posted.pop_back()
    } else {
        posted.remove(i)
    }
}
