//! The rings: one lock-free single-producer single-consumer ring of
//! 32-byte cells per ordered pair of endpoints, in which each record (a
//! "slot": a control word, then up to 4 KiB of data) takes one cell or
//! whole lines;
//! the records' control words and kinds, writing them, and the sender's
//! queue for frames that wait for ring space. Reading them (and the
//! reassembly of multi-slot messages) is `read.rs`. See the module docs
//! of [`super`] for the protocol.

use super::segment::{CELL, CELLS, SLOT_DATA};
use super::{lend, ShmEndpoint, CMA_BUSY_MIN, CMA_MIN, LEND_VEC_MIN};
use crate::transport::{Claim, Frame, Inline, Lent, OwnedBytes, Payload, Taker, DONE, PENDING};
use crate::wire::{Header, Kind};
use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::OnceLock;

/// What a reader offers a message to before building its frame.
pub(super) type Offer<'a, 'b> = Option<&'a mut (dyn Taker + 'b)>;

/// Slot kinds (in the control word).
pub(super) const K_FIRST: u64 = 1;

pub(super) const K_CONT: u64 = 2;

pub(super) const K_RNDV: u64 = 3;

/// The rest of a partly written message will not come (sender withdrew).
pub(super) const K_CANCEL: u64 = 4;

/// A whole plain data message in a compact record: [`SHORT_HEAD`] bytes
/// (the context, the tag) stand for its wire header, as everything else
/// in it is known: the kind (data), no flags, no sync key, the sender
/// (the ring's writer), the receiver (its reader), the length (what
/// follows). Up to 8 bytes of payload then fit one cell (half a cache
/// line) and up to 40 two; with the whole wire header a record needs two
/// cells for 8 bytes.
pub(super) const K_SHORT: u64 = 5;
/// An empty cell before a record of whole lines: a record longer than one
/// cell starts on a line (see [`cells`]).
pub(super) const K_PAD: u64 = 6;

/// Bytes of a short record's header: context (`u64`), tag (`u32`), four
/// bytes of zero.
pub(super) const SHORT_HEAD: usize = 16;

/// Whether a message of `len` payload bytes with header `h` goes as one
/// short record.
#[inline(always)]
pub(super) fn short_form(h: &Header, len: usize) -> bool {
    h.kind == Kind::Data && h.flags == 0 && h.id == 0 && len <= SLOT_DATA - SHORT_HEAD
}

/// A short record's header bytes for `h`.
#[inline(always)]
fn encode_short(h: &Header) -> [u8; SHORT_HEAD] {
    let mut b = [0u8; SHORT_HEAD];
    b[..8].copy_from_slice(&h.context.to_le_bytes());
    b[8..12].copy_from_slice(&h.tag.to_le_bytes());
    b
}

/// The wire header a short record of `data` (its header bytes and
/// payload) in the ring from `src` to `dst` stands for, and its payload;
/// `None` when it is too short to be one.
#[inline(always)]
pub(super) fn decode_short(src: usize, dst: usize, data: &[u8]) -> Option<(Header, &[u8])> {
    let (head, body) = data.split_first_chunk::<SHORT_HEAD>()?;
    let (context, rest) = head.split_first_chunk::<8>()?;
    let (tag, _) = rest.split_first_chunk::<4>()?;
    let h = Header {
        kind: Kind::Data,
        flags: 0,
        src: src as u32,
        dst: dst as u32,
        context: u64::from_le_bytes(*context),
        tag: u32::from_le_bytes(*tag),
        id: 0,
        len: body.len() as u64,
    };
    Some((h, body))
}

/// Bytes of a rendezvous record: header, address, slot, pad, generation.
pub(super) const RNDV_LEN: usize = Header::SIZE + 24;

/// Bits of a control word's sequence number: the ring position of the
/// record plus one. Only a record's first cell holds a control word; a
/// reader clears the first word of each further line of a record it took
/// (`clear_rest`), and a writer the second half of a line whose first
/// half it gives a one-cell record (see [`cells`]), so what a reader
/// later finds at a position not yet written is an older record's control
/// word (the sequence number of an earlier position) or zero, never data.
const SEQ_BITS: u32 = 44;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

