//! Reading the rings: the record at a ring's head, the frame it
//! completes (or the posted receive it goes straight into), moving the
//! head past it and waking a writer that waits for room; the fast path of
//! a blocking receive from one sender. The protocol is in the module docs
//! of [`super`], the writing side in `ring.rs`.

use super::ring::{
    cells, decode_short, parse_ctrl, In, Offer, Partial, K_CANCEL, K_CONT, K_FIRST, K_PAD, K_RNDV,
    K_SHORT, RNDV_LEN,
};
use super::segment::{self, Mapping, CELL, CELLS};
use super::wake::wake_always;
use super::{lend, ShmEndpoint, DOORBELL_MIN};
use crate::transport::{Arrival, Borrowed, Direct, Frame, Payload, Taker};
use crate::wire::{Header, Kind};
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// A message whole in its record (`h`, its payload `body`): taken by
/// `offer` when it is data the offer takes (the eager fast path: copied
/// straight from the ring), else a frame of its own.
#[inline(always)]
fn whole(h: Header, body: &[u8], offer: Offer<'_, '_>) -> Arrival {
    if let Some(taker) = offer {
        if h.kind == Kind::Data && taker.take(&h, body) {
            return Arrival::Taken;
        }
    }
    Arrival::Frame(Frame {
        header: h,
        payload: Payload::copy_of(body),
    })
}

impl ShmEndpoint {
    /// Take the frame a slot completes, if any; a data frame whole in its
    /// first slot is offered to `offer` first (the eager fast path: copied
    /// straight from the slot by whoever takes it, no frame built).
    pub(super) fn take_slot(
        &self,
        src: usize,
        inc: &mut In,
        kind: u64,
        data: &[u8],
        offer: Offer<'_, '_>,
    ) -> Option<Arrival> {
        match kind {
            K_SHORT => {
                let Some((h, body)) = decode_short(src, self.me, data) else {
                    self.protocol("short record without its header");
                    return None;
                };
                Some(whole(h, body, offer))
            }
            K_FIRST | K_RNDV => {
                let h = match Header::decode(data) {
                    Ok(h) if h.src as usize == src && h.dst as usize == self.me => h,
                    Ok(h) => {
                        self.protocol(&format!(
                            "frame from endpoint {} to {} arrived in the ring {src} → {}",
                            h.src, h.dst, self.me
                        ));
                        return None;
                    }
                    Err(e) => {
                        self.protocol(&e.to_string());
                        return None;
                    }
                };
                let body = &data[Header::SIZE..];
                // A SyncAck's `len` is a count, not a payload length.
                let len = usize::try_from(h.stream_payload_len()).unwrap_or(usize::MAX);
                if kind == K_RNDV {
                    if body.len() < RNDV_LEN - Header::SIZE {
                        self.protocol("short rendezvous record");
                        return None;
                    }
                    let u64_at =
                        |o: usize| u64::from_le_bytes(body[o..o + 8].try_into().expect("8 bytes"));
                    let slot = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
                    if slot as usize >= segment::LENDS {
                        self.protocol("rendezvous names a lend slot out of range");
                        return None;
                    }
                    let remote = lend::Remote {
                        map: self.map.clone(),
                        lender: src,
                        pid: self.map.pid(src).load(Ordering::Relaxed) as i32,
                        addr: u64_at(0) as usize,
                        len,
                        slot: slot as usize,
                        gen: u64_at(16),
                        settled: false,
                    };
                    return Some(Arrival::Frame(Frame {
                        header: h,
                        payload: Payload::Borrowed(Borrowed::remote(Box::new(remote))),
                    }));
                }
                if body.len() >= len {
                    return Some(whole(h, &body[..len], offer));
                }
                // A posted receive that can hold it gets every slot
                // straight from the ring (no reassembly, one copy less).
                if let Some(taker) = offer.filter(|_| h.kind == Kind::Data) {
                    if let Some(mut claim) = taker.claim(&h) {
                        if claim.write(0, body) {
                            inc.partial = Some(Partial::Claimed {
                                header: h,
                                claim,
                                got: body.len(),
                            });
                            return None;
                        }
                        // Too small after all: given back at once.
                        let mut v = Vec::with_capacity(len.min(64 << 20));
                        v.extend_from_slice(body);
                        inc.partial = Some(Partial::Own(h, v));
                        return Some(Arrival::Withdrawn(src));
                    }
                }
                let mut v = Vec::with_capacity(len.min(64 << 20));
                v.extend_from_slice(body);
                inc.partial = Some(Partial::Own(h, v));
                None
            }
            K_PAD => None,
            K_CANCEL => match inc.partial.take() {
                Some(Partial::Claimed { .. }) => Some(Arrival::Withdrawn(src)),
                Some(Partial::Own(..)) => {
                    // Its sender counted it sent: it is out of flight now
                    // (the deadlock detector compares the two counts).
                    self.drained.set(self.drained.get() + 1);
                    None
                }
                None => None,
            },
            K_CONT => match inc.partial.as_mut()? {
                Partial::Own(h, v) => {
                    let total = h.stream_payload_len();
                    let need = (total as usize).saturating_sub(v.len());
                    v.extend_from_slice(&data[..need.min(data.len())]);
                    if (v.len() as u64) < total {
                        return None;
                    }
                    let Some(Partial::Own(header, v)) = inc.partial.take() else {
                        unreachable!("matched just above")
                    };
                    Some(Arrival::Frame(Frame {
                        header,
                        payload: Payload::Bytes(v),
                    }))
                }
                Partial::Claimed { header, claim, got } => {
                    let total = header.len as usize;
                    let n = total.saturating_sub(*got).min(data.len());
                    claim.write(*got, &data[..n]);
                    *got += n;
                    if *got < total {
                        return None;
                    }
                    let header = *header;
                    inc.partial = None;
                    Some(Arrival::Filled(header))
                }
            },
            _ => {
                self.protocol(&format!("unknown slot kind {kind}"));
                None
            }
        }
    }

