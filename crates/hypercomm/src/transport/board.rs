//! The board: shared memory through which the nodes of a job on one
//! machine (threads, shm) run small blocking collectives without messages
//! (Open MPI's `coll/sm`, the XHC component). The memory protocol lives
//! here; the collectives that use it, and their waits, in
//! `collective/board.rs`.
//!
//! ```text
//! header line      sleepers: how many endpoints wait asleep on the board
//! per endpoint     REC words: control line (seen, consumed, sleeping),
//!                  then four buffers: data[0], data[1], result[0], result[1]
//! one buffer       seq, meta, SIG_WORDS words of signature, then
//!                  BOARD_BYTES of payload
//! ```
//!
//! Every call on the board has a sequence number (1, 2, …: the same on
//! every endpoint, as calls on a communicator come in the same order). A
//! buffer is published for call `s` by storing `s` in its `seq` word
//! (release) after its contents; a reader waits for that value (acquire).
//! Each endpoint writes only its own record: its data buffers go to one
//! reader (the call's collector), its result buffers to every other
//! endpoint. The two buffers of each kind alternate by the parity of `s`,
//! so that a call may be written while the previous one is read; before a
//! buffer is written again, what read it last must be done with it
//! ([`Board::data_reuse`], [`Board::result_reuse`]), which each endpoint
//! tracks for its own buffers in [`BoardLocal`].
//!
//! Waking: an endpoint about to block in its transport while waiting on
//! the board raises its `sleeping` flag and the header's count; whoever
//! publishes then looks at the count and tells the sleepers with a frame
//! (so that deadlock detection, which counts frames, stays right).
//!
//! Every control word is an atomic. Payload bytes are copied in and out
//! with `memcpy` between the release and the acquire: the protocol never
//! lets a buffer be written while it is read, and a reader checks the
//! `seq` word again after its copy, so a writer that broke the protocol
//! yields a read that is discarded, not wrong data handed on. Those two
//! copies are this module's only `unsafe` (whoever owns the memory hands
//! out the words).
//!
//! Not done yet: the board serves jobs of at most [`BOARD_RANKS`] nodes
//! (the collector reads every node's buffer in turn; a tree of collectors
//! would serve more); payloads above [`BOARD_BYTES`] go by messages.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Payload bytes of one board buffer.
pub const BOARD_BYTES: usize = 4096;
/// The collector of a data buffer that every other endpoint reads (a call
/// run as one exchange, `collective/board.rs`).
pub const EVERYONE: usize = u32::MAX as usize;
/// Most nodes of a job that has a board.
pub const BOARD_RANKS: usize = 64;
/// Words of a buffer's signature area.
pub const SIG_WORDS: usize = 4;

const PAYLOAD_WORDS: usize = BOARD_BYTES / 8;
/// seq, meta, signature, payload; rounded up to whole cache lines.
const BUF_WORDS: usize = (2 + SIG_WORDS + PAYLOAD_WORDS).next_multiple_of(8);
const CTL_WORDS: usize = 8;
const REC_WORDS: usize = CTL_WORDS + 4 * BUF_WORDS;
const HEADER_WORDS: usize = 8;

const C_SEEN: usize = 0;
const C_CONSUMED: usize = 1;
const C_SLEEPING: usize = 2;
const B_SEQ: usize = 0;
const B_META: usize = 1;
const B_SIG: usize = 2;
const B_PAYLOAD: usize = 2 + SIG_WORDS;

/// Words of board for a job of `endpoints` endpoints (0: none, too many).
pub fn board_words(endpoints: usize) -> usize {
    if endpoints <= BOARD_RANKS + 1 {
        HEADER_WORDS + endpoints * REC_WORDS
    } else {
        0
    }
}

/// An endpoint's own bookkeeping of its board buffers (lives beside the
/// endpoint; only that endpoint uses it).
#[derive(Debug, Default)]
pub struct BoardLocal {
    /// The last call's sequence number.
    seq: Cell<u64>,
    /// Per data buffer: the call that last wrote it and its collector
    /// (`seq` 0: nothing to wait for).
    data_last: [Cell<(u64, u32)>; 2],
    /// Per result buffer: the call that last wrote it (0: nothing).
    result_last: [Cell<u64>; 2],
    /// Whether this endpoint counts itself among the sleepers.
    asleep: Cell<bool>,
}

