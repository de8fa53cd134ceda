//! The two roads to the board (see the parent module's docs): the
//! question whether a call goes there ([`Comm::board_serves`], whose last
//! answer the communicator remembers), the ordinary road of a call's
//! description ([`Comm::try_board`]) and the plain road of bare arguments
//! ([`Comm::board_direct`]), which meet in [`Comm::board_block`].

use super::{board_need, lends, streams_faster, Part, SERVED};
use crate::collective::call::{Call, Check, Parts};
use crate::collective::ops::{Element, Operator};
use crate::collective::select::{Algorithm, CollOpts, Collective, Topology};
use crate::collective::task::Signature;
use crate::comm::{BoardAsk, Comm};
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::transport::board::{Board, BOARD_RANKS};
use crate::transport::Transport;

/// Where `a`'s name lies and how long it is ([`BoardAsk::algorithm`]).
fn name_at(a: Algorithm) -> (usize, usize) {
    let name = a.name();
    (name.as_ptr() as usize, name.len())
}

/// The count a call's signature states (an all-to-all's: a block's), if
/// its arguments are what the call's description would accept from node
/// `me` of `p` (`input`, `output`: lengths; a broadcast's buffer is its
/// output, a barrier has neither); `None` otherwise, or for a collective
/// the board does not serve.
fn plain_count(
    kind: Collective,
    root: Option<usize>,
    (me, p): (usize, usize),
    (input, output): (usize, usize),
) -> Option<usize> {
    if root.is_some_and(|r| r >= p) || p == 0 {
        return None;
    }
    let (ok, count) = match kind {
        Collective::Barrier => (input == 0 && output == 0, 0),
        Collective::Bcast => (input == 0 && root.is_some(), output),
        Collective::Reduce => (
            root.is_some() && (root != Some(me) || output == input),
            input,
        ),
        Collective::Allreduce => (output == input, input),
        Collective::Allgather => (input.checked_mul(p) == Some(output), input),
        Collective::Alltoall => (input.is_multiple_of(p) && output == input, input / p),
        _ => (false, 0),
    };
    ok.then_some(count)
}

/// The bytes a call's `input` and `output` (their lengths) put on the
/// board (an allgather's block, an all-to-all's row, else the longer of
/// the two) and their elements' alignment (unbounded for elements
/// without size, which do not fit the board's accounting either).
fn board_shape<T>(kind: Collective, input: usize, output: usize) -> (usize, usize) {
    let bytes = std::mem::size_of::<T>()
        * if matches!(kind, Collective::Allgather | Collective::Alltoall) {
            input
        } else {
            input.max(output)
        };
    let align = if std::mem::size_of::<T>() == 0 {
        usize::MAX
    } else {
        std::mem::align_of::<T>()
    };
    (bytes, align)
}