    pub(super) fn protocol(&self, what: &str) {
        if !self.warned.replace(true) {
            eprintln!(
                "hypercomm shm endpoint {}: protocol error, frame skipped: {what}",
                self.me
            );
        }
    }

    /// Read the ring from `src` up to the next complete frame (offered to
    /// `offer` first, see `take_slot`).
    #[inline]
    pub(super) fn poll_ring(&self, src: usize, mut offer: Offer<'_, '_>) -> Option<Arrival> {
        let mut incs = self.inc.borrow_mut();
        let inc = &mut incs[src];
        if offer.is_none() && matches!(inc.partial, Some(Partial::Claimed { .. })) {
            // Whoever claimed the buffer is not asking: it could not be
            // told when the message is in.
            inc.partial = inc.partial.take().map(Partial::unclaim);
        }
        let mut consumed = false;
        let out = loop {
            let off = Mapping::ring_cell(inc.ring, inc.head as usize);
            let c = self.map.at::<AtomicU64>(off).load(Ordering::Acquire);
            let Some((kind, used)) = parse_ctrl(c, inc.head) else {
                break None;
            };
            // SAFETY: the control word (acquire) says the writer finished
            // this record (contiguous: one near the end of the cells runs
            // on into the ring's slack); it will not write it again before
            // we advance the head below, after the last use of `data`.
            let data = unsafe { std::slice::from_raw_parts(self.map.bytes(off + 8, used), used) };
            let f = self.take_slot(src, inc, kind, data, offer.as_deref_mut());
            self.pass_record(inc, off, used);
            consumed = true;
            match f {
                // Taken by the offer: nothing to hand over, read on (the
                // engine would only ask again).
                Some(Arrival::Taken) => self.drained.set(self.drained.get() + 1),
                Some(_) => break f,
                None => {}
            }
        };
        if consumed {
            self.space_freed(inc.ring, src);
        }
        out
    }

