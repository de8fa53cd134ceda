//! All-to-all personalized exchange (fixed and variable counts) and
//! reduce-scatter (MPI practice; Kumar, seed 001, all-to-all personalized
//! communication).
//!
//! * all-to-all: `input` holds `size()` blocks, block q for node q;
//!   `output` receives `size()` blocks, block q from node q.
//! * all-to-allv: each node gives its own `send_counts` and `recv_counts`
//!   (`recv_counts[q]` must equal node q's `send_counts[me]`; a difference
//!   is a `CollectiveMismatch` on the receiving node). [`Comm::alltoallv`]
//!   learns the receive counts with a fixed all-to-all of one `u64` per pair
//!   first.
//! * reduce-scatter: the elementwise reduction of every node's full vector,
//!   node i keeping block i. In reproducible mode it is a reproducible reduce
//!   to node 0 (canonical bracketing) followed by a scatter, so its bits do
//!   not depend on the algorithm or topology.
//!
//! Not done yet: Bruck for variable counts; non-blocking all-to-allv.

use super::select::{self, Algorithm, CollOpts};
use super::{
    append_mapped, counts_from_u64, counts_to_u64, need_len, remap, CollTask, Element, Kind, NoOp,
    Operator, Signature,
};
use crate::comm::Comm;
use crate::error::{Error, Result};
use hypercomm_algo::{self as algo, Buf};

impl Comm {
    /// All-to-all: block q of `input` (`input.len() / size()` elements) goes
    /// to node q, whose `output` block `me` receives it. `input` and `output`
    /// have the same length, a multiple of `size()`.
    pub fn alltoall_into<T: Element>(&self, input: &[T], output: &mut [T]) -> Result<()> {
        self.alltoall_into_with(input, output, &CollOpts::default())
    }