/// The control word of a record at ring position `pos`.
pub(super) fn ctrl(pos: u64, kind: u64, used: usize) -> u64 {
    debug_assert!(used <= SLOT_DATA && kind < 256);
    ((pos + 1) & SEQ_MASK) | kind << SEQ_BITS | (used as u64) << 52
}

/// Whether control word `c` is that of a record at position `pos`; its
/// kind and data bytes.
#[inline(always)]
pub(super) fn parse_ctrl(c: u64, pos: u64) -> Option<(u64, usize)> {
    (c & SEQ_MASK == (pos + 1) & SEQ_MASK)
        .then_some(((c >> SEQ_BITS) & 0xff, ((c >> 52) as usize).min(SLOT_DATA)))
}

/// Cells a record of `used` data bytes takes: one, or whole lines (an
/// even number). A record of one cell may start in either half of a line;
/// a longer one starts on a line (after a pad when the ring's tail is in
/// a line's second half), so a reader finds a record in a line's second
/// half only right after one that took the first half — whose writer
/// cleared that second half's first word before publishing it. Of a long
/// record's further cells, only those that start a line then need
/// clearing (`read.rs`, `clear_rest`), as with cells of a whole line.
#[inline(always)]
pub(super) fn cells(used: usize) -> u64 {
    let c = (8 + used).div_ceil(CELL) as u64;
    if c > 1 {
        c + (c & 1)
    } else {
        c
    }
}

/// Free cells a record of any size needs: its own, and one more for the
/// pad before it or the other half of its line (see [`cells`]).
#[inline(always)]
fn any_record_room() -> u64 {
    cells(SLOT_DATA) + 1
}

/// Cells a message of `len` payload bytes takes with its header (a short
/// record's when `short`): full records, then one for what is left.
#[inline(always)]
fn message_cells(short: bool, len: usize) -> u64 {
    if short {
        return cells(SHORT_HEAD + len);
    }
    let total = Header::SIZE + len;
    if total <= SLOT_DATA {
        return cells(total);
    }
    let rest = total % SLOT_DATA;
    (total / SLOT_DATA) as u64 * cells(SLOT_DATA) + if rest > 0 { cells(rest) } else { 0 }
}

/// A frame waiting to be written into a ring.
pub(super) enum Outgoing {
    /// Header and payload, `off` payload bytes written so far.
    Frame {
        header: Header,
        payload: Payload,
        off: usize,
        started: bool,
    },
    /// A lent buffer: only its address travels; `keep` holds a handed-off
    /// vector alive until the reader is done.
    Rndv {
        header: Header,
        addr: usize,
        slot: usize,
        gen: u64,
        keep: Option<Box<dyn OwnedBytes>>,
    },
}

/// Producer side of one ring.
#[derive(Default)]
pub(super) struct RingOut {
    /// Cells written so far.
    pub(super) tail: u64,
    /// Last head (cells freed by the reader) seen.
    pub(super) head_seen: u64,
}

#[derive(Default)]
pub(super) struct Out {
    pub(super) ring: RingOut,
    pub(super) queue: VecDeque<Outgoing>,
}

/// Consumer side of one ring.
#[derive(Default)]
pub(super) struct In {
    pub(super) head: u64,
    /// Offset of the ring in the segment (set at attach).
    pub(super) ring: usize,
    /// The message whose slots are coming in, if one is begun.
    pub(super) partial: Option<Partial>,
}

/// A message begun in one slot and continued in the next ones.
pub(super) enum Partial {
    /// Reassembled here, to be handed over as a frame.
    Own(Header, Vec<u8>),
    /// Written straight into a posted receive's buffer ([`Taker::claim`]),
    /// `got` bytes so far.
    Claimed {
        header: Header,
        claim: Claim,
        got: usize,
    },
}

