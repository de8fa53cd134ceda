//! The shared segment: its layout (offsets computed in one place), creation,
//! mapping, and typed atomic access to its words.
//!
//! ```text
//! 0        header: magic, version, endpoints, geometry; abort word + text;
//!          count of ended endpoints, deadlock text and the lock of its
//!          declaration; whether board calls may lend buffers
//! 4096     endpoint records, EP_REC bytes each: state, pid, cma flag,
//!          futex word + sleeping flag, "waiting for" text, doorbell
//!          (slots written to this endpoint, in jobs of more than
//!          `DOORBELL_MIN` endpoints), failure text; deadlock detection:
//!          epoch, frames sent and drained, ends seen, declared epoch
//! ...      lend slots, LENDS per endpoint: (generation << 8 | state, taken)
//! ...      rings, one per ordered pair (src, dst): consumer head, producer
//!          "waiting for space" flag, then CELLS cells of CELL bytes and
//!          SLOT bytes of slack (a record that starts near the end of the
//!          cells runs on into it, so every record is contiguous)
//! ...      the board of small collectives (`transport/board.rs`), in jobs
//!          small enough to have one
//! ```
//!
//! Every word that two processes touch is accessed through an atomic type;
//! record contents are plain bytes handed over by the ring protocol
//! (release on the slot's control word, acquire by the reader).
//!
//! Not done yet: ring and cell sizes chosen per job (they are constants,
//! checked at attach), huge pages for the rings.

use rustix::fs::{ftruncate, memfd_create, MemfdFlags};
use rustix::mm::{madvise, mmap, munmap, Advice, MapFlags, ProtFlags};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

pub(super) const MAGIC: u64 = 0x0031_4d48_5343_4d48; // "HMCSHM1\0"
pub(super) const VERSION: u32 = 8;

/// Bytes per ring cell (half a cache line). A record — a control word,
/// then its data — takes one cell or whole lines (`ring::cells`), so
/// small messages follow one another in consecutive cells rather than one
/// to a page; a short record (`ring::K_SHORT`) of up to 8 bytes of
/// payload is one cell, so two of them share a cache line and a reader
/// that fell behind takes them in with one line's transfer (cells of 64
/// bytes, one message a line, gave `bibw` of 8 bytes 7–12 % less;
/// BENCHMARKS.md).
pub(super) const CELL: usize = 32;
/// Cells per ring (128 KiB of cells).
pub(super) const CELLS: usize = 4096;
/// Bytes of the largest record (control word + data); a longer message
/// goes on in further records.
pub(super) const SLOT: usize = 4096;
/// Data bytes of the largest record, after its 8-byte control word.
pub(super) const SLOT_DATA: usize = SLOT - 8;
/// Lend slots per endpoint (buffers lent for single-copy reads at once).
pub(super) const LENDS: usize = 256;
/// Bytes of a text area (waiting-for, failure).
pub(super) const TEXT: usize = 256;
/// Bytes of the abort message area.
pub(super) const ABORT_TEXT: usize = 1024;
/// Bytes of the deadlock message area.
pub(super) const DEADLOCK_TEXT: usize = 2048;

const HEADER: usize = 4096;
const EP_REC: usize = 1024;
const LEND_REC: usize = 16;
/// Jobs of up to this many endpoints have their rings faulted in when an
/// endpoint attaches ([`Mapping::populate_rings`]; at most 2 × 16 rings of
/// about 132 KiB for each process).
const POPULATE_MAX: usize = 16;
const RING_CTRL: usize = 128;
const RING: usize = RING_CTRL + CELLS * CELL + SLOT;

// Header fields.
const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_ENDPOINTS: usize = 12;
const H_CELL: usize = 16;
const H_CELLS: usize = 20;
const H_LENDS: usize = 24;
pub(super) const H_ABORT: usize = 64;
pub(super) const H_ABORT_LEN: usize = 68;
pub(super) const H_ABORT_TEXT: usize = 128;
const H_ENDS: usize = 32;
const H_DEADLOCK_LEN: usize = 40;
const H_DECLARING: usize = 48;
const H_BOARD_LENDS: usize = 52;
const H_DEADLOCK_TEXT: usize = H_ABORT_TEXT + ABORT_TEXT;

