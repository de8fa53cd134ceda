//! Host-rooted collectives (CMMD `bc_from_host`, `reduce_to_host`,
//! `gather_from_nodes`, `distrib_to_nodes`): one call over the nodes and
//! the host, checked like the node ones.
//!
//! A host-rooted call is one [`Call`] whose participants are the nodes
//! `0..n` and the host (participant `n`, its root): a broadcast or scatter
//! from the host is the host's message to node 0 followed by the node
//! operation from node 0; a reduce or gather to the host is the node
//! operation to node 0 followed by node 0's message to the host. Node 0's
//! schedule is the node schedule with that one message put before or after
//! it; the host's schedule is that one message; the other nodes run the
//! node schedule unchanged. The host never contributes to a node
//! reduction.
//!
//! Because it is one call, check mode covers the host: the host's
//! signature (operation, root, count, element type, operator, the digest
//! of the counts) is exchanged with the nodes' beside the schedule, so a
//! host that calls another operation, root or length than the nodes fails
//! on every participant, the host included, and no one waits. A
//! participant whose own arguments are invalid (a host output that is not
//! `n` blocks, a scatter input of the wrong length) still takes part in the
//! exchange with a signature that says so, so that the others fail too. A
//! host-rooted call on a communicator without a host is an error on every
//! rank, without communication.
//!
//! The host learns the length from the nodes' data in the forms that
//! return a vector (`reduce`, `gather`, `gatherv` to the host): its
//! signature then states no count, and after the exchange it receives node
//! 0's message whatever its length.
//!
//! With check mode off nothing is exchanged: a mismatch is then an error
//! where it is seen (node 0 or the host, by the message length) while the
//! others may wait, as in MPI.
//!
//! Not done yet: non-blocking host-rooted calls; the host as a member of
//! allgather or scans.

use super::call::{Call, Check, Parts};
use super::executor::{Input, Output};
use super::task::{NoOp, ANY_COUNT, BAD_ARGS};
use super::{append_mapped, vec_from_bytes, Element, Operator};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::rank::Rank;
use hypercomm_algo::{Buf, Collective, Op, Region, Round, Schedule};
use std::rc::Rc;

/// A schedule of one round with one operation.
fn one(op: Op) -> Rc<Schedule> {
    Rc::new(Schedule {
        rounds: vec![Round { ops: vec![op] }],
        temps: Vec::new(),
    })
}

/// Node 0's schedule of a call that starts with `len` elements from the
/// host (participant `host`): receive them into the output (`into_input`
/// false: a broadcast) or into a scratch buffer that stands for the input
/// of `node` (a scatter), then run `node`.
fn inbound(node: &Schedule, host: usize, len: usize, into_input: bool) -> Rc<Schedule> {
    let mut s = Schedule::new();
    let region = if into_input {
        let t = s.add_temp(len);
        Region::new(Buf::Temp(t), 0, len)
    } else {
        Region::new(Buf::Output, 0, len)
    };
    s.rounds.push(Round {
        ops: vec![Op::Recv { from: host, region }],
    });
    let to = region.buf;
    append_mapped(&mut s, node.clone(), |b| {
        if b == Buf::Input && into_input {
            to
        } else {
            b
        }
    });
    Rc::new(s)
}

/// Node 0's schedule of a call that ends with its output's first `len`
/// elements going to the host.
fn outbound(node: &Schedule, host: usize, len: usize) -> Rc<Schedule> {
    let mut s = node.clone();
    s.rounds.push(Round {
        ops: vec![Op::Send {
            to: host,
            region: Region::new(Buf::Output, 0, len),
        }],
    });
    Rc::new(s)
}

impl Comm {
    /// The participants of a host-rooted call and the host's index (its
    /// root): an error on every rank of a communicator without a host.
    fn host_root(&self, what: &'static str) -> Result<(Parts, usize)> {
        let parts = self.host_parts(what)?;
        let n = self.size();
        Ok((parts, n))
    }