impl Partial {
    /// A claimed message goes on as one of our own: what was written into
    /// the claimed buffer is copied back out of it.
    pub(super) fn unclaim(self) -> Partial {
        match self {
            Partial::Claimed { header, claim, got } => {
                let mut v = claim.copy_prefix(got);
                v.reserve(header.len as usize - got);
                Partial::Own(header, v)
            }
            own => own,
        }
    }
}

/// Buffers of queued copies kept for the next ones: a window of copies
/// freed together made the allocator hand their pages back to the
/// kernel, and the next window fault fresh ones in (16 KiB `bw` at a
/// third of its rate, BENCHMARKS.md).
#[derive(Default)]
pub(super) struct Spare {
    bufs: Vec<Vec<u8>>,
    /// Capacity of `bufs`, in bytes.
    bytes: usize,
}

/// Most bytes of spare buffers an endpoint keeps.
const SPARE_BYTES: usize = 2 << 20;
/// Largest buffer kept (a copied eager message is at most
/// `EAGER_LIMIT` bytes).
const SPARE_ONE: usize = 64 * 1024;

/// A handed-off vector lent to a reader.
pub(super) struct OwnedLend {
    pub(super) reader: usize,
    pub(super) slot: usize,
    pub(super) gen: u64,
    pub(super) _keep: Box<dyn OwnedBytes>,
}

impl ShmEndpoint {
    pub(super) fn alloc_lend(&self) -> Option<(usize, u64)> {
        let mut c = self.lend_cursor.get();
        let r = lend::alloc(&self.map, self.me, &mut c);
        self.lend_cursor.set(c);
        r
    }

    /// Turn a frame into what goes into the ring: lend large buffers when
    /// the reader can read them (from [`CMA_BUSY_MIN`] bytes when the ring
    /// is `busy`, else from [`CMA_MIN`]), copy everything else.
    pub(super) fn prepare(&self, frame: Frame, busy: bool) -> Outgoing {
        let header = frame.header;
        let dst = header.dst as usize;
        let can_lend = self.cma && self.map.cma(dst).load(Ordering::Relaxed) != 0;
        let payload = match frame.payload {
            Payload::Borrowed(b) => match &b.lent {
                Lent::Local { ptr, len, done }
                    if can_lend && *len >= if busy { CMA_BUSY_MIN } else { CMA_MIN } =>
                {
                    match self.alloc_lend() {
                        Some((slot, gen)) => {
                            done.hand_over(Box::new(lend::Lend {
                                map: self.map.clone(),
                                me: self.me,
                                reader: dst,
                                slot,
                                gen,
                                result: OnceLock::new(),
                            }));
                            return Outgoing::Rndv {
                                header,
                                addr: *ptr as usize,
                                slot,
                                gen,
                                keep: None,
                            };
                        }
                        None => Payload::Borrowed(b),
                    }
                }
                // Through the ring, straight from the lent buffer.
                Lent::Local { .. } => Payload::Borrowed(b),
                Lent::Remote(_) => {
                    let mut v = vec![0u8; b.len()];
                    let n = b.copy_into(&mut v).unwrap_or(0);
                    v.truncate(n);
                    Payload::Bytes(v)
                }
            },
            Payload::Vec(v) if can_lend && v.bytes().len() >= LEND_VEC_MIN => {
                match self.alloc_lend() {
                    Some((slot, gen)) => {
                        return Outgoing::Rndv {
                            header,
                            addr: v.bytes().as_ptr() as usize,
                            slot,
                            gen,
                            keep: Some(v),
                        }
                    }
                    None => Payload::Vec(v),
                }
            }
            p => p,
        };
        Outgoing::Frame {
            header,
            payload,
            off: 0,
            started: false,
        }
    }

    /// Is there room in the ring to `dst` for a payload of `len` bytes
    /// and its header (a short record's when `short`)?
    #[inline(always)]
    pub(super) fn has_room(&self, dst: usize, r: &mut RingOut, short: bool, len: usize) -> bool {
        // One cell more: a pad before it, or the other half of its line.
        self.free_cells(dst, r, message_cells(short, len) + 1)
    }