    /// The record of `used` data bytes at `off`, the head of `inc`, is
    /// read: move the head past it.
    #[inline(always)]
    fn pass_record(&self, inc: &mut In, off: usize, used: usize) {
        let n = cells(used);
        self.clear_rest(off, inc.head, n);
        inc.head += n;
        self.map
            .ring_head(inc.ring)
            .store(inc.head, Ordering::Release);
    }

    /// Records were taken from the ring at `ring` (from `src`): wake its
    /// writer if it waits for space.
    #[inline(always)]
    fn space_freed(&self, ring: usize, src: usize) {
        fence(Ordering::SeqCst);
        let want = self.map.ring_space_wanted(ring);
        if want.load(Ordering::Relaxed) != 0 {
            want.store(0, Ordering::Relaxed);
            wake_always(&self.map, src);
        }
    }

    /// The fast path of a blocking receive from `src`
    /// ([`crate::transport::Transport::take_from`]): the record at the
    /// head of its ring, when it is a data message whole in its slot and
    /// `taker` takes it. Only when this endpoint has nothing of its own to
    /// do (no frame queued to flush, no lend to reap), as every other
    /// case is `next_arrival`'s. (Not inlined: one call per poll, which is
    /// also how `bench/callgrind_oneway.py` counts polls.)
    #[inline(never)]
    pub(super) fn take_next_from(&self, src: usize, taker: &mut dyn Taker) -> Direct {
        if src == self.me || src >= self.n || self.busy() {
            return Direct::Other;
        }
        self.take_head(src, taker)
    }

    /// The fast path of a blocking receive from any source: the rings in
    /// turn from where the last take left off, each as `take_next_from`
    /// does; `Other` at the first head that is not taken, or when this
    /// endpoint's own ring holds anything (the general path's). In jobs of
    /// more than `DOORBELL_MIN` endpoints an unchanged doorbell since the
    /// last scan that found every ring empty (this one's or the general
    /// path's) means nothing came, as in `next_arrival`.
    #[inline(never)]
    pub(super) fn take_next_any(&self, taker: &mut dyn Taker) -> Direct {
        if self.busy() {
            return Direct::Other;
        }
        let bell = if self.n > DOORBELL_MIN {
            let bell = self.map.doorbell(self.me).load(Ordering::Acquire);
            if bell == self.bell_seen.get() && !self.rescan.get() {
                return Direct::Empty;
            }
            Some(bell)
        } else {
            None
        };
        let start = self.next_poll.get();
        for k in 0..self.n {
            let src = (start + k) % self.n;
            let got = if src == self.me {
                match self.to_self.get() && self.slot_waiting(src) {
                    true => Direct::Other,
                    false => Direct::Empty,
                }
            } else {
                self.take_head(src, taker)
            };
            match got {
                Direct::Empty => {}
                Direct::Taken => {
                    self.next_poll.set((src + 1) % self.n);
                    self.rescan.set(true);
                    return Direct::Taken;
                }
                Direct::Other => {
                    self.rescan.set(true);
                    return Direct::Other;
                }
            }
        }
        if let Some(bell) = bell {
            self.bell_seen.set(bell);
            self.rescan.set(false);
        }
        Direct::Empty
    }

    /// Work of this endpoint's own that only the general path does: frames
    /// queued to flush, lends to reap or to pull.
    #[inline(always)]
    fn busy(&self) -> bool {
        self.queued.get() > 0
            || !self.owned.borrow().is_empty()
            || !self.unpulled.borrow().is_empty()
    }

