//! Requests: sends (eager, lent, synchronous), posted receives, and the
//! slab of request slots with test, wait, wait-any and withdraw.

use super::matching::{Layout, Match, RawStatus};
use super::waits::Pass;
use super::{map_err, Engine, Group, EAGER_LIMIT};
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::trace::recorder::{self, Event};
use crate::transport::{Borrowed, Completion, Frame, Payload, Transport};
use crate::wire::{Header, Kind};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// Raw destination of a posted receive.
pub(super) struct RawBuf {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
}

pub(super) struct Posted {
    pub(super) req: u64,
    pub(super) m: Match,
    pub(super) buf: RawBuf,
    pub(super) layout: Layout,
}

pub(super) enum ReqState {
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
    /// Finished with this result (the error boxed: every request is moved
    /// into and out of the slab, and an unboxed error made it 136 bytes).
    Done(std::result::Result<RawStatus, Box<Error>>),
}

impl ReqState {
    /// Finished with `r`.
    pub(super) fn done(r: Result<RawStatus>) -> ReqState {
        ReqState::Done(r.map_err(Box::new))
    }
}

pub(super) struct Req {
    pub(super) state: ReqState,
    /// The endpoint this request depends on (`None`: any member of the group).
    pub(super) peer: Option<u32>,
    pub(super) group: Rc<Group>,
    pub(super) send: bool,
    pub(super) tag: u32,
    pub(super) len: usize,
    /// A send whose frame still waits for credit at its receiver (flow
    /// control): not complete whatever its state says.
    pub(super) queued: bool,
}

/// A request handle inside the engine; never reused within a run.
pub(crate) type ReqId = u64;

/// The requests of one endpoint: a vector of slots with a free list, so
/// that starting and completing a request costs no hashing and, in the
/// steady state, no allocation. An id is the slot index in the low 32 bits
/// and the slot's generation in the high 32 bits: a slot is reused, an id
/// never is (until 2³² reuses of one slot).
#[derive(Default)]
pub(super) struct Slab {
    pub(super) slots: Vec<(u32, Option<Req>)>,
    pub(super) free: Vec<u32>,
}

impl Slab {
    #[inline]
    pub(super) fn insert(&mut self, r: Req) -> ReqId {
        self.insert_with(|| r)
    }

    /// [`Slab::insert`] of the request `make` builds, built straight into
    /// its slot (a request built first and then moved in was stored field
    /// by field and read back as whole words, which the processor cannot
    /// forward from its store buffer: a stall on every receive posted).
    #[inline(always)]
    pub(super) fn insert_with(&mut self, make: impl FnOnce() -> Req) -> ReqId {
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
        slot.1 = Some(make());
        (u64::from(slot.0) << 32) | i as u64
    }

    pub(super) fn slot(&self, id: ReqId) -> Option<&(u32, Option<Req>)> {
        self.slots
            .get((id & 0xffff_ffff) as usize)
            .filter(|s| u64::from(s.0) == id >> 32)
    }

    pub(super) fn get(&self, id: ReqId) -> Option<&Req> {
        self.slot(id)?.1.as_ref()
    }

    pub(super) fn get_mut(&mut self, id: ReqId) -> Option<&mut Req> {
        let s = self.slots.get_mut((id & 0xffff_ffff) as usize)?;
        if u64::from(s.0) != id >> 32 {
            return None;
        }
        s.1.as_mut()
    }

    pub(super) fn remove(&mut self, id: ReqId) -> Option<Req> {
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

    pub(super) fn contains(&self, id: ReqId) -> bool {
        self.get(id).is_some()
    }
}

/// How a lend of this endpoint ended, if it did (then counted as seen,
/// for the deadlock detector). A reader that shares a large copy gets
/// help with it first.
fn lend_end(done: &Completion) -> Option<std::result::Result<usize, ()>> {
    done.help();
    let end = done.finished();
    if end.is_some() {
        done.settle();
    }
    end
}

impl Engine {
    // --------------------------------------------------------------- sends

    pub(super) fn frame(
        &self,
        dst: u32,
        ctx: u64,
        tag: u32,
        sync: Option<u64>,
        payload: Payload,
    ) -> Frame {
        Frame {
            header: self.frame_header(dst, ctx, tag, sync, payload.len()),
            payload,
        }
    }

    #[inline]
    fn frame_header(&self, dst: u32, ctx: u64, tag: u32, sync: Option<u64>, len: usize) -> Header {
        Header {
            kind: Kind::Data,
            flags: if sync.is_some() { Header::FLAG_SYNC } else { 0 },
            src: self.me,
            dst,
            context: ctx,
            tag,
            id: sync.unwrap_or(0),
            len: len as u64,
        }
    }