    /// Are `need` cells free in the ring to `dst`? (The reader's head is
    /// looked at again only when the last one seen says no.)
    #[inline(always)]
    fn free_cells(&self, dst: usize, r: &mut RingOut, need: u64) -> bool {
        if r.tail - r.head_seen + need <= CELLS as u64 {
            return true;
        }
        r.head_seen = self.map.head(self.me, dst).load(Ordering::Acquire);
        r.tail - r.head_seen + need <= CELLS as u64
    }

    /// Has the reader taken every record written into the ring to `dst`?
    #[inline]
    pub(super) fn ring_empty(&self, dst: usize, r: &mut RingOut) -> bool {
        self.free_cells(dst, r, CELLS as u64)
    }

    /// Is there room for a record of any size in the ring to `dst`?
    #[inline]
    pub(super) fn has_space(&self, dst: usize, r: &mut RingOut) -> bool {
        self.free_cells(dst, r, any_record_room())
    }

    /// Write one slot of `kind` holding `header` (encoded as the kind
    /// wants it, when there is one: a short record's [`SHORT_HEAD`] bytes
    /// or the whole wire header) followed by `body`, and publish it.
    /// Inlined into every caller: a small message's header and payload go
    /// to the slot as fixed stores and one copy.
    #[inline(always)]
    pub(super) fn put_slot(
        &self,
        dst: usize,
        r: &mut RingOut,
        kind: u64,
        header: Option<&Header>,
        body: &[u8],
    ) {
        let at = match (header, kind) {
            (None, _) => 0,
            (Some(_), K_SHORT) => SHORT_HEAD,
            (Some(_), _) => Header::SIZE,
        };
        let used = at + body.len();
        debug_assert!(used <= SLOT_DATA);
        let n = cells(used);
        if n > 1 && r.tail & 1 == 1 {
            // A record of whole lines starts on a line (see `cells`).
            let pad = self.map.cell(self.me, dst, r.tail as usize);
            let c = ctrl(r.tail, K_PAD, 0);
            self.map.at::<AtomicU64>(pad).store(c, Ordering::Release);
            r.tail += 1;
        }
        let off = self.map.cell(self.me, dst, r.tail as usize);
        let data = self.map.bytes(off + 8, used);
        // SAFETY: the slot belongs to the writer (the reader's head has
        // passed it: `has_space`), `data` has room for `used` bytes (bounds
        // checked by `bytes`), and the header and `body` are separate
        // local values.
        unsafe {
            match header {
                Some(h) if kind == K_SHORT => {
                    std::ptr::copy_nonoverlapping(encode_short(h).as_ptr(), data, SHORT_HEAD)
                }
                Some(h) => std::ptr::copy_nonoverlapping(h.encode().as_ptr(), data, Header::SIZE),
                None => {}
            }
            std::ptr::copy_nonoverlapping(body.as_ptr(), data.wrapping_add(at), body.len());
        }
        if n == 1 && r.tail & 1 == 0 {
            // The line's second half, free (`has_room` counts it): a
            // reader that takes this record looks there next, and must
            // find this lap's record or nothing, never older data.
            self.map
                .at::<AtomicU64>(off + CELL)
                .store(0, Ordering::Relaxed);
        }
        let c = ctrl(r.tail, kind, used);
        r.tail += n;
        self.map.at::<AtomicU64>(off).store(c, Ordering::Release);
    }

