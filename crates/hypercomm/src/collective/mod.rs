//! Collective operations (SPEC section 4): algorithms are schedules, run by
//! one executor.
//!
//! ## Layout
//!
//! * `hypercomm-algo` (its own crate): pure schedule generators, one file per
//!   algorithm, tested with no transport, and the **registry** that lists
//!   them ([`registry`]: per collective, each algorithm's name, generator,
//!   cost, operator needs and the topology settings that select it), with
//!   the pure selection rules and the memo of recent choices and schedules.
//!   The [`Collective`] kinds, [`Algorithm`] names and [`Topology`]
//!   settings are that crate's. Adding an algorithm is one file there and
//!   one line of its registry: selection, the front ends here, the
//!   benchmark and the tests read the registry.
//! * `mod.rs` (this file): the API of barrier, broadcast, reduce and
//!   allreduce, the host-rooted compositions and small helpers;
//!   `gather.rs`, `alltoall.rs`, `scan.rs`, `multicast.rs`: the other
//!   operations; `nonblocking.rs`: the `i…` forms and [`CollRequest`].
//! * `call.rs`: a call as data and the one function that starts it (below);
//!   the participants of a call (`Parts`).
//! * `executor.rs`: runs a schedule over the p2p engine, round by round, as a
//!   non-blocking state machine, over buffers borrowed for the call.
//! * `task.rs`: check mode (a signature exchange beside the schedule), the
//!   finishing step, and the task that blocking and non-blocking calls
//!   share; `sig_opts.rs`: the options a signature states.
//! * `board/`: blocking barrier, bcast, reduce, allreduce, allgather and
//!   all-to-all of the world's nodes through the transport's shared-memory
//!   board (threads, shm) instead of messages, small ones in its buffers,
//!   large pieces lent and copied once (shm), their check-mode signatures
//!   in the same buffers; `native.rs`: calls handed to the transport
//!   library's own collectives (MPI).
//! * [`ops`]: element types and operators.
//! * [`select`] (a folder): PICL `setarc0` topology setting, per-call
//!   algorithm choice over the registry with the transport's costs, and the
//!   schedules from the registry through the communicator's memo
//!   (`mod.rs`); the public options (`options.rs`); the measured decision
//!   table `Auto` consults first (`tuning.rs`).
//!
//! ## How a call starts
//!
//! Every operation, blocking or not, goes the same way. Its front end
//! (`bcast`, `reduce_into_with`, `gatherv_into`, `iallreduce`, …) checks
//! the arguments, chooses the algorithm, gets the schedule (from the memo or
//! the registry's generator, one [`registry::Params`] per call) and fills a `Call<'a, T, O>`: operation, participants,
//! root, input (`&'a [T]`, or a buffer the task owns), output (`&'a mut
//! [T]`, or scratch the task owns), operator, schedule, what the check
//! signature says, and an optional finishing step. `Comm::start(call)`
//! draws the tags and builds the executor,
//! the check-mode stage and the trace block into a `CollTask<'a, T, O>`,
//! which borrows the buffers for `'a`. A non-blocking call hands it to
//! the [`Scope`](crate::Scope), which registers it with the engine and
//! finishes and unregisters it when the scope ends (see [`crate::request`]).
//! A blocking call (`Comm::run`) builds no task unless a trace is being
//! recorded: it draws the same tags and runs the executor straight on the
//! engine's blocking receive (`Exec::run_direct`), the check-mode exchange
//! beside the call's first round; traced, it runs the task to completion on
//! its own stack. Both send the same messages, so ranks may differ. Before
//! any of that, a blocking call that the shared-memory board serves runs
//! there instead (`board/`: every node takes the same path, as the
//! choice depends only on the call and its options); on a communicator
//! with a board, the check-mode exchange of a call on messages runs on the
//! board too. The signature states those options, so nodes that disagree
//! about them fail together in check mode.
//!
//! ## What may import what
//!
//! Files here may use the communicator (`comm.rs`), the engine and the
//! request scope; the engine imports nothing from here (collectives reach it
//! through its `Task` trait). `comm.rs` imports nothing from here: what a
//! communicator keeps for its collectives (`CollState`: topology setting,
//! check mode, the memo) is plain data of the algorithm crate's types.
//! The executor's five blocks that turn a checked region into a slice or
//! lend one to the engine are the only ones the compiler cannot check in
//! this folder; the lifetime of a non-blocking task is erased once, in the
//! scope.
//!
//! Every collective runs on the communicator's reserved collective context
//! with a tag drawn from a per-communicator sequence, so user receives never
//! see collective traffic and concurrent non-blocking collectives never mix.
//! Node-only collectives and those that involve the host draw from separate
//! sequences, so the host need not call node-only collectives.
//!
//! Host-rooted variants are compositions, each run as one call over the
//! nodes and the host (`host.rs`): a broadcast or scatter from the host is
//! a send to node 0 followed by the node operation from 0; a reduce or
//! gather to the host is the node operation to node 0 followed by a send
//! to the host; the host+nodes barrier is a dissemination barrier over
//! n + 1 participants. The host never contributes to a node reduction. In
//! check mode the host's signature is compared with the nodes', so a
//! mismatch between them fails every participant.
//!
//! ## Operations
//!
//! | operation | blocking | non-blocking | host root |
//! |---|---|---|---|
//! | barrier | `barrier`, `barrier_with_host` | `ibarrier` | host+nodes barrier |
//! | broadcast | `bcast` | `ibcast` | yes |
//! | reduce / allreduce | `reduce(_into)`, `allreduce(_into)` | `ireduce`, `iallreduce` | reduce |
//! | gather(v) | `gather(_into)`, `gatherv(_into)` (gather.rs) | `igather`, `igatherv` | yes |
//! | allgather(v) | `allgather(_into)`, `allgatherv(_into)` | `iallgather`, `iallgatherv` | — |
//! | scatter(v) | `scatter_into`, `scatterv(_into)` | `iscatter`, `iscatterv` | yes |
//! | all-to-all(v) | `alltoall(_into)`, `alltoallv(_into)` (alltoall.rs) | `ialltoall`, `ialltoallv` | — |
//! | reduce-scatter(v) | `reduce_scatter(_into)`, `reduce_scatterv_into` | `ireduce_scatter`, `ireduce_scatterv` | — |
//! | scans ([`Scan`]) | `scan`, `exscan`, `scan_with`, `scan_into(_with)` (scan.rs) | `iscan` | — |
//! | sparse multicast | `multicast`, `multicast_recv` (multicast.rs) | — | — |
//! | PICL bcast1 split phase, setarc0 announcement, GCAT order | `bcast_forward`, `bcast_recv_into`, `announce_arch`, `await_arch`, `gatherv_ordered` (legacy.rs) | — | yes |
//!
//! Every blocking call has a `_with` form taking [`CollOpts`] (forced
//! algorithm, reproducible mode, pipeline segment size) except the
//! multicast and the count-learning `gatherv`/`allgatherv`/`scatterv`/
//! `alltoallv`.
//!
//! Not done yet:
//!
//! * non-blocking forms of the host-rooted calls, of the variable-count
//!   calls that learn their counts first and of the multicast (the
//!   variable-count forms with counts given, `igatherv` and the rest, are
//!   done);
//! * collectives with the host as a member (allgather, scans) other than
//!   the host+nodes barrier;
//! * a multicast rooted at the host;
//! * with check mode off, as in MPI, a mismatch is seen only where a
//!   message's length disagrees, and the other participants may wait;
//! * the schedules of a call are checked region by region against its
//!   buffers, but that a round never receives into a region it also sends,
//!   receives or reads elsewhere is taken from the generators (their
//!   simulator checks it), not checked again per call;
//! * see also the lists at the end of [`select`] and of each operation's
//!   module.