    /// Run the call `built` made for a host-rooted operation; when making
    /// it failed on this participant (its own arguments are invalid), take
    /// part in the signature exchange with a signature that says so, so
    /// that the other participants fail instead of waiting, and return the
    /// local error.
    fn run_host<T: Element, O: Operator<T>>(
        &self,
        parts: Parts,
        kind: Collective,
        what: &'static str,
        built: Result<Call<'_, T, O>>,
    ) -> Result<()> {
        match built {
            Ok(call) => self.run(call),
            Err(e) => Err(self.report_bad_args(parts, kind, what, e)),
        }
    }

    /// `built`, the call a node made for a node collective; when making it
    /// failed on this node (its own arguments are invalid: a length, a
    /// root), take part in the signature exchange with a signature that
    /// says so, so that the other nodes fail instead of waiting, and
    /// return the local error. (The host calling a node collective, which
    /// is no participant, only gets its error.) `task`: the call is a
    /// non-blocking one, whose exchange runs as the other nodes'
    /// non-blocking calls run theirs (as a task, never on the board).
    pub(crate) fn announce_bad<C>(
        &self,
        kind: Collective,
        what: &'static str,
        built: Result<C>,
        task: bool,
    ) -> Result<C> {
        let e = match built {
            Err(e @ (Error::InvalidArgument { .. } | Error::InvalidRank { .. })) => named(e, what),
            r => return r,
        };
        let Ok(parts) = self.node_parts(what) else {
            return Err(e);
        };
        let call = bad_args_call(parts, kind, what);
        if !task {
            let _ = self.run(call);
        } else if let Ok(t) = self.start(call) {
            let _ = self
                .engine()
                .run_task(&std::cell::RefCell::new(t), self.timeout(), what);
        }
        Err(e)
    }

    /// [`Comm::announce_bad`] for an error `e` found after the call was
    /// made (the algorithm it forces cannot serve it), before anything was
    /// sent: the error to return.
    pub(crate) fn announced(&self, kind: Collective, what: &'static str, e: Error) -> Error {
        match self.announce_bad::<()>(kind, what, Err(e), false) {
            Err(e) => e,
            Ok(()) => unreachable!("announce_bad returns the error it is given"),
        }
    }

    /// Take part in a call's check exchange with invalid arguments (so that
    /// every other participant fails), and return `e`. With check mode off
    /// only the call's tags are drawn, to keep the sequence aligned.
    pub(crate) fn report_bad_args(
        &self,
        parts: Parts,
        kind: Collective,
        what: &'static str,
        e: Error,
    ) -> Error {
        let _ = self.run(bad_args_call(parts, kind, what));
        e
    }

    // ---------------------------------------------------------- broadcast

    /// Broadcast `buf` from the host (signature: `kind`, `variant`; the
    /// host's own buffer is the data, every node's is the result).
    pub(crate) fn bcast_from_host<T: Element>(
        &self,
        buf: &mut [T],
        kind: Collective,
        variant: u8,
        what: &'static str,
        opts: &super::CollOpts,
    ) -> Result<()> {
        let (parts, h) = self.host_root(what)?;
        let count = buf.len();
        let check = Check {
            variant,
            ..Check::of::<T>(count, opts)
        };
        if self.is_host() {
            let sched = one(Op::Send {
                to: 0,
                region: Region::new(Buf::Output, 0, count),
            });
            return self.run(host_call(
                kind,
                what,
                parts,
                h,
                &[],
                buf,
                None::<NoOp>,
                sched,
                check,
            ));
        }
        let built = self
            .bcast_call(buf, Rank::Node(0), opts)
            .and_then(|c| c.ready(self))
            .map(|mut c| {
                if parts.me == 0 {
                    c.sched = inbound(&c.sched, h, count, false);
                }
                c.check = check;
                c.kind = kind;
                c.what = what;
                c.root = Some(h);
                c.parts = parts.clone();
                c
            });
        self.run_host(parts, kind, what, built)
    }