    pub(super) fn check_dst(&self, g: &Group, dst: u32) -> Result<()> {
        self.check_abort(g)?;
        if let Some(ep) = self.dead_peer(g, Some(dst)) {
            self.progress(); // its report of a root cause, if any
            return Err(self.peer_failed(g, ep));
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
        g: &Rc<Group>,
        dst: u32,
        ctx: u64,
        tag: u32,
        data: &[u8],
        synchronous: bool,
    ) -> Result<Option<ReqId>> {
        if !synchronous && data.len() <= EAGER_LIMIT {
            // The eager fast path: no frame, no request (the transport
            // reports a receiver that has ended; `check_dst` says why).
            self.check_abort(g)?;
            if self.take_credit(dst, data.len()) {
                recorder::hook(Event::Send {
                    dst,
                    tag,
                    len: data.len(),
                    coll: ctx & 1 == 1,
                });
                let header = self.frame_header(dst, ctx, tag, None, data.len());
                let sent = self.t.send_copied(header, data);
                recorder::hook(Event::Done);
                if !sent? {
                    self.check_dst(g, dst)?;
                }
                return Ok(None);
            }
        }
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
        let (payload, lent) = if data.len() > EAGER_LIMIT {
            let done = Completion::counted(self.t.lend_count());
            // SAFETY: forwarded to our caller's contract.
            let b = unsafe { Borrowed::new(data, done.clone()) };
            (Payload::Borrowed(b), Some(done))
        } else {
            (Payload::copy_of(data), None)
        };
        let frame = self.frame(dst, ctx, tag, sync, payload);
        // Flow control: without credit at the receiver the frame waits in
        // this endpoint's queue, and the request completes once it left.
        let frame = if self.take_credit(dst, data.len()) {
            let sent = self.t.send(frame);
            recorder::hook(Event::Done);
            sent?;
            None
        } else {
            recorder::hook(Event::Done);
            Some(frame)
        };
        let state = match (sync, lent) {
            (Some(id), lent) => ReqState::AwaitAck { id, lent },
            (None, Some(done)) => ReqState::Lent { done },
            (None, None) if frame.is_none() => return Ok(None),
            (None, None) => ReqState::Done(Ok(RawStatus {
                src: self.me,
                tag,
                len: data.len(),
            })),
        };
        let id = self.push_req(Req {
            state,
            peer: Some(dst),
            group: g.clone(),
            send: true,
            tag,
            len: data.len(),
            queued: frame.is_some(),
        });
        if let Some(frame) = frame {
            self.wait_for_credit(dst, frame, id);
        }
        Ok(Some(id))
    }

    /// Send an owned payload (vector hand-off); completes at once, unless
    /// the receiver has no credit for it: then operation `op` waits for
    /// credit, failing after `timeout` (the caller's handle's, as every
    /// other blocking send).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_owned(
        &self,
        g: &Rc<Group>,
        dst: u32,
        ctx: u64,
        tag: u32,
        p: Payload,
        timeout: Option<Duration>,
        op: &'static str,
    ) -> Result<()> {
        self.check_dst(g, dst)?;
        let len = p.len();
        recorder::hook(Event::Send {
            dst,
            tag,
            len,
            coll: ctx & 1 == 1,
        });
        let frame = self.frame(dst, ctx, tag, None, p);
        if self.take_credit(dst, len) {
            let r = self.t.send(frame);
            recorder::hook(Event::Done);
            return r;
        }
        recorder::hook(Event::Done);
        let id = self.push_req(Req {
            state: ReqState::Done(Ok(RawStatus {
                src: self.me,
                tag,
                len,
            })),
            peer: Some(dst),
            group: g.clone(),
            send: true,
            tag,
            len,
            queued: true,
        });
        self.wait_for_credit(dst, frame, id);
        self.wait_req(id, timeout, op).map(|_| ())
    }

    /// A frame that waited for credit was handed to the transport (with
    /// `sent`): its request may complete now.
    pub(super) fn left_queue(&self, id: ReqId, sent: Result<()>) {
        let mut st = self.st.borrow_mut();
        if let Some(r) = st.reqs.get_mut(id) {
            r.queued = false;
            if let Err(e) = sent {
                r.state = ReqState::done(Err(e));
            }
        }
    }

    #[inline]
    pub(super) fn push_req(&self, r: Req) -> ReqId {
        self.st.borrow_mut().reqs.insert(r)
    }