/// Which of an endpoint's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buf {
    /// What an endpoint contributes to a call, read by its collector.
    Data,
    /// What an endpoint hands to every other (a result, a broadcast).
    Result,
}

/// Copies out of another endpoint's memory, which a lend on the board
/// needs (shared memory: `process_vm_readv`). The kernel makes the copy,
/// so an address the other endpoint no longer maps is an error, never
/// undefined behaviour.
pub trait PeerRead {
    /// Copy `out.len()` bytes at `addr` of endpoint `e` into `out`.
    fn read_peer(&self, e: usize, addr: usize, out: &mut [u8]) -> std::io::Result<()>;
}

/// One endpoint's view of the board.
#[derive(Clone, Copy)]
pub struct Board<'a> {
    words: &'a [AtomicU64],
    local: &'a BoardLocal,
    me: usize,
    endpoints: usize,
    /// How to copy what other endpoints lend (none: no lends).
    reader: Option<&'a dyn PeerRead>,
}

/// What was read from a buffer besides its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The writer's meta word (the collectives' use: 0, or a verdict).
    pub meta: u64,
    /// The signature area.
    pub sig: [u64; SIG_WORDS],
}

impl<'a> Board<'a> {
    /// The board in `words` (at least [`board_words`] of `endpoints`), seen
    /// by endpoint `me`. `None` when the job has no board.
    pub fn new(
        words: &'a [AtomicU64],
        local: &'a BoardLocal,
        me: usize,
        endpoints: usize,
    ) -> Option<Board<'a>> {
        let need = board_words(endpoints);
        (need > 0 && words.len() >= need && me < endpoints).then_some(Board {
            words,
            local,
            me,
            endpoints,
            reader: None,
        })
    }

    /// This board with lends, copied by `reader` (every endpoint of the job
    /// must have one, or none: the calls' flows depend on it).
    pub fn with_reader(self, reader: &'a dyn PeerRead) -> Board<'a> {
        Board {
            reader: Some(reader),
            ..self
        }
    }

    /// Whether endpoints may lend buffers to each other on this board.
    pub fn can_lend(&self) -> bool {
        self.reader.is_some()
    }

    /// Publish this endpoint's `which` buffer for call `seq` as a lend of
    /// `bytes` (their address and length) with signature `sig`; others copy
    /// from it with [`Board::read_lent`]. The caller keeps `bytes` alive and
    /// unchanged until every reader is done with call `seq`, or withdraws
    /// the lend first ([`Board::withdraw`]).
    pub fn lend(&self, which: Buf, seq: u64, sig: &[u64; SIG_WORDS], bytes: &[u8]) {
        let mut rec = [0u8; 16];
        rec[..8].copy_from_slice(&(bytes.as_ptr() as u64).to_le_bytes());
        rec[8..].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.publish(which, seq, 0, sig, &rec, EVERYONE);
    }

    /// Copy `out.len()` bytes from byte `at` on of what endpoint `e` lent
    /// for call `seq` (published). The error says what went wrong: no
    /// lends here, a lend too short, a failed copy, or a lend withdrawn
    /// while it was read (what was copied may be torn: not to be used).
    pub fn read_lent(
        &self,
        (e, which): (usize, Buf),
        seq: u64,
        at: usize,
        out: &mut [u8],
    ) -> Result<(), String> {
        let Some(reader) = self.reader else {
            return Err("this board has no lends".into());
        };
        let mut rec = [0u8; 16];
        let gone = || format!("rank {e} withdrew its lend of board call {seq}");
        self.read(e, which, seq, &mut rec).ok_or_else(gone)?;
        let word = |k: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&rec[8 * k..8 * k + 8]);
            u64::from_le_bytes(w) as usize
        };
        let (addr, len) = (word(0), word(1));
        if at.checked_add(out.len()).is_none_or(|end| end > len) {
            return Err(format!(
                "rank {e} lent {len} bytes for board call {seq}; {} were wanted from byte {at}",
                out.len()
            ));
        }
        reader
            .read_peer(e, addr + at, out)
            .map_err(|err| format!("copying what rank {e} lent for board call {seq}: {err}"))?;
        // The lend still stands: a lender that gives up withdraws it before
        // its buffer can change (`withdraw`).
        fence(Ordering::SeqCst);
        if self.buf(e, which, seq)[B_SEQ].load(Ordering::Relaxed) != seq {
            return Err(gone());
        }
        Ok(())
    }

    /// Withdraw this endpoint's `which` buffer of call `seq` (a lend given
    /// up before its readers were done): a reader that copies from it after
    /// this finds it gone, and one that copied before has what it lent.
    pub fn withdraw(&self, which: Buf, seq: u64) {
        let b = self.buf(self.me, which, seq);
        b[B_SEQ].store(0, Ordering::Relaxed);
        // Before anything the caller does to the lent buffer next.
        fence(Ordering::SeqCst);
    }

    /// This endpoint.
    pub fn me(&self) -> usize {
        self.me
    }

    /// Endpoints of the job.
    pub fn endpoints(&self) -> usize {
        self.endpoints
    }

    /// The sequence number of a new call (the previous one's plus one).
    pub fn begin(&self) -> u64 {
        let s = self.local.seq.get() + 1;
        self.local.seq.set(s);
        s
    }

    fn rec(&self, e: usize) -> usize {
        assert!(e < self.endpoints, "board endpoint {e} out of range");
        HEADER_WORDS + e * REC_WORDS
    }

    fn buf(&self, e: usize, which: Buf, seq: u64) -> &'a [AtomicU64] {
        let k = match which {
            Buf::Data => 0,
            Buf::Result => 2,
        } + (seq & 1) as usize;
        let at = self.rec(e) + CTL_WORDS + k * BUF_WORDS;
        &self.words[at..at + BUF_WORDS]
    }

    /// Whether endpoint `e` has published its `which` buffer for call `seq`.
    #[inline]
    pub fn posted(&self, e: usize, which: Buf, seq: u64) -> bool {
        self.buf(e, which, seq)[B_SEQ].load(Ordering::Acquire) == seq
    }

    /// The call up to which endpoint `e` has read the results it needed.
    pub fn seen(&self, e: usize) -> u64 {
        self.words[self.rec(e) + C_SEEN].load(Ordering::Acquire)
    }

    /// The call up to which endpoint `e` has read what it collected.
    pub fn consumed(&self, e: usize) -> u64 {
        self.words[self.rec(e) + C_CONSUMED].load(Ordering::Acquire)
    }

    /// Before this endpoint writes its data buffer for call `seq`: the
    /// collector that must have consumed which call (`None`: free;
    /// [`EVERYONE`]: every other endpoint must have).
    pub fn data_reuse(&self, seq: u64) -> Option<(usize, u64)> {
        let (s, c) = self.local.data_last[(seq & 1) as usize].get();
        (s > 0).then_some((c as usize, s))
    }

    /// Before this endpoint writes its result buffer for call `seq`: the
    /// call every other endpoint must have seen (`None`: free).
    pub fn result_reuse(&self, seq: u64) -> Option<u64> {
        let s = self.local.result_last[(seq & 1) as usize].get();
        (s > 0).then_some(s)
    }

    /// This endpoint learnt that whatever read its buffers for calls up to
    /// `seq` is done with them (every endpoint had arrived at a later
    /// call, or a result that followed them came back).
    pub fn settled(&self, seq: u64) {
        for p in 0..2 {
            if self.local.data_last[p].get().0 <= seq {
                self.local.data_last[p].set((0, 0));
            }
            if self.local.result_last[p].get() <= seq {
                self.local.result_last[p].set(0);
            }
        }
    }

    /// Publish this endpoint's `which` buffer for call `seq`: `meta`, the
    /// signature and `payload` (at most [`BOARD_BYTES`]); a data buffer
    /// names its `collector` (or [`EVERYONE`]). The caller has waited for
    /// the buffer's reuse.
    pub fn publish(
        &self,
        which: Buf,
        seq: u64,
        meta: u64,
        sig: &[u64; SIG_WORDS],
        payload: &[u8],
        collector: usize,
    ) {
        assert!(payload.len() <= BOARD_BYTES, "board payload too long");
        let b = self.buf(self.me, which, seq);
        // Withdrawn first (a seqlock's writer), so that a reader that took
        // any of the words below sees the buffer changed when it looks again.
        b[B_SEQ].store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        b[B_META].store(meta, Ordering::Relaxed);
        for (w, v) in b[B_SIG..B_SIG + SIG_WORDS].iter().zip(sig) {
            w.store(*v, Ordering::Relaxed);
        }
        store_bytes(&b[B_PAYLOAD..], payload);
        b[B_SEQ].store(seq, Ordering::Release);
        let p = (seq & 1) as usize;
        match which {
            Buf::Data => self.local.data_last[p].set((seq, collector as u32)),
            Buf::Result => self.local.result_last[p].set(seq),
        }
    }

    /// Read endpoint `e`'s `which` buffer for call `seq` (published):
    /// its head, and `out.len()` payload bytes into `out`. `None` if the
    /// writer published a later call into the buffer meanwhile (what was
    /// read is torn: the protocol was broken, and the caller says so
    /// rather than hand on wrong data).
    pub fn read(&self, e: usize, which: Buf, seq: u64, out: &mut [u8]) -> Option<Head> {
        self.read_at(e, which, seq, 0, out)
    }

    /// [`Board::read`] of the payload bytes from byte `at` on (an
    /// all-to-all's block of a row).
    pub fn read_at(
        &self,
        e: usize,
        which: Buf,
        seq: u64,
        at: usize,
        out: &mut [u8],
    ) -> Option<Head> {
        assert!(at + out.len() <= BOARD_BYTES, "board read past the payload");
        let b = self.buf(e, which, seq);
        load_bytes_at(&b[B_PAYLOAD..], at, out);
        head_of(b, seq)
    }

    /// [`Board::read`] of the head alone, no payload (what a comparison
    /// of signatures reads).
    pub fn head(&self, e: usize, which: Buf, seq: u64) -> Option<Head> {
        head_of(self.buf(e, which, seq), seq)
    }

    /// This endpoint has read the results of calls up to `seq`.
    pub fn set_seen(&self, seq: u64) {
        self.words[self.rec(self.me) + C_SEEN].store(seq, Ordering::Release);
    }

    /// This endpoint has consumed what it collected for calls up to `seq`.
    pub fn set_consumed(&self, seq: u64) {
        self.words[self.rec(self.me) + C_CONSUMED].store(seq, Ordering::Release);
    }

    /// Raise or lower this endpoint's sleeping flag (before blocking in the
    /// transport while waiting on the board; after the wait).
    pub fn set_sleeping(&self, on: bool) {
        if self.local.asleep.get() == on {
            return;
        }
        self.local.asleep.set(on);
        let flag = &self.words[self.rec(self.me) + C_SLEEPING];
        if on {
            flag.store(1, Ordering::Relaxed);
            self.words[0].fetch_add(1, Ordering::SeqCst);
            // What the waiter reads next comes after the flag (the
            // publisher's fence in `sleepers` pairs with this one).
            fence(Ordering::SeqCst);
        } else {
            self.words[0].fetch_sub(1, Ordering::SeqCst);
            flag.store(0, Ordering::Relaxed);
        }
    }

    /// After publishing: the endpoints asleep on the board, to be woken
    /// (none, the common case, costs one load).
    pub fn sleepers(&self) -> impl Iterator<Item = usize> + '_ {
        fence(Ordering::SeqCst);
        let any = self.words[0].load(Ordering::Acquire) > 0;
        (0..self.endpoints).filter(move |&e| {
            any && e != self.me && self.words[self.rec(e) + C_SLEEPING].load(Ordering::Relaxed) != 0
        })
    }
}

