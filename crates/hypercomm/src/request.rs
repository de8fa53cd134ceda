//! Non-blocking operations: scopes and requests.
//!
//! A non-blocking send or receive borrows its buffer until it completes. The
//! borrow checker enforces this through a [`Scope`] (the same shape as
//! `std::thread::scope`): requests cannot outlive the scope, buffers must
//! outlive it, and when the scope ends every request that is still active —
//! even one that was leaked with `mem::forget` — is waited for. Dropping an
//! unfinished [`Request`] waits for it as well. If the scope's closure
//! panics, what is still active is withdrawn instead, without waiting.
//!
//! Non-blocking collectives are tasks that every wait of the rank advances.
//! The engine's list of them holds `'static` trait objects, while a task
//! borrows its buffers for `'env`; `Scope::keep_task` erases that
//! lifetime, in this one place, and the end of the scope makes the erasure
//! harmless: it finishes or withdraws every task it kept and unregisters it
//! from the engine before `'env` can end, leaked request or not.
//!
//! ```
//! hypercomm::run(2, |comm| {
//!     let peer = 1 - comm.rank();
//!     let out = [comm.rank() as u64; 4];
//!     let mut inb = [0u64; 4];
//!     hypercomm::scope(|s| -> hypercomm::Result<()> {
//!         let r = comm.irecv(s, &mut inb, peer, 0)?;
//!         let w = comm.isend(s, &out, peer, 0)?;
//!         hypercomm::wait_all(vec![r, w])?;
//!         Ok(())
//!     })?;
//!     assert_eq!(inb, [peer as u64; 4]);
//!     Ok::<_, hypercomm::Error>(())
//! }).unwrap();
//! ```

use crate::comm::{Comm, CommInner};
use crate::engine::Task;
use crate::engine::{Engine, Layout, ReqId};
use crate::error::{Error, Result};
use crate::rank::{Rank, Source, Status, Tag};
use bytemuck::Pod;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::rc::{Rc, Weak};
use std::time::Duration;

/// A collective kept by a scope: its engine, the task, its name.
type ScopedTask<'env> = (Rc<Engine>, Rc<RefCell<dyn Task + 'env>>, &'static str);

/// The region within which non-blocking requests live. See [`scope`].
pub struct Scope<'scope, 'env: 'scope> {
    started: RefCell<Vec<(Rc<Engine>, ReqId)>>,
    tasks: RefCell<Vec<ScopedTask<'env>>>,
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

/// Run `f` with a [`Scope`] for non-blocking operations; every request
/// started in it is complete when `scope` returns.
pub fn scope<'env, R>(f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R) -> R {
    let s = Scope {
        // Room for a window of 64 requests at once: growing to it took a
        // malloc and four reallocs per scope.
        started: RefCell::new(Vec::with_capacity(64)),
        tasks: RefCell::new(Vec::new()),
        scope: PhantomData,
        env: PhantomData,
    };
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| f(&s)));
    s.end(r.is_err());
    match r {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

impl<'env> Scope<'_, 'env> {
    /// Keep a collective's task: register it with the engine, so that every
    /// wait advances it, and have the scope's end finish it.
    pub(crate) fn keep_task(
        &self,
        e: Rc<Engine>,
        t: Rc<RefCell<dyn Task + 'env>>,
        what: &'static str,
    ) {
        let weak: Weak<RefCell<dyn Task + 'env>> = Rc::downgrade(&t);
        // SAFETY: only the lifetime changes (same type, same layout). The
        // task borrows buffers for 'env, which outlives this scope; the
        // engine reaches the task only through this weak reference while
        // it is registered, and `end` runs before `scope` returns (also when
        // the closure panics) and unregisters every task kept here, leaked
        // request or not, after finishing or withdrawing it. So nothing
        // reaches the task once 'env may have ended.
        let weak = unsafe {
            std::mem::transmute::<Weak<RefCell<dyn Task + 'env>>, Weak<RefCell<dyn Task>>>(weak)
        };
        e.register(weak);
        self.tasks.borrow_mut().push((e, t, what));
    }

    /// The end of the scope: finish every collective (or, after a panic,
    /// withdraw it) and unregister it, then wait for (or withdraw) every
    /// point-to-point request that is still active.
    fn end(&self, panicked: bool) {
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        // Collectives first: they may be what the point-to-point requests wait for.
        for (e, t, what) in &tasks {
            if panicked {
                if let Ok(mut t) = t.try_borrow_mut() {
                    t.withdraw(e);
                }
            } else {
                let _ = e.run_task(t, e.default_timeout, what);
            }
            e.unregister(t);
        }
        for (e, id) in self.started.borrow_mut().drain(..) {
            if e.active(id) {
                if !panicked {
                    let _ = e.wait_req(id, e.default_timeout, "end of scope");
                }
                e.withdraw(id);
            }
        }
    }
}

