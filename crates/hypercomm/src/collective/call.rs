//! One collective call as data, and the one function that starts it.
//!
//! A front end (`bcast`, `reduce_into_with`, `gatherv_into`, `iallreduce`,
//! …) validates its arguments, chooses the algorithm, gets the schedule and
//! fills a [`Call`]: the operation, the participants, the root, the input,
//! the output (the caller's, or a scratch buffer the task owns), the
//! operator, the schedule, what the check signature says (with the call's
//! options, [`Check`]) and what to do with the output at the end. The
//! blocking front ends of the collectives that the shared-memory board
//! and the library's own collectives serve leave the choice and the
//! schedule to a [`Plan`], made into a schedule ([`Call::ready`]) only if
//! the call runs on messages. [`Comm::start`] turns it into a
//! [`CollTask`]: it draws the call's tags, builds the executor, the
//! check-mode stage and the trace block. The task borrows the call's
//! buffers for `'a`, so the borrow checker keeps them alive and untouched
//! while it runs: a non-blocking call hands it to a
//! [`Scope`](crate::Scope), which outlives no buffer and finishes every
//! task before it ends. A blocking call ([`Comm::run`]) runs the executor
//! directly on its own stack, with the same tags and messages, and builds a
//! task only while a trace is recorded.
//!
//! Every path makes the call's check-mode signature the same way
//! ([`Comm::signature`]: the call's own fields, its options and the
//! communicator's topology setting and library collectives switch), and
//! every path's exchange meets every other's: on messages (our schedules
//! and the library's collectives), or on the board where the
//! communicator has one (calls there and calls on messages alike). So
//! nodes whose options send one call different ways still fail together.

use super::executor::{Exec, Input, Output, Route};
use super::ops::{Element, Operator};
use super::select::{segment_elems, Algorithm, CollOpts, Collective};
use super::task::{verdict, CheckSpec, CollTask, Finish, NoOp, Opts, Signature, SIG_BYTES};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::trace::recorder;
use crate::transport::AnyTransport;
use hypercomm_algo::{Params, Schedule};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Who takes part in one collective call.
#[derive(Clone)]
pub(crate) struct Parts {
    /// Endpoint of each participant (the nodes' are the group's own,
    /// shared, not copied).
    pub(crate) eps: Arc<[u32]>,
    /// My participant index.
    pub(crate) me: usize,
    /// Whether the host takes part, as the last participant (selects the
    /// tag sequence).
    pub(crate) with_host: bool,
}

/// The ranks of `p` participants: nodes 0, 1, …, and the host last when
/// it takes part.
pub(crate) fn rank_list(p: usize, with_host: bool) -> Vec<Rank> {
    (0..p)
        .map(|i| {
            if with_host && i + 1 == p {
                Rank::Host
            } else {
                Rank::Node(i)
            }
        })
        .collect()
}

/// What the check-mode signature says about a call besides its operation,
/// root and operator, and the call's own options that decide how it is
/// carried out (forced algorithm, reproducible mode, segment size; the
/// communicator's settings join them only when a signature is made,
/// [`Comm::signature`]). Kept as small as it was before the options came
/// in (every call carries one, and a call is moved by copying it): the
/// digests of an all-to-allv's main phase take the places of count and
/// counts digest, which it does not use.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Check {
    /// The count every participant must give (`task::ANY_COUNT`: a host
    /// that learns it from the data); all-to-allv's main phase: the
    /// digest of this node's sends.
    pub(crate) count: u64,
    /// Digest of the counts of a variable-count call (0: none);
    /// all-to-allv's main phase: the digest of what this node expects to
    /// receive.
    pub(crate) digest: u64,
    /// The forced algorithm (`Auto`: none).
    pub(crate) algorithm: Algorithm,
    /// The segment size in bytes when given (at most `u32::MAX`).
    pub(crate) segment: u32,
    /// The element type's code.
    pub(crate) elem: u8,
    /// Scan kind, or the phase of a composed call (0: the main phase;
    /// `task::BAD_ARGS`: this participant's arguments are invalid).
    pub(crate) variant: u8,
    /// Reproducible mode and whether a segment size was given, as the
    /// signature's option flags say them.
    pub(crate) flags: u8,
}

