//! Handing a blocking collective to the transport's library (MPI's own
//! `MPI_Allreduce`, `MPI_Bcast`, …) where the operation and operator map,
//! so a cluster's tuned collectives serve the call.
//!
//! Off by default: collectives run our schedules, so check mode,
//! reproducible mode, PICL topologies and tracing behave the same on every
//! transport. [`Comm::set_native_collectives`] turns it on per
//! communicator; the cost model then compares the library's start-up cost
//! ([`Native::startup`]) with the transport's, for the best algorithm at
//! that size, and takes the cheaper. [`Algorithm::Native`] in
//! [`CollOpts::algorithm`] forces it for one call (an error where it cannot
//! serve).
//!
//! Served: barrier, bcast, reduce, allreduce, allgather and all-to-all
//! among the nodes, on element types `u8` … `u64`, `i8` … `i64`,
//! `usize`/`isize` (as 64-bit) and `f32`/`f64`, with the built-in
//! operators `Sum`, `Prod`, `Min`, `Max`, the bitwise and the logical ones.
//! Always our schedules: host-rooted calls, non-blocking calls, the
//! reproducible mode, a topology setting other than `Auto`, user-defined
//! and location operators, and every other collective.
//!
//! Check mode still holds: before the call, the participants exchange
//! their signatures on our messages, as a call on our schedules does, and
//! compare them, so a mismatch is the same [`Error::CollectiveMismatch`]
//! on every rank. The signature states whether the communicator hands
//! calls to the library (and the call's other options), so that ranks
//! that disagree about it — one in the library's collective, one in ours,
//! which would never meet — fail instead of waiting. Tracing records the call as
//! one block (`block_begin` / `block_end`), without its inner messages.
//!
//! Two roads lead there. The ordinary one builds the call's description
//! ([`Call`]) as for our schedules, then asks [`Comm::native_for`]. With
//! check mode off, the six front ends first try [`Comm::direct`]: the same
//! question asked of the bare arguments, and the library called without a
//! `Call` at all (about 150 instructions less a call, against some 2 000
//! in an 8-byte `MPI_Allreduce` on shared memory). It declines whatever is
//! not plainly well formed, so the ordinary road reports every error.
//!
//! Not done yet: the variable-count forms (`gatherv`, `alltoallv`, …),
//! scans and reduce-scatter; a native call cannot be interrupted by a
//! failed peer (the library decides: Open MPI and MPICH abort the job).

use super::call::{Call, Sched};
use super::ops::{Element, Operator};
use super::select::{Algorithm, CollOpts, Collective, Topology};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::transport::native::{Native, NativeOp, NativeReduce, NativeType};
use crate::transport::Transport;
use hypercomm_algo::memo::ChoiceKey;
use hypercomm_algo::select::{best_cost, CostModel, COMBINE_COST};

/// A call the library takes: the library, the element type and the
/// operator of a reduction.
type Served<'a> = (&'a dyn Native, NativeType, Option<NativeReduce>);