/// Store `src` into the first bytes of `dst`'s words.
///
/// A plain copy, not word by word with atomic stores: the protocol keeps
/// every reader out of a buffer while it is written (a buffer is written
/// only after its last reader said it was done, [`Board::data_reuse`]),
/// and the `seq` word's release store publishes the bytes. A kilobyte
/// took about five instructions a word as relaxed stores (they cannot be
/// vectorised); `memcpy` takes a few dozen for all of it.
fn store_bytes(dst: &[AtomicU64], src: &[u8]) {
    assert!(src.len() <= dst.len() * 8, "board store past the buffer");
    if let (Ok(w), Some(d)) = (<[u8; 8]>::try_from(src), dst.first()) {
        // One word (a scalar's reduction): a store, not a call to `memcpy`.
        // Native byte order, so that the bytes lie where a copy puts them.
        d.store(u64::from_ne_bytes(w), Ordering::Relaxed);
        return;
    }
    // SAFETY: `dst` spans at least `src.len()` bytes (asserted), its words
    // are `UnsafeCell`s, so writing through a pointer derived from the
    // shared slice is allowed, and the two cannot overlap (`src` is not
    // board memory). No reader reads these bytes while they are written,
    // as said above.
    unsafe { ptr::copy_nonoverlapping(src.as_ptr(), dst.as_ptr() as *mut u8, src.len()) }
}