impl Check {
    /// `count` elements of `T`, main phase, with options `opts`.
    pub(crate) fn of<T: Element>(count: usize, opts: &CollOpts) -> Check {
        let (flags, segment) = super::sig_opts::call_flags(opts);
        Check {
            count: count as u64,
            elem: T::CODE,
            algorithm: opts.algorithm,
            flags,
            segment,
            ..Check::default()
        }
    }

    /// A barrier's: no data, but the options (nodes that force different
    /// barriers would wait for each other).
    pub(crate) fn barrier(opts: &CollOpts) -> Check {
        let (flags, segment) = super::sig_opts::call_flags(opts);
        Check {
            algorithm: opts.algorithm,
            flags,
            segment,
            ..Check::default()
        }
    }

    /// [`Check::of`] for a variable-count call with `counts` (one per node).
    pub(crate) fn of_counts<T: Element>(count: usize, counts: &[usize], opts: &CollOpts) -> Check {
        Check {
            digest: super::task::counts_digest(counts),
            ..Check::of::<T>(count, opts)
        }
    }
}

/// One collective call, described as data. `S` is its schedule: made
/// ([`Rc<Schedule>`]), or a [`Plan`] to make it by when the call runs on
/// messages.
pub(crate) struct Call<'a, T: Element, O: Operator<T>, S = Rc<Schedule>> {
    /// The operation (check signature and trace block).
    pub(crate) kind: Collective,
    /// Its name in messages.
    pub(crate) what: &'static str,
    /// Who takes part.
    pub(crate) parts: Parts,
    /// The root participant of a rooted operation.
    pub(crate) root: Option<usize>,
    /// What the schedule reads.
    pub(crate) input: Input<'a, T>,
    /// What it writes: the caller's buffer or a scratch buffer.
    pub(crate) output: Output<'a, T>,
    /// The reduction operator, if the schedule reduces.
    pub(crate) op: Option<O>,
    /// The schedule (shared with the communicator's memo, or made for
    /// this call), or how to make it.
    pub(crate) sched: S,
    /// The rest of the check signature.
    pub(crate) check: Check,
    /// What to do with the output once the schedule has run.
    pub(crate) finish: Option<Finish<'a, T>>,
}

/// How a blocking front end's call gets its schedule if it runs on
/// messages: the algorithm is chosen and the schedule fetched only then,
/// so that a call the shared-memory board or the library serves pays for
/// neither (together a quarter of a one-node barrier's instructions).
pub(crate) struct Plan {
    /// The algorithm, when the front end fixed it (reproducible mode);
    /// else chosen by `opts`.
    pub(crate) fixed: Option<Algorithm>,
    /// The call's options.
    pub(crate) opts: CollOpts,
    /// Bytes, as selection counts them for this collective.
    pub(crate) bytes: usize,
    /// Whether the operator commutes.
    pub(crate) commutative: bool,
    /// The schedule's parameters (participant and count of the call's
    /// participants).
    pub(crate) params: Params<'static>,
    /// Pipelined: the segment is chosen when the schedule is made, for
    /// elements of this many bytes (at least 1; 0: `params.segment` as it
    /// is).
    pub(crate) segment_of: usize,
    /// The counts are per node, every one `params.count` (a fixed-count
    /// allgather made by the variable-count generator).
    pub(crate) per_node: bool,
    /// Elements of a scratch output the schedule writes where the call has
    /// none of its own (a reduce's non-roots), 0 for none.
    pub(crate) scratch: usize,
}

impl Plan {
    /// The common plan, which front ends adjust with struct update: the
    /// algorithm chosen by `opts` for `bytes`, a commutative operator,
    /// nothing pipelined, fixed counts, no scratch output.
    pub(crate) fn new(opts: &CollOpts, bytes: usize, params: Params<'static>) -> Plan {
        Plan {
            fixed: None,
            opts: opts.clone(),
            bytes,
            commutative: true,
            params,
            segment_of: 0,
            per_node: false,
            scratch: 0,
        }
    }
}

/// A call's schedule, made or to be made.
pub(crate) trait Sched {
    /// The schedule of `kind` (made now if need be), and the elements of
    /// a scratch output it writes (0: the call's own output).
    fn make(self, comm: &Comm, kind: Collective) -> Result<(Rc<Schedule>, usize)>;
}

impl Sched for Rc<Schedule> {
    fn make(self, _: &Comm, _: Collective) -> Result<(Rc<Schedule>, usize)> {
        Ok((self, 0))
    }
}