/// A non-blocking operation in flight. Wait for it with [`Request::wait`],
/// poll it with [`Request::test`], withdraw a receive that nothing matched
/// with [`Request::cancel`]; dropping it waits. For several: [`wait_all`],
/// [`wait_any`], [`wait_some`], [`test_all`], [`test_any`].
#[must_use = "a request must be waited for"]
pub struct Request<'scope> {
    /// The communicator's shared part: its engine and group (one
    /// reference count, not an atomic one: a request is made per message).
    comm: Rc<CommInner>,
    id: ReqId,
    timeout: Option<Duration>,
    /// The outcome, when known before a wait (its error boxed: a request
    /// is moved into and out of vectors once or twice per message, and a
    /// request holding a whole `Error` was too large to move without a
    /// call to `memcpy`).
    done: Option<std::result::Result<Status, Box<Error>>>,
    /// Waited for (`done` was taken, or the engine's wait returned).
    waited: bool,
    /// The element size of a receive's buffer (1 for sends): a message
    /// that is not a whole number of elements completes with
    /// [`Error::BadLength`], as a blocking receive's does.
    elem: u32,
    _scope: PhantomData<&'scope ()>,
}

impl<'scope> Request<'scope> {
    /// A request on `comm` in scope `s`: engine request `id`, or none
    /// (complete at once with `ready`); `elem` is the element size of a
    /// receive's buffer (1 for sends). Always inlined, so that the request
    /// is built where the caller returns it: built here and then moved,
    /// it was stored field by field and read back as whole words, which
    /// the processor cannot forward from its store buffer.
    #[inline(always)]
    fn new(
        comm: &Comm,
        s: &'scope Scope<'scope, '_>,
        id: Option<ReqId>,
        ready: Status,
        elem: u32,
    ) -> Request<'scope> {
        if let Some(id) = id {
            s.started.borrow_mut().push((comm.inner.engine.clone(), id));
        }
        Request {
            comm: comm.inner.clone(),
            id: id.unwrap_or(0),
            timeout: comm.timeout(),
            done: if id.is_none() { Some(Ok(ready)) } else { None },
            waited: false,
            elem,
            _scope: PhantomData,
        }
    }

    /// Wait for completion. For a receive the status describes the message;
    /// for a send, `source` is the sender itself and `len` the bytes sent
    /// (or taken, for a synchronous send).
    pub fn wait(mut self) -> Result<Status> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Status> {
        self.waited = true;
        if let Some(d) = self.done.take() {
            return d.map_err(|e| *e);
        }
        self.comm
            .engine
            .wait_req(self.id, self.timeout, "wait")
            .and_then(|s| self.whole(s.to_status(&self.comm.group)))
    }

    /// `st`, or [`Error::BadLength`] when it is not a whole number of this
    /// receive's elements.
    #[inline]
    fn whole(&self, st: Status) -> Result<Status> {
        if self.elem > 1 || self.elem == 0 {
            crate::p2p::check_elem_size(&st, self.elem as usize)?;
        }
        Ok(st)
    }

    /// Cancel the request, as MPI's `MPI_Cancel` followed by `MPI_Wait`
    /// and `MPI_Test_cancelled`: a receive that no message has matched yet
    /// is withdrawn — its buffer is left as it was, and a message that
    /// comes later waits for another receive — and `Ok(None)` says so. A
    /// receive that a message has already matched, and a send (whose
    /// message may be on its way: MPI 4 deprecates cancelling sends),
    /// cannot be cancelled: they complete as [`Request::wait`] would, and
    /// `Ok(Some(status))` says what they did.
    ///
    /// ```
    /// hypercomm::run(2, |comm| {
    ///     let mut buf = [0u32; 2];
    ///     hypercomm::scope(|s| {
    ///         // Nobody sends with tag 7: the receive is cancelled.
    ///         let r = comm.irecv(s, &mut buf, 1 - comm.rank(), 7)?;
    ///         assert_eq!(r.cancel()?, None);
    ///         Ok::<_, hypercomm::Error>(())
    ///     })?;
    ///     assert_eq!(buf, [0, 0]);
    ///     Ok::<_, hypercomm::Error>(())
    /// }).unwrap();
    /// ```
    pub fn cancel(mut self) -> Result<Option<Status>> {
        if self.done.is_none() && self.comm.engine.cancel(self.id) {
            self.waited = true;
            return Ok(None);
        }
        self.finish().map(Some)
    }

    /// Complete the request if it can be without blocking.
    pub fn test(&mut self) -> Option<Result<Status>> {
        if let Some(d) = &self.done {
            return Some(d.as_ref().copied().map_err(|e| Error::clone(e)));
        }
        let c = &self.comm;
        let r = match c.engine.test(self.id) {
            Some(r) => r.and_then(|s| self.whole(s.to_status(&c.group))),
            None => {
                // Still pending. After an abort it never completes, so fail
                // it (and withdraw it) rather than let a `test` loop spin.
                let aborted = c.engine.check_abort(&c.group).err()?;
                c.engine.withdraw(self.id);
                Err(aborted)
            }
        };
        self.done = Some(r.clone().map_err(Box::new));
        Some(r)
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.done.is_none() && !self.waited {
            let _ = self.finish();
        }
    }
}

