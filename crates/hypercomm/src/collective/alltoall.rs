//! All-to-all personalized exchange (fixed and variable counts) and
//! reduce-scatter (MPI practice; Kumar, seed 001, all-to-all personalized
//! communication).
//!
//! * all-to-all: `input` holds `size()` blocks, block q for node q;
//!   `output` receives `size()` blocks, block q from node q.
//! * all-to-allv: each node gives its own `send_counts` and `recv_counts`
//!   (`recv_counts[q]` must equal node q's `send_counts[me]`; in check mode
//!   a difference is a `CollectiveMismatch` on every node, found by digests
//!   in the signature, see `task.rs`; without it, on the receiving node).
//!   [`Comm::alltoallv`]
//!   learns the receive counts with a fixed all-to-all of one `u64` per pair
//!   first.
//! * reduce-scatter: the elementwise reduction of every node's full vector,
//!   node i keeping block i. In reproducible mode it is a reproducible reduce
//!   to node 0 (canonical bracketing) followed by a scatter, so its bits do
//!   not depend on the algorithm or topology.
//!
//! Not done yet: Bruck for variable counts; a non-blocking all-to-allv
//! that learns its receive counts (`ialltoallv` takes them on every node).

use super::call::{Call, Check, Plan};
use super::executor::{Input, Output};
use super::select::CollOpts;
use super::task::pair_digest;
use super::{
    append_mapped, counts_from_u64, counts_to_u64, need_len, remap, Element, NoOp, Operator,
};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::transport::native::NativeOp;
use hypercomm_algo::{self as algo, Buf, Collective, Params};

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
        let count = input.len() / self.size().max(1);
        let done = self.direct::<T>(
            Collective::Alltoall,
            None,
            count,
            None,
            opts,
            |ty, _, p: usize, _| {
                (input.len().is_multiple_of(p) && output.len() == input.len()).then_some(())?;
                Some(NativeOp::Alltoall {
                    send: bytemuck::cast_slice(input),
                    recv: bytemuck::cast_slice_mut(&mut *output),
                    ty,
                })
            },
        );
        if let Some(done) = done {
            return done;
        }
        let (none, plain) = (None::<&NoOp>, (input, &mut *output));
        if let Some(done) = self.board_direct(Collective::Alltoall, None, plain, none, opts) {
            return done;
        }
        let call = self.announce_bad(
            Collective::Alltoall,
            "alltoall",
            self.alltoall_call(input, output, opts),
            false,
        )?;
        self.run_blocking(call, opts)
    }

    /// All-to-all returning a new vector.
    pub fn alltoall<T: Element>(&self, input: &[T]) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); input.len()];
        self.alltoall_into(input, &mut out)?;
        Ok(out)
    }

    /// A fixed-count all-to-all.
    pub(crate) fn alltoall_call<'a, T: Element>(
        &self,
        input: &'a [T],
        output: &'a mut [T],
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp, Plan>> {
        let parts = self.node_parts("alltoall")?;
        let p = parts.eps.len();
        let input_len = input.len();
        if !input_len.is_multiple_of(p) {
            return Err(Error::InvalidArgument {
                op: "alltoall",
                what: format!("input has {input_len} elements, not a multiple of {p} nodes"),
            });
        }
        need_len("alltoall", "output", output.len(), input_len)?;
        let count = input_len / p;
        let params = Params {
            count,
            ..Params::new(parts.me, p)
        };
        let sched = Plan::new(opts, count * std::mem::size_of::<T>(), params);
        let check = Check::of::<T>(count, opts);
        Ok(Call::moving(
            Collective::Alltoall,
            "alltoall",
            parts,
            (input, output),
            sched,
            check,
        ))
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
        let built = self.alltoallv_call(input, send_counts, output, recv_counts, opts);
        let call = self.announce_bad(Collective::Alltoallv, "alltoallv", built, false)?;
        self.run_blocking(call, opts)
    }

    /// An all-to-allv (pairwise exchange).
    pub(crate) fn alltoallv_call<'a, T: Element>(
        &self,
        input: &'a [T],
        send_counts: &[usize],
        output: &'a mut [T],
        recv_counts: &[usize],
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp>> {
        let parts = self.node_parts("alltoallv")?;
        let p = parts.eps.len();
        need_len("alltoallv", "send_counts", send_counts.len(), p)?;
        need_len("alltoallv", "recv_counts", recv_counts.len(), p)?;
        need_len("alltoallv", "input", input.len(), send_counts.iter().sum())?;
        need_len(
            "alltoallv",
            "output",
            output.len(),
            recv_counts.iter().sum(),
        )?;
        // The choice must not depend on the counts, which differ per node.
        let alg = self.choose_memo(Collective::Alltoallv, p, 0, opts, true)?;
        let params = Params {
            counts: send_counts,
            recv_counts,
            ..Params::new(parts.me, p)
        };
        let sched = self.schedule(Collective::Alltoallv, alg, &params)?;
        let me = parts.me;
        // Counts differ per node: the signature carries digests of what
        // this node sends and expects, whose sums over the nodes agree
        // exactly when every pair agrees (task.rs), in the places of count
        // and counts digest (`Check`).
        let check = Check {
            count: (0..p)
                .map(|q| pair_digest(me, q, send_counts[q]))
                .fold(0, u64::wrapping_add),
            digest: (0..p)
                .map(|q| pair_digest(q, me, recv_counts[q]))
                .fold(0, u64::wrapping_add),
            ..Check::of::<T>(0, opts)
        };
        let (kind, what) = (Collective::Alltoallv, "alltoallv");
        Ok(Call::moving(
            kind,
            what,
            parts,
            (input, output),
            sched,
            check,
        ))
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
        let ok = need_len("alltoallv", "send_counts", send_counts.len(), p);
        self.announce_bad(Collective::Alltoallv, "alltoallv", ok, false)?;
        let sc = counts_to_u64(send_counts);
        let mut rc = vec![0u64; p];
        let sched = algo::alltoall_pairwise(parts.me, p, 1);
        let what = "alltoallv count exchange";
        self.run_aux(
            parts,
            Collective::Alltoallv,
            None,
            sched,
            &sc,
            &mut rc,
            1,
            what,
        )?;
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
        let counts = vec![output.len(); self.size()];
        let built = self.reduce_scatterv_call(input, &counts, output, op, opts);
        let call = self.announce_bad(Collective::ReduceScatter, "reduce_scatter", built, false)?;
        self.run_blocking(call, opts)
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
            let e = Error::InvalidArgument {
                op: "reduce_scatter",
                what: format!(
                    "input has {} elements, not a multiple of {p} nodes",
                    input.len()
                ),
            };
            return Err(self.announced(Collective::ReduceScatter, "reduce_scatter", e));
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
        let built = self.reduce_scatterv_call(input, counts, output, op, opts);
        let call = self.announce_bad(Collective::ReduceScatter, "reduce_scatterv", built, false)?;
        self.run_blocking(call, opts)
    }

    /// A reduce-scatter(v).
    pub(crate) fn reduce_scatterv_call<'a, T: Element, O: Operator<T>>(
        &self,
        input: &'a [T],
        counts: &[usize],
        output: &'a mut [T],
        op: O,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, O>> {
        let what = "reduce_scatter";
        let parts = self.node_parts(what)?;
        let p = parts.eps.len();
        need_len(what, "counts", counts.len(), p)?;
        let total: usize = counts.iter().sum();
        need_len(what, "input", input.len(), total)?;
        need_len(what, "output", output.len(), counts[parts.me])?;
        let sched: std::rc::Rc<hypercomm_algo::Schedule> = if opts.reproducible {
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
            a.into()
        } else {
            let alg = self.choose_memo(
                Collective::ReduceScatter,
                p,
                total * std::mem::size_of::<T>(),
                opts,
                op.commutative(),
            )?;
            let params = Params {
                counts,
                order: self.ring_order(),
                ..Params::new(parts.me, p)
            };
            self.schedule(Collective::ReduceScatter, alg, &params)?
        };
        Ok(Call {
            kind: Collective::ReduceScatter,
            what,
            parts,
            root: None,
            input: Input::Borrowed(input),
            output: Output::Borrowed(output),
            op: Some(op),
            sched,
            // The blocks, not only their total: nodes that split the
            // vector differently would exchange blocks of other lengths.
            check: Check::of_counts::<T>(total, counts, opts),
            finish: None,
        })
    }
}