impl Sched for Plan {
    fn make(self, comm: &Comm, kind: Collective) -> Result<(Rc<Schedule>, usize)> {
        let p = self.params.p;
        let alg = match self.fixed {
            Some(a) => a,
            None => comm.choose_memo(kind, p, self.bytes, &self.opts, self.commutative)?,
        };
        // On the stack for up to 16 nodes: an allocation cost a small
        // allgather more than its messages.
        let (small, large);
        let counts: &[usize] = if !self.per_node {
            &[]
        } else if p <= 16 {
            small = [self.params.count; 16];
            &small[..p]
        } else {
            large = vec![self.params.count; p];
            &large
        };
        let mut params = if self.per_node {
            Params {
                counts,
                count: 0,
                ..self.params
            }
        } else {
            self.params
        };
        if self.segment_of > 0 {
            params.segment = segment_elems(&self.opts, params.count, p, self.segment_of);
        }
        Ok((comm.schedule(kind, alg, &params)?, self.scratch))
    }
}

impl<'a, T: Element, S> Call<'a, T, NoOp, S> {
    /// A call that only moves data: the caller's `input` and `output`, no
    /// root, no operator, nothing to do at the end.
    pub(crate) fn moving(
        kind: Collective,
        what: &'static str,
        parts: Parts,
        (input, output): (&'a [T], &'a mut [T]),
        sched: S,
        check: Check,
    ) -> Self {
        Call {
            kind,
            what,
            parts,
            root: None,
            input: Input::Borrowed(input),
            output: Output::Borrowed(output),
            op: None,
            sched,
            check,
            finish: None,
        }
    }
}

impl<'a, T: Element, O: Operator<T>, S: Sched> Call<'a, T, O, S> {
    /// The call with its schedule made (and its scratch output, if it
    /// needs one).
    pub(crate) fn ready(self, comm: &Comm) -> Result<Call<'a, T, O>> {
        let Call {
            kind,
            what,
            parts,
            root,
            input,
            output,
            op,
            sched,
            check,
            finish,
        } = self;
        let (sched, scratch) = sched.make(comm, kind)?;
        let output = if scratch > 0 {
            Output::Owned(vec![T::zeroed(); scratch])
        } else {
            output
        };
        Ok(Call {
            kind,
            what,
            parts,
            root,
            input,
            output,
            op,
            sched,
            check,
            finish,
        })
    }
}

/// The largest call (bytes of its input or output) that runs directly in
/// check mode (see [`Comm::run_tagged`]): every message of such a call is
/// eager.
pub(crate) const DIRECT_CHECKED: usize = crate::engine::EAGER_LIMIT;

impl Comm {
    /// The check-mode signature of `call` on this communicator: what the
    /// call says of itself, with its options and this communicator's
    /// topology setting and library collectives switch. The host of a call
    /// rooted at it states no options: its part (one send or receive) is
    /// the same whatever they are, and the nodes choose the rest. Never
    /// inlined: only check mode calls it, and inlined it cost calls with
    /// check mode off some 50 instructions (other inlining it displaced).
    #[inline(never)]
    pub(crate) fn signature<T: Element, O: Operator<T>, S>(
        &self,
        call: &Call<'_, T, O, S>,
    ) -> Signature {
        let host_root = call.parts.with_host && call.root == Some(call.parts.eps.len() - 1);
        let root_code = match call.root {
            None => -1,
            // A host-rooted call's root is its last participant.
            Some(_) if host_root => -2,
            Some(r) => r as i64,
        };
        let operator = call.op.as_ref().map_or(0, |o| o.code());
        if host_root && call.root == Some(call.parts.me) {
            Signature::of(call.kind, root_code, &call.check, operator, Opts::ANY)
        } else {
            self.node_signature(call.kind, root_code, &call.check, operator)
        }
    }

    /// The signature of a call of `kind` whose participant states the
    /// options in force (every one but a host that is the root): its root
    /// (`-1`: none, `-2`: the host), what it checks, its operator's code.
    pub(crate) fn node_signature(
        &self,
        kind: Collective,
        root: i64,
        check: &Check,
        operator: u8,
    ) -> Signature {
        let opts = Opts::of(check, self.topology(), self.native_collectives());
        Signature::of(kind, root, check, operator, opts)
    }

