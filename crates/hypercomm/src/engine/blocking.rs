//! Blocking receives and probes: a receive takes a matching unexpected
//! message, else (the fast path) polls its one sender's channel (or, from
//! any source, the channels in turn; on a transport that matches the
//! world's messages itself, [`Transport::take_plain`]) while nothing else
//! is posted, else posts itself and waits; probes look at the
//! unexpected queue after draining the transport.

use super::matching::{Layout, Match, RawStatus};
use super::requests::{Posted, RawBuf};
use super::{map_err, Engine, Group, BLOCKING};
use crate::error::{Error, Result};
use crate::trace::recorder::{self, Event};
use crate::transport::{Direct, Payload, PeerState, Plain, Taker, Transport};
use crate::wire::Header;
use std::time::Duration;

/// A blocking receive on the fast path ([`Engine::recv_direct`]): takes
/// a matching message that its layout takes straight into its buffer.
struct DirectTaker<'a> {
    m: &'a Match,
    dst: &'a mut [u8],
    layout: Layout,
    /// The header of the message taken.
    got: Option<Header>,
}

impl Taker for DirectTaker<'_> {
    #[inline]
    fn take(&mut self, h: &Header, bytes: &[u8]) -> bool {
        // A synchronous message is acknowledged on the frame path.
        if h.flags != 0
            || !self.m.hits_header(h)
            || !self.layout.takes(bytes.len(), self.dst.len(), true)
        {
            return false;
        }
        let n = bytes.len().min(self.dst.len());
        self.dst[..n].copy_from_slice(&bytes[..n]);
        self.got = Some(*h);
        true
    }
    #[inline]
    fn wants(&self) -> Option<(u64, Option<u32>)> {
        Some((self.m.ctx, self.m.tag))
    }
}

impl Engine {
    /// Non-blocking probe. Like a pending request's `test`, it fails once
    /// no matching message can come any more because the job was aborted
    /// or the source failed (for a wildcard, as for a blocking wildcard
    /// receive), so that an `iprobe` polling loop ends instead of spinning
    /// forever. A source that finished cleanly gives `None`.
    pub(crate) fn iprobe(&self, g: &Group, m: &Match) -> Result<Option<RawStatus>> {
        recorder::hook(Event::Probe);
        self.check_abort(g)?;
        self.progress();
        let found = |e: &Engine| {
            let st = e.st.borrow();
            st.unexpected.iter().find(|x| m.hits(x)).map(|x| RawStatus {
                src: x.src,
                tag: x.tag,
                len: x.payload.len(),
            })
        };
        if let Some(s) = found(self) {
            return Ok(Some(s));
        }
        // A source that finished cleanly may have been drained by this very
        // probe (a drain loop ends on `None`); only a failed one is an error.
        let Some(ep) = self.dead_peer(g, m.src) else {
            return Ok(None);
        };
        if !matches!(self.t.peer_state(ep as usize), PeerState::Failed(_)) {
            return Ok(None);
        }
        // Frames may have arrived before the peer left.
        self.progress();
        if let Some(s) = found(self) {
            return Ok(Some(s));
        }
        // As in `wait_loop`: the peer may have failed after an abort.
        self.check_abort(g)?;
        Err(self.peer_failed(g, ep))
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
        // A matching unexpected message arrived before anything still in
        // the transport: it is the one.
        let r = if let Some(i) = self.find(&m) {
            self.take_unexpected(i, dst, layout)
        } else if let Some(r) = self.recv_direct(&m, dst, layout) {
            r
        } else if self.st.borrow().blocking_posted {
            // A receive inside another's wait: look at the unexpected
            // queue only, as every wait drains the transport.
            let i = self.wait_loop(g, m.src, timeout, op, &what, |e| e.find(&m).map(Ok));
            i.and_then(|i| self.take_unexpected(i, dst, layout))
        } else {
            self.recv_posted(g, m, dst, layout, timeout, op, &what)
        };
        recorder::hook(Event::Done);
        r.map_err(|e| map_err(e, g))
    }