/// The head of buffer `b` after its payload was read, if it still holds
/// call `seq`.
fn head_of(b: &[AtomicU64], seq: u64) -> Option<Head> {
    let mut sig = [0u64; SIG_WORDS];
    for (v, w) in sig.iter_mut().zip(&b[B_SIG..B_SIG + SIG_WORDS]) {
        *v = w.load(Ordering::Relaxed);
    }
    let meta = b[B_META].load(Ordering::Relaxed);
    // The loads above and the payload's come before the second look at
    // `seq` (a seqlock's reader).
    fence(Ordering::Acquire);
    (b[B_SEQ].load(Ordering::Relaxed) == seq).then_some(Head { meta, sig })
}

/// Load `out.len()` bytes from byte `at` of `src` on (as [`store_bytes`]
/// stored them).
///
/// A plain copy, as for the store. A writer that broke the protocol could
/// change the bytes while they are copied, as a seqlock's reader allows
/// for: the caller looks at the buffer's `seq` word again after the copy
/// and discards what it read if the word changed ([`Board::read_at`]).
fn load_bytes_at(src: &[AtomicU64], at: usize, out: &mut [u8]) {
    assert!(
        at + out.len() <= src.len() * 8,
        "board load past the buffer"
    );
    if let (0, Ok(o), Some(w)) = (at % 8, <&mut [u8; 8]>::try_from(&mut *out), src.get(at / 8)) {
        // One word: a load, as the store above.
        *o = w.load(Ordering::Relaxed).to_ne_bytes();
        return;
    }
    // SAFETY: the `out.len()` bytes from `at` lie within `src` (asserted)
    // and `out` is not board memory. Reading the atomics' bytes through
    // the slice's pointer is reading an `UnsafeCell`'s contents; a write
    // that raced with it would be the protocol's breach that the caller
    // detects, and the bytes are plain `u8`s, valid whatever they hold.
    unsafe {
        let from = (src.as_ptr() as *const u8).add(at);
        ptr::copy_nonoverlapping(from, out.as_mut_ptr(), out.len())
    }
}