mod alltoall;
mod board;
mod call;
pub(crate) mod executor;
mod gather;
mod host;
mod legacy;
mod multicast;
mod native;
mod nonblocking;
pub mod ops;
mod scalar;
mod scan;
pub mod select;
mod sig_opts;
mod task;

pub use hypercomm_algo::segmented::Segmentation;
pub use hypercomm_algo::{registry, Direction, Inclusion, RingOrder};
pub use legacy::{ConcatOrder, ARCH_TAG};
pub use multicast::MULTICAST_TAG;
pub use nonblocking::CollRequest;
pub use ops::{
    BitAnd, BitOr, BitXor, Element, Integer, Loc, LogicalAnd, LogicalOr, Max, MaxLoc, Min, MinLoc,
    Number, Operator, Prod, Sum, UserOp,
};
pub use scan::Scan;
pub use select::{Algorithm, CollOpts, Collective, Topology};

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::transport::native::NativeOp;
use call::{Call, Check, Parts, Plan};
use executor::{Input, Output};
use hypercomm_algo::{Buf, Op, Params, Region, Schedule};
use task::NoOp;

impl Comm {
    pub(crate) fn next_tag(&self, with_host: bool) -> u32 {
        let t = self.next_coll_tag_for(with_host);
        if with_host {
            t | 0x8000_0000
        } else {
            t & 0x7fff_ffff
        }
    }