    /// Write as much of `item` as fits; true when all of it is written.
    pub(super) fn write_item(&self, dst: usize, r: &mut RingOut, item: &mut Outgoing) -> bool {
        loop {
            if !self.has_space(dst, r) {
                return false;
            }
            match item {
                Outgoing::Rndv {
                    header,
                    addr,
                    slot,
                    gen,
                    ..
                } => {
                    let mut rec = [0u8; 24];
                    rec[0..8].copy_from_slice(&(*addr as u64).to_le_bytes());
                    rec[8..12].copy_from_slice(&(*slot as u32).to_le_bytes());
                    rec[16..24].copy_from_slice(&gen.to_le_bytes());
                    self.put_slot(dst, r, K_RNDV, Some(header), &rec);
                    return true;
                }
                Outgoing::Frame {
                    header,
                    payload,
                    off,
                    started,
                } => {
                    let mut lent = None;
                    let bytes: &[u8] = match payload {
                        Payload::Inline(i) => i.bytes(),
                        Payload::Bytes(b) => b,
                        Payload::Vec(v) => v.bytes(),
                        Payload::Borrowed(b) => match &b.lent {
                            Lent::Local { ptr, len, done } => {
                                if done.state.load(Ordering::Acquire) != PENDING {
                                    // The sender withdrew: end what was begun.
                                    if *started {
                                        self.put_slot(dst, r, K_CANCEL, None, &[]);
                                    }
                                    return true;
                                }
                                lent = Some(done);
                                // SAFETY: the completion is still pending
                                // (checked just above, and only this thread
                                // could change it before we finish this
                                // call), so the engine keeps the buffer alive
                                // and unmodified.
                                unsafe { std::slice::from_raw_parts(*ptr, *len) }
                            }
                            // `prepare` copies a re-sent remote borrow.
                            Lent::Remote(_) => &[],
                        },
                    };
                    if !*started && short_form(header, bytes.len()) {
                        self.put_slot(dst, r, K_SHORT, Some(header), bytes);
                        *off = bytes.len();
                        *started = true;
                    } else if !*started {
                        let n = bytes.len().min(SLOT_DATA - Header::SIZE);
                        self.put_slot(dst, r, K_FIRST, Some(header), &bytes[..n]);
                        *off = n;
                        *started = true;
                    } else {
                        let n = (bytes.len() - *off).min(SLOT_DATA);
                        self.put_slot(dst, r, K_CONT, None, &bytes[*off..*off + n]);
                        *off += n;
                    }
                    if *off >= bytes.len() {
                        let len = bytes.len();
                        if lent.is_some() {
                            // Not DONE yet: a lent (above-eager) send must
                            // not run ahead of its receiver. Completing here
                            // let a rooted collective (bcast, reduce) send
                            // message after message while the receiver
                            // drained them into ever more unexpected vectors
                            // (hundreds of MB, every page a fresh fault:
                            // 64 KiB bcast 43 µs). Complete it once the
                            // reader's head passes our last slot instead.
                            // (Kept alive: dropping it would report DROPPED.)
                            if let Payload::Borrowed(b) =
                                std::mem::replace(payload, Payload::Bytes(Vec::new()))
                            {
                                self.unpulled.borrow_mut().push((dst, r.tail, b, len));
                            }
                        }
                        return true;
                    }
                }
            }
        }
    }

    /// Push the queue to `dst` into its ring as far as it goes.
    pub(super) fn drain_queue(&self, dst: usize, o: &mut Out) {
        let start = o.ring.tail;
        while let Some(item) = o.queue.front_mut() {
            if self.write_item(dst, &mut o.ring, item) {
                let item = o.queue.pop_front().expect("front exists");
                self.queued.set(self.queued.get() - 1);
                self.written(dst, item);
                continue;
            }
            // Full: ask the reader to raise us when it frees slots, then
            // look once more (it may have freed them meanwhile).
            self.map
                .space_wanted(self.me, dst)
                .store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            o.ring.head_seen = self.map.head(self.me, dst).load(Ordering::Acquire);
            if o.ring.tail - o.ring.head_seen + any_record_room() > CELLS as u64 {
                break;
            }
        }
        if o.ring.tail != start {
            self.wake_receiver(dst);
        }
    }

    /// An item is fully in the ring: keep a lent vector alive, and a
    /// copy's buffer for the next copy.
    pub(super) fn written(&self, dst: usize, item: Outgoing) {
        match item {
            Outgoing::Rndv {
                slot,
                gen,
                keep: Some(keep),
                ..
            } => self.owned.borrow_mut().push(OwnedLend {
                reader: dst,
                slot,
                gen,
                _keep: keep,
            }),
            Outgoing::Frame {
                payload: Payload::Bytes(v),
                ..
            } => {
                let mut spare = self.spare.borrow_mut();
                if v.capacity() <= SPARE_ONE && spare.bytes + v.capacity() <= SPARE_BYTES {
                    spare.bytes += v.capacity();
                    spare.bufs.push(v);
                }
            }
            _ => {}
        }
    }

