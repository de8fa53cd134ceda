//! Small blocking collectives through the shared-memory board
//! (`transport/board.rs`) instead of messages: barrier, bcast, reduce,
//! allreduce, allgather and all-to-all among the nodes of the world
//! communicator, on the transports whose ranks share memory (threads,
//! shm).
//!
//! A call runs in one of three flows:
//!
//! * **Lends** (allgather, all-to-all, bcast and reduce among at most
//!   [`EXCHANGE_NODES`] nodes whose pieces — a block, a broadcast's
//!   buffer, a reduce's input — are at least [`lend::LEND_MIN`] bytes, on
//!   shared memory where the segment allows `process_vm_readv`): every
//!   node publishes where its buffer is (and its signature); the nodes
//!   that need a piece copy it straight from the lender's memory, one
//!   copy; a lender returns once its readers have consumed the call
//!   (`lend.rs`). `Auto` leaves a reduce's input, and a broadcast's
//!   buffer between two nodes, to messages below 128 KiB: a piece that
//!   fits a ring streams through it faster ([`lend::streams_faster`]).
//! * **One exchange** (barrier, allreduce, allgather, all-to-all and
//!   bcast, and in check mode reduce too, among at most [`EXCHANGE_NODES`]
//!   nodes; what each node gives at most [`BOARD_BYTES`]): every node
//!   publishes its part (and in check mode its signature) in its data
//!   buffer and reads what it needs from every other node's. A barrier
//!   reads nothing but the arrivals; an allgather copies each block
//!   straight into place; an all-to-all takes block `me` of each row; an
//!   allreduce reads every input and folds them in rank order on every
//!   node, a reduce on its root; a broadcast's other nodes read the
//!   root's buffer.
//! * **A fan-in and/or a fan-out** of board buffers (everything else; at
//!   most [`FAN_BYTES`] through one buffer, counting all of an
//!   allgather's blocks and the whole matrix of an all-to-all; a reduce
//!   among at most [`EXCHANGE_NODES`] nodes, whose fan-in hands nothing
//!   out, up to [`BOARD_BYTES`] a node):
//!
//! | call | check mode off | check mode on |
//! |---|---|---|
//! | barrier | one exchange; above 8 nodes, fan-in to node 0, fan-out | same, with signatures |
//! | allreduce | one exchange; above 8 nodes, fan-in of the inputs to node 0, which folds them in rank order; fan-out of the result | same, with signatures |
//! | reduce | fan-in of the inputs to the root, which folds them | one exchange, the root folding; above 8 nodes, as allreduce, the root keeping the result |
//! | bcast | one exchange, the others reading the root's buffer; above 8 nodes, fan-out from the root | same, with signatures; above 8 nodes, fan-in to node 0 (the root's data with its signature), fan-out |
//! | allgather | one exchange; above 8 nodes, fan-in of the blocks to node 0, fan-out of them all | same, with signatures |
//! | all-to-all | one exchange; above 8 nodes, fan-in of the rows to node 0, fan-out of the whole matrix (each takes its column) | same, with signatures |
//!
//! In check mode the signatures travel in the call's own buffers: in an
//! exchange every node compares them all (`task::verdict`, the same
//! verdict everywhere) before it reads any data (an allgather or
//! all-to-all, which reads every other node's buffer anyway, as it reads
//! each block: on a mismatch the output holds what was copied); a call
//! of a fan-in starts with the signatures to node 0, which compares them
//! and fans out the verdict with the result. The check costs no extra
//! round. In check mode every call of a job of at most 8 nodes is an
//! exchange, so nodes that called different collectives still meet in
//! one. A call that runs on messages (too large, another collective)
//! still has its signatures checked on the board first
//! ([`Comm::board_check`]), so that two nodes that disagree about a call
//! — one on the board, one on messages — both get the mismatch. That
//! includes the options that make the choice (reproducible mode, the
//! topology setting, a forced algorithm: the signature states them): a
//! node never reads another's buffer that holds a signature but no data.
//!
//! Reductions fold in rank order (`((x0 ⊕ x1) ⊕ x2) …`), so they are
//! right for operators that do not commute, and match a serial fold.
//!
//! Selection takes the board for these calls (with the options' algorithm
//! `Auto`, or [`Algorithm::Board`](super::select::Algorithm::Board) to
//! force it) where it can serve: the world communicator, not in
//! reproducible mode, no topology setting. A
//! trace shows the call as one block. Waits are the engine's wait loop
//! (spin, yield, block; peer failure, abort, timeout and deadlock
//! detection as for messages): a node about to block raises its flag on
//! the board, and whoever publishes wakes it with a frame.
//!
//! Two roads lead there, as to the transport library's collectives
//! (`collective/native.rs`). The ordinary one builds the call's
//! description ([`Call`](super::call::Call)) and asks
//! [`Comm::try_board`]. The six front ends first try
//! [`Comm::board_direct`]: the same question
//! ([`Comm::board_serves`], whose last answer the communicator remembers),
//! the same signature and the same flow, from the bare arguments, without
//! a `Call` (about a quarter of a small call's instructions); it declines
//! whatever is not plainly well formed, so that the ordinary road reports
//! every error, and nodes on either road meet on the board.
//!
//! Files: `mod.rs` (the flows' dispatch, the fan-in and fan-out, waits),
//! `road.rs` (selection and the two roads), `exchange.rs` (the exchange
//! and the signature check of every node), `lend.rs` (lends).
//!
//! Not done yet: lends on threads; sub-communicators (each would need
//! its own board, agreed among its members) and non-blocking calls run on
//! messages; a tree of collectors for jobs of many nodes; allreduce by
//! lends.

