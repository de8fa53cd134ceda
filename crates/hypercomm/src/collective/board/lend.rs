//! The board's lends: pieces of [`LEND_MIN`] bytes and more are copied
//! straight out of the lender's memory (see the parent module's docs).
//!
//! Not done yet: lends on threads (a thread job's endpoints share one
//! address space, but a lender that gives up could free what a reader
//! still copies; shared memory's kernel copy makes that an error instead).

use super::{elems_mut, fold_inputs, gather_blocks, operator, sig_words, Part, EXCHANGE_NODES};
use crate::collective::ops::{Element, Operator};
use crate::collective::select::Collective;
use crate::collective::task::Signature;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::transport::board::{Board, Buf, SIG_WORDS};

/// Bytes from which a node's piece (an allgather's block, an all-to-all's
/// block, a broadcast's buffer, a reduce's input) is lent rather than sent,
/// where the board has lends: one copy by the reader, against a stream
/// through the ring's slots.
pub(super) const LEND_MIN: usize = 32 << 10;

/// Whether a `kind` among `p` nodes, each giving `bytes` (an all-to-all:
/// its row), lends its buffers (where the board has lends).
pub(super) fn lends(kind: Collective, p: usize, bytes: usize) -> bool {
    let piece = match kind {
        Collective::Alltoall => bytes / p.max(1),
        _ => bytes,
    };
    p <= EXCHANGE_NODES
        && piece >= LEND_MIN
        && matches!(
            kind,
            Collective::Allgather | Collective::Alltoall | Collective::Bcast | Collective::Reduce
        )
}

/// Bytes below which `Auto` sends a reduce's input, or a broadcast's
/// buffer between two nodes, as messages instead of lending it: a piece
/// that fits a ring (128 KiB) streams through it with both cores at work,
/// the writer copying in while the reader copies out (and folds), where a
/// lend leaves the whole copy to the reader. Measured on 2 processes at
/// 64 KiB, bcast 4.1-4.5 µs against 7.2-8.5 lent, reduce 8.3-8.9 against
/// 11.3-11.6; on 4 processes the reduce gains too, the broadcast does not.
const ONE_WAY_STREAM: usize = 128 << 10;

/// Whether `Auto` should leave a `kind` among `p` nodes, each giving
/// `bytes`, to messages although the board could lend it
/// ([`ONE_WAY_STREAM`]).
pub(super) fn streams_faster(kind: Collective, p: usize, bytes: usize) -> bool {
    bytes < ONE_WAY_STREAM
        && match kind {
            Collective::Reduce => true,
            Collective::Bcast => p <= 2,
            _ => false,
        }
}