// Endpoint record fields (relative).
const E_STATE: usize = 0;
const E_PID: usize = 4;
const E_CMA: usize = 8;
const E_FUTEX: usize = 64;
const E_SLEEPING: usize = 68;
const E_WAIT_SEQ: usize = 128;
const E_WAIT_LEN: usize = 132;
const E_WAIT_TEXT: usize = 136;
const E_DOORBELL: usize = 448;
const E_FAIL_LEN: usize = 512;
const E_FAIL_TEXT: usize = 520;
const E_EPOCH: usize = 784;
const E_SENT: usize = 792;
const E_DRAINED: usize = 800;
const E_ENDS_SEEN: usize = 808;
const E_DEADLOCK: usize = 816;

// The fields fit their areas.
const _: () = assert!(
    E_FAIL_TEXT + TEXT <= E_EPOCH
        && E_DEADLOCK + 8 <= EP_REC
        && H_DEADLOCK_TEXT + DEADLOCK_TEXT <= HEADER
);

/// Endpoint states.
pub(super) const S_UNATTACHED: u32 = 0;
pub(super) const S_ALIVE: u32 = 1;
pub(super) const S_FINISHED: u32 = 2;
pub(super) const S_FAILED: u32 = 3;
/// A failure message is being written (readers treat it as alive).
pub(super) const S_MARKING: u32 = 4;

fn lends_base(endpoints: usize) -> usize {
    HEADER + endpoints * EP_REC
}

fn rings_base(endpoints: usize) -> usize {
    (lends_base(endpoints) + endpoints * LENDS * LEND_REC).next_multiple_of(4096)
}

fn board_base(endpoints: usize) -> usize {
    rings_base(endpoints) + endpoints * endpoints * RING
}

/// Total size of a segment for `endpoints` endpoints.
pub(super) fn segment_len(endpoints: usize) -> usize {
    board_base(endpoints) + 8 * crate::transport::board::board_words(endpoints)
}

/// Types that may be viewed in the segment (atomics: valid for every bit
/// pattern, accessed only atomically by every process).
pub(super) trait SharedWord {}
impl SharedWord for AtomicU32 {}
impl SharedWord for AtomicU64 {}

/// A mapped segment.
pub(super) struct Mapping {
    base: *mut u8,
    len: usize,
    /// Number of endpoints.
    pub(super) endpoints: usize,
    /// Lend slots of this process currently in use (sender side).
    pub(super) lends_out: AtomicUsize,
    /// Which lend slots each endpoint of this process has in use, a bit per
    /// slot: waits look at these instead of reading all LENDS slot words
    /// (a 4-rank 2 MiB allreduce spent 12 % of its time in those reads).
    lent_bits: Vec<[AtomicU64; LENDS / 64]>,
    /// Where the board's words start and how many there are (0: no
    /// board), worked out once: every blocking collective asks.
    board_at: (usize, usize),
    _fd: OwnedFd,
}