    /// The nodes as participants (the host is not one).
    pub(crate) fn node_parts(&self, op: &'static str) -> Result<Parts> {
        let Rank::Node(me) = self.me() else {
            return Err(Error::InvalidArgument {
                op,
                what:
                    "the host does not take part in this node collective (use the host-rooted form)"
                        .into(),
            });
        };
        Ok(Parts {
            eps: self.group().eps.clone(),
            me,
            with_host: false,
        })
    }

    /// Nodes and the host as participants (host last).
    pub(crate) fn host_parts(&self, op: &'static str) -> Result<Parts> {
        let Some(h) = self.group().host else {
            return Err(Error::InvalidArgument {
                op,
                what: "this communicator has no host".into(),
            });
        };
        let mut eps = self.group().eps.to_vec();
        eps.push(h);
        Ok(Parts {
            me: match self.me() {
                Rank::Node(r) => r,
                Rank::Host => self.size(),
            },
            eps: eps.into(),
            with_host: true,
        })
    }

    /// Start `call`: draw its tags (the check stage's first, in check
    /// mode), build the executor over its buffers, the signature exchange
    /// and the trace block. Nothing is sent until the task is advanced.
    pub(crate) fn start<'a, T: Element, O: Operator<T>>(
        &self,
        call: Call<'a, T, O>,
    ) -> Result<CollTask<'a, T, O>> {
        self.start_checked(call, self.check_mode())
    }

    /// [`Comm::start`], with the signature exchange only if `check`.
    fn start_checked<'a, T: Element, O: Operator<T>>(
        &self,
        call: Call<'a, T, O>,
        check: bool,
    ) -> Result<CollTask<'a, T, O>> {
        let sig = self.signature(&call);
        let Call {
            what,
            parts,
            root,
            input,
            output,
            op,
            sched,
            finish,
            ..
        } = call;
        let check_tag = check.then(|| self.next_tag(parts.with_host));
        let route = self.route(parts.eps, parts.with_host);
        let seq = route.tag & 0x7fff_ffff;
        let root_ep = root.and_then(|r| route.eps.get(r).copied());
        let check = check_tag.map(|tag| CheckSpec {
            sig,
            sched: self.check_schedule(parts.me, route.eps.len()),
            route: Route {
                tag,
                ..route.clone()
            },
            with_host: parts.with_host,
        });
        let main = Exec::new(sched, route, input, output, op, what)?;
        let mut task = CollTask::new(main, check, finish)?;
        task.trace(sig.op, root_ep, seq);
        Ok(task)
    }

    /// The check-mode signature exchange of a direct call over `route`
    /// (participant `me`), run to its end: a mismatch fails here, on every
    /// participant alike.
    fn check_direct(
        &self,
        sig: &Signature,
        route: Route,
        me: usize,
        with_host: bool,
    ) -> Result<()> {
        let p = route.eps.len();
        let mine = sig.encode();
        // On the stack for up to 16 participants (most calls).
        let mut small = [0u8; SIG_BYTES * 16];
        let mut large = Vec::new();
        let all = if p <= 16 {
            &mut small[..SIG_BYTES * p]
        } else {
            large.resize(SIG_BYTES * p, 0);
            &mut large[..]
        };
        let mut ex = Exec::new(
            self.check_schedule(me, p),
            route,
            Input::Borrowed(&mine),
            Output::Borrowed(all),
            None::<NoOp>,
            "check-mode signature exchange",
        )?;
        ex.run_direct(self.engine(), self.timeout)?;
        drop(ex);
        verdict(all, with_host)
    }

    /// The check-mode signature exchange alone, on messages, with the
    /// check stage's tag drawn now: for a call that runs elsewhere (the
    /// library's collectives) but must meet the participants whose call
    /// runs on our schedules. A mismatch fails here, on every participant
    /// alike.
    pub(crate) fn check_on_messages(&self, sig: &Signature, parts: &Parts) -> Result<()> {
        let route = self.route(parts.eps.clone(), parts.with_host);
        if self.engine().blocking_free() {
            return self.check_direct(sig, route, parts.me, parts.with_host);
        }
        // A blocking receive is posted already: the exchange runs as a task
        // beside an empty schedule.
        let what = "check-mode signature exchange";
        let check = CheckSpec {
            sig: *sig,
            sched: self.check_schedule(parts.me, route.eps.len()),
            route: route.clone(),
            with_host: parts.with_host,
        };
        let main = Exec::new(
            Rc::new(Schedule::new()),
            route,
            Input::Borrowed(&[]),
            Output::Borrowed(&mut []),
            None::<NoOp>,
            what,
        )?;
        let cell = RefCell::new(CollTask::<u8, NoOp>::new(main, Some(check), None)?);
        self.engine().run_task(&cell, self.timeout, what)
    }

    /// Where a call among the participants `eps` sends: the collective
    /// context and the call's tag, drawn now.
    fn route(&self, eps: Arc<[u32]>, with_host: bool) -> Route {
        Route {
            eps,
            ctx: self.coll_ctx(),
            tag: self.next_tag(with_host),
            group: self.group().clone(),
            engine: self.inner.engine.clone(),
        }
    }

    /// Start `call` and run it to completion (blocking calls).
    pub(crate) fn run<T: Element, O: Operator<T>>(&self, call: Call<'_, T, O>) -> Result<()> {
        self.run_tagged(call).map(|_| ())
    }

    /// [`Comm::run`], returning the tag of the call's main schedule (for a
    /// message that follows it with the same tag).
    ///
    /// Without a trace being recorded, a call runs straight on this
    /// thread's blocking receives ([`Exec::run_direct`]): the task and
    /// wait-loop machinery would cost more than a small call's messages. In
    /// check mode a call of at most [`DIRECT_CHECKED`] bytes does so too:
    /// its first round is posted, the signature exchange runs while its
    /// messages come in, and the rest of the call runs once the signatures
    /// agree. A larger checked call runs as a task, its exchange beside the
    /// whole call: with its first round's large messages lent while the
    /// exchange blocked, 4 processes on 2 cores ran an allreduce of 2 MiB
    /// 2-3x slower, and one such job made no progress for 20 minutes. The
    /// messages and their tags are those of a task, so ranks that take
    /// different paths still meet.
    pub(crate) fn run_tagged<T: Element, O: Operator<T>>(
        &self,
        call: Call<'_, T, O>,
    ) -> Result<u32> {
        let what = call.what;
        let mut check_mode = self.check_mode();
        if check_mode {
            if let Some(b) = self.board_for_parts(&call.parts) {
                // The signatures meet on the board, where nodes whose call
                // runs there check theirs too (`board.rs`). The call draws
                // the check stage's tag and its own, as everywhere in check
                // mode, also when the check fails, so that the next call's
                // tags agree.
                let _ = self.next_tag(false);
                let sig = self.signature(&call);
                if let Err(e) = recorder::in_wait(|| self.board_check(b, &sig, what)) {
                    let _ = self.next_tag(false);
                    return Err(e);
                }
                check_mode = false;
            }
        }
        let bytes = std::mem::size_of::<T>() * call.input.len().max(call.output.len());
        // In virtual time the direct road's overlap of the check with the
        // first round differs from a task's, so a checked call on the
        // simulator always runs as a task: as it must when traced, and a
        // trace must not change the time it observes.
        let simulated = matches!(self.engine().t, AnyTransport::Sim(_));
        if (!check_mode || (bytes <= DIRECT_CHECKED && !simulated))
            && !recorder::active()
            && self.engine().blocking_free()
        {
            let sig = check_mode.then(|| self.signature(&call));
            let Call {
                parts,
                input,
                output,
                op,
                sched,
                finish,
                ..
            } = call;
            // The check stage's tag comes first, as for a task.
            let check = sig.map(|sig| (sig, self.route(parts.eps.clone(), parts.with_host)));
            let route = self.route(parts.eps, parts.with_host);
            let tag = route.tag;
            let mut ex = Exec::new(sched, route, input, output, op, what)?;
            if let Some((sig, route)) = check {
                ex.post_first(self.engine())?;
                self.check_direct(&sig, route, parts.me, parts.with_host)?;
            }
            ex.run_direct(self.engine(), self.timeout)?;
            if let Some(f) = finish {
                f.apply(ex.output());
            }
            return Ok(tag);
        }
        // Built straight into the cell the wait loop borrows (the task is
        // a few hundred bytes; every move is a copy).
        let cell = RefCell::new(self.start_checked(call, check_mode)?);
        let tag = cell.borrow().tag();
        self.engine().run_task(&cell, self.timeout, what)?;
        Ok(tag)
    }
}