/// Board memory for the threads of one process.
pub fn board_memory(endpoints: usize) -> Box<[AtomicU64]> {
    (0..board_words(endpoints))
        .map(|_| AtomicU64::new(0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes of every length come back as stored; the buffers of the two
    /// parities and of the two kinds are apart.
    #[test]
    fn buffers_keep_what_was_published() {
        let mem = board_memory(3);
        let locals: Vec<BoardLocal> = (0..3).map(|_| BoardLocal::default()).collect();
        let b: Vec<Board<'_>> = (0..3)
            .map(|e| Board::new(&mem, &locals[e], e, 3).unwrap())
            .collect();
        for len in [0, 1, 7, 8, 9, 100, BOARD_BYTES] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let s = b[1].begin();
            assert!(!b[0].posted(1, Buf::Data, s));
            b[1].publish(Buf::Data, s, 5, &[1, 2, 3, 4], &data, 0);
            b[1].publish(Buf::Result, s, 6, &[0; SIG_WORDS], &[9; 3], 0);
            assert!(b[0].posted(1, Buf::Data, s));
            assert!(!b[0].posted(2, Buf::Data, s));
            let mut out = vec![0u8; len];
            let h = b[0].read(1, Buf::Data, s, &mut out).unwrap();
            assert_eq!((h.meta, h.sig, &out), (5, [1, 2, 3, 4], &data));
            let mut r = [0u8; 3];
            assert_eq!(b[2].read(1, Buf::Result, s, &mut r).unwrap().meta, 6);
            // A read of a call the buffer no longer holds says so.
            assert_eq!(b[2].read(1, Buf::Result, s + 2, &mut r), None);
            assert_eq!(r, [9; 3]);
            assert_eq!(b[1].data_reuse(s + 2), Some((0, s)));
            assert_eq!(b[1].result_reuse(s + 2), Some(s));
            b[1].settled(s);
            assert_eq!(
                (b[1].data_reuse(s + 2), b[1].result_reuse(s + 2)),
                (None, None)
            );
        }
    }

    /// A read from any byte of the payload on gives the bytes published
    /// there.
    #[test]
    fn reads_from_any_offset() {
        let mem = board_memory(2);
        let l = [BoardLocal::default(), BoardLocal::default()];
        let (a, b) = (
            Board::new(&mem, &l[0], 0, 2).unwrap(),
            Board::new(&mem, &l[1], 1, 2).unwrap(),
        );
        let data: Vec<u8> = (0..100).map(|i| (i * 13 + 5) as u8).collect();
        let s = a.begin();
        a.publish(Buf::Data, s, 0, &[0; SIG_WORDS], &data, EVERYONE);
        assert_eq!(a.data_reuse(s + 2), Some((EVERYONE, s)));
        for at in [0, 1, 7, 8, 9, 15, 33, 99, 100] {
            for len in [0, 1, 3, 8, 9, 20] {
                let len = len.min(100 - at);
                let mut out = vec![0u8; len];
                b.read_at(0, Buf::Data, s, at, &mut out).unwrap();
                assert_eq!(out, &data[at..at + len], "at {at}, {len} bytes");
            }
        }
    }

    /// Memory of "another endpoint": a slice whose address stands for it.
    struct Slice(Vec<u8>);
    impl PeerRead for Slice {
        fn read_peer(&self, _e: usize, addr: usize, out: &mut [u8]) -> std::io::Result<()> {
            let at = addr - self.0.as_ptr() as usize;
            out.copy_from_slice(&self.0[at..at + out.len()]);
            Ok(())
        }
    }

    /// A lend is read from any offset within it; a read past its end, or
    /// of a lend withdrawn, is an error that says so; a board without a
    /// reader has no lends.
    #[test]
    fn lends_are_read_within_bounds_until_withdrawn() {
        let mem = board_memory(2);
        let l = [BoardLocal::default(), BoardLocal::default()];
        let lent = Slice((0..200u32).map(|i| (i * 3) as u8).collect());
        let (a, b) = (
            Board::new(&mem, &l[0], 0, 2).unwrap().with_reader(&lent),
            Board::new(&mem, &l[1], 1, 2).unwrap().with_reader(&lent),
        );
        assert!(!Board::new(&mem, &l[1], 1, 2).unwrap().can_lend());
        let s = a.begin();
        a.lend(Buf::Data, s, &[7, 0, 0, 0], &lent.0);
        assert_eq!(b.read(0, Buf::Data, s, &mut []).unwrap().sig, [7, 0, 0, 0]);
        let mut out = [0u8; 17];
        b.read_lent((0, Buf::Data), s, 183, &mut out).unwrap();
        assert_eq!(&out[..], &lent.0[183..200]);
        let e = b.read_lent((0, Buf::Data), s, 184, &mut out).unwrap_err();
        assert!(e.contains("lent 200 bytes"), "{e}");
        a.withdraw(Buf::Data, s);
        let e = b.read_lent((0, Buf::Data), s, 0, &mut out).unwrap_err();
        assert!(e.contains("withdrew"), "{e}");
    }

    /// A sleeper is found by a publisher and no longer once it woke.
    #[test]
    fn sleepers_are_counted() {
        let mem = board_memory(2);
        let l = [BoardLocal::default(), BoardLocal::default()];
        let (a, b) = (
            Board::new(&mem, &l[0], 0, 2).unwrap(),
            Board::new(&mem, &l[1], 1, 2).unwrap(),
        );
        assert_eq!(a.sleepers().count(), 0);
        b.set_sleeping(true);
        b.set_sleeping(true);
        assert_eq!(a.sleepers().collect::<Vec<_>>(), [1]);
        assert_eq!(b.sleepers().count(), 0, "not itself");
        b.set_sleeping(false);
        assert_eq!(a.sleepers().count(), 0);
        assert_eq!(mem[0].load(Ordering::Relaxed), 0);
    }

    /// Jobs above the limit have no board.
    #[test]
    fn large_jobs_have_none() {
        assert_eq!(board_words(BOARD_RANKS + 2), 0);
        let l = BoardLocal::default();
        assert!(Board::new(&[], &l, 0, BOARD_RANKS + 2).is_none());
        assert!(board_words(1) > 0);
    }
}
