//! The board's lends: pieces of [`LEND_MIN`] bytes and more are copied
//! straight out of the lender's memory (see the parent module's docs).
//!
//! Not done yet: lends on threads (a thread job's endpoints share one
//! address space, but a lender that gives up could free what a reader
//! still copies; shared memory's kernel copy makes that an error instead).

use super::{bytes_of, elems, fold, sig_words, Part, EXCHANGE_NODES};
use crate::collective::ops::{Element, Operator};
use crate::collective::select::Collective;
use crate::collective::task::Signature;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::transport::board::{Board, Buf};

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

thread_local! {
    /// Where a lending reduce's root copies another node's input before it
    /// folds it: kept, so that a large reduce neither allocates nor zeroes
    /// its scratch on every call.
    static LENT_SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Comm {
    /// A call whose pieces are lent (at most [`EXCHANGE_NODES`] nodes, a
    /// piece of at least [`LEND_MIN`] bytes, on a board with lends): every
    /// node publishes where its buffer is (and its signature), the nodes
    /// that need a piece copy it straight from the lender's memory into
    /// place (one copy), and a lender returns once every node that reads
    /// it has consumed the call. An allgather and an all-to-all read every
    /// other node; a broadcast's others read the root; a reduce's root
    /// reads every input into a scratch and folds them in rank order.
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
        b.lend(seq, &words, bytes);
        self.board_wake(b);
        if let Some(s) = sig {
            if let Err(e) = self.board_agree(b, name, seq, s, &words) {
                // A mismatch: every node finds it before it reads anything,
                // and some may still be reading signatures, so the lend
                // stays published (nobody copies it). Anything else (a
                // timeout, a failed peer): withdraw it, so that no node that
                // agrees later copies a buffer that is gone.
                if !matches!(e, Error::CollectiveMismatch(_)) {
                    b.withdraw(seq);
                }
                return Err(e);
            }
        }
        let arrived =
            |j: usize| self.board_wait(b, name, j, &what(j), || b.posted(j, Buf::Data, seq));
        let lent = |j: usize, at: usize, out: &mut [u8]| -> Result<()> {
            arrived(j)?;
            b.read_lent(j, seq, at, out).map_err(Error::Protocol)
        };
        let copied = (|| -> Result<()> {
            match kind {
                Collective::Allgather | Collective::Alltoall => {
                    let out: &mut [u8] = bytemuck::cast_slice_mut(part.output);
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
                            lent(j, from, &mut out[at])?;
                        }
                    }
                }
                Collective::Bcast => {
                    if let Some(r) = root.filter(|&r| r != me) {
                        lent(r, 0, bytemuck::cast_slice_mut(part.output))?;
                    }
                }
                _ if root == Some(me) => LENT_SCRATCH.with(|cell| -> Result<()> {
                    let mut scratch = cell.borrow_mut();
                    let words = bytes.len().div_ceil(8);
                    if scratch.len() < words {
                        scratch.resize(words, 0);
                    }
                    let k = part.input.len();
                    for j in 0..n {
                        let theirs: &[T] = if j == me {
                            part.input
                        } else {
                            lent(j, 0, &mut bytes_of(&mut scratch)[..bytes.len()])?;
                            elems(&scratch, k)
                        };
                        if j == 0 {
                            part.output.copy_from_slice(theirs);
                        } else if let Some(op) = op {
                            fold(part.output, theirs, op);
                        }
                    }
                    Ok(())
                })?,
                _ => {}
            }
            Ok(())
        })();
        if let Err(e) = copied {
            b.withdraw(seq);
            return Err(e);
        }
        b.set_consumed(seq);
        self.board_wake(b);
        // Who reads this node's buffer, to wait for before it may change.
        let reads_me = |j: usize| {
            j != me
                && match kind {
                    Collective::Bcast => root == Some(me),
                    Collective::Reduce => root == Some(j),
                    _ => true,
                }
        };
        for j in (0..n).filter(|&j| reads_me(j)) {
            if let Err(e) = self.board_wait(b, name, j, &what(j), || b.consumed(j) >= seq) {
                b.withdraw(seq);
                return Err(e);
            }
        }
        Ok(())
    }
}
