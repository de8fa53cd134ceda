//! Gather, allgather and scatter, fixed and variable counts (seed 000
//! GCAT, CMMD `gather_from_nodes` / `concat_with_nodes` / `distrib_to_nodes`,
//! Kumar all-to-all broadcast).
//!
//! Concatenation is always in rank order (SPEC.md section 11: iPSC GCAT
//! ordered by `rank XOR root`; we do not).
//!
//! **How the counts of a variable-count call are known.** The `_into`
//! forms take `counts` (one entry per node) on every node, like MPI's
//! `*v` calls with the counts agreed in advance; tree algorithms need them
//! on the intermediate nodes too. The forms without `_into` learn them:
//! [`Comm::gatherv`] and [`Comm::allgatherv`] first allgather one `u64` per
//! node (each node's own length, Bruck, ⌈log2 n⌉ rounds) and return the
//! counts with the data; [`Comm::scatterv`] takes the counts at the root
//! only and broadcasts them (binomial) before scattering. These exchanges
//! are collectives of their own, with their own check-mode signature
//! (variant "count exchange phase 1").
//!
//! **Host roots** (one call over the nodes and the host each, see
//! `host.rs`). Gather to the host is the node gather to node 0 followed
//! by one message from node 0 to the host (for [`Comm::gatherv`], the
//! nodes first learn their counts and node 0 hands them to the host);
//! scatter from the host is one message from the host to node 0 followed
//! by the node scatter from node 0 (for [`Comm::scatterv`], the host first
//! broadcasts the counts). The host passes an empty input (gather) or
//! output (scatter) and never contributes a block.
//!
//! Not done yet: non-blocking forms of the host-rooted calls and of the
//! variable-count calls that learn their counts (`igatherv`,
//! `iallgatherv` and `iscatterv` take them on every node); the host as a
//! member of an allgather.

use super::call::{Call, Check, Parts, Plan};
use super::executor::{Input, Output};
use super::select::CollOpts;
use super::{counts_from_u64, counts_to_u64, need_len, Element, NoOp};
use crate::comm::Comm;
use crate::error::Result;
use crate::rank::Rank;
use crate::transport::native::NativeOp;
use hypercomm_algo as algo;
use hypercomm_algo::{Collective, Params};

impl Comm {
    // ------------------------------------------------------------ gather