use super::ops::{Element, Operator};
use super::select::Collective;
use super::task::{verdict, Signature, SIG_BYTES};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::transport::board::{Board, Buf, BOARD_BYTES, SIG_WORDS};
use crate::wire::Kind;

mod exchange;
mod lend;
mod road;

use exchange::exchanges;
use lend::{lends, streams_faster};

/// The collectives the board serves.
const SERVED: [Collective; 6] = [
    Collective::Barrier,
    Collective::Bcast,
    Collective::Reduce,
    Collective::Allreduce,
    Collective::Allgather,
    Collective::Alltoall,
];

/// Most nodes of a call run as one exchange: every node reads every other
/// node's buffer, so the reads grow as the square of the nodes.
const EXCHANGE_NODES: usize = 8;

/// Most bytes a call of a fan-in and fan-out moves through one buffer
/// (what node 0 hands out).
const FAN_BYTES: usize = 1024;

/// The board bytes a call of `kind` among `p` nodes needs, each node
/// giving `bytes` (a broadcast's or reduction's vector, an allgather's
/// block, an all-to-all's row of `p` blocks), and the most it may have:
/// in an exchange each node's own part; in a fan-out, all of an
/// allgather's blocks or the whole matrix of an all-to-all, which node 0
/// hands out.
fn board_need(kind: Collective, p: usize, bytes: usize, checked: bool) -> (usize, usize) {
    if exchanges(kind, p, checked) {
        return (bytes, BOARD_BYTES);
    }
    if kind == Collective::Reduce && p <= EXCHANGE_NODES {
        // A reduce's fan-in hands nothing out: each input lies in its own
        // node's buffer, which holds as much as an exchange's part (the
        // root reads at most seven of them in turn).
        return (bytes, BOARD_BYTES);
    }
    let need = match kind {
        Collective::Allgather | Collective::Alltoall => bytes.saturating_mul(p),
        _ => bytes,
    };
    (need, FAN_BYTES)
}

/// A verdict word: 0, or 1 + the length of the mismatch text that
/// follows in the payload.
const AGREED: u64 = 0;

/// Words of the stack buffers of a call of at most 128 bytes.
const SMALL_WORDS: usize = 16;

/// Signature words of `sig`.
fn sig_words(sig: &Signature) -> [u64; SIG_WORDS] {
    let b = sig.encode();
    let mut w = [0u64; SIG_WORDS];
    for (i, c) in b.chunks(8).enumerate() {
        let mut x = [0u8; 8];
        x[..c.len()].copy_from_slice(c);
        w[i] = u64::from_le_bytes(x);
    }
    w
}

/// Put node `j`'s signature, as its buffer's words hold it, in its place
/// in `sigs`.
fn sig_into(sigs: &mut [u8], j: usize, words: [u64; SIG_WORDS]) {
    let mut s = [0u8; 8 * SIG_WORDS];
    for (c, w) in s.chunks_mut(8).zip(words) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    sigs[j * SIG_BYTES..(j + 1) * SIG_BYTES].copy_from_slice(&s[..SIG_BYTES]);
}