    // ------------------------------------------------------------- reduce

    /// Reduce the nodes' `input` into the host's `output` (the nodes pass
    /// an empty output; the host's input is not used).
    pub(crate) fn reduce_to_host<T: Element, O: Operator<T>>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
        opts: &super::CollOpts,
    ) -> Result<()> {
        let what = "reduce to host";
        let (parts, h) = self.host_root(what)?;
        if self.is_host() {
            let count = output.len();
            let sched = one(Op::Recv {
                from: 0,
                region: Region::new(Buf::Output, 0, count),
            });
            let check = Check::of::<T>(count, opts);
            let call = host_call(
                Collective::Reduce,
                what,
                parts,
                h,
                &[],
                output,
                Some(op),
                sched,
                check,
            );
            return self.run(call);
        }
        let count = input.len();
        let mut tmp = vec![T::zeroed(); if parts.me == 0 { count } else { 0 }];
        let built = self
            .reduce_call(input, &mut tmp, op, Rank::Node(0), opts)
            .and_then(|c| c.ready(self))
            .map(|mut c| {
                if parts.me == 0 {
                    c.sched = outbound(&c.sched, h, count);
                }
                c.what = what;
                c.root = Some(h);
                c.parts = parts.clone();
                c
            });
        self.run_host(parts, Collective::Reduce, what, built)
    }

    /// The host's side of a reduce, gather or gatherv to the host that
    /// learns the length from the data: the signature exchange (any count),
    /// then node 0's message. `op` gives the operator code of a reduce.
    pub(crate) fn host_learns<T: Element, O: Operator<T>>(
        &self,
        kind: Collective,
        variant: u8,
        what: &'static str,
        op: Option<O>,
    ) -> Result<Vec<T>> {
        let (parts, h) = self.host_root(what)?;
        let check = Check {
            count: ANY_COUNT,
            variant,
            // The host of a call rooted at it states no options.
            ..Check::of::<T>(0, &super::CollOpts::default())
        };
        let sched = Rc::new(Schedule::new());
        let tag = self.run_tagged(host_call(
            kind,
            what,
            parts,
            h,
            &[],
            &mut [],
            op,
            sched,
            check,
        ))?;
        let bytes = self.coll_recv_vec(Rank::Node(0), tag)?;
        vec_from_bytes(&bytes, what)
    }

    // ------------------------------------------------------------- gather

    /// Gather the nodes' blocks (`counts`, known everywhere) at the host, in
    /// rank order, into `output` (the nodes pass an empty one).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gatherv_to_host<T: Element>(
        &self,
        input: &[T],
        counts: &[usize],
        output: &mut [T],
        kind: Collective,
        sig_count: usize,
        what: &'static str,
        opts: &super::CollOpts,
    ) -> Result<()> {
        let (parts, h) = self.host_root(what)?;
        let total: usize = counts.iter().sum();
        let check = if kind == Collective::Gatherv {
            Check::of_counts::<T>(sig_count, counts, opts)
        } else {
            Check::of::<T>(sig_count, opts)
        };
        if self.is_host() {
            if let Err(e) = super::need_len(what, "counts", counts.len(), self.size())
                .and_then(|()| super::need_len(what, "the host's output", output.len(), total))
            {
                return Err(self.report_bad_args(parts, kind, what, e));
            }
            let sched = one(Op::Recv {
                from: 0,
                region: Region::new(Buf::Output, 0, total),
            });
            return self.run(host_call(
                kind,
                what,
                parts,
                h,
                &[],
                output,
                None::<NoOp>,
                sched,
                check,
            ));
        }
        let mut tmp = vec![T::zeroed(); if parts.me == 0 { total } else { 0 }];
        let built = self
            .gatherv_call(
                input,
                counts,
                &mut tmp,
                Rank::Node(0),
                kind,
                sig_count,
                opts,
            )
            .map(|c| rooted_at_host(c, &parts, h, check, what, |s| outbound(s, h, total)));
        self.run_host(parts, kind, what, built)
    }

    /// The host's block length in a fixed-count gather or scatter: its
    /// `buffer` of `len` elements must hold one block per node (an error
    /// every member reports otherwise).
    fn host_blocks(
        &self,
        kind: Collective,
        what: &'static str,
        buffer: &str,
        len: usize,
    ) -> Result<usize> {
        let (parts, _) = self.host_root(what)?;
        let n = self.size();
        if !len.is_multiple_of(n) {
            let e = Error::InvalidArgument {
                op: if kind == Collective::Gather {
                    "gather"
                } else {
                    "scatter"
                },
                what: format!(
                    "the host's {buffer} has {len} elements, not a multiple of {n} nodes"
                ),
            };
            return Err(self.report_bad_args(parts, kind, what, e));
        }
        Ok(len / n)
    }

    /// Gather at the host with fixed counts: `output` at the host has `n`
    /// blocks of the nodes' common length.
    pub(crate) fn gather_to_host<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        opts: &super::CollOpts,
    ) -> Result<()> {
        let what = "gather to host";
        let n = self.size();
        if self.is_host() {
            let c = self.host_blocks(Collective::Gather, what, "output", output.len())?;
            return self.gatherv_to_host(
                &[],
                &vec![c; n],
                output,
                Collective::Gather,
                c,
                what,
                opts,
            );
        }
        let c = input.len();
        self.gatherv_to_host(
            input,
            &vec![c; n],
            &mut [],
            Collective::Gather,
            c,
            what,
            opts,
        )
    }

    /// Node 0 sends the nodes' counts to the host (phase 1 of `gatherv`
    /// to the host): the host's `counts` (n elements) receive them; a
    /// node's are what it sends (only node 0's are used).
    pub(crate) fn counts_to_host(&self, counts: &mut [u64], what: &'static str) -> Result<()> {
        let (parts, h) = self.host_root(what)?;
        let n = self.size();
        let check = Check {
            variant: 1,
            ..Check::of::<u64>(n, &super::CollOpts::default())
        };
        let sched = if self.is_host() {
            one(Op::Recv {
                from: 0,
                region: Region::new(Buf::Output, 0, n),
            })
        } else if parts.me == 0 {
            one(Op::Send {
                to: h,
                region: Region::new(Buf::Output, 0, n),
            })
        } else {
            Rc::new(Schedule::new())
        };
        let mut call = host_call(
            Collective::Gatherv,
            what,
            parts,
            h,
            &[],
            counts,
            None::<NoOp>,
            sched,
            check,
        );
        if !self.is_host() && call.parts.me != 0 {
            call.output = Output::Borrowed(&mut []);
        }
        self.run(call)
    }

    // ------------------------------------------------------------ scatter

    /// Scatter the host's `input` (blocks of `counts`, known everywhere) to
    /// the nodes' `output` (the host passes an empty one).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scatterv_from_host<T: Element>(
        &self,
        input: &[T],
        counts: &[usize],
        output: &mut [T],
        kind: Collective,
        sig_count: usize,
        what: &'static str,
        opts: &super::CollOpts,
    ) -> Result<()> {
        let (parts, h) = self.host_root(what)?;
        let total: usize = counts.iter().sum();
        let check = if kind == Collective::Scatterv {
            Check::of_counts::<T>(sig_count, counts, opts)
        } else {
            Check::of::<T>(sig_count, opts)
        };
        if self.is_host() {
            if let Err(e) = super::need_len(what, "counts", counts.len(), self.size())
                .and_then(|()| super::need_len(what, "the host's input", input.len(), total))
            {
                return Err(self.report_bad_args(parts, kind, what, e));
            }
            let sched = one(Op::Send {
                to: 0,
                region: Region::new(Buf::Input, 0, total),
            });
            return self.run(host_call(
                kind,
                what,
                parts,
                h,
                input,
                &mut [],
                None::<NoOp>,
                sched,
                check,
            ));
        }
        let built = self
            .scatterv_node_call(
                &[],
                counts,
                output,
                Rank::Node(0),
                kind,
                sig_count,
                false,
                opts,
            )
            .map(|c| rooted_at_host(c, &parts, h, check, what, |s| inbound(s, h, total, true)));
        self.run_host(parts, kind, what, built)
    }

    /// Scatter from the host with fixed counts: the host's `input` has `n`
    /// blocks of the nodes' common output length.
    pub(crate) fn scatter_from_host<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        opts: &super::CollOpts,
    ) -> Result<()> {
        let what = "scatter from host";
        let n = self.size();
        if self.is_host() {
            let c = self.host_blocks(Collective::Scatter, what, "input", input.len())?;
            return self.scatterv_from_host(
                input,
                &vec![c; n],
                &mut [],
                Collective::Scatter,
                c,
                what,
                opts,
            );
        }
        let c = output.len();
        self.scatterv_from_host(&[], &vec![c; n], output, Collective::Scatter, c, what, opts)
    }
}

