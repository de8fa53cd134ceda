//! The board's exchange: every node publishes its part (and signature)
//! and reads what it needs from every other node's (see the parent
//! module's docs), and the check of every node's signature that starts
//! an exchange or a lend in check mode.

use super::{
    elems_mut, fold_inputs, gather_blocks, operator, scratch_len, sig_into, sig_words, torn, Part,
    EXCHANGE_NODES, SMALL_WORDS,
};
use crate::collective::ops::{Element, Operator};
use crate::collective::select::Collective;
use crate::collective::task::{verdict, Signature, SIG_BYTES};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::transport::board::{Board, Buf, BOARD_BYTES, EVERYONE, SIG_WORDS};

/// Whether a `kind` among `p` nodes runs as one exchange: every node
/// publishes its part (and signature) and reads what it needs of every
/// other node's. A reduce without check mode takes one hop as it is (a
/// fan-in to the root, whose other nodes wait for nobody).
pub(super) fn exchanges(kind: Collective, p: usize, checked: bool) -> bool {
    p <= EXCHANGE_NODES
        && match kind {
            Collective::Barrier
            | Collective::Allreduce
            | Collective::Allgather
            | Collective::Alltoall => true,
            Collective::Bcast => true,
            Collective::Reduce => checked,
            _ => false,
        }
}

impl Comm {
    /// Before this node writes its data buffer for call `seq`: wait until
    /// what read it last (the collector of a call two before, or every
    /// other node after an exchange) is done with it.
    pub(super) fn board_data_reuse(&self, b: Board<'_>, name: &str, seq: u64) -> Result<()> {
        let Some((c, s)) = b.data_reuse(seq) else {
            return Ok(());
        };
        let all = c == EVERYONE;
        for j in (0..b.endpoints()).filter(|&j| j != b.me() && (all || j == c)) {
            let what = || format!("rank {j} on the shared-memory board ({name}, board call {s})");
            self.board_wait(b, name, j, &what, || b.consumed(j) >= s)?;
        }
        Ok(())
    }

    /// In check mode, once this node published call `seq` with signature
    /// `sig` (`words` on the board): compare every node's (the same
    /// verdict everywhere) before anyone's data is touched; the words
    /// first, and only when they differ the fields (a host's count, say,
    /// may differ and agree). A mismatch ends this node's part of the call.
    pub(super) fn board_agree(
        &self,
        b: Board<'_>,
        name: &str,
        seq: u64,
        sig: &Signature,
        words: &[u64; SIG_WORDS],
    ) -> Result<()> {
        let (me, n) = (b.me(), self.size());
        let mut same = true;
        for j in (0..n).filter(|&j| j != me) {
            let what = || format!("rank {j} on the shared-memory board ({name}, board call {seq})");
            self.board_wait(b, name, j, &what, || b.posted(j, Buf::Data, seq))?;
            let h = b.head(j, Buf::Data, seq).ok_or_else(|| torn(j, seq))?;
            same &= h.sig == *words;
        }
        if same {
            return Ok(());
        }
        self.board_verdict(b, seq, sig)
    }

    /// The verdict on call `seq`'s signatures once some node's words
    /// differed from this node's (`sig`): every node's, compared field by
    /// field. A mismatch ends this node's part of the call.
    fn board_verdict(&self, b: Board<'_>, seq: u64, sig: &Signature) -> Result<()> {
        let (me, n) = (b.me(), self.size());
        let mut all = [0u8; SIG_BYTES * EXCHANGE_NODES];
        let sigs = &mut all[..n * SIG_BYTES];
        sigs[me * SIG_BYTES..(me + 1) * SIG_BYTES].copy_from_slice(&sig.encode());
        for j in (0..n).filter(|&j| j != me) {
            let h = b.head(j, Buf::Data, seq).ok_or_else(|| torn(j, seq))?;
            sig_into(sigs, j, h.sig);
        }
        match verdict(sigs, false) {
            Err(Error::CollectiveMismatch(t)) => {
                b.set_consumed(seq);
                b.settled(seq - 1);
                self.board_wake(b);
                Err(Error::CollectiveMismatch(t))
            }
            _ => Ok(()),
        }
    }