impl Comm {
    /// The board, when calls among `parts` may use it: the world
    /// communicator's node collectives on a transport that has one.
    pub(crate) fn board_for_parts(&self, parts: &Parts) -> Option<Board<'_>> {
        self.board_for(parts.with_host, parts.eps.len())
    }

    /// [`Comm::board_for_parts`] of participants said by whether the host
    /// is one and how many there are.
    fn board_for(&self, with_host: bool, parts: usize) -> Option<Board<'_>> {
        if self.inner.ctx != 0 || with_host || parts != self.size() {
            return None;
        }
        let b = self.engine().t.board()?;
        (self.size() <= BOARD_RANKS).then_some(b)
    }

    /// Whether a blocking `kind` of `bytes` bytes goes to the board with
    /// `opts` (the reason it cannot when forced, `Ok(None)` when messages
    /// serve).
    fn board_serves(
        &self,
        kind: Collective,
        (bytes, align): (usize, usize),
        (with_host, parts): (bool, usize),
        opts: &CollOpts,
    ) -> Result<Option<Board<'_>>> {
        let ask = BoardAsk {
            kind,
            bytes,
            align,
            algorithm: name_at(opts.algorithm),
            reproducible: opts.reproducible,
            topology: self.topology(),
            check: self.check_mode(),
            with_host,
            parts,
        };
        let memo = &self.inner.coll.board_memo;
        if let Some((last, served)) = memo.get() {
            if last == ask {
                // The same question as last time: the same answer (the
                // board of this communicator does not come and go).
                return Ok(if served {
                    self.engine().t.board()
                } else {
                    None
                });
            }
        }
        let r = self.board_decides(ask, opts);
        if let Ok(b) = &r {
            memo.set(Some((ask, b.is_some())));
        }
        r
    }

    /// [`Comm::board_serves`] worked out.
    fn board_decides(
        &self,
        BoardAsk {
            kind,
            bytes,
            align,
            with_host,
            parts,
            ..
        }: BoardAsk,
        opts: &CollOpts,
    ) -> Result<Option<Board<'_>>> {
        let forced = opts.algorithm == Algorithm::Board;
        if !forced && opts.algorithm != Algorithm::Auto {
            return Ok(None);
        }
        let (need, most) = board_need(kind, self.size(), bytes, self.check_mode());
        let board = self.board_for(with_host, parts);
        let lent = board.is_some_and(|b| b.can_lend()) && lends(kind, self.size(), bytes);
        if lent && !forced && need > most && streams_faster(kind, self.size(), bytes) {
            return Ok(None);
        }
        let why = if !SERVED.contains(&kind) {
            format!("{} has no board form", kind.name())
        } else if align > 8 {
            format!("elements aligned to {align} bytes do not fit the board's words")
        } else if need > most && !lent {
            format!("{need} bytes do not fit the board's {most}")
        } else if opts.reproducible {
            "reproducible mode runs the fixed schedule".into()
        } else if self.topology() != Topology::Auto {
            format!(
                "the topology setting {:?} asks for our schedules",
                self.topology()
            )
        } else {
            match board {
                Some(b) => return Ok(Some(b)),
                None => "only the world communicator's node calls on threads and shm (of at most 64 nodes) have a board".into(),
            }
        };
        if forced {
            Err(Error::InvalidArgument {
                op: kind.name(),
                what: format!("algorithm board: {why}"),
            })
        } else {
            Ok(None)
        }
    }

    /// [`Algorithm::Board`] if a blocking call of `c` would go to the
    /// board (for [`Comm::chosen_algorithm`]).
    pub(crate) fn chosen_board(
        &self,
        c: Collective,
        bytes: usize,
        opts: &CollOpts,
    ) -> Option<Algorithm> {
        let parts = self.node_parts(c.name()).ok()?;
        // `bytes` counts one block of an all-to-all; the board, a row.
        let bytes = if c == Collective::Alltoall {
            bytes.saturating_mul(parts.eps.len())
        } else {
            bytes
        };
        let who = (parts.with_host, parts.eps.len());
        matches!(self.board_serves(c, (bytes, 8), who, opts), Ok(Some(_)))
            .then_some(Algorithm::Board)
    }

    /// Run `call` on the board if it serves it (`Ok(true)`; the call's
    /// `finish` is then taken and applied), else leave it be (`Ok(false)`).
    /// The call is borrowed, not moved: it is a few hundred bytes.
    pub(crate) fn try_board<T: Element, O: Operator<T>, S>(
        &self,
        call: &mut Call<'_, T, O, S>,
        opts: &CollOpts,
    ) -> Result<bool> {
        let (kind, root) = (call.kind, call.root);
        let who = (call.parts.with_host, call.parts.eps.len());
        let (n_in, n_out) = (call.input.len(), call.output.len());
        let shape = board_shape::<T>(kind, n_in, n_out);
        let serves = self.board_serves(kind, shape, who, opts);
        let Some(b) = serves.map_err(|e| self.announced(kind, call.what, e))? else {
            return Ok(false);
        };
        let sig = self.check_mode().then(|| self.signature(call));
        let op = call.op.as_ref();
        let io = (call.input.as_slice(), call.output.as_mut_slice());
        self.board_block(b, (kind, call.what, root), io, op, sig.as_ref())?;
        if let Some(f) = call.finish.take() {
            f.apply(call.output.as_mut_slice());
        }
        Ok(true)
    }

    /// The board's road for a blocking call among the world's nodes with
    /// plain arguments, taken by the six front ends before they build a
    /// [`Call`]: the same question ([`Comm::board_serves`]), signature and
    /// flow as [`Comm::try_board`] asks, makes and runs for the call (so
    /// the two roads meet on the board), without the call's description
    /// (about 400 instructions a call of 8 bytes between two processes,
    /// of some 1 500). `input` and `output` are the front end's (a
    /// broadcast's buffer is its `output`; a barrier's both are empty).
    /// It declines (`None`) whatever is not plainly well formed, and
    /// whatever the board does not serve, so that the ordinary road
    /// reports every error.
    #[inline]
    pub(crate) fn board_direct<T: Element, O: Operator<T>>(
        &self,
        kind: Collective,
        root: Option<usize>,
        (input, output): (&[T], &mut [T]),
        op: Option<&O>,
        opts: &CollOpts,
    ) -> Option<Result<()>> {
        let Rank::Node(me) = self.me() else {
            return None;
        };
        let p = self.size();
        if self.inner.ctx != 0 {
            return None;
        }
        let count = plain_count(kind, root, (me, p), (input.len(), output.len()))?;
        // A reduce's other nodes keep no result.
        let output: &mut [T] = if kind == Collective::Reduce && root != Some(me) {
            &mut []
        } else {
            output
        };
        let shape = board_shape::<T>(kind, input.len(), output.len());
        let b = self.board_serves(kind, shape, (false, p), opts).ok()??;
        let sig = self
            .check_mode()
            .then(|| self.plain_signature(kind, root, count, op, opts));
        let call = (kind, kind.name(), root);
        Some(self.board_block(b, call, (input, output), op, sig.as_ref()))
    }

    /// The signature of a plain call among the world's nodes
    /// ([`Comm::board_direct`]): what [`Comm::signature`] makes of the
    /// call's description.
    fn plain_signature<T: Element, O: Operator<T>>(
        &self,
        kind: Collective,
        root: Option<usize>,
        count: usize,
        op: Option<&O>,
        opts: &CollOpts,
    ) -> Signature {
        let check = if kind == Collective::Barrier {
            Check::barrier(opts)
        } else {
            Check::of::<T>(count, opts)
        };
        let operator = op.map_or(0, |o| o.code());
        self.node_signature(kind, root.map_or(-1, |r| r as i64), &check, operator)
    }

    /// A call (`kind`, its name, its root) on the board, as one trace
    /// block: the tags a call on messages would draw, then [`Comm::board_call`].
    fn board_block<T: Element, O: Operator<T>>(
        &self,
        b: Board<'_>,
        (kind, what, root): (Collective, &'static str, Option<usize>),
        (input, out): (&[T], &mut [T]),
        op: Option<&O>,
        sig: Option<&Signature>,
    ) -> Result<()> {
        // The tags a call on messages would draw (the check stage's, then
        // its own), so that traces number calls alike.
        if sig.is_some() {
            let _ = self.next_tag(false);
        }
        let seq_tag = self.next_tag(false) & 0x7fff_ffff;
        let (input, out): (&[T], &mut [T]) = if kind == Collective::Bcast {
            // The root's buffer is both what it gives and where the others
            // receive.
            if root == Some(b.me()) {
                (&*out, &mut [])
            } else {
                (&[], out)
            }
        } else {
            (input, out)
        };
        let part = Part {
            kind,
            what,
            root,
            input,
            output: out,
        };
        // The world's nodes are endpoints 0, 1, …: the root is its own
        // endpoint.
        let root_ep = root.map(|r| r as u32);
        crate::trace::recorder::in_block(kind.code(), root_ep, seq_tag, || {
            self.board_call(b, part, op, sig)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::ops::Sum;
    use crate::collective::task::NoOp;

    /// The board's plain road and a call's description agree: the same
    /// arguments accepted, the same signature stated (so that nodes on
    /// either road meet on the board and compare alike), under every
    /// option that reaches the signature.
    #[test]
    fn the_plain_road_states_what_a_call_states() {
        let r = crate::run(3, |comm| -> Result<()> {
            let (me, p) = (comm.rank(), comm.size());
            let forced = |a| CollOpts {
                algorithm: a,
                ..Default::default()
            };
            let all_opts = [
                CollOpts::default(),
                CollOpts {
                    reproducible: true,
                    ..Default::default()
                },
                CollOpts {
                    segment_bytes: Some(4096),
                    ..Default::default()
                },
                forced(Algorithm::Board),
                forced(Algorithm::Ring),
            ];
            for topology in [Topology::Auto, Topology::Ring(Default::default())] {
                comm.set_topology(topology);
                for opts in &all_opts {
                    let plain = |kind, root, lens, op: Option<&Sum>| {
                        let count = plain_count(kind, root, (me, p), lens);
                        count.map(|c| comm.plain_signature::<f64, _>(kind, root, c, op, opts))
                    };
                    let x = [1.0f64; 6];
                    let mut out = [0.0f64; 18];
                    let sum = Some(&Sum);
                    // Barrier.
                    let sig =
                        comm.signature(&comm.barrier_call(comm.node_parts("barrier")?, opts)?);
                    let b = plain_count(Collective::Barrier, None, (me, p), (0, 0));
                    let none = None::<&NoOp>;
                    let s = b.map(|c| {
                        comm.plain_signature::<u8, _>(Collective::Barrier, None, c, none, opts)
                    });
                    assert_eq!(s, Some(sig));
                    // Bcast from each root, a buffer of 4.
                    for r in 0..p {
                        let sig =
                            comm.signature(&comm.bcast_call(&mut out[..4], Rank::Node(r), opts)?);
                        assert_eq!(plain(Collective::Bcast, Some(r), (0, 4), None), Some(sig));
                    }
                    // Reduce to each root, 5 elements.
                    for r in 0..p {
                        let o = if r == me { 5 } else { 0 };
                        let sig = comm.signature(&comm.reduce_call(
                            &x[..5],
                            &mut out[..o],
                            Sum,
                            Rank::Node(r),
                            opts,
                        )?);
                        assert_eq!(plain(Collective::Reduce, Some(r), (5, o), sum), Some(sig));
                    }
                    // Allreduce, allgather, all-to-all.
                    let sig =
                        comm.signature(&comm.allreduce_call(&x[..3], &mut out[..3], Sum, opts)?);
                    assert_eq!(plain(Collective::Allreduce, None, (3, 3), sum), Some(sig));
                    let sig =
                        comm.signature(&comm.allgather_call(&x[..2], &mut out[..2 * p], opts)?);
                    assert_eq!(
                        plain(Collective::Allgather, None, (2, 2 * p), None),
                        Some(sig)
                    );
                    let sig = comm.signature(&comm.alltoall_call(&x[..p], &mut out[..p], opts)?);
                    assert_eq!(plain(Collective::Alltoall, None, (p, p), None), Some(sig));
                    // What a description refuses, the plain road declines.
                    let root_out = Rank::Node(p);
                    assert!(comm.bcast_call(&mut out[..4], root_out, opts).is_err());
                    assert_eq!(plain(Collective::Bcast, Some(p), (0, 4), None), None);
                    assert!(comm
                        .reduce_call(&x[..5], &mut out[..4], Sum, Rank::Node(me), opts)
                        .is_err());
                    assert_eq!(plain(Collective::Reduce, Some(me), (5, 4), sum), None);
                    assert!(comm
                        .allreduce_call(&x[..3], &mut out[..4], Sum, opts)
                        .is_err());
                    assert_eq!(plain(Collective::Allreduce, None, (3, 4), sum), None);
                    assert!(comm
                        .allgather_call(&x[..2], &mut out[..2 * p - 1], opts)
                        .is_err());
                    assert_eq!(
                        plain(Collective::Allgather, None, (2, 2 * p - 1), None),
                        None
                    );
                    assert!(comm
                        .alltoall_call(&x[..p + 1], &mut out[..p + 1], opts)
                        .is_err());
                    assert_eq!(
                        plain(Collective::Alltoall, None, (p + 1, p + 1), None),
                        None
                    );
                    assert!(comm
                        .alltoall_call(&x[..p], &mut out[..2 * p], opts)
                        .is_err());
                    assert_eq!(plain(Collective::Alltoall, None, (p, 2 * p), None), None);
                    // Collectives the board does not serve are not plain.
                    assert_eq!(plain(Collective::Scan, None, (3, 3), sum), None);
                }
            }
            Ok(())
        });
        r.unwrap();
    }

    /// The remembered answer serves only the same question: every input of
    /// the decision asked in turn, twice, gets its own answer.
    #[test]
    fn the_board_memo_answers_each_question_anew() {
        let r = crate::run(2, |comm| -> Result<()> {
            let auto = CollOpts::default();
            let repro = CollOpts {
                reproducible: true,
                ..Default::default()
            };
            let ring = CollOpts {
                algorithm: Algorithm::Ring,
                ..Default::default()
            };
            let board = Some(Algorithm::Board);
            let ask = |c, m, o| comm.chosen_board(c, m, o);
            for _ in 0..2 {
                assert_eq!(ask(Collective::Allreduce, 8, &auto), board);
                assert_eq!(ask(Collective::Allreduce, 8, &repro), None);
                assert_eq!(ask(Collective::Allreduce, 8, &auto), board);
                assert_eq!(ask(Collective::Allreduce, 8, &ring), None);
                assert_eq!(ask(Collective::Allreduce, 8, &auto), board);
                assert_eq!(ask(Collective::Allreduce, 1 << 20, &auto), None);
                assert_eq!(ask(Collective::Scan, 8, &auto), None);
                assert_eq!(ask(Collective::Allreduce, 8, &auto), board);
                comm.set_topology(Topology::Ring(Default::default()));
                assert_eq!(ask(Collective::Allreduce, 8, &auto), None);
                comm.set_topology(Topology::Auto);
                assert_eq!(ask(Collective::Allreduce, 8, &auto), board);
                let half = comm.split(Some(comm.rank() as u32), 0)?.expect("a member");
                assert_eq!(half.chosen_board(Collective::Allreduce, 8, &auto), None);
            }
            Ok(())
        });
        r.unwrap();
    }
}