/// A node's call of a host-rooted operation: built as the node-rooted one,
/// then rooted at the host `h` (`reroute` rewrites node 0's schedule to
/// pass the data to or from the host) with the host-rooted check.
fn rooted_at_host<'a, T: Element, O: Operator<T>>(
    mut c: Call<'a, T, O>,
    parts: &Parts,
    h: usize,
    check: Check,
    what: &'static str,
    reroute: impl FnOnce(&Schedule) -> Rc<Schedule>,
) -> Call<'a, T, O> {
    if parts.me == 0 {
        c.sched = reroute(&c.sched);
    }
    c.check = check;
    c.what = what;
    c.root = Some(h);
    c.parts = parts.clone();
    c
}

/// The host's own call of a host-rooted operation: its one message.
#[allow(clippy::too_many_arguments)]
fn host_call<'a, T: Element, O: Operator<T>>(
    kind: Collective,
    what: &'static str,
    parts: Parts,
    h: usize,
    input: &'a [T],
    output: &'a mut [T],
    op: Option<O>,
    sched: Rc<Schedule>,
    check: Check,
) -> Call<'a, T, O> {
    Call {
        kind,
        what,
        parts,
        root: Some(h),
        input: Input::Borrowed(input),
        output: Output::Borrowed(output),
        op,
        sched,
        check,
        finish: None,
    }
}