    /// A copy of `data` for a frame that waits in a queue: short data
    /// inline, longer data in a spare buffer when one is large enough.
    pub(super) fn queued_copy(&self, data: &[u8]) -> Payload {
        if let Some(i) = Inline::new(data) {
            return Payload::Inline(i);
        }
        let mut spare = self.spare.borrow_mut();
        let Some(k) = spare.bufs.iter().rposition(|v| v.capacity() >= data.len()) else {
            return Payload::Bytes(data.to_vec());
        };
        let mut v = spare.bufs.swap_remove(k);
        spare.bytes -= v.capacity();
        v.clear();
        v.extend_from_slice(data);
        Payload::Bytes(v)
    }

    /// The receiver is gone: drop what waits for it.
    pub(super) fn discard(&self, dst: usize, item: Outgoing) {
        if let Outgoing::Rndv { slot, gen, .. } = &item {
            // Nobody will read it: report it dropped to the lender's
            // completion (or to the owned-vector reaper).
            let w = self.map.lend(self.me, *slot).0;
            let _ = w.compare_exchange(
                (gen << 8) | lend::L_PENDING,
                (gen << 8) | lend::L_DROPPED,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        self.written(dst, item);
    }

    /// Push every queue on (dropping those of receivers that are gone).
    pub(super) fn flush(&self) {
        let mut outs = self.out.borrow_mut();
        for (dst, o) in outs.iter_mut().enumerate() {
            if o.queue.is_empty() {
                continue;
            }
            if !self.receiver_open(dst) {
                while let Some(item) = o.queue.pop_front() {
                    self.queued.set(self.queued.get() - 1);
                    self.discard(dst, item);
                }
                continue;
            }
            self.drain_queue(dst, o);
        }
    }

    /// Free the lend slots of handed-off vectors that were read (or dropped).
    pub(super) fn reap_owned(&self) {
        let mut owned = self.owned.borrow_mut();
        owned.retain(|l| {
            let fin = lend::state(&self.map, self.me, l.slot, l.gen);
            if fin.is_some() {
                lend::free(&self.map, self.me, l.slot, l.gen);
                return false;
            }
            if !self.receiver_open(l.reader) {
                let _ = lend::revoke(&self.map, self.me, l.slot, l.gen, l.reader);
                return false;
            }
            true
        });
    }

    /// Complete the streamed lent buffers the reader has taken out of the
    /// ring (or that nobody will take: reader gone, sender withdrew).
    pub(super) fn unpulled_reap(&self) {
        self.unpulled.borrow_mut().retain(|(dst, end, b, len)| {
            let Lent::Local { done, .. } = &b.lent else {
                return false;
            };
            if done.state.load(Ordering::Acquire) != PENDING {
                return false;
            }
            let head = self.map.head(self.me, *dst).load(Ordering::Acquire);
            if head >= *end || !self.receiver_open(*dst) {
                done.taken.store(*len, Ordering::Relaxed);
                done.set(DONE);
                return false;
            }
            true
        });
    }

    /// Is a streamed lent buffer taken out of its ring? Before sleeping:
    /// asks the reader to raise us when it takes slots (`space_wanted`).
    pub(super) fn unpulled_ready(&self) -> bool {
        self.unpulled.borrow().iter().any(|(dst, end, b, _)| {
            let Lent::Local { done, .. } = &b.lent else {
                return true;
            };
            self.map
                .space_wanted(self.me, *dst)
                .store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            done.state.load(Ordering::Acquire) != PENDING
                || self.map.head(self.me, *dst).load(Ordering::Acquire) >= *end
                || !self.receiver_open(*dst)
        })
    }
}