/// `acc[i] = acc[i] ⊕ x[i]`.
fn fold<T: Element, O: Operator<T>>(acc: &mut [T], x: &[T], op: &O) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a = op.combine(*a, *b);
    }
}

/// `acc[i] = x[i] ⊕ acc[i]`: the accumulator holds the right operand.
fn fold_right<T: Element, O: Operator<T>>(x: &[T], acc: &mut [T], op: &O) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a = op.combine(*b, *a);
    }
}

/// Every node's input folded in rank order into `acc` (`x0 ⊕ x1 ⊕ …`, a
/// serial fold's result): this node's is `mine`, another node `j`'s is
/// fetched by `get(j, into)`. The first other input is fetched straight
/// into `acc` (and, when this node is 0, folded from the right), so that
/// no input is copied only to be folded; later ones go through `scratch`
/// (as long as `acc`; unused with two nodes).
fn fold_inputs<T: Element, O: Operator<T>>(
    (me, n): (usize, usize),
    acc: &mut [T],
    mine: &[T],
    scratch: &mut [T],
    op: &O,
    mut get: impl FnMut(usize, &mut [T]) -> Result<()>,
) -> Result<()> {
    for j in 0..n {
        if j == me {
            if j > 0 {
                fold(acc, mine, op);
            }
        } else if j == 0 || (j == 1 && me == 0) {
            get(j, acc)?;
            if j == 1 {
                fold_right(mine, acc, op);
            }
        } else {
            get(j, scratch)?;
            fold(acc, scratch, op);
        }
    }
    if n == 1 {
        acc.copy_from_slice(mine);
    }
    Ok(())
}

/// The scratch [`fold_inputs`] needs for inputs of `k` (elements or bytes)
/// of `n` nodes: none with two (the other input goes into the accumulator).
fn scratch_len(n: usize, k: usize) -> usize {
    if n > 2 {
        k
    } else {
        0
    }
}

/// The operator of a call that folds (the error names the call when there
/// is none: never expected).
fn operator<'o, O>(op: Option<&'o O>, name: &str) -> Result<&'o O> {
    op.ok_or_else(|| {
        Error::Protocol(format!(
            "{name} on the shared-memory board without an operator"
        ))
    })
}

/// Whether node `me` takes the result of a `kind` rooted at `root` off
/// the board.
fn wants_result(kind: Collective, root: Option<usize>, me: usize) -> bool {
    match kind {
        Collective::Allreduce | Collective::Allgather | Collective::Alltoall => true,
        Collective::Reduce => root == Some(me),
        Collective::Bcast => root != Some(me),
        _ => false,
    }
}

/// Node `me`'s part of what node 0 handed out, into `output`: an
/// all-to-all's column (block `me` of every row), else the whole.
fn take_result<T: Element>(
    kind: Collective,
    (me, n): (usize, usize),
    result: &mut [u64],
    output: &mut [T],
) {
    let out: &mut [u8] = bytemuck::cast_slice_mut(output);
    let all = bytes_of(result);
    if kind == Collective::Alltoall {
        let blk = out.len() / n.max(1);
        if blk == 0 {
            return;
        }
        for (j, o) in out.chunks_exact_mut(blk).enumerate().take(n) {
            let at = j * n * blk + me * blk;
            o.copy_from_slice(&all[at..at + blk]);
        }
    } else {
        let k = out.len();
        out.copy_from_slice(&all[..k]);
    }
}

/// An allgather's or an all-to-all's output (`n` blocks) from every
/// node's part: this node's block from its own `bytes`, every other's by
/// `read(j, from, block)`, where `from` is the byte of node `j`'s part at
/// which this node's block starts (an allgather's part is one block; an
/// all-to-all's row has this node's block at `me`).
fn gather_blocks(
    kind: Collective,
    (me, n): (usize, usize),
    bytes: &[u8],
    out: &mut [u8],
    mut read: impl FnMut(usize, usize, &mut [u8]) -> Result<()>,
) -> Result<()> {
    let blk = out.len() / n.max(1);
    let from = if kind == Collective::Allgather {
        0
    } else {
        me * blk
    };
    for j in 0..n {
        let at = j * blk..(j + 1) * blk;
        if j == me {
            out[at].copy_from_slice(&bytes[from..from + blk]);
        } else {
            read(j, from, &mut out[at])?;
        }
    }
    Ok(())
}