    /// [`Comm::alltoall_into`] with options (algorithms: `Pairwise`, `Bruck`).
    pub fn alltoall_into_with<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        opts: &CollOpts,
    ) -> Result<()> {
        // SAFETY: the buffers are borrowed for the whole blocking call.
        let task = unsafe {
            self.alltoall_start(
                input.as_ptr(),
                input.len(),
                output.as_mut_ptr(),
                output.len(),
                opts,
            )?
        };
        self.run_coll(task, "alltoall")
    }

    /// All-to-all returning a new vector.
    pub fn alltoall<T: Element>(&self, input: &[T]) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); input.len()];
        self.alltoall_into(input, &mut out)?;
        Ok(out)
    }

    /// Build a fixed-count all-to-all.
    ///
    /// # Safety
    /// The buffers must stay valid (and `output` unaliased) until the task ends.
    pub(crate) unsafe fn alltoall_start<T: Element>(
        &self,
        input: *const T,
        input_len: usize,
        output: *mut T,
        output_len: usize,
        opts: &CollOpts,
    ) -> Result<CollTask<T, NoOp>> {
        let parts = self.node_parts("alltoall")?;
        let p = parts.eps.len();
        if !input_len.is_multiple_of(p) {
            return Err(Error::InvalidArgument {
                op: "alltoall",
                what: format!("input has {input_len} elements, not a multiple of {p} nodes"),
            });
        }
        need_len("alltoall", "output", output_len, input_len)?;
        let count = input_len / p;
        let alg = self.choose_memo(
            select::Coll::Alltoall,
            p,
            count * std::mem::size_of::<T>(),
            opts,
            true,
        )?;
        let sched = match alg {
            Algorithm::Pairwise => algo::alltoall_pairwise(parts.me, p, count),
            Algorithm::Bruck => algo::alltoall_bruck(parts.me, p, count),
            a => return Err(select::unsupported("alltoall", a)),
        };
        let sig = Signature {
            op: Kind::Alltoall as u8,
            root: -1,
            count: count as u64,
            elem: T::CODE,
            operator: 0,
            variant: 0,
        };
        // SAFETY: forwarded to our caller.
        unsafe {
            self.coll_task::<T, NoOp>(
                &parts, sched, input, input_len, output, output_len, None, sig, "alltoall",
            )
        }
    }

    /// All-to-all with variable counts: block q of `input` has
    /// `send_counts[q]` elements and goes to node q; block q of `output` has
    /// `recv_counts[q]` elements and comes from node q.
    pub fn alltoallv_into<T: Element>(
        &self,
        input: &[T],
        send_counts: &[usize],
        output: &mut [T],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.alltoallv_into_with(
            input,
            send_counts,
            output,
            recv_counts,
            &CollOpts::default(),
        )
    }

    /// [`Comm::alltoallv_into`] with options (algorithm: `Pairwise`).
    pub fn alltoallv_into_with<T: Element>(
        &self,
        input: &[T],
        send_counts: &[usize],
        output: &mut [T],
        recv_counts: &[usize],
        opts: &CollOpts,
    ) -> Result<()> {
        // SAFETY: the buffers are borrowed for the whole blocking call.
        let task = unsafe {
            self.alltoallv_start(
                input.as_ptr(),
                input.len(),
                send_counts,
                output.as_mut_ptr(),
                output.len(),
                recv_counts,
                opts,
            )?
        };
        self.run_coll(task, "alltoallv")
    }

    /// Build an all-to-allv (pairwise exchange).
    ///
    /// # Safety
    /// The buffers must stay valid (and `output` unaliased) until the task ends.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn alltoallv_start<T: Element>(
        &self,
        input: *const T,
        input_len: usize,
        send_counts: &[usize],
        output: *mut T,
        output_len: usize,
        recv_counts: &[usize],
        opts: &CollOpts,
    ) -> Result<CollTask<T, NoOp>> {
        let parts = self.node_parts("alltoallv")?;
        let p = parts.eps.len();
        need_len("alltoallv", "send_counts", send_counts.len(), p)?;
        need_len("alltoallv", "recv_counts", recv_counts.len(), p)?;
        need_len("alltoallv", "input", input_len, send_counts.iter().sum())?;
        need_len("alltoallv", "output", output_len, recv_counts.iter().sum())?;
        // The choice must not depend on the counts, which differ per node.
        match self.choose_memo(select::Coll::Alltoallv, p, 0, opts, true)? {
            Algorithm::Pairwise => {}
            a => return Err(select::unsupported("alltoallv", a)),
        }
        let sched = algo::alltoallv_pairwise(parts.me, send_counts, recv_counts);
        // Counts differ per node: the signature checks type and operation only.
        let sig = Signature {
            op: Kind::Alltoallv as u8,
            root: -1,
            count: 0,
            elem: T::CODE,
            operator: 0,
            variant: 0,
        };
        // SAFETY: forwarded to our caller.
        unsafe {
            self.coll_task::<T, NoOp>(
                &parts,
                sched,
                input,
                input_len,
                output,
                output_len,
                None,
                sig,
                "alltoallv",
            )
        }
    }

    /// All-to-all with variable counts where each node knows only what it
    /// sends: the receive counts are exchanged first (a fixed all-to-all of
    /// one `u64` per pair) and returned with the data.
    pub fn alltoallv<T: Element>(
        &self,
        input: &[T],
        send_counts: &[usize],
    ) -> Result<(Vec<T>, Vec<usize>)> {
        let parts = self.node_parts("alltoallv")?;
        let p = parts.eps.len();
        need_len("alltoallv", "send_counts", send_counts.len(), p)?;
        let sc = counts_to_u64(send_counts);
        let mut rc = vec![0u64; p];
        let sig = Signature {
            op: Kind::Alltoallv as u8,
            root: -1,
            count: 1,
            elem: u64::CODE,
            operator: 0,
            variant: 1,
        };
        let sched = algo::alltoall_pairwise(parts.me, p, 1);
        self.run_aux(&parts, sched, &sc, &mut rc, sig, "alltoallv count exchange")?;
        let recv_counts = counts_from_u64(&rc);
        let mut out = vec![T::zeroed(); recv_counts.iter().sum()];
        self.alltoallv_into(input, send_counts, &mut out, &recv_counts)?;
        Ok((out, recv_counts))
    }

    // ---------------------------------------------------- reduce-scatter

    /// Reduce-scatter with equal blocks: `input` has `size() × c` elements,
    /// `output` has `c`; node i gets block i of the elementwise reduction
    /// (in rank order) of every node's input.
    pub fn reduce_scatter_into<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
    ) -> Result<()> {
        self.reduce_scatter_into_with(input, output, op, &CollOpts::default())
    }

    /// [`Comm::reduce_scatter_into`] with options (algorithms:
    /// `RecursiveHalving`, `Ring` (commutative operators only); reproducible
    /// mode).
    pub fn reduce_scatter_into_with<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
        opts: &CollOpts,
    ) -> Result<()> {
        let p = self.size();
        let counts = vec![output.len(); p];
        // SAFETY: the buffers are borrowed for the whole blocking call.
        let task = unsafe {
            self.reduce_scatterv_start(
                input.as_ptr(),
                input.len(),
                &counts,
                output.as_mut_ptr(),
                output.len(),
                op,
                Kind::ReduceScatter,
                opts,
            )?
        };
        self.run_coll(task, "reduce_scatter")
    }

    /// Reduce-scatter returning this node's block (`input.len()` must be a
    /// multiple of `size()`).
    pub fn reduce_scatter<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        op: O,
    ) -> Result<Vec<T>> {
        let p = self.size();
        if !input.len().is_multiple_of(p.max(1)) {
            return Err(Error::InvalidArgument {
                op: "reduce_scatter",
                what: format!(
                    "input has {} elements, not a multiple of {p} nodes",
                    input.len()
                ),
            });
        }
        let mut out = vec![T::zeroed(); input.len() / p];
        self.reduce_scatter_into(input, &mut out, op)?;
        Ok(out)
    }

    /// Reduce-scatter with blocks of different lengths: `counts` (one per
    /// node, the same on every node), `input` has `Σ counts` elements,
    /// `output` has `counts[me]`.
    pub fn reduce_scatterv_into<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        counts: &[usize],
        output: &mut [T],
        op: O,
    ) -> Result<()> {
        self.reduce_scatterv_into_with(input, counts, output, op, &CollOpts::default())
    }

    /// [`Comm::reduce_scatterv_into`] with options.
    pub fn reduce_scatterv_into_with<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        counts: &[usize],
        output: &mut [T],
        op: O,
        opts: &CollOpts,
    ) -> Result<()> {
        // SAFETY: the buffers are borrowed for the whole blocking call.
        let task = unsafe {
            self.reduce_scatterv_start(
                input.as_ptr(),
                input.len(),
                counts,
                output.as_mut_ptr(),
                output.len(),
                op,
                Kind::ReduceScatter,
                opts,
            )?
        };
        self.run_coll(task, "reduce_scatter")
    }

    /// Build a reduce-scatter(v).
    ///
    /// # Safety
    /// The buffers must stay valid (and `output` unaliased) until the task ends.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn reduce_scatterv_start<T: Element, O: Operator<T> + 'static>(
        &self,
        input: *const T,
        input_len: usize,
        counts: &[usize],
        output: *mut T,
        output_len: usize,
        op: O,
        kind: Kind,
        opts: &CollOpts,
    ) -> Result<CollTask<T, O>> {
        let what = "reduce_scatter";
        let parts = self.node_parts(what)?;
        let p = parts.eps.len();
        need_len(what, "counts", counts.len(), p)?;
        let total: usize = counts.iter().sum();
        need_len(what, "input", input_len, total)?;
        need_len(what, "output", output_len, counts[parts.me])?;
        let sched = if opts.reproducible {
            // Reproducible reduce to node 0 into scratch, then scatter it.
            let mut a = algo::reproducible::reduce_reproducible(parts.me, p, 0, total);
            let t = a.add_temp(total);
            let mut a = remap(a, Buf::Output, Buf::Temp(t));
            let b = algo::scatter_binomial(parts.me, 0, counts);
            append_mapped(
                &mut a,
                b,
                |x| if x == Buf::Input { Buf::Temp(t) } else { x },
            );
            a
        } else {
            let alg = self.choose_memo(
                select::Coll::ReduceScatter,
                p,
                total * std::mem::size_of::<T>(),
                opts,
                op.commutative(),
            )?;
            match alg {
                Algorithm::RecursiveHalving => {
                    algo::reduce_scatter_recursive_halving(parts.me, counts)
                }
                Algorithm::Ring => algo::reduce_scatter_ring(parts.me, counts, self.ring_order()),
                a => return Err(select::unsupported(what, a)),
            }
        };
        let sig = Signature {
            op: kind as u8,
            root: -1,
            count: total as u64,
            elem: T::CODE,
            operator: op.code(),
            variant: 0,
        };
        // SAFETY: forwarded to our caller.
        unsafe {
            self.coll_task(
                &parts,
                sched,
                input,
                input_len,
                output,
                output_len,
                Some(op),
                sig,
                what,
            )
        }
    }
}
