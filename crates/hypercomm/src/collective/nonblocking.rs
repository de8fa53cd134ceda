//! Non-blocking collectives: `ibarrier`, `ibcast`, `ireduce`, `iallreduce`
//! and the rest, returning a [`CollRequest`] that lives in a
//! [`Scope`] like point-to-point requests.
//!
//! A started collective is registered with the rank's engine, and every wait
//! of the rank (any receive, any request, any other collective) advances all
//! registered collectives. So several may be outstanding on one communicator
//! and be waited for in any order on different ranks.
//!
//! Non-blocking forms: `ibarrier`, `ibcast`, `ireduce`, `iallreduce`,
//! `igather`, `iscatter`, `iallgather`, `ialltoall`, `ireduce_scatter`,
//! `iscan` (any direction, inclusion and segmentation), and the
//! variable-count forms whose counts every node knows (as MPI's):
//! `igatherv`, `iscatterv`, `iallgatherv`, `ialltoallv`,
//! `ireduce_scatterv`.
//!
//! Each form fills the same [`Call`] as its blocking counterpart, starts it
//! with [`Comm::start`] into a task that borrows the buffers for `'env`,
//! and hands the task to the scope ([`Scope::keep_task`]): the scope
//! registers it with the engine and, when it ends, runs it to completion
//! (or withdraws it) and unregisters it, whatever became of the request.
//!
//! Not done yet: non-blocking forms of the host-rooted variants, of the
//! variable-count calls that learn the counts first (`gatherv`,
//! `allgatherv`, `scatterv`, `alltoallv` without counts) and of the
//! multicast.

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
use hypercomm_algo::Collective;
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
        let call = self
            .barrier_call(parts, &CollOpts::default())?
            .ready(self)?;
        self.start_in(s, call, "ibarrier")
    }

    /// Non-blocking broadcast from a node.
    pub fn ibcast<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        buf: &'env mut [T],
        root: usize,
    ) -> Result<CollRequest<'scope>> {
        let built = self.bcast_call(buf, Rank::Node(root), &CollOpts::default());
        let call = self
            .announce_bad(Collective::Bcast, "ibcast", built, true)?
            .ready(self)?;
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
        let built = self.reduce_call(input, output, op, Rank::Node(root), &CollOpts::default());
        let call = self
            .announce_bad(Collective::Reduce, "ireduce", built, true)?
            .ready(self)?;
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
        let built = self.allreduce_call(input, output, op, &CollOpts::default());
        let call = self
            .announce_bad(Collective::Allreduce, "iallreduce", built, true)?
            .ready(self)?;
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
        let built = self.gather_call(input, output, Rank::Node(root), &CollOpts::default());
        let call = self.announce_bad(Collective::Gather, "igather", built, true)?;
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
        let built = self.scatter_call(input, output, Rank::Node(root), &CollOpts::default());
        let call = self.announce_bad(Collective::Scatter, "iscatter", built, true)?;
        self.start_in(s, call, "iscatter")
    }

    /// Non-blocking allgather.
    pub fn iallgather<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
    ) -> Result<CollRequest<'scope>> {
        let built = self.allgather_call(input, output, &CollOpts::default());
        let call = self
            .announce_bad(Collective::Allgather, "iallgather", built, true)?
            .ready(self)?;
        self.start_in(s, call, "iallgather")
    }

    /// Non-blocking all-to-all.
    pub fn ialltoall<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
    ) -> Result<CollRequest<'scope>> {
        let built = self.alltoall_call(input, output, &CollOpts::default());
        let call = self
            .announce_bad(Collective::Alltoall, "ialltoall", built, true)?
            .ready(self)?;
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
        let built = self.reduce_scatterv_call(input, &counts, output, op, &CollOpts::default());
        let call = self.announce_bad(Collective::ReduceScatter, "ireduce_scatter", built, true)?;
        self.start_in(s, call, "ireduce_scatter")
    }

    /// Non-blocking gatherv to a node ([`Comm::gatherv_into`]): node i's
    /// `input` has `counts[i]` elements, `counts` is given on every node,
    /// `output` has `Σ counts` elements at the root (unused elsewhere).
    pub fn igatherv<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
        counts: &[usize],
        root: usize,
    ) -> Result<CollRequest<'scope>> {
        let (kind, what) = (Collective::Gatherv, "igatherv");
        let total = counts.iter().sum();
        let opts = CollOpts::default();
        let built = self.own_block(what, input.len(), counts).and_then(|()| {
            self.gatherv_call(input, counts, output, Rank::Node(root), kind, total, &opts)
        });
        let call = self.announce_bad(kind, what, built, true)?;
        self.start_in(s, call, what)
    }

    /// Non-blocking scatterv from a node ([`Comm::scatterv_into`]): node i
    /// receives `counts[i]` elements into `output`; `counts` is given on
    /// every node, the root's `input` has `Σ counts` elements.
    pub fn iscatterv<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        counts: &[usize],
        output: &'env mut [T],
        root: usize,
    ) -> Result<CollRequest<'scope>> {
        let (kind, what) = (Collective::Scatterv, "iscatterv");
        let total = counts.iter().sum();
        let opts = CollOpts::default();
        let built = self.scatterv_call(input, counts, output, Rank::Node(root), kind, total, &opts);
        let call = self.announce_bad(kind, what, built, true)?;
        self.start_in(s, call, what)
    }

    /// Non-blocking allgatherv ([`Comm::allgatherv_into`]): `counts` (one
    /// per node) given on every node, `output` has `Σ counts` elements.
    pub fn iallgatherv<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        output: &'env mut [T],
        counts: &[usize],
    ) -> Result<CollRequest<'scope>> {
        let (kind, what) = (Collective::Allgatherv, "iallgatherv");
        let built = self
            .own_block(what, input.len(), counts)
            .and_then(|()| self.allgatherv_call(input, counts, output, &CollOpts::default()));
        let call = self.announce_bad(kind, what, built, true)?;
        self.start_in(s, call, what)
    }

    /// Non-blocking all-to-all with variable counts
    /// ([`Comm::alltoallv_into`]).
    pub fn ialltoallv<'scope, 'env, T: Element>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        send_counts: &[usize],
        output: &'env mut [T],
        recv_counts: &[usize],
    ) -> Result<CollRequest<'scope>> {
        let (kind, what) = (Collective::Alltoallv, "ialltoallv");
        let opts = CollOpts::default();
        let built = self.alltoallv_call(input, send_counts, output, recv_counts, &opts);
        let call = self.announce_bad(kind, what, built, true)?;
        self.start_in(s, call, what)
    }

    /// Non-blocking reduce-scatter with blocks of different lengths
    /// ([`Comm::reduce_scatterv_into`]).
    pub fn ireduce_scatterv<'scope, 'env, T: Element, O: Operator<T> + 'static>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        input: &'env [T],
        counts: &[usize],
        output: &'env mut [T],
        op: O,
    ) -> Result<CollRequest<'scope>> {
        let (kind, what) = (Collective::ReduceScatter, "ireduce_scatterv");
        let built = self.reduce_scatterv_call(input, counts, output, op, &CollOpts::default());
        let call = self.announce_bad(kind, what, built, true)?;
        self.start_in(s, call, what)
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
        let built = self.scan_call(input, output, op, scan, &CollOpts::default());
        match self.announce_bad(Collective::Scan, "iscan", built, true)? {
            ScanCall::Plain(call) => self.start_in(s, call, "iscan"),
            ScanCall::Segmented(call) => self.start_in(s, call, "iscan"),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::collective::{Scan, Sum};
    use crate::{Comm, Error, Result};

    /// Collectives and waits on `comm` after a scope ended, checking every
    /// result: nothing of an earlier scope's task may take part in them.
    fn more_traffic(comm: &Comm) -> Result<()> {
        let (me, n) = (comm.rank() as u64, comm.size() as u64);
        let sum = n * (n + 1) / 2;
        for round in 0..3u64 {
            let input = vec![me + 1 + round; 7];
            assert_eq!(comm.allreduce(&input, Sum)?, vec![sum + n * round; 7]);
            comm.barrier()?;
            let mut a = vec![0u64; 7];
            let mut b = vec![0u64; 7];
            crate::scope(|s| -> Result<()> {
                let r1 = comm.iallreduce(s, &input, &mut a, Sum)?;
                let r2 = comm.iscan(s, &input, &mut b, Sum, &Scan::default())?;
                r2.wait()?;
                r1.wait()
            })?;
            assert_eq!(a, vec![sum + n * round; 7]);
            let upto = (me + 1) * (me + 2) / 2 + (me + 1) * round;
            assert_eq!(b, vec![upto; 7]);
        }
        Ok(())
    }

    /// A request leaked with `mem::forget` inside a scope: the scope's end
    /// still runs the collective to completion and unregisters its task from
    /// the engine, so once the scope has returned nothing can reach the task
    /// or its buffers, though the leaked request keeps the task allocated.
    ///
    /// What the test sees: the result is complete when the scope returns,
    /// the engine lists no task afterwards, the old output buffer keeps a
    /// value written after the scope while more collectives and waits run
    /// on the same communicator, and the buffers can then be freed and the
    /// traffic go on. Without the unregistration the engine would still
    /// hold the leaked task (its strong count never drops) and advance it
    /// from every later wait, over buffers whose borrow has ended; an
    /// advance of a finished task posts nothing, so the count is the check
    /// that holds here without Miri (the toolchain on this machine has
    /// none).
    #[test]
    fn a_leaked_request_is_finished_and_unregistered_by_its_scope() {
        let r = crate::run(3, |comm| -> Result<()> {
            let (me, n) = (comm.rank() as u64, comm.size() as u64);
            let input = vec![me + 1; 5];
            let mut output = vec![0u64; 5];
            let mut bcast = vec![me; 3];
            crate::scope(|s| -> Result<()> {
                std::mem::forget(comm.iallreduce(s, &input, &mut output, Sum)?);
                std::mem::forget(comm.ibcast(s, &mut bcast, 1)?);
                assert_eq!(comm.engine().registered(), 2);
                Ok(())
            })?;
            assert_eq!(output, vec![n * (n + 1) / 2; 5]);
            assert_eq!(bcast, vec![1; 3]);
            assert_eq!(comm.engine().registered(), 0);
            output.fill(u64::MAX);
            more_traffic(comm)?;
            assert_eq!(output, vec![u64::MAX; 5]);
            drop((input, output, bcast));
            more_traffic(comm)?;
            assert_eq!(comm.engine().registered(), 0);
            Ok(())
        });
        r.unwrap();
    }

    /// A scope whose closure panics after leaking a request: the scope
    /// withdraws the task (without waiting) and unregisters it before the
    /// panic goes on, and the communicator still works afterwards.
    #[test]
    fn a_panicking_scope_withdraws_and_unregisters_its_tasks() {
        let r = crate::run(2, |comm| -> Result<()> {
            let input = vec![1u32; 4];
            let mut output = vec![0u32; 4];
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::scope(|s| -> Result<()> {
                    // Rank 1 never joins: the task cannot finish by itself.
                    if comm.rank() == 0 {
                        std::mem::forget(comm.iallreduce(s, &input, &mut output, Sum)?);
                        assert_eq!(comm.engine().registered(), 1);
                    }
                    panic!("closure fails after starting a collective");
                })
            }));
            assert!(caught.is_err());
            assert_eq!(comm.engine().registered(), 0);
            output.fill(7);
            if comm.rank() == 1 {
                // Rank 0's withdrawn allreduce drew two tags (check stage
                // and schedule); draw them here too so the ranks agree again.
                comm.next_tag(false);
                comm.next_tag(false);
            }
            more_traffic(comm)?;
            assert_eq!(output, vec![7; 4]);
            Ok::<_, Error>(())
        });
        r.unwrap();
    }
}