/// The bytes of a buffer of words.
fn bytes_of(w: &mut [u64]) -> &mut [u8] {
    bytemuck::cast_slice_mut(w)
}

/// The first `k` elements of type `T` in a buffer of words (`T` is
/// aligned to at most 8 and `k` of them fit: `board_serves` said so).
fn elems_mut<T: Element>(w: &mut [u64], k: usize) -> &mut [T] {
    let b: &mut [u8] = bytemuck::cast_slice_mut(w);
    bytemuck::cast_slice_mut(&mut b[..k * std::mem::size_of::<T>()])
}

/// The error for a board buffer of node `j` overwritten while it was read
/// for call `seq` (a broken protocol, never expected).
fn torn(j: usize, seq: u64) -> Error {
    Error::Protocol(format!(
        "rank {j}'s shared-memory board buffer for call {seq} was overwritten while it was read"
    ))
}

/// A call's part as the board sees it.
struct Part<'x, T> {
    kind: Collective,
    /// The call's name in messages.
    what: &'static str,
    root: Option<usize>,
    /// What this node contributes (reductions: its input; a broadcast's
    /// root: its buffer).
    input: &'x [T],
    /// Where the result goes (empty where none is wanted).
    output: &'x mut [T],
}

impl Comm {
    /// The check-mode signature exchange of a call that runs on messages,
    /// on the board: a fan-in of the signatures to node 0 and a fan-out of
    /// its verdict.
    pub(crate) fn board_check(
        &self,
        b: Board<'_>,
        sig: &Signature,
        what: &'static str,
    ) -> Result<()> {
        let part = Part::<u8> {
            kind: Collective::Barrier,
            what,
            root: None,
            input: &[],
            output: &mut [],
        };
        self.board_call(b, part, None::<&super::task::NoOp>, Some(sig))
    }