    /// Post a non-blocking receive.
    ///
    /// # Safety
    /// `dst` must stay alive, and not be accessed otherwise, until the request
    /// completes or is cancelled.
    #[inline]
    pub(crate) unsafe fn post_recv(
        &self,
        g: &Rc<Group>,
        m: Match,
        dst: &mut [u8],
        layout: Layout,
    ) -> Result<ReqId> {
        self.check_abort(g)?;
        // No drain of the transport first: what already arrived and was
        // taken in is in the unexpected queue (searched below), and what is
        // still in the transport will be offered to this receive, straight
        // from the ring, by the next drain (a window of receives, a
        // collective's round, used to pay a drain each).
        let req = self.st.borrow_mut().reqs.insert_with(|| Req {
            state: ReqState::Recv,
            peer: m.src,
            group: g.clone(),
            send: false,
            tag: m.tag.unwrap_or(u32::MAX),
            len: dst.len(),
            queued: false,
        });
        if let Some(i) = self.find(&m) {
            let r = self.take_unexpected(i, dst, layout);
            if let Some(q) = self.st.borrow_mut().reqs.get_mut(req) {
                q.state = ReqState::done(r);
            }
        } else {
            self.st.borrow_mut().posted.push_back(Posted {
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
    pub(super) fn test_settled(&self, id: ReqId) -> Option<Result<RawStatus>> {
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
                let ep = self.req_dead_peer(id)?;
                self.progress(); // frames may have arrived before the peer left
                if let Some(r) = self.poll_req(id) {
                    return Some(r);
                }
                // As in `wait_loop`: the peer may have failed after an abort.
                match self.check_abort(&group) {
                    Err(e) => e,
                    Ok(()) => self.peer_failed(&group, ep),
                }
            }
        };
        self.withdraw(id);
        Some(Err(err))
    }

    /// The endpoint a pending request depends on, if it is gone (for a
    /// wildcard receive, as for a blocking wildcard receive).
    pub(super) fn req_dead_peer(&self, id: ReqId) -> Option<u32> {
        let (group, peer) = {
            let st = self.st.borrow();
            let r = st.reqs.get(id)?;
            (r.group.clone(), r.peer)
        };
        self.dead_peer(&group, peer)
    }

    #[inline]
    pub(super) fn poll_req(&self, id: ReqId) -> Option<Result<RawStatus>> {
        self.req_finished(id).then(|| self.take_finished(id))
    }

    /// Whether request `id` is finished (a lent send whose buffer was
    /// read, an awaited acknowledgement that came, are made `Done` here).
    #[inline]
    fn req_finished(&self, id: ReqId) -> bool {
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let Some(r) = st.reqs.get_mut(id) else {
            return false;
        };
        if r.queued {
            return false;
        }
        let finished = match &r.state {
            ReqState::Done(_) => true,
            ReqState::Recv => false,
            ReqState::Lent { done } => match lend_end(done) {
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
                    r.state = ReqState::done(Err(Error::PeerFailed { rank }));
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
        finished
    }

    /// The outcome of request `id`, finished ([`Engine::req_finished`]),
    /// which is released. Returned as it is, not inside an `Option`, so
    /// that a caller returning it passes its own return slot down: moved
    /// out of an `Option` built on the stack, the result was stored field
    /// by field and read back as whole words, which the processor cannot
    /// forward from its store buffer (a stall on every request waited for).
    #[inline(always)]
    fn take_finished(&self, id: ReqId) -> Result<RawStatus> {
        let r = self.st.borrow_mut().reqs.remove(id).expect("present");
        match r.state {
            ReqState::Done(res) => res.map_err(|e| map_err(*e, &r.group)),
            _ => unreachable!("finished requests are Done"),
        }
    }

    /// What a request waits for, in words (timeout and deadlock messages).
    fn describe_req(&self, r: &Req) -> String {
        if r.queued {
            format!(
                "credit to send {} bytes with tag {} to {} (the messages it has not \
                 received yet from this rank fill its share)",
                r.len,
                r.tag,
                r.group.rank(r.peer.unwrap_or(self.me))
            )
        } else if r.send {
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
        }
    }

    /// Wait for a request to complete. On failure or timeout the request is
    /// withdrawn (its buffer is no longer used by anyone).
    #[inline]
    pub(crate) fn wait_req(
        &self,
        id: ReqId,
        timeout: Option<Duration>,
        op: &str,
    ) -> Result<RawStatus> {
        // Already complete (a window's receive that an earlier wait's drain
        // filled, a queued send that a drain handed on): no pass of the
        // wait loop, whose drain of the transport costs more than looking.
        if self.req_finished(id) {
            recorder::hook(Event::Wait);
            recorder::hook(Event::Done);
            return self.take_finished(id);
        }
        self.wait_req_pending(id, timeout, op)
    }

    /// [`Engine::wait_req`] for a request not complete at once.
    #[inline(never)]
    fn wait_req_pending(
        &self,
        id: ReqId,
        timeout: Option<Duration>,
        op: &str,
    ) -> Result<RawStatus> {
        let (group, peer, send) = match self.st.borrow().reqs.get(id) {
            Some(r) => (r.group.clone(), r.peer, r.send),
            None => {
                return Err(Error::InvalidArgument {
                    op: "wait",
                    what: format!("request {id} is not active"),
                })
            }
        };
        recorder::hook(Event::Wait);
        // In words only when a timeout or a deadlock report asks: most
        // waits end within a few passes, and formatting costs more.
        let what = || {
            let st = self.st.borrow();
            st.reqs
                .get(id)
                .map_or_else(|| format!("request {id}"), |r| self.describe_req(r))
        };
        let outer = self.set_sending(send);
        let r = self.wait_loop(&group, peer, timeout, op, &what, |e| e.poll_req(id));
        self.set_sending(outer);
        recorder::hook(Event::Done);
        if r.is_err() {
            self.withdraw(id);
        }
        r
    }

    /// Wait until one of `ids` completes: `Ok((index, result))`, that
    /// request finished (and released) with `result` — a request whose
    /// peer is gone finishes with `PeerFailed`. `Err` when the wait itself
    /// ends without any of them finishing (timeout, abort): then every
    /// request is left as it was, still active.
    pub(crate) fn wait_any(
        &self,
        g: &Group,
        ids: &[ReqId],
        timeout: Option<Duration>,
    ) -> Result<(usize, Result<RawStatus>)> {
        let what = || {
            let st = self.st.borrow();
            let each: Vec<String> = ids
                .iter()
                .enumerate()
                .filter_map(|(i, &id)| {
                    st.reqs
                        .get(id)
                        .map(|r| format!("request {i}: {}", self.describe_req(r)))
                })
                .collect();
            format!("any of {} requests ({})", ids.len(), each.join("; "))
        };
        let done = |e: &Self| {
            ids.iter()
                .enumerate()
                .find_map(|(i, &id)| e.poll_req(id).map(|r| (i, r)))
        };
        // Peer failures are checked per request (the loop itself depends on
        // no one, hence `Some(self.me)`): a request fails, under its own
        // index, only when *its* peer is gone; a failed rank that none of
        // the requests depends on does not disturb the others.
        self.wait_loop(g, Some(self.me), timeout, "wait_any", &what, |e| {
            if let Some(x) = done(e) {
                return Some(Ok(x));
            }
            if e.check_abort(g).is_err() {
                return None; // the loop reports the abort next
            }
            let (i, ep) = ids
                .iter()
                .enumerate()
                .find_map(|(i, &id)| e.req_dead_peer(id).map(|ep| (i, ep)))?;
            e.progress(); // frames may have arrived before the peer left
            if let Some(x) = done(e) {
                return Some(Ok(x));
            }
            if e.check_abort(g).is_err() {
                return None; // the peer failed after an abort: report that
            }
            let group = e.st.borrow().reqs.get(ids[i]).map(|r| r.group.clone());
            let err = e.peer_failed(group.as_deref().unwrap_or(g), ep);
            e.withdraw(ids[i]);
            Some(Ok((i, Err(err))))
        })
    }

    /// Withdraw an unfinished request: remove a posted receive, revoke a lent
    /// buffer. Afterwards no one touches the request's buffer.
    pub(crate) fn withdraw(&self, id: ReqId) {
        self.unclaim(id);
        let mut st = self.st.borrow_mut();
        let Some(r) = st.reqs.remove(id) else {
            return;
        };
        if r.queued {
            drop(st);
            self.unqueue(id);
            st = self.st.borrow_mut();
        }
        match &r.state {
            ReqState::Lent { done }
            | ReqState::AwaitAck {
                lent: Some(done), ..
            } => {
                done.revoke();
                done.settle();
            }
            _ => {}
        }
        st.posted.retain(|p| p.req != id);
    }

    /// Cancel a receive that no message has matched yet: withdraw it
    /// (true). False for anything else — a receive that a message matched
    /// (complete, or being filled), a send — which the caller waits for.
    pub(crate) fn cancel(&self, id: ReqId) -> bool {
        let posted = self.st.borrow().posted.iter().any(|p| p.req == id);
        if posted {
            self.withdraw(id);
        }
        posted
    }

    /// Is the request still active?
    pub(crate) fn active(&self, id: ReqId) -> bool {
        self.st.borrow().reqs.contains(id)
    }
}