/// The call of a participant whose arguments are invalid: no data, only a
/// signature that says so ([`BAD_ARGS`]).
pub(crate) fn bad_args_call(
    parts: Parts,
    kind: Collective,
    what: &'static str,
) -> Call<'static, u8, NoOp> {
    let root = parts.with_host.then(|| parts.eps.len() - 1);
    Call {
        kind,
        what,
        parts,
        root,
        input: Input::Borrowed(&[]),
        output: Output::Borrowed(&mut []),
        op: None,
        sched: Rc::new(Schedule::new()),
        check: Check {
            variant: BAD_ARGS,
            ..Check::default()
        },
        finish: None,
    }
}

/// `e` found by the blocking form's checks, named for `what` when that is
/// its non-blocking form (`igatherv` for `gatherv`, `ireduce_scatterv` for
/// `reduce_scatter`): the user called `what`.
fn named(e: Error, what: &'static str) -> Error {
    let ours = |op: &str| {
        what.strip_prefix('i')
            .is_some_and(|b| op != what && (op.starts_with(b) || b.starts_with(op)))
    };
    match e {
        Error::InvalidArgument { op, what: w } if ours(op) => {
            Error::InvalidArgument { op: what, what: w }
        }
        Error::InvalidRank {
            rank,
            op,
            size,
            host,
        } if ours(op) => Error::InvalidRank {
            rank,
            op: what,
            size,
            host,
        },
        e => e,
    }
}