/// A blocking call as the library's question sees it.
struct Ask {
    kind: Collective,
    /// The call's name in messages.
    what: &'static str,
    with_host: bool,
    /// Element type code and name.
    elem: (u8, &'static str),
    /// A reduction's operator code and name.
    op: Option<(u8, &'static str)>,
    /// Participants.
    p: usize,
    /// Bytes, as the cost model counts them.
    bytes: usize,
}

/// The collectives the library serves.
const SERVED: [Collective; 6] = [
    Collective::Barrier,
    Collective::Bcast,
    Collective::Reduce,
    Collective::Allreduce,
    Collective::Allgather,
    Collective::Alltoall,
];

/// The library type of element type code `code` (see `ops.rs`).
fn native_type(code: u8) -> Option<NativeType> {
    Some(match code {
        1 => NativeType::U8,
        2 => NativeType::I8,
        3 => NativeType::U16,
        4 => NativeType::I16,
        5 => NativeType::U32,
        6 => NativeType::I32,
        7 => NativeType::U64,
        8 => NativeType::I64,
        11 if usize::BITS == 64 => NativeType::U64,
        12 if usize::BITS == 64 => NativeType::I64,
        11 => NativeType::U32,
        12 => NativeType::I32,
        20 => NativeType::F32,
        21 => NativeType::F64,
        _ => return None,
    })
}

/// The library operator of operator code `code` (see `ops.rs`); the
/// bitwise and logical ones only on integers.
fn native_reduce(code: u8, ty: NativeType) -> Option<NativeReduce> {
    let int = !matches!(ty, NativeType::F32 | NativeType::F64);
    Some(match code {
        1 => NativeReduce::Sum,
        2 => NativeReduce::Prod,
        3 => NativeReduce::Max,
        4 => NativeReduce::Min,
        5 if int => NativeReduce::BitAnd,
        6 if int => NativeReduce::BitOr,
        7 if int => NativeReduce::BitXor,
        8 if int => NativeReduce::LogicalAnd,
        9 if int => NativeReduce::LogicalOr,
        _ => return None,
    })
}

impl Comm {
    /// Let collectives on this communicator go to the transport library's
    /// own implementation where the cost model expects it to be faster
    /// (see the module doc for what it serves). Every member should set
    /// the same (check mode compares it, on every transport). Without such a library (threads, shm, tcp) it changes
    /// nothing.
    pub fn set_native_collectives(&self, on: bool) {
        self.inner.coll.native.set(on);
    }

    /// Whether [`Comm::set_native_collectives`] is on.
    pub fn native_collectives(&self) -> bool {
        self.inner.coll.native.get()
    }

    /// The library whose collectives [`Comm::set_native_collectives`]
    /// would use ("Open MPI v4.1.4, …"), or `None` when the transport has
    /// none.
    pub fn native_library(&self) -> Option<String> {
        self.engine().t.native().map(|n| n.library())
    }

    /// Whether a blocking call of `call` goes to the library: the reason it
    /// cannot when forced, `Ok(None)` when ours serves.
    fn native_for<T: Element, O: Operator<T>, S>(
        &self,
        call: &Call<'_, T, O, S>,
        opts: &CollOpts,
    ) -> Result<Option<Served<'_>>> {
        let ask = Ask {
            kind: call.kind,
            what: call.what,
            with_host: call.parts.with_host,
            elem: (T::CODE, T::NAME),
            op: call.op.as_ref().map(|o| (o.code(), o.name())),
            p: call.parts.eps.len(),
            bytes: usize::try_from(call.check.count)
                .unwrap_or(usize::MAX)
                .saturating_mul(std::mem::size_of::<T>()),
        };
        self.library_for(&ask, opts)
    }

    /// Whether the library takes `ask` under `opts`: the reason it cannot
    /// when forced, `Ok(None)` when ours serves. Inlined: in a front end
    /// most of it folds away (the collective, the element type and the
    /// operator are known there).
    #[inline(always)]
    fn library_for(&self, ask: &Ask, opts: &CollOpts) -> Result<Option<Served<'_>>> {
        let forced = opts.algorithm == Algorithm::Native;
        if !forced && (opts.algorithm != Algorithm::Auto || !self.native_collectives()) {
            return Ok(None);
        }
        let refuse = |why: String| -> Result<Option<_>> {
            if forced {
                Err(Error::InvalidArgument {
                    op: ask.what,
                    what: format!("algorithm native: {why}"),
                })
            } else {
                Ok(None)
            }
        };
        let Some(n) = self.engine().t.native() else {
            return refuse(
                "this transport has no library collectives (the mpi transport has)".into(),
            );
        };
        if ask.with_host {
            return refuse("host-rooted calls run our schedules".into());
        }
        if opts.reproducible {
            return refuse("the library's reduction order is not reproducible".into());
        }
        if self.topology() != Topology::Auto {
            return refuse(format!(
                "the topology setting {:?} asks for our schedules",
                self.topology()
            ));
        }
        let c = ask.kind;
        if !SERVED.contains(&c) {
            return refuse(format!("{} has no library form here", c.name()));
        }
        let reduces = matches!(c, Collective::Reduce | Collective::Allreduce);
        let ty = if reduces {
            match native_type(ask.elem.0) {
                Some(t) => t,
                None => return refuse(format!("element type {} does not map", ask.elem.1)),
            }
        } else {
            // Moves bytes only: any element type goes as bytes.
            NativeType::U8
        };
        let red = match ask.op {
            Some((code, name)) if reduces => match native_reduce(code, ty) {
                Some(r) => Some(r),
                None => return refuse(format!("operator {name} on {} does not map", ask.elem.1)),
            },
            _ => None,
        };
        if !forced && !self.native_cheaper(c, ask.p, ask.bytes) {
            return Ok(None);
        }
        Ok(Some((n, ty, red)))
    }