    // ---------------------------------------------------------------- API

    /// Barrier over the nodes (PICL barrier0, CMMD sync_with_nodes).
    pub fn barrier(&self) -> Result<()> {
        self.barrier_with(&CollOpts::default())
    }

    /// Barrier with options (algorithm: `Dissemination` or `Tree`).
    pub fn barrier_with(&self, opts: &CollOpts) -> Result<()> {
        let done = self.direct::<u8>(Collective::Barrier, None, 0, None, opts, |_, _, _, _| {
            Some(NativeOp::Barrier)
        });
        if let Some(done) = done {
            return done;
        }
        let none = None::<&NoOp>;
        let plain = (&[][..], &mut [][..]);
        if let Some(done) = self.board_direct::<u8, _>(Collective::Barrier, None, plain, none, opts)
        {
            return done;
        }
        let parts = self.node_parts("barrier")?;
        self.run_blocking(self.barrier_call(parts, opts)?, opts)
    }

    /// Barrier of the host and all nodes (CMMD sync_host_with_nodes): every
    /// node and the host call it.
    pub fn barrier_with_host(&self) -> Result<()> {
        let parts = self.host_parts("barrier_with_host")?;
        self.run(
            self.barrier_call(parts, &CollOpts::default())?
                .ready(self)?,
        )
    }