/// Wait for all requests; returns their statuses in order. Every request
/// is completed (or, when it fails, withdrawn) before this returns, so a
/// failure of one leaves the others' results in their buffers. When some
/// failed, the error is [`Error::RequestFailed`] naming the first failed
/// request by its index in `reqs` — except a failure of the whole job
/// ([`Error::Aborted`], [`Error::Protocol`]), which is returned as it is.
pub fn wait_all(reqs: Vec<Request<'_>>) -> Result<Vec<Status>> {
    let count = reqs.len();
    let mut out = Vec::with_capacity(count);
    let mut first_err = None;
    for (index, r) in reqs.into_iter().enumerate() {
        match r.wait() {
            Ok(s) => out.push(s),
            Err(e) => {
                first_err.get_or_insert(failed_at(index, count, e));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Wait until one of `reqs` completes and remove it from the vector:
///
/// * `Some(Ok((index, status)))`: request `index` (its former index)
///   completed;
/// * `Some(Err(Error::RequestFailed { index, .. }))`: request `index`
///   failed (its peer is gone, its buffer was too small, …) and was
///   removed;
/// * `Some(Err(e))` with any other error: the wait itself ended before any
///   request did (a timeout, an abort); **no request was removed**, each is
///   still valid and may be waited for again;
/// * `None`: `reqs` is empty.
pub fn wait_any(reqs: &mut Vec<Request<'_>>) -> Option<Result<(usize, Status)>> {
    if reqs.is_empty() {
        return None;
    }
    let count = reqs.len();
    let failed = |index: usize, e: Error| Error::RequestFailed {
        index,
        count,
        error: Box::new(e),
    };
    // Requests already finished (by `test`) are reported first.
    if let Some(i) = reqs.iter().position(|r| r.done.is_some()) {
        let mut req = reqs.remove(i);
        return Some(req.finish().map(|s| (i, s)).map_err(|e| failed(i, e)));
    }
    let ids: Vec<ReqId> = reqs.iter().map(|r| r.id).collect();
    let (comm, timeout) = (reqs[0].comm.clone(), reqs[0].timeout);
    let (i, r) = match comm.engine.wait_any(&comm.group, &ids, timeout) {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let mut req = reqs.remove(i);
    req.done = Some(Err(Box::new(Error::InvalidArgument {
        op: "wait",
        what: "request already waited for".into(),
    })));
    Some(
        r.and_then(|s| req.whole(s.to_status(&req.comm.group)))
            .map(|s| (i, s))
            .map_err(|e| failed(i, e)),
    )
}

/// Complete one of `reqs` if one can be without blocking (MPI's
/// `MPI_Testany`) and remove it from the vector: `Some(Ok((index,
/// status)))` for request `index` (its former index; the first that is
/// complete), `Some(Err(Error::RequestFailed { index, .. }))` when it
/// failed (it is removed too; a failure of the whole job, an abort, is
/// returned as it is), `None` while none is complete (or `reqs` is empty).
pub fn test_any(reqs: &mut Vec<Request<'_>>) -> Option<Result<(usize, Status)>> {
    let count = reqs.len();
    let i = reqs.iter_mut().position(|r| r.test().is_some())?;
    let mut req = reqs.remove(i);
    Some(
        req.finish()
            .map(|s| (i, s))
            .map_err(|e| failed_at(i, count, e)),
    )
}

/// Request `index` of `count` failed with `e`: [`Error::RequestFailed`],
/// except a failure of the whole job (an abort, a protocol error), which
/// is the news as it is.
fn failed_at(index: usize, count: usize, e: Error) -> Error {
    match e {
        e @ (Error::Aborted { .. } | Error::Protocol(_)) => e,
        e => Error::RequestFailed {
            index,
            count,
            error: Box::new(e),
        },
    }
}

/// Complete every one of `reqs` if all can be without blocking (MPI's
/// `MPI_Testall`): `Some` with what [`wait_all`] returns (their statuses in
/// order; the vector is emptied), `None` while one is still pending (the
/// vector keeps them all, and those that completed keep their outcome for
/// a later wait or test). An empty `reqs` is complete.
pub fn test_all(reqs: &mut Vec<Request<'_>>) -> Option<Result<Vec<Status>>> {
    // Every request is tested, also after one that is pending.
    let pending = reqs
        .iter_mut()
        .map(|r| r.test().is_none() as usize)
        .sum::<usize>();
    (pending == 0).then(|| wait_all(std::mem::take(reqs)))
}

/// Wait until at least one of `reqs` completes, then remove every one that
/// is complete (MPI's `MPI_Waitsome`): their former indices, ascending,
/// each with its outcome (its own failure as [`Request::wait`] returns it).
/// `Err` when the wait itself ended before any request did (a timeout, an
/// abort): then no request was removed. An empty `reqs` gives an empty
/// list at once.
pub fn wait_some(reqs: &mut Vec<Request<'_>>) -> Result<Vec<(usize, Result<Status>)>> {
    let mut out = Vec::new();
    let mut taken = None;
    let ready = reqs
        .iter_mut()
        .map(|r| r.test().is_some() as usize)
        .sum::<usize>();
    if ready == 0 {
        let (i, r) = match wait_any(reqs) {
            None => return Ok(out),
            Some(Ok((i, s))) => (i, Ok(s)),
            Some(Err(Error::RequestFailed { index, error, .. })) => (index, Err(*error)),
            Some(Err(e)) => return Err(e),
        };
        out.push((i, r));
        taken = Some(i);
        reqs.iter_mut().for_each(|r| {
            let _ = r.test();
        });
    }
    // Indices in `reqs` before `wait_any` removed one.
    let former = |j: usize| match taken {
        Some(t) if j >= t => j + 1,
        _ => j,
    };
    let ready: Vec<usize> = (0..reqs.len())
        .filter(|&j| reqs[j].done.is_some())
        .collect();
    for &j in ready.iter().rev() {
        let mut req = reqs.remove(j);
        out.push((former(j), req.finish()));
    }
    out.sort_by_key(|&(i, _)| i);
    Ok(out)
}

impl Comm {
    /// Start a non-blocking send of `buf` (borrowed until complete).
    pub fn isend<'scope, 'env, T: Pod>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        buf: &'env [T],
        dest: impl Into<Rank>,
        tag: u32,
    ) -> Result<Request<'scope>> {
        self.isend_impl(s, buf, dest.into(), tag, false)
    }

    /// Start a non-blocking synchronous send: completes when matched.
    pub fn issend<'scope, 'env, T: Pod>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        buf: &'env [T],
        dest: impl Into<Rank>,
        tag: u32,
    ) -> Result<Request<'scope>> {
        self.isend_impl(s, buf, dest.into(), tag, true)
    }

    fn isend_impl<'scope, 'env, T: Pod>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        buf: &'env [T],
        dest: Rank,
        tag: u32,
        sync: bool,
    ) -> Result<Request<'scope>> {
        let ep = self.ep(dest, "isend")?;
        let bytes: &'env [u8] = bytemuck::cast_slice(buf);
        // SAFETY: `bytes` lives for 'env, which outlives the scope; the scope
        // waits for every request it started before it returns.
        let id = unsafe {
            self.engine()
                .start_send(self.group(), ep, self.inner.ctx, tag, bytes, sync)?
        };
        let me = self.me();
        Ok(Request::new(
            self,
            s,
            id,
            Status {
                source: me,
                tag,
                len: bytes.len(),
            },
            1,
        ))
    }

    /// Post a non-blocking receive into `buf` (borrowed until complete).
    pub fn irecv<'scope, 'env, T: Pod>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        buf: &'env mut [T],
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Request<'scope>> {
        let src = src.into();
        let tag = tag.into();
        let m = crate::engine::Match {
            ctx: self.inner.ctx,
            src: match src {
                Source::Any => None,
                Source::Rank(r) => Some(self.ep(r, "irecv")?),
            },
            tag: match tag {
                Tag::Any => None,
                Tag::Is(t) => Some(t),
            },
        };
        let bytes: &'env mut [u8] = bytemuck::cast_slice_mut(buf);
        // SAFETY: as for isend: the buffer outlives the scope, which waits for
        // (or withdraws) the request before it ends.
        let id = unsafe {
            self.engine()
                .post_recv(self.group(), m, bytes, Layout::Contiguous)?
        };
        Ok(Request::new(
            self,
            s,
            Some(id),
            Status {
                source: Rank::Node(0),
                tag: 0,
                len: 0,
            },
            u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX),
        ))
    }
}

#[cfg(test)]
mod tests {
    /// A request is moved into the caller's vector and out again in
    /// `wait_all`, once or twice per message: small enough to move
    /// without a call to `memcpy` (with a whole `Error` inside, a request
    /// had 144 bytes, the compiler moved it with a call, and a window of
    /// 8-byte sends ran about a tenth slower; BENCHMARKS.md).
    #[test]
    fn a_request_moves_without_a_call() {
        let size = std::mem::size_of::<super::Request<'static>>();
        assert!(size <= 96, "a request takes {size} bytes");
    }
}