    /// Whether the cost model expects the library's `c` on `p` participants
    /// with `bytes` bytes to be no slower than the best of ours: the same
    /// algorithms, with the library's start-up cost instead of the
    /// transport's (a tie, as when the ranks outnumber the cores and a
    /// context switch dominates both, goes to the library: it was asked
    /// for). The answer is remembered in the communicator's memo of
    /// choices, as the choice of a call that asks for `Native`: costing
    /// every algorithm twice took more instructions than an 8-byte
    /// `MPI_Allreduce` itself.
    fn native_cheaper(&self, c: Collective, p: usize, bytes: usize) -> bool {
        let Some(n) = self.engine().t.native() else {
            return false;
        };
        let key = ChoiceKey {
            collective: c,
            algorithm: Algorithm::Native,
            p,
            bytes,
            commutative: true,
            reproducible: false,
            topology: Topology::Auto,
        };
        let memo = &self.inner.coll.memo;
        if let Some(a) = memo.choice(&key) {
            return a == Algorithm::Native;
        }
        let (_, cost, (over, cores)) = self.cost_model();
        let model = |ts: f64| CostModel {
            ts,
            tw: cost.tw,
            gamma: COMBINE_COST,
            cores,
            oversubscribed: over,
        };
        let cheaper =
            best_cost(c, p, bytes, &model(n.startup())) <= best_cost(c, p, bytes, &model(cost.ts));
        let answer = if cheaper {
            Algorithm::Native
        } else {
            Algorithm::Auto
        };
        memo.remember_choice(key, answer);
        cheaper
    }

    /// [`Algorithm::Native`] if a blocking call of `c` with a built-in
    /// operator on a mapped type would go to the library (for
    /// [`Comm::chosen_algorithm`]).
    pub(crate) fn chosen_native(
        &self,
        c: Collective,
        p: usize,
        bytes: usize,
        opts: &CollOpts,
    ) -> Option<Algorithm> {
        let served = SERVED.contains(&c);
        let asked = opts.algorithm == Algorithm::Native
            || (opts.algorithm == Algorithm::Auto
                && self.native_collectives()
                && self.native_cheaper(c, p, bytes));
        (served
            && asked
            && self.engine().t.native().is_some()
            && !opts.reproducible
            && self.topology() == Topology::Auto)
            .then_some(Algorithm::Native)
    }

    /// Run a blocking collective: on the library when [`Comm::native_for`]
    /// says so, else on the shared-memory board where it serves
    /// (`board.rs`), else our schedule, made only then.
    pub(crate) fn run_blocking<T: Element, O: Operator<T>, S: Sched>(
        &self,
        mut call: Call<'_, T, O, S>,
        opts: &CollOpts,
    ) -> Result<()> {
        // A forced algorithm this call cannot run is an invalid argument
        // found before anything is sent: announced, as the front ends
        // announce theirs, so that the other nodes fail too.
        let (kind, what) = (call.kind, call.what);
        let native = self.native_for(&call, opts);
        match native.map_err(|e| self.announced(kind, what, e))? {
            None if self.try_board(&mut call, opts)? => Ok(()),
            None => {
                let call = call.ready(self);
                self.run(call.map_err(|e| self.announced(kind, what, e))?)
            }
            Some((n, ty, red)) => self.run_native(n, &mut call, ty, red),
        }
    }

    /// `call` on the library: the signature check, then the one call, as
    /// one trace block. Never inlined: inlined, it made a call on our
    /// schedules copy itself once more in `run_blocking` (some 50
    /// instructions a call with check mode off).
    #[inline(never)]
    fn run_native<T: Element, O: Operator<T>, S>(
        &self,
        n: &dyn Native,
        call: &mut Call<'_, T, O, S>,
        ty: NativeType,
        red: Option<NativeReduce>,
    ) -> Result<()> {
        if self.check_mode() {
            // On our messages, as a call on our schedules checks (with the
            // check stage's tag, then the call's), so that a node whose
            // call goes to the library and one whose call runs ours (their
            // options differ) meet in the same exchange and both fail.
            if let Err(e) = self.check_on_messages(&self.signature(call), &call.parts) {
                let _ = self.next_tag(false);
                return Err(e);
            }
        }
        // Borrowed, not moved: the call is a few hundred bytes.
        let Call {
            kind,
            ref parts,
            root,
            ref input,
            ref mut output,
            ..
        } = *call;
        let members = &parts.eps[..];
        let send: &[u8] = bytemuck::cast_slice(input.as_slice());
        let recv: &mut [u8] = bytemuck::cast_slice_mut(output.as_mut_slice());
        let at_root = root == Some(parts.me);
        let nop = match kind {
            Collective::Barrier => NativeOp::Barrier,
            Collective::Bcast => NativeOp::Bcast {
                buf: recv,
                ty,
                root: root.unwrap_or(0),
            },
            Collective::Reduce => NativeOp::Reduce {
                send,
                recv: at_root.then_some(recv),
                ty,
                op: red.unwrap_or(NativeReduce::Sum),
                root: root.unwrap_or(0),
            },
            Collective::Allreduce => NativeOp::Allreduce {
                send,
                recv,
                ty,
                op: red.unwrap_or(NativeReduce::Sum),
            },
            Collective::Allgather => NativeOp::Allgather { send, recv, ty },
            _ => NativeOp::Alltoall { send, recv, ty },
        };
        self.native_block(n, kind, root, members, nop)
    }