// SAFETY: the mapping is plain shared memory that lives as long as the
// struct; every access to it goes through atomics or through the ring and
// lend protocols, which hand bytes over with release/acquire pairs.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map all of `fd` (which must be `len` bytes) read-write, shared.
    pub(super) fn map(fd: OwnedFd, len: usize, endpoints: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping chosen by the kernel (null hint);
        // it aliases no Rust object, and `Drop` unmaps it.
        let base = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                0,
            )
        }?;
        let off = board_base(endpoints);
        let words = (len - off.min(len)) / 8;
        assert!(words == 0 || (off.is_multiple_of(8) && off + 8 * words <= len));
        Ok(Mapping {
            base: base.cast(),
            len,
            endpoints,
            lends_out: AtomicUsize::new(0),
            lent_bits: (0..endpoints).map(|_| Default::default()).collect(),
            board_at: (off, words),
            _fd: fd,
        })
    }

    /// Fault in this endpoint's rings (those it writes and those it reads)
    /// at once, allocating their pages, instead of one page fault at a
    /// time on the first lap of each ring (which made the first 2 048
    /// messages of a pair about three times as slow as the rest). Only
    /// for jobs of up to `POPULATE_MAX` endpoints: the rings of larger
    /// jobs stay allocated as used. Kernels before Linux 5.14 refuse the
    /// advice; the pages then come as before.
    pub(super) fn populate_rings(&self, me: usize) {
        if self.endpoints > POPULATE_MAX {
            return;
        }
        let n = self.endpoints;
        self.populate(self.ring(me, 0), n * RING);
        for src in 0..n {
            self.populate(self.ring(src, me), RING);
        }
    }

    /// Fault in the pages of bytes `off..off + len` (whole pages within
    /// the segment).
    fn populate(&self, off: usize, len: usize) {
        const PAGE: usize = 4096;
        let start = off / PAGE * PAGE;
        let end = (off + len).div_ceil(PAGE) * PAGE;
        let end = end.min(self.len / PAGE * PAGE);
        if end <= start {
            return;
        }
        // SAFETY: whole pages inside this mapping, which stays mapped while
        // `self` lives; populating changes no byte of them.
        let _ = unsafe {
            madvise(
                self.base.wrapping_add(start).cast(),
                end - start,
                Advice::LinuxPopulateWrite,
            )
        };
    }

    /// The word of type `T` at byte offset `off`. (Always inlined, its
    /// panic out of line: it is called for every record read or written,
    /// and a call of its own cost ten instructions each time.)
    #[inline(always)]
    pub(super) fn at<T: SharedWord>(&self, off: usize) -> &T {
        if off + std::mem::size_of::<T>() > self.len || off & (std::mem::align_of::<T>() - 1) != 0 {
            out_of_range(off);
        }
        // SAFETY: in bounds and aligned (checked above), the mapping lives as
        // long as `self`, and `T` is an atomic valid for any bit pattern.
        unsafe { &*self.base.wrapping_add(off).cast::<T>() }
    }

    /// Store 0 into the word at byte offset `off` and into every `stride`
    /// bytes after it, `count` words in all (the range checked once, not
    /// word by word as [`Mapping::at`] would).
    #[inline(always)]
    pub(super) fn clear_words(&self, off: usize, stride: usize, count: usize) {
        if count == 0 {
            return;
        }
        let last = (count - 1).saturating_mul(stride).saturating_add(off);
        if last.saturating_add(8) > self.len || (off | stride) & 7 != 0 {
            out_of_range(last);
        }
        for k in 0..count {
            // SAFETY: every word lies inside the mapping and is aligned
            // (checked above for the last and the step), the mapping lives
            // as long as `self`, and an atomic is valid for any bit pattern.
            let w = unsafe { &*self.base.wrapping_add(off + k * stride).cast::<AtomicU64>() };
            w.store(0, Ordering::Relaxed);
        }
    }

    /// The board's words (empty when the job has none).
    pub(super) fn board(&self) -> &[AtomicU64] {
        let (off, words) = self.board_at;
        if words == 0 {
            return &[];
        }
        let first = self.base.wrapping_add(off).cast::<AtomicU64>();
        // SAFETY: `words` whole, aligned (page-aligned base, offset a
        // multiple of 8) atomics lie inside the mapping from `off` (checked
        // above), which lives as long as `self`; atomics are valid for any
        // bit pattern and every process touches them only atomically.
        unsafe { std::slice::from_raw_parts(first, words) }
    }

    /// Raw pointer to byte `off` (`len` bytes must be in bounds).
    #[inline]
    pub(super) fn bytes(&self, off: usize, len: usize) -> *mut u8 {
        assert!(off + len <= self.len, "segment range out of bounds");
        self.base.wrapping_add(off)
    }

    // ------------------------------------------------------------- offsets

    fn ep(&self, e: usize) -> usize {
        assert!(e < self.endpoints, "endpoint {e} out of range");
        HEADER + e * EP_REC
    }
    pub(super) fn state(&self, e: usize) -> &AtomicU32 {
        self.at(self.ep(e) + E_STATE)
    }
    pub(super) fn pid(&self, e: usize) -> &AtomicU32 {
        self.at(self.ep(e) + E_PID)
    }
    pub(super) fn cma(&self, e: usize) -> &AtomicU32 {
        self.at(self.ep(e) + E_CMA)
    }
    pub(super) fn futex(&self, e: usize) -> &AtomicU32 {
        self.at(self.ep(e) + E_FUTEX)
    }
    /// Mark lend slot `k` of endpoint `e` in use or free.
    pub(super) fn mark_lent(&self, e: usize, k: usize, in_use: bool) {
        if let Some(bits) = self.lent_bits.get(e) {
            let bit = 1u64 << (k % 64);
            if in_use {
                bits[k / 64].fetch_or(bit, Ordering::Relaxed);
            } else {
                bits[k / 64].fetch_and(!bit, Ordering::Relaxed);
            }
        }
    }
    /// The lend slots of endpoint `e` in use.
    pub(super) fn lent_slots(&self, e: usize) -> impl Iterator<Item = usize> + '_ {
        self.lent_bits.get(e).into_iter().flat_map(|bits| {
            bits.iter().enumerate().flat_map(|(w, b)| {
                let mut x = b.load(Ordering::Relaxed);
                std::iter::from_fn(move || {
                    if x == 0 {
                        return None;
                    }
                    let t = x.trailing_zeros() as usize;
                    x &= x - 1;
                    Some(w * 64 + t)
                })
            })
        })
    }
    pub(super) fn sleeping(&self, e: usize) -> &AtomicU32 {
        self.at(self.ep(e) + E_SLEEPING)
    }
    pub(super) fn doorbell(&self, e: usize) -> &AtomicU64 {
        self.at(self.ep(e) + E_DOORBELL)
    }
    pub(super) fn abort(&self) -> &AtomicU32 {
        self.at(H_ABORT)
    }
    /// Endpoints of the job that have ended (deadlock detection).
    pub(super) fn ends(&self) -> &AtomicU64 {
        self.at(H_ENDS)
    }
    /// Whether the board's calls may lend buffers, read with
    /// `process_vm_readv` (decided once, by the segment's creator, so that
    /// every endpoint runs the same flows).
    pub(super) fn board_lends(&self) -> bool {
        self.at::<AtomicU32>(H_BOARD_LENDS).load(Ordering::Relaxed) != 0
    }
    /// Held (1) by the endpoint declaring a deadlock, so that one
    /// declaration writes the deadlock text at a time.
    pub(super) fn declaring(&self) -> &AtomicU32 {
        self.at(H_DECLARING)
    }
    /// Deadlock detection words of endpoint `e`: epoch (odd while blocked
    /// with no deadline), frames sent, frames drained, ends seen, and the
    /// epoch a declared deadlock caught it in.
    pub(super) fn epoch(&self, e: usize) -> &AtomicU64 {
        self.at(self.ep(e) + E_EPOCH)
    }
    pub(super) fn sent(&self, e: usize) -> &AtomicU64 {
        self.at(self.ep(e) + E_SENT)
    }
    pub(super) fn drained(&self, e: usize) -> &AtomicU64 {
        self.at(self.ep(e) + E_DRAINED)
    }
    pub(super) fn ends_seen(&self, e: usize) -> &AtomicU64 {
        self.at(self.ep(e) + E_ENDS_SEEN)
    }
    pub(super) fn deadlocked(&self, e: usize) -> &AtomicU64 {
        self.at(self.ep(e) + E_DEADLOCK)
    }

    /// Lend slot `k` of endpoint `e`: (state word, taken).
    pub(super) fn lend(&self, e: usize, k: usize) -> (&AtomicU64, &AtomicU64) {
        assert!(k < LENDS);
        let off = lends_base(self.endpoints) + (e * LENDS + k) * LEND_REC;
        assert!(e < self.endpoints);
        (self.at(off), self.at(off + 8))
    }

    /// Offset of ring `src → dst` (its control words, then its slots).
    pub(super) fn ring(&self, src: usize, dst: usize) -> usize {
        assert!(src < self.endpoints && dst < self.endpoints);
        rings_base(self.endpoints) + (src * self.endpoints + dst) * RING
    }
    /// The consumer's head counter of ring `src → dst`.
    pub(super) fn head(&self, src: usize, dst: usize) -> &AtomicU64 {
        self.ring_head(self.ring(src, dst))
    }
    /// The head counter of the ring at offset `ring` (a reader keeps its
    /// rings' offsets: no offset worked out per message).
    #[inline]
    pub(super) fn ring_head(&self, ring: usize) -> &AtomicU64 {
        self.at(ring)
    }
    /// The producer's "waiting for space" flag of ring `src → dst`.
    pub(super) fn space_wanted(&self, src: usize, dst: usize) -> &AtomicU32 {
        self.ring_space_wanted(self.ring(src, dst))
    }
    /// The "waiting for space" flag of the ring at offset `ring`.
    #[inline]
    pub(super) fn ring_space_wanted(&self, ring: usize) -> &AtomicU32 {
        self.at(ring + 64)
    }
    /// Offset of the cell at position `i` of the ring at offset `ring`.
    #[inline]
    pub(super) fn ring_cell(ring: usize, i: usize) -> usize {
        ring + RING_CTRL + (i % CELLS) * CELL
    }
    /// Offset of the cell at position `i` of ring `src → dst`.
    pub(super) fn cell(&self, src: usize, dst: usize, i: usize) -> usize {
        Self::ring_cell(self.ring(src, dst), i)
    }

    // --------------------------------------------------------------- texts

    fn write_text(&self, len_off: usize, text_off: usize, cap: usize, s: &str) {
        let b = s.as_bytes();
        let n = b.len().min(cap);
        for (i, chunk) in b[..n].chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.at::<AtomicU64>(text_off + 8 * i)
                .store(u64::from_le_bytes(w), Ordering::Relaxed);
        }
        self.at::<AtomicU32>(len_off)
            .store(n as u32, Ordering::Release);
    }

    fn read_text(&self, len_off: usize, text_off: usize, cap: usize) -> String {
        let n = (self.at::<AtomicU32>(len_off).load(Ordering::Acquire) as usize).min(cap);
        let mut v = Vec::with_capacity(n.next_multiple_of(8));
        for i in 0..n.div_ceil(8) {
            let w = self
                .at::<AtomicU64>(text_off + 8 * i)
                .load(Ordering::Relaxed);
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.truncate(n);
        String::from_utf8_lossy(&v).into_owned()
    }

    pub(super) fn set_failure(&self, e: usize, s: &str) {
        self.write_text(self.ep(e) + E_FAIL_LEN, self.ep(e) + E_FAIL_TEXT, TEXT, s);
    }
    pub(super) fn failure(&self, e: usize) -> String {
        self.read_text(self.ep(e) + E_FAIL_LEN, self.ep(e) + E_FAIL_TEXT, TEXT)
    }
    pub(super) fn set_abort_text(&self, s: &str) {
        self.write_text(H_ABORT_LEN, H_ABORT_TEXT, ABORT_TEXT, s);
    }
    pub(super) fn abort_text(&self) -> String {
        self.read_text(H_ABORT_LEN, H_ABORT_TEXT, ABORT_TEXT)
    }
    pub(super) fn set_deadlock_text(&self, s: &str) {
        self.write_text(H_DEADLOCK_LEN, H_DEADLOCK_TEXT, DEADLOCK_TEXT, s);
    }
    pub(super) fn deadlock_text(&self) -> String {
        self.read_text(H_DEADLOCK_LEN, H_DEADLOCK_TEXT, DEADLOCK_TEXT)
    }

    /// Publish what endpoint `e` waits for (a seqlock: odd while writing).
    pub(super) fn set_waiting(&self, e: usize, s: &str) {
        let seq = self.at::<AtomicU32>(self.ep(e) + E_WAIT_SEQ);
        seq.fetch_add(1, Ordering::AcqRel);
        self.write_text(self.ep(e) + E_WAIT_LEN, self.ep(e) + E_WAIT_TEXT, TEXT, s);
        seq.fetch_add(1, Ordering::Release);
    }
    /// What endpoint `e` waits for ("" when not waiting or being updated).
    pub(super) fn waiting(&self, e: usize) -> String {
        let seq = self.at::<AtomicU32>(self.ep(e) + E_WAIT_SEQ);
        for _ in 0..8 {
            let a = seq.load(Ordering::Acquire);
            if a & 1 == 1 {
                std::thread::yield_now();
                continue;
            }
            let s = self.read_text(self.ep(e) + E_WAIT_LEN, self.ep(e) + E_WAIT_TEXT, TEXT);
            std::sync::atomic::fence(Ordering::Acquire);
            if seq.load(Ordering::Relaxed) == a {
                return s;
            }
        }
        String::new()
    }

    /// Check the header against what the caller expects.
    pub(super) fn check_header(&self) -> io::Result<()> {
        let bad = |what: String| Err(io::Error::new(io::ErrorKind::InvalidData, what));
        let magic = self.at::<AtomicU64>(H_MAGIC).load(Ordering::Acquire);
        if magic != MAGIC {
            return bad(format!(
                "not a hypercomm shared-memory segment (magic {magic:#x})"
            ));
        }
        let v = self.at::<AtomicU32>(H_VERSION).load(Ordering::Relaxed);
        if v != VERSION {
            return bad(format!("segment version {v}, this build speaks {VERSION}"));
        }
        let e = self.at::<AtomicU32>(H_ENDPOINTS).load(Ordering::Relaxed) as usize;
        if e != self.endpoints {
            return bad(format!(
                "segment made for {e} endpoints, attaching as one of {}",
                self.endpoints
            ));
        }
        let geometry = [(H_CELL, CELL), (H_CELLS, CELLS), (H_LENDS, LENDS)];
        for (off, want) in geometry {
            let got = self.at::<AtomicU32>(off).load(Ordering::Relaxed) as usize;
            if got != want {
                return bad(format!("segment geometry differs ({got} != {want})"));
            }
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly the mapping made in `map`, and no
        // reference into it outlives `self` (all accessors borrow `self`).
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}

/// The most endpoints (nodes and host) a segment has records for.
pub(super) const MAX_ENDPOINTS: usize = 4096;

/// Create and initialise a segment (see the module docs of `shm`).
pub(super) fn create(endpoints: usize) -> io::Result<OwnedFd> {
    if endpoints == 0 || endpoints > MAX_ENDPOINTS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a shared-memory job needs 1..={MAX_ENDPOINTS} endpoints, not {endpoints}"),
        ));
    }
    let fd = memfd_create("hypercomm-shm", MemfdFlags::CLOEXEC)?;
    let len = segment_len(endpoints);
    ftruncate(&fd, len as u64)?;
    let map = Mapping::map(fd.try_clone()?, len, endpoints)?;
    map.at::<AtomicU32>(H_ENDPOINTS)
        .store(endpoints as u32, Ordering::Relaxed);
    map.at::<AtomicU32>(H_VERSION)
        .store(VERSION, Ordering::Relaxed);
    map.at::<AtomicU32>(H_CELL)
        .store(CELL as u32, Ordering::Relaxed);
    map.at::<AtomicU32>(H_CELLS)
        .store(CELLS as u32, Ordering::Relaxed);
    map.at::<AtomicU32>(H_LENDS)
        .store(LENDS as u32, Ordering::Relaxed);
    // Lends on the board where process_vm_readv works (its environment's
    // HYPERCOMM_SHM_CMA=0 says no). Tried on this process only: the
    // creator (a launcher, say) need not open itself to others.
    let lends = std::env::var("HYPERCOMM_SHM_CMA").map_or(true, |v| v.trim() != "0")
        && super::sys::cma_works();
    map.at::<AtomicU32>(H_BOARD_LENDS)
        .store(lends as u32, Ordering::Relaxed);
    map.at::<AtomicU64>(H_MAGIC).store(MAGIC, Ordering::Release);
    Ok(fd)
}

/// The panic of [`Mapping::at`], out of its inlined body.
#[cold]
#[inline(never)]
fn out_of_range(off: usize) -> ! {
    panic!("segment offset {off} out of range or misaligned")
}