    /// The fast path of a blocking receive from one source (or any), when
    /// nothing else is posted: poll that source's channel alone (or the
    /// channels in turn, [`Transport::take_from`]) and copy a matching
    /// message that is there whole straight into `dst`, for up to a
    /// spinning wait's passes. `None` — something else came first, the
    /// channel has work of its own, or nothing came — leaves everything to
    /// the general path (which then posts the receive and waits, checking
    /// abort, failures, deadlock and the deadline). Non-overtaking holds:
    /// with no receive posted, a message from a source is either in the
    /// unexpected queue (looked at first) or next in its channel.
    #[inline]
    fn recv_direct(&self, m: &Match, dst: &mut [u8], layout: Layout) -> Option<Result<RawStatus>> {
        // A message to itself is the general path's.
        if m.src == Some(self.me) {
            return None;
        }
        if matches!(layout, Layout::Strided { .. }) {
            return None;
        }
        {
            let st = self.st.borrow();
            if !st.posted.is_empty() || !st.claims.is_empty() || st.blocking_posted {
                return None;
            }
        }
        // The world's messages where the transport matches them itself: a
        // plain one that fits goes straight into `dst` (untraced: a
        // recorder wants the blocked wait's events).
        if let (0, Layout::Contiguous, Some(src), Some(tag), false) =
            (m.ctx, layout, m.src, m.tag, recorder::active())
        {
            match self.t.take_plain(src as usize, tag, dst, self.spins()) {
                Plain::Taken(len) => return Some(Ok(self.took_from(src, 0, tag, len))),
                Plain::Other => return None,
                Plain::Unoffered => {}
            }
        }
        let mut t = DirectTaker {
            m,
            dst,
            layout,
            got: None,
        };
        let mut spins = 0;
        loop {
            match self.t.take_from(m.src.map(|s| s as usize), &mut t) {
                Direct::Taken => break,
                Direct::Other => return None,
                Direct::Empty => {
                    if spins == 0 {
                        recorder::hook(Event::Blocked);
                    }
                    spins += 1;
                    if spins >= self.spins() {
                        self.t.take_from_end();
                        return None;
                    }
                    std::hint::spin_loop();
                }
            }
        }
        Some(Ok(self.took(&t.got?)))
    }

    /// Post a blocking receive (no request) and wait for a message to be
    /// delivered into it.
    #[allow(clippy::too_many_arguments)]
    fn recv_posted(
        &self,
        g: &Group,
        m: Match,
        dst: &mut [u8],
        layout: Layout,
        timeout: Option<Duration>,
        op: &str,
        what: &dyn Fn() -> String,
    ) -> Result<RawStatus> {
        self.push_blocking(m, dst, layout);
        self.wait_blocking(g, m.src, timeout, op, what)
    }

    /// Whether no blocking receive is posted (one may be, with
    /// [`Engine::post_blocking`]).
    pub(crate) fn blocking_free(&self) -> bool {
        !self.st.borrow().blocking_posted
    }

    /// Post a blocking receive into `dst` (no request): a message matching
    /// `m` that arrives from now on is delivered straight into it. Returns
    /// the outcome at once, posting nothing, when such a message was already
    /// taken in (unexpected); otherwise [`Engine::wait_blocking`] or
    /// [`Engine::unpost_blocking`] must follow. For a caller that has
    /// something to do between posting and waiting (a collective's round
    /// posts its receive, then sends).
    ///
    /// # Safety
    ///
    /// Unless this returns `Some`, `dst` must stay live, and nothing else
    /// may access it, until that wait or withdrawal returns; no blocking
    /// receive may be posted already ([`Engine::blocking_free`]).
    pub(crate) unsafe fn post_blocking(
        &self,
        m: Match,
        dst: &mut [u8],
        layout: Layout,
    ) -> Option<Result<RawStatus>> {
        if let Some(i) = self.find(&m) {
            return Some(self.take_unexpected(i, dst, layout));
        }
        self.push_blocking(m, dst, layout);
        None
    }

    fn push_blocking(&self, m: Match, dst: &mut [u8], layout: Layout) {
        let mut st = self.st.borrow_mut();
        st.blocking_posted = true;
        st.posted.push_back(Posted {
            req: BLOCKING,
            m,
            buf: RawBuf {
                ptr: dst.as_mut_ptr(),
                len: dst.len(),
            },
            layout,
        });
    }

    /// Wait for the posted blocking receive to be delivered (`peer`: whom
    /// it waits for); on an error it is withdrawn.
    pub(crate) fn wait_blocking(
        &self,
        g: &Group,
        peer: Option<u32>,
        timeout: Option<Duration>,
        op: &str,
        what: &dyn Fn() -> String,
    ) -> Result<RawStatus> {
        let r = self.wait_loop(g, peer, timeout, op, what, |e| {
            e.st.borrow_mut().blocking.take()
        });
        if r.is_err() {
            // Nothing is delivered after the loop's last look.
            self.unpost_blocking();
        } else {
            self.st.borrow_mut().blocking_posted = false;
        }
        r
    }

    /// Withdraw the posted blocking receive (nothing is delivered into its
    /// buffer afterwards).
    pub(crate) fn unpost_blocking(&self) {
        self.unclaim(BLOCKING);
        let mut st = self.st.borrow_mut();
        st.blocking_posted = false;
        st.posted.retain(|p| p.req != BLOCKING);
        st.blocking = None;
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
        self.count_unexpected(status.src, status.len, false);
        self.taken(status.src, status.len);
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
}

pub(super) fn describe_match(g: &Group, m: &Match) -> String {
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