    /// Run `nop` on the library as one trace block, the tag sequence kept
    /// in step with members that run ours.
    fn native_block(
        &self,
        n: &dyn Native,
        kind: Collective,
        root: Option<usize>,
        members: &[u32],
        nop: NativeOp<'_>,
    ) -> Result<()> {
        let seq = self.next_tag(false) & 0x7fff_ffff;
        let root_ep = root.and_then(|r| members.get(r).copied());
        let key = self.coll_ctx();
        crate::trace::recorder::in_block(kind.code(), root_ep, seq, || n.run(key, members, nop))
    }

    /// The direct road (module doc) for a blocking call of `kind` among
    /// the nodes: `count` elements of `T` as check mode and the cost model
    /// count them, operator `op` of a reduction. `nop` makes the library
    /// call from the element type, the operator, the number of nodes and
    /// this node's index, or declines (`None`) when the buffers do not
    /// plainly fit. `None`: the ordinary road takes the call.
    #[inline]
    pub(crate) fn direct<'b, T: Element>(
        &self,
        kind: Collective,
        root: Option<usize>,
        count: usize,
        op: Option<(u8, &'static str)>,
        opts: &CollOpts,
        nop: impl FnOnce(NativeType, Option<NativeReduce>, usize, usize) -> Option<NativeOp<'b>>,
    ) -> Option<Result<()>> {
        let asked = opts.algorithm == Algorithm::Native
            || (opts.algorithm == Algorithm::Auto && self.native_collectives());
        if !asked || self.check_mode() {
            return None;
        }
        let Rank::Node(me) = self.me() else {
            return None;
        };
        let members = &self.group().eps[..];
        let ask = Ask {
            kind,
            what: kind.name(),
            with_host: false,
            elem: (T::CODE, T::NAME),
            op,
            p: members.len(),
            bytes: count.saturating_mul(std::mem::size_of::<T>()),
        };
        let (n, ty, red) = self.library_for(&ask, opts).ok()??;
        if root.is_some_and(|r| r >= members.len()) {
            return None;
        }
        let nop = nop(ty, red, members.len(), me)?;
        Some(self.native_block(n, kind, root, members, nop))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in element type of a reduction maps to a library type
    /// of the same size; the other codes do not map.
    #[test]
    fn element_types_map_by_size() {
        fn size_of<T: Element>() -> (u8, usize) {
            (T::CODE, std::mem::size_of::<T>())
        }
        for (code, size) in [
            size_of::<u8>(),
            size_of::<i8>(),
            size_of::<u16>(),
            size_of::<i16>(),
            size_of::<u32>(),
            size_of::<i32>(),
            size_of::<u64>(),
            size_of::<i64>(),
            size_of::<usize>(),
            size_of::<isize>(),
            size_of::<f32>(),
            size_of::<f64>(),
        ] {
            assert_eq!(
                native_type(code).map(|t| t.size()),
                Some(size),
                "code {code}"
            );
        }
        for code in [9, 10, 40, 45] {
            assert_eq!(native_type(code), None);
        }
    }

    /// Operators map by their codes; bitwise and logical ones refuse floats.
    #[test]
    fn operators_map_by_code() {
        use super::super::ops::{BitXor, LogicalOr, Max, Min, Prod, Sum};
        let code = |o: &dyn Fn() -> u8| o();
        assert_eq!(
            native_reduce(code(&|| Operator::<f64>::code(&Sum)), NativeType::F64),
            Some(NativeReduce::Sum)
        );
        assert_eq!(
            native_reduce(code(&|| Operator::<i32>::code(&Prod)), NativeType::I32),
            Some(NativeReduce::Prod)
        );
        assert_eq!(
            native_reduce(Operator::<f32>::code(&Max), NativeType::F32),
            Some(NativeReduce::Max)
        );
        assert_eq!(
            native_reduce(Operator::<f32>::code(&Min), NativeType::F32),
            Some(NativeReduce::Min)
        );
        assert_eq!(
            native_reduce(Operator::<u64>::code(&BitXor), NativeType::U64),
            Some(NativeReduce::BitXor)
        );
        assert_eq!(
            native_reduce(Operator::<u8>::code(&LogicalOr), NativeType::U8),
            Some(NativeReduce::LogicalOr)
        );
        assert_eq!(
            native_reduce(Operator::<u64>::code(&BitXor), NativeType::F64),
            None
        );
        assert_eq!(native_reduce(100, NativeType::F64), None);
    }
}