    /// The record at the head of the ring from `src` (another endpoint),
    /// taken when it is a whole data message `taker` takes.
    #[inline(always)]
    fn take_head(&self, src: usize, taker: &mut dyn Taker) -> Direct {
        let mut incs = self.inc.borrow_mut();
        let inc = &mut incs[src];
        let mut off = Mapping::ring_cell(inc.ring, inc.head as usize);
        let mut c = self.map.at::<AtomicU64>(off).load(Ordering::Acquire);
        if parse_ctrl(c, inc.head).is_some_and(|(kind, _)| kind == K_PAD) {
            // A pad before a record of whole lines: pass it, look on.
            self.pass_record(inc, off, 0);
            off = Mapping::ring_cell(inc.ring, inc.head as usize);
            c = self.map.at::<AtomicU64>(off).load(Ordering::Acquire);
        }
        let Some((kind, used)) = parse_ctrl(c, inc.head) else {
            return Direct::Empty;
        };
        if (kind != K_SHORT && kind != K_FIRST) || inc.partial.is_some() {
            return Direct::Other;
        }
        // SAFETY: as in `poll_ring`: the writer finished this record and
        // will not write it again before the head passes it, below, after
        // the last use of `data`.
        let data = unsafe { std::slice::from_raw_parts(self.map.bytes(off + 8, used), used) };
        // Anything malformed is the general path's to report.
        let (h, body) = if kind == K_SHORT {
            match decode_short(src, self.me, data) {
                Some(x) => x,
                None => return Direct::Other,
            }
        } else {
            let Ok(h) = Header::decode(data) else {
                return Direct::Other;
            };
            let body = &data[Header::SIZE..];
            match usize::try_from(h.len) {
                Ok(len)
                    if len <= body.len()
                        && h.kind == Kind::Data
                        && h.src as usize == src
                        && h.dst as usize == self.me =>
                {
                    (h, &body[..len])
                }
                _ => return Direct::Other,
            }
        };
        if !taker.take(&h, body) {
            return Direct::Other;
        }
        self.pass_record(inc, off, used);
        self.drained.set(self.drained.get() + 1);
        self.space_freed(inc.ring, src);
        Direct::Taken
    }

    /// Clear the first word of each further cell of the record at `off`
    /// (ring position `pos`, `n` cells) before the head passes it: the
    /// record's data there could otherwise look like the control word of
    /// a later record at that cell. Cells in the slack are never read as
    /// control words. (The writer clearing cells instead was measured
    /// slower; see BENCHMARKS.md.)
    #[inline(always)]
    fn clear_rest(&self, off: usize, pos: u64, n: u64) {
        // Only further cells that start a line (see `ring::cells`): a
        // record of more than one cell starts on a line and takes whole
        // lines.
        let first = pos as usize % CELLS;
        let within = (n as usize).min(CELLS - first);
        self.map
            .clear_words(off + 2 * CELL, 2 * CELL, (within / 2).saturating_sub(1));
    }

    /// Is a record waiting in the ring from `src`? The quick look of every
    /// pass of a wait, before `poll_ring`: one load from an offset kept
    /// since attach.
    #[inline(always)]
    pub(super) fn slot_waiting(&self, src: usize) -> bool {
        let incs = self.inc.borrow();
        let inc = &incs[src];
        let off = Mapping::ring_cell(inc.ring, inc.head as usize);
        let c = self.map.at::<AtomicU64>(off).load(Ordering::Acquire);
        parse_ctrl(c, inc.head).is_some()
    }

    /// Has `src` sent us records we have not read yet? (Asked by a send,
    /// which may come from inside a read of the rings — a credit frame an
    /// offer sends — and then says yes.)
    pub(super) fn sent_us_unread(&self, src: usize) -> bool {
        if self.inc.try_borrow_mut().is_err() {
            return true;
        }
        self.slot_waiting(src)
    }

    /// A claimed buffer is given back: what streams in from `src` goes on
    /// into a vector of our own.
    pub(super) fn unclaim_from(&self, src: usize) {
        let mut incs = self.inc.borrow_mut();
        if let Some(inc) = incs.get_mut(src) {
            inc.partial = inc.partial.take().map(Partial::unclaim);
        }
    }

    /// Drop every frame that arrived (lent buffers are reported dropped).
    pub(super) fn drain_incoming(&self) {
        for src in 0..self.n {
            // Nothing is written into a claimed buffer any more.
            self.unclaim_from(src);
            while let Some(f) = self.poll_ring(src, None) {
                self.drained.set(self.drained.get() + 1);
                drop(f);
            }
            self.inc.borrow_mut()[src].partial = None;
        }
    }
}