    /// A barrier over `parts`.
    pub(crate) fn barrier_call(
        &self,
        parts: Parts,
        opts: &CollOpts,
    ) -> Result<Call<'static, u8, NoOp, Plan>> {
        let p = parts.eps.len();
        let sched = Plan::new(opts, 0, Params::new(parts.me, p));
        Ok(Call {
            kind: Collective::Barrier,
            what: "barrier",
            parts,
            root: None,
            input: Input::Borrowed(&[]),
            output: Output::Borrowed(&mut []),
            op: None,
            sched,
            check: Check::barrier(opts),
            finish: None,
        })
    }

    /// Broadcast `buf` from `root` (a node, or [`Rank::Host`]) to every node
    /// (GSENDW/GRECVW, PICL bcast0, CMMD bc_from_host). Every node calls it
    /// with the same root and length; with a host root the host calls it too.
    pub fn bcast<T: Element>(&self, buf: &mut [T], root: impl Into<Rank>) -> Result<()> {
        self.bcast_with(buf, root, &CollOpts::default())
    }

    /// [`Comm::bcast`] with options.
    pub fn bcast_with<T: Element>(
        &self,
        buf: &mut [T],
        root: impl Into<Rank>,
        opts: &CollOpts,
    ) -> Result<()> {
        let root = root.into();
        if root == Rank::Host {
            // 1. The host hands the data to node 0; 2. node 0 broadcasts
            // (one call, host.rs).
            return self.bcast_from_host(buf, Collective::Bcast, 0, "bcast from host", opts);
        }
        if let Rank::Node(r) = root {
            let count = buf.len();
            let done = self.direct::<T>(
                Collective::Bcast,
                Some(r),
                count,
                None,
                opts,
                |ty, _, _, _| {
                    Some(NativeOp::Bcast {
                        buf: bytemuck::cast_slice_mut(&mut *buf),
                        ty,
                        root: r,
                    })
                },
            );
            if let Some(done) = done {
                return done;
            }
            let (none, plain) = (None::<&NoOp>, (&[][..], &mut *buf));
            if let Some(done) = self.board_direct(Collective::Bcast, Some(r), plain, none, opts) {
                return done;
            }
        }
        let call = self.announce_bad(
            Collective::Bcast,
            "bcast",
            self.bcast_call(buf, root, opts),
            false,
        )?;
        self.run_blocking(call, opts)
    }

    /// A node-rooted broadcast (the schedule reads and writes `buf` as its
    /// output).
    pub(crate) fn bcast_call<'a, T: Element>(
        &self,
        buf: &'a mut [T],
        root: Rank,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, NoOp, Plan>> {
        let parts = self.node_parts("bcast")?;
        let p = parts.eps.len();
        let r = self.root_index(root, p, "bcast")?;
        let count = buf.len();
        let params = Params {
            root: r,
            count,
            order: self.ring_order(),
            ..Params::new(parts.me, p)
        };
        let sched = Plan {
            segment_of: std::mem::size_of::<T>().max(1),
            ..Plan::new(opts, std::mem::size_of_val(buf), params)
        };
        Ok(Call {
            kind: Collective::Bcast,
            what: "bcast",
            parts,
            root: Some(r),
            input: Input::Borrowed(&[]),
            output: Output::Borrowed(buf),
            op: None,
            sched,
            check: Check::of::<T>(count, opts),
            finish: None,
        })
    }

    /// Reduce `input` over the nodes with `op` into `output` at `root` (a
    /// node, or [`Rank::Host`]: the nodes' result is then delivered to the
    /// host, which does not contribute). `output` must have `input.len()`
    /// elements at the root and is not touched elsewhere (pass `&mut []`).
    pub fn reduce_into<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
        root: impl Into<Rank>,
    ) -> Result<()> {
        self.reduce_into_with(input, output, op, root, &CollOpts::default())
    }

    /// [`Comm::reduce_into`] with options.
    pub fn reduce_into_with<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
        root: impl Into<Rank>,
        opts: &CollOpts,
    ) -> Result<()> {
        let root = root.into();
        if root == Rank::Host {
            // 1. The nodes reduce to node 0; 2. node 0 hands the result to
            // the host (one call, host.rs).
            return self.reduce_to_host(input, output, op, opts);
        }
        if let Rank::Node(r) = root {
            let named = Some((op.code(), op.name()));
            let count = input.len();
            let done = self.direct::<T>(
                Collective::Reduce,
                Some(r),
                count,
                named,
                opts,
                |ty, red, _, me| {
                    let at_root = me == r;
                    if at_root && output.len() != input.len() {
                        return None;
                    }
                    Some(NativeOp::Reduce {
                        send: bytemuck::cast_slice(input),
                        recv: at_root.then(|| bytemuck::cast_slice_mut(&mut *output)),
                        ty,
                        op: red?,
                        root: r,
                    })
                },
            );
            if let Some(done) = done {
                return done;
            }
            let plain = (input, &mut *output);
            if let Some(done) =
                self.board_direct(Collective::Reduce, Some(r), plain, Some(&op), opts)
            {
                return done;
            }
        }
        let call = self.announce_bad(
            Collective::Reduce,
            "reduce",
            self.reduce_call(input, output, op, root, opts),
            false,
        )?;
        self.run_blocking(call, opts)
    }

    /// A node-rooted reduce. Non-roots reduce through a scratch buffer the
    /// task owns.
    pub(crate) fn reduce_call<'a, T: Element, O: Operator<T>>(
        &self,
        input: &'a [T],
        output: &'a mut [T],
        op: O,
        root: Rank,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, O, Plan>> {
        let parts = self.node_parts("reduce")?;
        let p = parts.eps.len();
        let r = self.root_index(root, p, "reduce")?;
        let count = input.len();
        let output = if parts.me == r {
            if output.len() != count {
                return Err(Error::InvalidArgument {
                    op: "reduce",
                    what: format!(
                        "the root's output has {} elements but the input has {count}",
                        output.len()
                    ),
                });
            }
            Output::Borrowed(output)
        } else {
            // A scratch buffer, made only if the call runs on messages.
            Output::Owned(Vec::new())
        };
        let params = Params {
            root: r,
            count,
            ..Params::new(parts.me, p)
        };
        let sched = Plan {
            fixed: opts.reproducible.then_some(Algorithm::Binomial),
            commutative: op.commutative(),
            segment_of: std::mem::size_of::<T>().max(1),
            scratch: if parts.me == r { 0 } else { count },
            ..Plan::new(opts, std::mem::size_of_val(input), params)
        };
        Ok(Call {
            kind: Collective::Reduce,
            what: "reduce",
            parts,
            root: Some(r),
            input: Input::Borrowed(input),
            output,
            op: Some(op),
            sched,
            check: Check::of::<T>(count, opts),
            finish: None,
        })
    }

    /// Reduce and return the result at the root (`None` elsewhere). The
    /// host, as root, learns the length from the nodes' data (its `input`
    /// is not used); the host calling it with a node as root is an error
    /// (the host takes no part in a reduce to a node).
    pub fn reduce<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        op: O,
        root: impl Into<Rank>,
    ) -> Result<Option<Vec<T>>> {
        let root = root.into();
        if self.is_host() {
            if root != Rank::Host {
                return Err(Error::InvalidArgument {
                    op: "reduce",
                    what: format!(
                        "the host takes no part in a reduce to {root}: call it on the nodes \
                         only, or give Rank::Host as the root"
                    ),
                });
            }
            return self
                .host_learns(Collective::Reduce, 0, "reduce to host", Some(op))
                .map(Some);
        }
        let at_root = self.me() == root;
        let mut out = vec![T::zeroed(); if at_root { input.len() } else { 0 }];
        self.reduce_into(input, &mut out, op, root)?;
        Ok(at_root.then_some(out))
    }

    /// Reduce over the nodes and give every node the result (GOP, PICL
    /// gsum0 … gxor0 and gcomb0, CMMD reduce_to_nodes).
    pub fn allreduce_into<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
    ) -> Result<()> {
        self.allreduce_into_with(input, output, op, &CollOpts::default())
    }

    /// [`Comm::allreduce_into`] with options.
    pub fn allreduce_into_with<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
        opts: &CollOpts,
    ) -> Result<()> {
        let named = Some((op.code(), op.name()));
        let count = input.len();
        let done = self.direct::<T>(
            Collective::Allreduce,
            None,
            count,
            named,
            opts,
            |ty, red, _, _| {
                (output.len() == input.len()).then_some(())?;
                Some(NativeOp::Allreduce {
                    send: bytemuck::cast_slice(input),
                    recv: bytemuck::cast_slice_mut(&mut *output),
                    ty,
                    op: red?,
                })
            },
        );
        if let Some(done) = done {
            return done;
        }
        let plain = (input, &mut *output);
        if let Some(done) = self.board_direct(Collective::Allreduce, None, plain, Some(&op), opts) {
            return done;
        }
        let call = self.announce_bad(
            Collective::Allreduce,
            "allreduce",
            self.allreduce_call(input, output, op, opts),
            false,
        )?;
        self.run_blocking(call, opts)
    }

    /// An allreduce.
    pub(crate) fn allreduce_call<'a, T: Element, O: Operator<T>>(
        &self,
        input: &'a [T],
        output: &'a mut [T],
        op: O,
        opts: &CollOpts,
    ) -> Result<Call<'a, T, O, Plan>> {
        let parts = self.node_parts("allreduce")?;
        let p = parts.eps.len();
        let count = input.len();
        if output.len() != count {
            return Err(Error::InvalidArgument {
                op: "allreduce",
                what: format!(
                    "output has {} elements but the input has {count}",
                    output.len()
                ),
            });
        }
        let params = Params {
            count,
            order: self.ring_order(),
            ..Params::new(parts.me, p)
        };
        let sched = Plan {
            fixed: opts.reproducible.then_some(Algorithm::ReduceBcast),
            commutative: op.commutative(),
            ..Plan::new(opts, std::mem::size_of_val(input), params)
        };
        Ok(Call {
            kind: Collective::Allreduce,
            what: "allreduce",
            parts,
            root: None,
            input: Input::Borrowed(input),
            output: Output::Borrowed(output),
            op: Some(op),
            sched,
            check: Check::of::<T>(count, opts),
            finish: None,
        })
    }

    /// Allreduce returning a new vector.
    pub fn allreduce<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        op: O,
    ) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); input.len()];
        self.allreduce_into(input, &mut out, op)?;
        Ok(out)
    }

    // ----------------------------------------------------------- helpers

    pub(crate) fn root_index(&self, root: Rank, p: usize, op: &'static str) -> Result<usize> {
        match root {
            Rank::Node(r) if r < p => Ok(r),
            r => Err(Error::InvalidRank {
                rank: r,
                op,
                size: p,
                host: if self.has_host() {
                    " and a host"
                } else {
                    " and no host"
                },
            }),
        }
    }

    pub(crate) fn coll_recv_vec(&self, from: Rank, tag: u32) -> Result<Vec<u8>> {
        self.coll_recv(from, tag)
    }

    /// Run a small auxiliary schedule over `u64` buffers (count exchanges of
    /// the variable-count collectives) as phase 1 of `kind`, with `count`
    /// in its signature.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_aux(
        &self,
        parts: Parts,
        kind: Collective,
        root: Option<usize>,
        sched: Schedule,
        input: &[u64],
        output: &mut [u64],
        count: usize,
        what: &'static str,
    ) -> Result<()> {
        self.run(Call::<u64, NoOp> {
            kind,
            what,
            parts,
            root,
            input: Input::Borrowed(input),
            output: Output::Borrowed(output),
            op: None,
            sched: sched.into(),
            check: Check {
                variant: 1,
                ..Check::of::<u64>(count, &CollOpts::default())
            },
            finish: None,
        })
    }
}