    /// A call run as one exchange (at most [`EXCHANGE_NODES`] nodes; a
    /// reduce only in check mode): every node publishes what it gives in
    /// its data buffer (and its signature) and reads what it needs from
    /// every other node's — one hop, where a fan-in and a fan-out take
    /// two. A barrier reads nothing; an allgather reads each block
    /// straight into its place; an all-to-all reads block `me` of each
    /// row; a broadcast's others read the root's buffer; an allreduce
    /// reads every input and folds them in rank order, so that every node
    /// computes the same result as a serial fold (a reduce: its root).
    pub(super) fn board_exchange<T: Element, O: Operator<T>>(
        &self,
        b: Board<'_>,
        seq: u64,
        part: Part<'_, T>,
        op: Option<&O>,
        sig: Option<&Signature>,
    ) -> Result<()> {
        let (me, n, kind, name) = (b.me(), self.size(), part.kind, part.what);
        let what = |j: usize| {
            move || format!("rank {j} on the shared-memory board ({name}, board call {seq})")
        };
        self.board_data_reuse(b, name, seq)?;
        let bytes: &[u8] = bytemuck::cast_slice(part.input);
        // What a node gives: its input (a broadcast's root: its buffer;
        // the others, nothing).
        let give = if kind == Collective::Barrier {
            &[]
        } else {
            bytes
        };
        let root = part.root;
        let words = sig.map(sig_words).unwrap_or_default();
        b.publish(Buf::Data, seq, 0, &words, give, EVERYONE);
        self.board_wake(b);
        // In check mode a reduction, broadcast or barrier compares every
        // node's signature first (an operator never folds another call's
        // bytes); whoever it reads then has arrived, and keeps this call's
        // buffer until this node has consumed it. An allgather or
        // all-to-all reads every other node's buffer anyway: it compares
        // the signatures as it reads the blocks (one look at each buffer,
        // not two; on a mismatch what was copied into the output stays
        // there, as after any failed call).
        let gathers = matches!(kind, Collective::Allgather | Collective::Alltoall);
        let agreed = sig.is_some() && !gathers;
        let arrived = |j: usize| {
            if agreed {
                return Ok(());
            }
            self.board_wait(b, name, j, &what(j), || b.posted(j, Buf::Data, seq))
        };
        if let Some(s) = sig.filter(|_| agreed) {
            self.board_agree(b, name, seq, s, &words)?;
        }
        match kind {
            Collective::Allgather | Collective::Alltoall => {
                let out: &mut [u8] = bytemuck::cast_slice_mut(part.output);
                let mut same = true;
                gather_blocks(kind, (me, n), bytes, out, |j, from, block| {
                    arrived(j)?;
                    let h = b.read_at(j, Buf::Data, seq, from, block);
                    same &= h.ok_or_else(|| torn(j, seq))?.sig == words;
                    Ok(())
                })?;
                if let Some(s) = sig.filter(|_| !same) {
                    self.board_verdict(b, seq, s)?;
                }
            }
            Collective::Bcast => {
                if let Some(r) = root.filter(|&r| r != me) {
                    arrived(r)?;
                    let out: &mut [u8] = bytemuck::cast_slice_mut(part.output);
                    b.read(r, Buf::Data, seq, out).ok_or_else(|| torn(r, seq))?;
                }
            }
            Collective::Allreduce | Collective::Reduce
                if kind == Collective::Allreduce || root == Some(me) =>
            {
                let k = part.input.len();
                // Where another node's input is read: on the stack, only as
                // large as the call needs.
                let (mut small, mut large);
                let scratch: &mut [u64] = if scratch_len(n, k) == 0 {
                    &mut []
                } else if bytes.len() <= 8 * SMALL_WORDS {
                    small = [0u64; SMALL_WORDS];
                    &mut small
                } else {
                    large = [0u64; BOARD_BYTES / 8];
                    &mut large
                };
                let scratch = elems_mut(scratch, scratch_len(n, k));
                let op = operator(op, name)?;
                fold_inputs((me, n), part.output, part.input, scratch, op, |j, into| {
                    arrived(j)?;
                    b.read(j, Buf::Data, seq, bytemuck::cast_slice_mut(into))
                        .map(|_| ())
                        .ok_or_else(|| torn(j, seq))
                })?;
            }
            _ => {
                for j in (0..n).filter(|&j| j != me) {
                    arrived(j)?;
                }
            }
        }
        b.set_consumed(seq);
        // Every node published this call, so each is done with the one
        // before: whatever read this node's buffers then has finished. (A
        // broadcast without check mode waits for nobody but its root: its
        // buffers are free again once their readers consumed the call.)
        if sig.is_some() || kind != Collective::Bcast {
            b.settled(seq - 1);
        }
        self.board_wake(b);
        Ok(())
    }
}