    /// One call on the board (see the module docs for the flows).
    fn board_call<T: Element, O: Operator<T>>(
        &self,
        b: Board<'_>,
        part: Part<'_, T>,
        op: Option<&O>,
        sig: Option<&Signature>,
    ) -> Result<()> {
        let seq = b.begin();
        let me = b.me();
        let n = self.size();
        let kind = part.kind;
        let given = if matches!(kind, Collective::Allgather | Collective::Alltoall) {
            std::mem::size_of_val(part.input)
        } else {
            std::mem::size_of_val(part.input).max(std::mem::size_of_val(part.output))
        };
        if b.can_lend() && lends(kind, n, given) {
            return self.board_lend(b, seq, part, op, sig);
        }
        if exchanges(kind, n, sig.is_some()) {
            return self.board_exchange(b, seq, part, op, sig);
        }
        let name = part.what;
        let reduces = matches!(kind, Collective::Reduce | Collective::Allreduce);
        let gathers = matches!(kind, Collective::Allgather | Collective::Alltoall);
        let bytes: &[u8] = bytemuck::cast_slice(part.input);
        // What one node gives (a broadcast's root: its buffer), and what
        // node 0 hands out (all of an allgather's blocks, an all-to-all's
        // whole matrix).
        let call_bytes = if kind == Collective::Bcast {
            std::mem::size_of_val(part.output).max(bytes.len())
        } else {
            bytes.len()
        };
        let result_bytes = if gathers { call_bytes * n } else { call_bytes };
        // Whose data goes in: every node's for a reduction or a gather, the
        // root's for a broadcast.
        let gives = |j: usize| reduces || gathers || part.root == Some(j);
        // Who collects, and whether a result comes back out.
        let (collector, fan_in, fan_out) = match (kind, sig.is_some()) {
            (_, true)
            | (
                Collective::Barrier
                | Collective::Allreduce
                | Collective::Allgather
                | Collective::Alltoall,
                false,
            ) => (0, true, true),
            (Collective::Reduce, false) => (part.root.unwrap_or(0), true, false),
            _ => (part.root.unwrap_or(0), false, true),
        };
        let words = sig.map(sig_words).unwrap_or_default();
        let what = |j: usize| {
            move || format!("rank {j} on the shared-memory board ({name}, board call {seq})")
        };
        if fan_in && me != collector {
            self.board_data_reuse(b, name, seq)?;
            let give = if gives(me) { bytes } else { &[] };
            b.publish(Buf::Data, seq, 0, &words, give, collector);
            self.board_wake(b);
        }
        // What a fan-out hands out, and where the collector reads a node's
        // part (a fold: from a third node on), on the stack: each as large
        // as the call needs, zeroed only if used (zeroing costs instructions).
        let result_need = if fan_out { result_bytes } else { 0 };
        let scratch_need = match (fan_in && me == collector, reduces) {
            (false, _) => 0,
            (true, true) => scratch_len(n, call_bytes),
            (true, false) => call_bytes,
        };
        let (mut result_small, mut result_large);
        let result: &mut [u64] = if result_need == 0 {
            &mut []
        } else if result_need <= 8 * SMALL_WORDS {
            result_small = [0u64; SMALL_WORDS];
            &mut result_small
        } else {
            result_large = [0u64; FAN_BYTES / 8];
            &mut result_large
        };
        let (mut scratch_small, mut scratch_large, mut scratch_whole);
        let scratch: &mut [u64] = if scratch_need == 0 {
            &mut []
        } else if scratch_need <= 8 * SMALL_WORDS {
            scratch_small = [0u64; SMALL_WORDS];
            &mut scratch_small
        } else if scratch_need <= FAN_BYTES {
            scratch_large = [0u64; FAN_BYTES / 8];
            &mut scratch_large
        } else {
            scratch_whole = [0u64; BOARD_BYTES / 8];
            &mut scratch_whole
        };
        let mut mismatch: Option<String> = None;
        if fan_in && me == collector {
            // Everyone's signature, in check mode (on the stack for up to
            // 16 nodes).
            let (mut sigs_small, mut sigs_large);
            let sigs: &mut [u8] = match sig {
                None => &mut [],
                Some(_) if n <= 16 => {
                    sigs_small = [0u8; SIG_BYTES * 16];
                    &mut sigs_small[..n * SIG_BYTES]
                }
                Some(_) => {
                    sigs_large = vec![0u8; n * SIG_BYTES];
                    &mut sigs_large
                }
            };
            if let Some(s) = sig {
                sigs[me * SIG_BYTES..(me + 1) * SIG_BYTES].copy_from_slice(&s.encode());
            }
            // Folded into the result when it goes out, else (a reduce
            // without check mode) into the root's output.
            let into_result = fan_out;
            let mut arrived = |j: usize, into: &mut [u8]| -> Result<()> {
                self.board_wait(b, name, j, &what(j), || b.posted(j, Buf::Data, seq))?;
                let h = b
                    .read(j, Buf::Data, seq, into)
                    .ok_or_else(|| torn(j, seq))?;
                if sig.is_some() {
                    sig_into(sigs, j, h.sig);
                }
                Ok(())
            };
            if reduces {
                let k = part.input.len();
                let acc: &mut [T] = if into_result {
                    elems_mut(result, k)
                } else {
                    &mut *part.output
                };
                let scratch = elems_mut(scratch, scratch_len(n, k));
                fold_inputs(
                    (me, n),
                    acc,
                    part.input,
                    scratch,
                    operator(op, name)?,
                    |j, into| arrived(j, bytemuck::cast_slice_mut(into)),
                )?;
            }
            for j in 0..n {
                if j != me && !reduces {
                    let k = if gives(j) { call_bytes } else { 0 };
                    arrived(j, &mut bytes_of(scratch)[..k])?;
                }
                if gathers {
                    // Node 0 lays the rows out one after the other.
                    let at = j * call_bytes..(j + 1) * call_bytes;
                    if j == me {
                        bytes_of(result)[at].copy_from_slice(bytes);
                    } else {
                        bytes_of(result)[at].copy_from_slice(&bytes_of(scratch)[..call_bytes]);
                    }
                } else if kind == Collective::Bcast && part.root == Some(j) && j != me {
                    // Checked broadcast: node 0 passes the root's data on.
                    bytes_of(result)[..call_bytes]
                        .copy_from_slice(&bytes_of(scratch)[..call_bytes]);
                }
            }
            b.set_consumed(seq);
            if sig.is_some() {
                if let Err(Error::CollectiveMismatch(t)) = verdict(sigs, false) {
                    mismatch = Some(t);
                }
            }
            if !fan_out {
                // Reduce: the others may write their buffers again.
                self.board_wake(b);
            }
        }
        if fan_out && me == collector {
            if !fan_in {
                if let Some(s) = b.result_reuse(seq) {
                    for j in (0..n).filter(|&j| j != me) {
                        self.board_wait(b, name, j, &what(j), || b.seen(j) >= s)?;
                    }
                }
            }
            if kind == Collective::Bcast && gives(me) {
                bytes_of(result)[..call_bytes].copy_from_slice(bytes);
            }
            let (meta, payload): (u64, &[u8]) = match &mismatch {
                Some(t) => {
                    let t = &t.as_bytes()[..t.len().min(BOARD_BYTES)];
                    (1 + t.len() as u64, t)
                }
                None if kind == Collective::Barrier => (AGREED, &[]),
                None => (AGREED, &bytes_of(result)[..result_bytes]),
            };
            b.publish(Buf::Result, seq, meta, &[0; SIG_WORDS], payload, me);
            self.board_wake(b);
            if fan_in {
                // Everyone arrived here, so everyone is done with what came
                // before; this result is still being read.
                b.settled(seq - 1);
            }
            if let Some(t) = mismatch {
                return Err(Error::CollectiveMismatch(t));
            }
            if wants_result(kind, part.root, me) {
                take_result(kind, (me, n), result, part.output);
            }
            return Ok(());
        }
        if fan_out {
            self.board_wait(b, name, collector, &what(collector), || {
                b.posted(collector, Buf::Result, seq)
            })?;
            let head = b
                .head(collector, Buf::Result, seq)
                .ok_or_else(|| torn(collector, seq))?;
            let mut text = Vec::new();
            let out: &mut [u8] = if head.meta != AGREED {
                text.resize(((head.meta - 1) as usize).min(BOARD_BYTES), 0);
                &mut text
            } else if wants_result(kind, part.root, me) {
                &mut bytes_of(result)[..result_bytes]
            } else {
                &mut []
            };
            b.read(collector, Buf::Result, seq, out)
                .ok_or_else(|| torn(collector, seq))?;
            b.set_seen(seq);
            if fan_in {
                // Node 0 had everyone's part of this call: what read this
                // node's buffers before is done with them, and this call's
                // data was consumed.
                b.settled(seq);
            }
            self.board_wake(b);
            if head.meta != AGREED {
                return Err(Error::CollectiveMismatch(
                    String::from_utf8_lossy(&text).into_owned(),
                ));
            }
            if wants_result(kind, part.root, me) {
                take_result(kind, (me, n), result, part.output);
            }
        }
        Ok(())
    }

