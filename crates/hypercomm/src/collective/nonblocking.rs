//! Non-blocking collectives: `ibarrier`, `ibcast`, `ireduce`, `iallreduce`
//! and the rest, returning a [`CollRequest`] that lives in a
//! [`Scope`](crate::Scope) like point-to-point requests.
//!
//! A started collective is registered with the rank's engine, and every wait
//! of the rank (any receive, any request, any other collective) advances all
//! registered collectives. So several may be outstanding on one communicator
//! and be waited for in any order on different ranks.
//!
//! Non-blocking forms: `ibarrier`, `ibcast`, `ireduce`, `iallreduce`,
//! `igather`, `iscatter`, `iallgather`, `ialltoall`, `ireduce_scatter`,
//! `iscan` (any direction, inclusion and segmentation).
//!
//! Each form fills the same [`Call`] as its blocking counterpart, starts it
//! with [`Comm::start`] into a task that borrows the buffers for `'env`,
//! and hands the task to the scope ([`Scope::keep_task`]): the scope
//! registers it with the engine and, when it ends, runs it to completion
//! (or withdraws it) and unregisters it, whatever became of the request.
//!
//! Not done yet: non-blocking forms of the host-rooted variants, of the
//! variable-count calls and of the multicast.

use super::call::Call;
use super::ops::{Element, Operator};
use super::scan::{Scan, ScanCall};
use super::select::CollOpts;
use crate::comm::Comm;
use crate::engine::Engine;
use crate::engine::Task;
use crate::error::Result;
use crate::rank::Rank;
use crate::request::Scope;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Duration;

/// A collective in flight. Wait for it with [`CollRequest::wait`]; dropping
/// it waits too.
#[must_use = "a collective request must be waited for"]
pub struct CollRequest<'scope> {
    /// The task, which borrows the call's buffers for at least 'scope.
    task: Rc<RefCell<dyn Task + 'scope>>,
    engine: Rc<Engine>,
    timeout: Option<Duration>,
    what: &'static str,
    done: Option<Result<()>>,
    _scope: PhantomData<&'scope ()>,
}

impl CollRequest<'_> {
    /// Wait until the collective has completed on this rank.
    pub fn wait(mut self) -> Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> Result<()> {
        if let Some(d) = self.done.take() {
            return d;
        }
        let r = self.engine.run_task(&self.task, self.timeout, self.what);
        self.engine.unregister(&self.task);
        self.done = Some(Ok(()));
        r
    }

    /// Complete the collective if it can be without blocking.
    pub fn test(&mut self) -> Option<Result<()>> {
        if let Some(d) = &self.done {
            return Some(d.clone());
        }
        self.engine.progress();
        let r = {
            let mut t = self.task.borrow_mut();
            if !t.advance(&self.engine) {
                return None;
            }
            t.take_result().unwrap_or(Ok(()))
        };
        self.engine.unregister(&self.task);
        self.done = Some(r.clone());
        Some(r)
    }
}

impl Drop for CollRequest<'_> {
    fn drop(&mut self) {
        if self.done.is_none() {
            let _ = self.finish();
        }
    }
}

impl Comm {
    /// Start `call` as a task kept by the scope `s`.
    fn start_in<'scope, 'env, T: Element, O: Operator<T> + 'static>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        call: Call<'env, T, O>,
        what: &'static str,
    ) -> Result<CollRequest<'scope>> {
        let task = Rc::new(RefCell::new(self.start(call)?));
        let engine = self.inner.engine.clone();
        s.keep_task(engine.clone(), task.clone(), what);
        Ok(CollRequest {
            task,
            engine,
            timeout: self.timeout,
            what,
            done: None,
            _scope: PhantomData,
        })
    }

    /// Non-blocking barrier over the nodes.
    pub fn ibarrier<'scope>(&self, s: &'scope Scope<'scope, '_>) -> Result<CollRequest<'scope>> {
        let parts = self.node_parts("ibarrier")?;
        let call = self.barrier_call(parts, &CollOpts::default())?;
        self.start_in(s, call, "ibarrier")
    }

    /// Non-blocking broadcast from a node.
    pub fn ibcast<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        buf: &'env mut [T],
        root: usize,
    ) -> Result<CollRequest<'scope>> {
        let call = self.bcast_call(buf, Rank::Node(root), &CollOpts::default())?;
        self.start_in(s, call, "ibcast")
    }

    /// Non-blocking reduce to a node (`output` is used at the root only).
    pub fn ireduce<'scope, 'env, T: Element, O: Operator<T> + 'static>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
        op: O,
        root: usize,
    ) -> Result<CollRequest<'scope>> {
        let call = self.reduce_call(input, output, op, Rank::Node(root), &CollOpts::default())?;
        self.start_in(s, call, "ireduce")
    }

    /// Non-blocking allreduce.
    pub fn iallreduce<'scope, 'env, T: Element, O: Operator<T> + 'static>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
        op: O,
    ) -> Result<CollRequest<'scope>> {
        let call = self.allreduce_call(input, output, op, &CollOpts::default())?;
        self.start_in(s, call, "iallreduce")
    }

    /// Non-blocking gather to a node (`output`: `size() × input.len()`
    /// elements at the root, unused elsewhere).
    pub fn igather<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
        root: usize,
    ) -> Result<CollRequest<'scope>> {
        let call = self.gather_call(input, output, Rank::Node(root), &CollOpts::default())?;
        self.start_in(s, call, "igather")
    }

    /// Non-blocking scatter from a node (`output.len()` elements each).
    pub fn iscatter<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
        root: usize,
    ) -> Result<CollRequest<'scope>> {
        let call = self.scatter_call(input, output, Rank::Node(root), &CollOpts::default())?;
        self.start_in(s, call, "iscatter")
    }

    /// Non-blocking allgather.
    pub fn iallgather<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
    ) -> Result<CollRequest<'scope>> {
        let call = self.allgather_call(input, output, &CollOpts::default())?;
        self.start_in(s, call, "iallgather")
    }

    /// Non-blocking all-to-all.
    pub fn ialltoall<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
    ) -> Result<CollRequest<'scope>> {
        let call = self.alltoall_call(input, output, &CollOpts::default())?;
        self.start_in(s, call, "ialltoall")
    }

    /// Non-blocking reduce-scatter with equal blocks (`output.len()` each).
    pub fn ireduce_scatter<'scope, 'env, T: Element, O: Operator<T> + 'static>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
        op: O,
    ) -> Result<CollRequest<'scope>> {
        let counts = vec![output.len(); self.size()];
        let call = self.reduce_scatterv_call(input, &counts, output, op, &CollOpts::default())?;
        self.start_in(s, call, "ireduce_scatter")
    }

    /// Non-blocking scan of any kind (see [`Scan`]).
    pub fn iscan<'scope, 'env, T: Element, O: Operator<T> + 'static>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
        op: O,
        scan: &Scan,
    ) -> Result<CollRequest<'scope>> {
        match self.scan_call(input, output, op, scan, &CollOpts::default())? {
            ScanCall::Plain(call) => self.start_in(s, call, "iscan"),
            ScanCall::Segmented(call) => self.start_in(s, call, "iscan"),
        }
    }
}