    /// Gather every node's `input` (all of the same length) at `root` (a
    /// node, or [`Rank::Host`]), concatenated in rank order into `output`
    /// (`size() × input.len()` elements at the root; not touched elsewhere,
    /// pass `&mut []`). With a host root the host calls it too, with an
    /// empty input.
    pub fn gather_into<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        root: impl Into<Rank>,
    ) -> Result<()> {
        self.gather_into_with(input, output, root, &CollOpts::default())
    }

    /// [`Comm::gather_into`] with options (algorithms: `Binomial`, `Star`,
    /// `Ring`).
    pub fn gather_into_with<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        root: impl Into<Rank>,
        opts: &CollOpts,
    ) -> Result<()> {
        let root = root.into();
        if root == Rank::Host {
            return self.gather_to_host(input, output, opts);
        }
        let call = self.announce_bad(
            Collective::Gather,
            "gather",
            self.gather_call(input, output, root, opts),
            false,
        )?;
        self.run_blocking(call, opts)
    }

    /// Gather and return the concatenation at the root (`None` elsewhere).
    /// The host, as root, learns the length from the message.
    pub fn gather<T: Element>(&self, input: &[T], root: impl Into<Rank>) -> Result<Option<Vec<T>>> {
        let root = root.into();
        if root == Rank::Host && self.is_host() {
            return self
                .host_learns(Collective::Gather, 0, "gather to host", None::<NoOp>)
                .map(Some);
        }
        let at_root = self.me() == root;
        let mut out = vec![
            T::zeroed();
            if at_root {
                input.len() * self.size()
            } else {
                0
            }
        ];
        self.gather_into(input, &mut out, root)?;
        Ok(at_root.then_some(out))
    }

    /// A node-rooted gather of `input.len()` elements per node.
    pub(crate) fn gather_call<'a, T: Element>(
        &self,
        input: &'a [T],
        output: &'a mut [T],
        root: Rank,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp>> {
        let count = input.len();
        let counts = vec![count; self.size()];
        self.gatherv_call(
            input,
            &counts,
            output,
            root,
            Collective::Gather,
            count,
            opts,
        )
    }

    /// A node-rooted gatherv (`counts` known on every node).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gatherv_call<'a, T: Element>(
        &self,
        input: &'a [T],
        counts: &[usize],
        output: &'a mut [T],
        root: Rank,
        kind: Collective,
        sig_count: usize,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp>> {
        let what = if kind == Collective::Gather {
            "gather"
        } else {
            "gatherv"
        };
        let parts = self.node_parts(what)?;
        let p = parts.eps.len();
        let r = self.root_index(root, p, what)?;
        need_len(what, "counts", counts.len(), p)?;
        let total: usize = counts.iter().sum();
        if parts.me == r {
            need_len(what, "the root's output", output.len(), total)?;
        }
        let family = (kind, what, Collective::Gather);
        let blocks = (counts, total);
        self.rooted_call(family, parts, r, blocks, (input, output), sig_count, opts)
    }

    /// The call of a node-rooted gather(v) or scatter(v) whose arguments
    /// are checked: `family` is the call's kind, name and the collective
    /// whose algorithms it chooses from; node `r` is the root, `counts`
    /// every node's block and `total` their sum.
    #[allow(clippy::too_many_arguments)]
    fn rooted_call<'a, T: Element>(
        &self,
        (kind, what, family): (Collective, &'static str, Collective),
        parts: Parts,
        r: usize,
        (counts, total): (&[usize], usize),
        (input, output): (&'a [T], &'a mut [T]),
        sig_count: usize,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp>> {
        let p = parts.eps.len();
        let bytes = total / p * std::mem::size_of::<T>();
        let alg = self.choose_memo(family, p, bytes, opts, true)?;
        // Scatters have no ring schedule; the order serves gathers.
        let params = Params {
            root: r,
            counts,
            order: self.ring_order(),
            ..Params::new(parts.me, p)
        };
        let sched = self.schedule(kind, alg, &params)?;
        let check = if matches!(kind, Collective::Gatherv | Collective::Scatterv) {
            Check::of_counts::<T>(sig_count, counts, opts)
        } else {
            Check::of::<T>(sig_count, opts)
        };
        Ok(Call {
            kind,
            what,
            parts,
            root: Some(r),
            input: Input::Borrowed(input),
            output: Output::Borrowed(output),
            op: None,
            sched,
            check,
            finish: None,
        })
    }

    /// Gather blocks of different lengths at `root` (a node or the host) in
    /// rank order; `counts[i]` is node i's length, given on every node (and
    /// on the host for a host root). `output` has `Σ counts` elements at the
    /// root and is not touched elsewhere.
    pub fn gatherv_into<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
        root: impl Into<Rank>,
    ) -> Result<()> {
        self.gatherv_into_with(input, output, counts, root, &CollOpts::default())
    }

    /// [`Comm::gatherv_into`] with options.
    pub fn gatherv_into_with<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
        root: impl Into<Rank>,
        opts: &CollOpts,
    ) -> Result<()> {
        let root = root.into();
        if root == Rank::Host {
            let what = "gatherv to host";
            let total: usize = counts.iter().sum();
            if !self.is_host() && counts.len() == self.size() {
                if let Err(e) = need_len("gatherv", "input", input.len(), counts[self.rank()]) {
                    let parts = self.host_parts(what)?;
                    return Err(self.report_bad_args(parts, Collective::Gatherv, what, e));
                }
            }
            return self.gatherv_to_host(
                input,
                counts,
                output,
                Collective::Gatherv,
                total,
                what,
                opts,
            );
        }
        let total: usize = counts.iter().sum();
        let built = self
            .own_block("gatherv", input.len(), counts)
            .and_then(|()| {
                let kind = Collective::Gatherv;
                self.gatherv_call(input, counts, output, root, kind, total, opts)
            });
        let call = self.announce_bad(Collective::Gatherv, "gatherv", built, false)?;
        self.run_blocking(call, opts)
    }

    /// Gather blocks of any lengths at `root` (a node or the host) and
    /// return, at the root, the concatenation and every node's count
    /// (`None` elsewhere). The counts are learnt by an allgather of one
    /// `u64` per node first (see the module doc).
    pub fn gatherv<T: Element>(
        &self,
        input: &[T],
        root: impl Into<Rank>,
    ) -> Result<Option<(Vec<T>, Vec<usize>)>> {
        let root = root.into();
        if root == Rank::Host {
            // 1. The nodes learn each other's counts; 2. node 0 hands them
            // to the host; 3. the gatherv with the counts known everywhere.
            let what = "gatherv to host";
            self.host_parts(what)?;
            let p = self.size();
            let mut c = if self.is_host() {
                vec![0u64; p]
            } else {
                counts_to_u64(&self.exchange_counts(input.len(), Collective::Gatherv, Some(0))?)
            };
            self.counts_to_host(&mut c, "gatherv counts to host")?;
            let counts = counts_from_u64(&c);
            let total: usize = counts.iter().sum();
            if self.is_host() {
                let mut out = vec![T::zeroed(); total];
                self.gatherv_to_host(
                    &[],
                    &counts,
                    &mut out,
                    Collective::Gatherv,
                    total,
                    what,
                    &CollOpts::default(),
                )?;
                return Ok(Some((out, counts)));
            }
            self.gatherv_to_host(
                input,
                &counts,
                &mut [],
                Collective::Gatherv,
                total,
                what,
                &CollOpts::default(),
            )?;
            return Ok(None);
        }
        let p = self.size();
        let r = self.root_index(root, p, "gatherv");
        let r = self.announce_bad(Collective::Gatherv, "gatherv", r, false)?;
        let counts = self.exchange_counts(input.len(), Collective::Gatherv, Some(r))?;
        let at_root = self.me() == root;
        let total: usize = counts.iter().sum();
        let mut out = vec![T::zeroed(); if at_root { total } else { 0 }];
        self.gatherv_into(input, &mut out, &counts, root)?;
        Ok(at_root.then_some((out, counts)))
    }

    /// Whether this node's block of a gatherv or allgatherv (`len`
    /// elements) is as long as `counts` says (the other checks are the
    /// call's; a node outside the job is an error here).
    pub(crate) fn own_block(&self, what: &'static str, len: usize, counts: &[usize]) -> Result<()> {
        let me = self.node_parts(what)?.me;
        match counts.get(me) {
            Some(&c) if counts.len() == self.size() => need_len(what, "input", len, c),
            _ => Ok(()),
        }
    }

    /// Every node's `mine`, in rank order, on every node (allgather of one
    /// `u64`, signature variant 1 of `kind`).
    pub(crate) fn exchange_counts(
        &self,
        mine: usize,
        kind: Collective,
        root: Option<usize>,
    ) -> Result<Vec<usize>> {
        let parts = self.node_parts("count exchange")?;
        let p = parts.eps.len();
        let sched = algo::allgather_bruck(parts.me, &vec![1; p]);
        let mut out = vec![0u64; p];
        let input = [mine as u64];
        self.run_aux(
            parts,
            kind,
            root,
            sched,
            &input,
            &mut out,
            1,
            "count exchange",
        )?;
        Ok(counts_from_u64(&out))
    }

    // --------------------------------------------------------- allgather

    /// Concatenate every node's `input` (all of one length) in rank order
    /// into every node's `output` (`size() × input.len()` elements; CMMD
    /// concat_with_nodes, Kumar all-to-all broadcast).
    pub fn allgather_into<T: Element>(&self, input: &[T], output: &mut [T]) -> Result<()> {
        self.allgather_into_with(input, output, &CollOpts::default())
    }

    /// [`Comm::allgather_into`] with options (algorithms:
    /// `RecursiveDoubling`, `Ring`, `BiRing`, `Bruck`).
    pub fn allgather_into_with<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        opts: &CollOpts,
    ) -> Result<()> {
        let count = input.len();
        let done = self.direct::<T>(
            Collective::Allgather,
            None,
            count,
            None,
            opts,
            |ty, _, p, _| {
                (input.len().checked_mul(p) == Some(output.len())).then_some(())?;
                Some(NativeOp::Allgather {
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
        if let Some(done) = self.board_direct(Collective::Allgather, None, plain, none, opts) {
            return done;
        }
        let call = self.announce_bad(
            Collective::Allgather,
            "allgather",
            self.allgather_call(input, output, opts),
            false,
        )?;
        self.run_blocking(call, opts)
    }

    /// Allgather returning a new vector.
    pub fn allgather<T: Element>(&self, input: &[T]) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); input.len() * self.size()];
        self.allgather_into(input, &mut out)?;
        Ok(out)
    }

    /// An allgather of `input.len()` elements per node.
    pub(crate) fn allgather_call<'a, T: Element>(
        &self,
        input: &'a [T],
        output: &'a mut [T],
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp, Plan>> {
        let what = "allgather";
        let parts = self.node_parts(what)?;
        let p = parts.eps.len();
        let count = input.len();
        need_len(what, "output", output.len(), count.saturating_mul(p))?;
        let params = Params {
            count,
            order: self.ring_order(),
            ..Params::new(parts.me, p)
        };
        // Made by the variable-count generator, every count `count`.
        let sched = Plan {
            per_node: true,
            ..Plan::new(opts, std::mem::size_of_val(input), params)
        };
        let check = Check::of::<T>(count, opts);
        Ok(Call::moving(
            Collective::Allgather,
            what,
            parts,
            (input, output),
            sched,
            check,
        ))
    }

    /// An allgatherv (`counts` known on every node).
    pub(crate) fn allgatherv_call<'a, T: Element>(
        &self,
        input: &'a [T],
        counts: &[usize],
        output: &'a mut [T],
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp>> {
        let (kind, what) = (Collective::Allgatherv, "allgatherv");
        let parts = self.node_parts(what)?;
        let p = parts.eps.len();
        need_len(what, "counts", counts.len(), p)?;
        let total: usize = counts.iter().sum();
        need_len(what, "output", output.len(), total)?;
        let alg = self.choose_memo(
            Collective::Allgather,
            p,
            total / p * std::mem::size_of::<T>(),
            opts,
            true,
        )?;
        let params = Params {
            counts,
            order: self.ring_order(),
            ..Params::new(parts.me, p)
        };
        let sched = self.schedule(kind, alg, &params)?;
        let check = Check::of_counts::<T>(total, counts, opts);
        Ok(Call::moving(
            kind,
            what,
            parts,
            (input, output),
            sched,
            check,
        ))
    }

    /// Allgather of blocks of different lengths; `counts` (one per node)
    /// given on every node, `output` has `Σ counts` elements.
    pub fn allgatherv_into<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
    ) -> Result<()> {
        self.allgatherv_into_with(input, output, counts, &CollOpts::default())
    }

    /// [`Comm::allgatherv_into`] with options.
    pub fn allgatherv_into_with<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
        opts: &CollOpts,
    ) -> Result<()> {
        let built = self
            .own_block("allgatherv", input.len(), counts)
            .and_then(|()| self.allgatherv_call(input, counts, output, opts));
        let call = self.announce_bad(Collective::Allgatherv, "allgatherv", built, false)?;
        self.run_blocking(call, opts)
    }

    /// Allgather of blocks of any lengths: the concatenation and every
    /// node's count, on every node (the counts are exchanged first).
    pub fn allgatherv<T: Element>(&self, input: &[T]) -> Result<(Vec<T>, Vec<usize>)> {
        let counts = self.exchange_counts(input.len(), Collective::Allgatherv, None)?;
        let mut out = vec![T::zeroed(); counts.iter().sum()];
        self.allgatherv_into(input, &mut out, &counts)?;
        Ok((out, counts))
    }

    // ----------------------------------------------------------- scatter

    /// Scatter from `root` (a node, or [`Rank::Host`]: CMMD
    /// distrib_to_nodes): node i receives elements `i·c .. (i+1)·c` of the
    /// root's `input` into `output`, `c = output.len()` the same on every
    /// node. The root's `input` has `size() × c` elements; elsewhere it is
    /// ignored (pass `&[]`). The host, as root, passes `&mut []` as output.
    pub fn scatter_into<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        root: impl Into<Rank>,
    ) -> Result<()> {
        self.scatter_into_with(input, output, root, &CollOpts::default())
    }

    /// [`Comm::scatter_into`] with options (algorithms: `Binomial`, `Star`).
    pub fn scatter_into_with<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        root: impl Into<Rank>,
        opts: &CollOpts,
    ) -> Result<()> {
        let root = root.into();
        if root == Rank::Host {
            return self.scatter_from_host(input, output, opts);
        }
        let call = self.announce_bad(
            Collective::Scatter,
            "scatter",
            self.scatter_call(input, output, root, opts),
            false,
        )?;
        self.run_blocking(call, opts)
    }

    /// A node-rooted scatter of `output.len()` elements per node.
    pub(crate) fn scatter_call<'a, T: Element>(
        &self,
        input: &'a [T],
        output: &'a mut [T],
        root: Rank,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp>> {
        let count = output.len();
        let counts = vec![count; self.size()];
        self.scatterv_call(
            input,
            &counts,
            output,
            root,
            Collective::Scatter,
            count,
            opts,
        )
    }

    /// A node-rooted scatterv (`counts` known on every node).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scatterv_call<'a, T: Element>(
        &self,
        input: &'a [T],
        counts: &[usize],
        output: &'a mut [T],
        root: Rank,
        kind: Collective,
        sig_count: usize,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp>> {
        self.scatterv_node_call(input, counts, output, root, kind, sig_count, true, opts)
    }

    /// [`Comm::scatterv_call`]; `root_input`: whether the root's input is
    /// the caller's (checked) or stands for data received first (a
    /// scatter from the host: node 0 gets it into scratch).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scatterv_node_call<'a, T: Element>(
        &self,
        input: &'a [T],
        counts: &[usize],
        output: &'a mut [T],
        root: Rank,
        kind: Collective,
        sig_count: usize,
        root_input: bool,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp>> {
        let what = if kind == Collective::Scatter {
            "scatter"
        } else {
            "scatterv"
        };
        let parts = self.node_parts(what)?;
        let p = parts.eps.len();
        let r = self.root_index(root, p, what)?;
        need_len(what, "counts", counts.len(), p)?;
        let total: usize = counts.iter().sum();
        if parts.me == r && root_input {
            need_len(what, "the root's input", input.len(), total)?;
        }
        need_len(what, "output", output.len(), counts[parts.me])?;
        let family = (kind, what, Collective::Scatter);
        let blocks = (counts, total);
        self.rooted_call(family, parts, r, blocks, (input, output), sig_count, opts)
    }

    /// Scatter blocks of different lengths from `root` (a node or the
    /// host): node i receives `counts[i]` elements into `output`. `counts`
    /// is given on every node (and the host, for a host root).
    pub fn scatterv_into<T: Element>(
        &self,
        input: &[T],
        counts: &[usize],
        output: &mut [T],
        root: impl Into<Rank>,
    ) -> Result<()> {
        self.scatterv_into_with(input, counts, output, root, &CollOpts::default())
    }

    /// [`Comm::scatterv_into`] with options.
    pub fn scatterv_into_with<T: Element>(
        &self,
        input: &[T],
        counts: &[usize],
        output: &mut [T],
        root: impl Into<Rank>,
        opts: &CollOpts,
    ) -> Result<()> {
        let root = root.into();
        let total: usize = counts.iter().sum();
        if root == Rank::Host {
            let what = "scatterv from host";
            return self.scatterv_from_host(
                input,
                counts,
                output,
                Collective::Scatterv,
                total,
                what,
                opts,
            );
        }
        let kind = Collective::Scatterv;
        let built = self.scatterv_call(input, counts, output, root, kind, total, opts);
        let call = self.announce_bad(kind, "scatterv", built, false)?;
        self.run_blocking(call, opts)
    }

    /// Scatter blocks of different lengths from `root` (a node or the
    /// host); `counts` is needed at the root only (pass `&[]` elsewhere) and
    /// is broadcast first. Returns this node's block (empty on the host).
    pub fn scatterv<T: Element>(
        &self,
        input: &[T],
        counts: &[usize],
        root: impl Into<Rank>,
    ) -> Result<Vec<T>> {
        let root = root.into();
        let p = self.size();
        if root == Rank::Host {
            // 1. The host broadcasts the counts; 2. the scatterv with the
            // counts known everywhere.
            let what = "scatterv from host";
            let parts = self.host_parts(what)?;
            let mut c = vec![0u64; p];
            if self.is_host() {
                if let Err(e) = need_len("scatterv", "counts", counts.len(), p) {
                    return Err(self.report_bad_args(parts, Collective::Scatterv, what, e));
                }
                c = counts_to_u64(counts);
            }
            let opts = CollOpts::default();
            self.bcast_from_host(
                &mut c,
                Collective::Scatterv,
                1,
                "scatterv counts from host",
                &opts,
            )?;
            let counts = counts_from_u64(&c);
            let total: usize = counts.iter().sum();
            if self.is_host() {
                self.scatterv_from_host(
                    input,
                    &counts,
                    &mut [],
                    Collective::Scatterv,
                    total,
                    what,
                    &opts,
                )?;
                return Ok(Vec::new());
            }
            let mut out = vec![T::zeroed(); counts[self.rank()]];
            self.scatterv_from_host(
                &[],
                &counts,
                &mut out,
                Collective::Scatterv,
                total,
                what,
                &opts,
            )?;
            return Ok(out);
        }
        let parts = self.node_parts("scatterv")?;
        let r = self.root_index(root, p, "scatterv").and_then(|r| {
            if parts.me == r {
                need_len("scatterv", "the root's counts", counts.len(), p)?;
            }
            Ok(r)
        });
        let r = self.announce_bad(Collective::Scatterv, "scatterv", r, false)?;
        let mut c = vec![0u64; p];
        if parts.me == r {
            c = counts_to_u64(counts);
        }
        let sched = algo::bcast_binomial(parts.me, p, r, p);
        let me = parts.me;
        let inp = c.clone();
        let what = "scatterv count broadcast";
        self.run_aux(
            parts,
            Collective::Scatterv,
            Some(r),
            sched,
            &inp,
            &mut c,
            p,
            what,
        )?;
        let counts = counts_from_u64(&c);
        let mut out = vec![T::zeroed(); counts[me]];
        self.scatterv_into(input, &counts, &mut out, root)?;
        Ok(out)
    }
}