/// An error unless a buffer has the length the call needs.
pub(crate) fn need_len(op: &'static str, which: &str, got: usize, want: usize) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            what: format!("{which} has {got} elements but {want} are needed"),
        })
    }
}

/// Elements from received bytes (the length must be a multiple of the
/// element size).
pub(crate) fn vec_from_bytes<T: Element>(bytes: &[u8], op: &'static str) -> Result<Vec<T>> {
    let sz = std::mem::size_of::<T>();
    if sz == 0 || !bytes.len().is_multiple_of(sz) {
        return Err(Error::CollectiveMismatch(format!(
            "{op}: received {} bytes, not a whole number of {} elements",
            bytes.len(),
            T::NAME
        )));
    }
    let mut v = vec![T::zeroed(); bytes.len() / sz];
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(bytes);
    Ok(v)
}

/// Counts as `u64` for the wire, and back.
pub(crate) fn counts_to_u64(c: &[usize]) -> Vec<u64> {
    c.iter().map(|&x| x as u64).collect()
}

pub(crate) fn counts_from_u64(c: &[u64]) -> Vec<usize> {
    c.iter().map(|&x| x as usize).collect()
}

/// Append `b`'s rounds to `a`, renumbering `b`'s scratch buffers after
/// `a`'s and mapping `b`'s Input/Output through `map` (composition of two
/// schedules that hand data over in a buffer of `a`).
pub(crate) fn append_mapped(a: &mut Schedule, b: Schedule, map: impl Fn(Buf) -> Buf) {
    let base = a.temps.len() as u32;
    let m = |r: Region| {
        let buf = match r.buf {
            Buf::Temp(i) => Buf::Temp(i + base),
            other => map(other),
        };
        Region::new(buf, r.offset, r.len)
    };
    for round in b.rounds {
        let ops = round
            .ops
            .into_iter()
            .map(|op| match op {
                Op::Send { to, region } => Op::Send {
                    to,
                    region: m(region),
                },
                Op::Recv { from, region } => Op::Recv {
                    from,
                    region: m(region),
                },
                Op::Reduce {
                    src,
                    dst,
                    src_first,
                } => Op::Reduce {
                    src: m(src),
                    dst: m(dst),
                    src_first,
                },
                Op::Copy { src, dst } => Op::Copy {
                    src: m(src),
                    dst: m(dst),
                },
            })
            .collect();
        a.rounds.push(hypercomm_algo::Round { ops });
    }
    a.temps.extend(b.temps);
}

/// `a` with every region of `from` (Input or Output) moved to `to`.
pub(crate) fn remap(a: Schedule, from: Buf, to: Buf) -> Schedule {
    let mut out = Schedule::new();
    append_mapped(&mut out, a, |b| if b == from { to } else { b });
    out
}