    /// Wait until `ready`, for node `peer` (whose failure ends the wait).
    fn board_wait(
        &self,
        b: Board<'_>,
        name: &str,
        peer: usize,
        what: &dyn Fn() -> String,
        ready: impl Fn() -> bool,
    ) -> Result<()> {
        let e = self.engine();
        // A short spin on the flag alone, when this rank has a core to
        // itself (else the peer it waits for may need this one).
        for _ in 0..e.spins().min(64) {
            if ready() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        if e.spins() < 64 {
            // Ranks outnumber cores: give the core away at once, a few
            // times, before the wait loop's own spinning.
            for _ in 0..8 {
                std::thread::yield_now();
                if ready() {
                    return Ok(());
                }
            }
        } else if ready() {
            return Ok(());
        }
        let r = e.wait_loop(
            self.group(),
            Some(peer as u32),
            self.timeout,
            name,
            what,
            |e| {
                if e.about_to_block() {
                    b.set_sleeping(true);
                }
                ready().then_some(Ok(()))
            },
        );
        b.set_sleeping(false);
        r
    }

    /// Wake the nodes asleep on the board (they look again).
    fn board_wake(&self, b: Board<'_>) {
        for j in b.sleepers() {
            self.engine().control(j as u32, Kind::Wake, 0, Vec::new());
        }
    }
}