thread_local! {
    /// Where a lending reduce folds its segment and copies each input's
    /// part of it: kept, so that a large reduce neither allocates nor
    /// zeroes its scratch on every call.
    static LENT_SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Bytes of a reduce's vector from which every node folds a segment: below
/// it the root folds everything, which costs less than the second round
/// (at 64 KiB on 2 processes, 9-10 µs against 14-17).
const SPLIT_MIN: usize = 512 << 10;

/// Bytes of a reduce's vector copied and folded at a time (inside a core's
/// 1 MiB cache). Smaller pieces cost more copies than they save
/// (BENCHMARKS.md, "Reduce: the first input straight into the
/// accumulator", has the sizes tried).
const FOLD_CHUNK: usize = 512 << 10;

/// Node `j`'s segment of `k` elements split among `n` nodes.
fn segment(j: usize, n: usize, k: usize) -> std::ops::Range<usize> {
    j * k / n..(j + 1) * k / n
}

impl Comm {
    /// A call whose pieces are lent (at most [`EXCHANGE_NODES`] nodes, a
    /// piece of at least [`LEND_MIN`] bytes, on a board with lends): every
    /// node publishes where its buffer is (and its signature), the nodes
    /// that need a piece copy it straight from the lender's memory into
    /// place (one copy), and a lender returns once every node that reads
    /// it is done with the call. An allgather and an all-to-all read every
    /// other node; a broadcast's others read the root. A reduce's root
    /// reads every input and folds them in rank order; from [`SPLIT_MIN`]
    /// bytes the vector is split into one segment per node instead: each
    /// node folds its segment of every input in rank order (the root into
    /// its output, the others into a scratch they lend in their result
    /// buffer), and the root copies the others' folded segments into place
    /// — every node combines a share, and the root reads about two
    /// vectors' worth, not `n`.
    pub(super) fn board_lend<T: Element, O: Operator<T>>(
        &self,
        b: Board<'_>,
        seq: u64,
        part: Part<'_, T>,
        op: Option<&O>,
        sig: Option<&Signature>,
    ) -> Result<()> {
        let (me, n, kind, name, root) = (b.me(), self.size(), part.kind, part.what, part.root);
        let what = |j: usize| {
            move || format!("rank {j} on the shared-memory board ({name}, board call {seq})")
        };
        self.board_data_reuse(b, name, seq)?;
        let bytes: &[u8] = bytemuck::cast_slice(part.input);
        let words = sig.map(sig_words).unwrap_or_default();
        b.lend(Buf::Data, seq, &words, bytes);
        self.board_wake(b);
        if let Some(s) = sig {
            if let Err(e) = self.board_agree(b, name, seq, s, &words) {
                // A mismatch: every node finds it before it reads anything,
                // and some may still be reading signatures, so the lend
                // stays published (nobody copies it). Anything else (a
                // timeout, a failed peer): withdraw it, so that no node that
                // agrees later copies a buffer that is gone.
                if !matches!(e, Error::CollectiveMismatch(_)) {
                    b.withdraw(Buf::Data, seq);
                }
                return Err(e);
            }
        }
        let lent = |(j, which): (usize, Buf), at: usize, out: &mut [u8]| -> Result<()> {
            self.board_wait(b, name, j, &what(j), || b.posted(j, which, seq))?;
            b.read_lent((j, which), seq, at, out)
                .map_err(Error::Protocol)
        };
        let reduces = kind == Collective::Reduce;
        // A reduce split among the nodes (else its root folds everything).
        let split = reduces && bytes.len() >= SPLIT_MIN;
        let mut scratch = LENT_SCRATCH.with(|c| c.take());
        let copied = (|| -> Result<()> {
            match kind {
                Collective::Allgather | Collective::Alltoall => {
                    let out: &mut [u8] = bytemuck::cast_slice_mut(part.output);
                    gather_blocks(kind, (me, n), bytes, out, |j, from, block| {
                        lent((j, Buf::Data), from, block)
                    })?;
                }
                Collective::Bcast => {
                    if let Some(r) = root.filter(|&r| r != me) {
                        lent((r, Buf::Data), 0, bytemuck::cast_slice_mut(part.output))?;
                    }
                }
                _ if split || root == Some(me) => {
                    // This node's segment of every input (the root's: all
                    // of it, unless split), folded in rank order: into the
                    // root's output, or (a split's other nodes) into the
                    // first part of the scratch, which they then lend.
                    let op = operator(op, name)?;
                    let k = part.input.len();
                    let seg = if split { segment(me, n, k) } else { 0..k };
                    let size = std::mem::size_of::<T>();
                    let chunk = (FOLD_CHUNK / size).max(1);
                    let w = (seg.len() * size).div_ceil(8);
                    // The first other input is copied straight into the
                    // accumulator (`fold_inputs`); with more than two
                    // nodes the later ones go, a piece at a time, through
                    // the second part of the scratch.
                    let third = if n > 2 { chunk.min(seg.len()) } else { 0 };
                    let t = (third * size).div_ceil(8);
                    if scratch.len() < w + t {
                        scratch.resize(w + t, 0);
                    }
                    let (acc_words, theirs_words) = scratch.split_at_mut(w);
                    let acc: &mut [T] = if root == Some(me) {
                        &mut part.output[seg.clone()]
                    } else {
                        elems_mut(acc_words, seg.len())
                    };
                    let mine = &part.input[seg.clone()];
                    // In pieces, so that what one copy brings in is folded
                    // while it is still in cache.
                    for c in (0..seg.len()).step_by(chunk) {
                        let c = c..(c + chunk).min(seg.len());
                        let at = (seg.start + c.start) * size;
                        let theirs = elems_mut::<T>(theirs_words, if n > 2 { c.len() } else { 0 });
                        fold_inputs(
                            (me, n),
                            &mut acc[c.clone()],
                            &mine[c],
                            theirs,
                            op,
                            |j, into| lent((j, Buf::Data), at, bytemuck::cast_slice_mut(into)),
                        )?;
                    }
                    if root != Some(me) {
                        // The root copies this folded segment (split).
                        if let Some(s) = b.result_reuse(seq) {
                            for j in (0..n).filter(|&j| j != me) {
                                self.board_wait(b, name, j, &what(j), || b.seen(j) >= s)?;
                            }
                        }
                        let folded: &[u8] = bytemuck::cast_slice(&acc_words[..]);
                        b.lend(
                            Buf::Result,
                            seq,
                            &[0; SIG_WORDS],
                            &folded[..seg.len() * size],
                        );
                        self.board_wake(b);
                    }
                }
                _ => {}
            }
            // Done reading the inputs.
            b.set_consumed(seq);
            self.board_wake(b);
            if split && root == Some(me) {
                let k = part.output.len();
                let out: &mut [u8] = bytemuck::cast_slice_mut(part.output);
                let size = std::mem::size_of::<T>();
                for j in (0..n).filter(|&j| j != me) {
                    let seg = segment(j, n, k);
                    lent(
                        (j, Buf::Result),
                        0,
                        &mut out[seg.start * size..seg.end * size],
                    )?;
                }
                b.set_seen(seq);
                self.board_wake(b);
            }
            Ok(())
        })();
        LENT_SCRATCH.with(|c| c.replace(scratch));
        let give_up = |e: Error| {
            b.withdraw(Buf::Data, seq);
            if split && root != Some(me) {
                b.withdraw(Buf::Result, seq);
            }
            Err(e)
        };
        if let Err(e) = copied {
            return give_up(e);
        }
        // Who reads this node's buffers, to wait for before they may change:
        // a reduce's every node reads every input, and its root the folded
        // segments.
        let reads_me = |j: usize| {
            j != me
                && match kind {
                    Collective::Bcast => root == Some(me),
                    _ => true,
                }
        };
        for j in (0..n).filter(|&j| reads_me(j)) {
            if let Err(e) = self.board_wait(b, name, j, &what(j), || b.consumed(j) >= seq) {
                return give_up(e);
            }
        }
        if let Some(r) = root.filter(|&r| split && r != me) {
            if let Err(e) = self.board_wait(b, name, r, &what(r), || b.seen(r) >= seq) {
                return give_up(e);
            }
        }
        // Every reader of this node's buffers is done with this call.
        if reduces || kind != Collective::Bcast || root == Some(me) {
            b.settled(seq);
        }
        Ok(())
    }
}
