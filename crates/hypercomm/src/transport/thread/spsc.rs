//! An unbounded single-producer single-consumer queue of frames: linked
//! segments of slots, each slot with its own sequence number, so that a
//! push and the pop that takes it touch one slot's cache lines and nothing
//! shared besides (no counter, no lock).
//!
//! The producer writes a slot and then its number (release); the consumer
//! sees the number it waits for (acquire) and moves the frame out, or lets
//! the engine's posted receive take a short message where it lies. The
//! consumer never writes a slot. A data message of at most [`SHORT`] bytes
//! is written as its header and bytes only, so that slot, header and
//! payload share one cache line, as in the shm transport's cells.
//!
//! When the producer fills a segment it links a new one; the consumer
//! frees a segment after taking its last slot and following the link. The first segment is allocated on
//! the first push, so idle pairs cost one small struct. A finished segment
//! is handed back to the producer for its next link (one spare), so a
//! steady stream allocates nothing: allocating a segment of 64 slots and
//! freeing it on the other thread cost every 64th message a few
//! microseconds.

use super::CachePadded;
use super::{Frame, Payload};
use crate::wire::Header;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

const SEG: usize = 64;

/// Largest payload written as header and bytes in the slot's first line.
pub(crate) const SHORT: usize = 64 - 8 - std::mem::size_of::<Header>();

/// Bits of a slot word that hold the sequence number; above them, the
/// form of the body (0: a [`Frame`]; `1 + len`: a header and `len` bytes).
const SEQ_BITS: u32 = 56;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

/// Bytes of a slot's body: a whole frame, or a header and [`SHORT`] bytes.
const BODY: usize = 120;
const _: () = assert!(std::mem::size_of::<Frame>() <= BODY && SHORT <= 16);

/// One slot: its word (the producer's position plus one once the body is
/// written, and the body's form) and its body. The consumer knows which
/// number it waits for, so it never writes the slot back (no line bounces
/// to it and back per message); a recycled segment's old numbers are all
/// smaller.
#[repr(C, align(64))]
struct Slot {
    word: AtomicU64,
    body: UnsafeCell<MaybeUninit<[u64; BODY / 8]>>,
}

impl Slot {
    fn frame(&self) -> *mut Frame {
        self.body.get().cast()
    }
    fn header(&self) -> *mut Header {
        self.body.get().cast()
    }
    fn bytes(&self) -> *mut u8 {
        // SAFETY: within the body (the header's size plus SHORT <= BODY).
        unsafe {
            self.body
                .get()
                .cast::<u8>()
                .add(std::mem::size_of::<Header>())
        }
    }
}

struct Segment {
    slots: [Slot; SEG],
    next: AtomicPtr<Segment>,
}

impl Segment {
    fn new() -> *mut Segment {
        Box::into_raw(Box::new(Segment {
            slots: std::array::from_fn(|_| Slot {
                word: AtomicU64::new(0),
                body: UnsafeCell::new(MaybeUninit::uninit()),
            }),
            next: AtomicPtr::new(ptr::null_mut()),
        }))
    }
}

struct End {
    seg: *mut Segment,
    index: usize,
    /// Frames pushed (the tail) or popped (the head) so far.
    pos: u64,
}

/// What [`Spsc::pop_unless`] found.
pub(crate) enum Popped {
    /// The queue was empty.
    Nothing,
    /// The oldest frame, which the caller did not use in place.
    Frame(Frame),
    /// The caller used the oldest frame in place; it is gone.
    Used,
}

/// The queue. `push` must only be called by one thread at a time (the
/// producer), `pop` by one thread at a time (the consumer).
pub(crate) struct Spsc {
    first: AtomicPtr<Segment>,
    /// A finished segment, every slot taken and its link null, for the
    /// producer's next one (null: none).
    spare: AtomicPtr<Segment>,
    tail: CachePadded<UnsafeCell<End>>,
    head: CachePadded<UnsafeCell<End>>,
}

// SAFETY: the producer end is touched only by `push`, the consumer end only
// by `pop`/`drop`, and the callers guarantee one thread per end at a time;
// slots are handed over through release/acquire flags.
unsafe impl Send for Spsc {}
// SAFETY: as above.
unsafe impl Sync for Spsc {}

impl Spsc {
    pub(crate) fn new() -> Spsc {
        Spsc {
            first: AtomicPtr::new(ptr::null_mut()),
            spare: AtomicPtr::new(ptr::null_mut()),
            tail: CachePadded::new(UnsafeCell::new(End {
                seg: ptr::null_mut(),
                index: 0,
                pos: 0,
            })),
            head: CachePadded::new(UnsafeCell::new(End {
                seg: ptr::null_mut(),
                index: 0,
                pos: 0,
            })),
        }
    }

    /// Append a frame (producer only).
    ///
    /// # Safety
    /// Only one thread may push at a time.
    #[inline]
    pub(crate) unsafe fn push(&self, f: Frame) {
        // SAFETY: the producer alone (contract).
        let (slot, word) = unsafe { self.next_slot() };
        // SAFETY: exclusive access to an empty slot (`next_slot`).
        unsafe { slot.frame().write(f) };
        slot.word.store(word, Ordering::Release);
    }

    /// Append a data message of at most [`SHORT`] bytes as its header and
    /// bytes (producer only); the consumer sees it as a frame with an
    /// inline payload.
    ///
    /// # Safety
    /// Only one thread may push at a time.
    #[inline]
    pub(crate) unsafe fn push_short(&self, header: &Header, data: &[u8]) {
        debug_assert!(data.len() <= SHORT);
        // SAFETY: the producer alone (contract).
        let (slot, word) = unsafe { self.next_slot() };
        // SAFETY: exclusive access to an empty slot (`next_slot`); the
        // header and the bytes fit its body.
        unsafe {
            slot.header().write(*header);
            ptr::copy_nonoverlapping(data.as_ptr(), slot.bytes(), data.len());
        }
        slot.word.store(
            word | (1 + data.len() as u64) << SEQ_BITS,
            Ordering::Release,
        );
    }

    /// The next slot to write (linking a segment when needed) and its
    /// number; the caller writes the body, then the number.
    ///
    /// # Safety
    /// Only one thread may push at a time.
    #[inline(always)]
    unsafe fn next_slot(&self) -> (&Slot, u64) {
        // SAFETY: the tail is the producer's alone (contract).
        let t = unsafe { &mut *self.tail.get() };
        if t.seg.is_null() {
            let s = Segment::new();
            t.seg = s;
            t.index = 0;
            self.first.store(s, Ordering::Release);
        } else if t.index == SEG {
            let spare = self.spare.swap(ptr::null_mut(), Ordering::Acquire);
            let s = if spare.is_null() {
                Segment::new()
            } else {
                spare
            };
            // SAFETY: t.seg is live: the consumer frees a segment only after
            // following its `next`, which is still null here.
            unsafe { (*t.seg).next.store(s, Ordering::Release) };
            t.seg = s;
            t.index = 0;
        }
        // SAFETY: the segment is live (the consumer has not passed it) and
        // this slot's number is not yet written, so the consumer does not
        // read it.
        let slot = unsafe { &(*t.seg).slots[t.index] };
        t.index += 1;
        t.pos += 1;
        (slot, t.pos & SEQ_MASK)
    }

    /// Take the oldest frame (consumer only).
    ///
    /// # Safety
    /// Only one thread may pop at a time.
    #[inline]
    pub(crate) unsafe fn pop(&self) -> Option<Frame> {
        // SAFETY: the consumer alone (contract).
        unsafe { self.pop_front() }
    }

    /// Show the oldest frame's header and inline payload to `used` where
    /// they lie (a frame whose payload is not inline is not shown); when
    /// `used` says it took them, the frame is dropped there, else moved
    /// out (consumer only). A short message offered this way is never
    /// copied as a whole.
    ///
    /// # Safety
    /// Only one thread may pop at a time.
    #[inline]
    pub(crate) unsafe fn pop_unless(&self, used: impl FnOnce(&Header, &[u8]) -> bool) -> Popped {
        // SAFETY: the consumer alone (contract).
        match unsafe { self.take_if(used) } {
            None => Popped::Nothing,
            Some(true) => Popped::Used,
            // SAFETY: as above; the frame refused is still the oldest.
            Some(false) => unsafe { self.pop_front() }.map_or(Popped::Nothing, Popped::Frame),
        }
    }

    /// Take the oldest frame out as a frame of its own (a short message's
    /// bytes copied out of its slot).
    ///
    /// # Safety
    /// Only the consumer may call it.
    #[inline]
    unsafe fn pop_front(&self) -> Option<Frame> {
        // SAFETY: the consumer alone (contract); the slot is taken (read)
        // exactly once, here, and then passed.
        unsafe {
            let (slot, word) = self.front()?;
            self.advance();
            Some(match (word >> SEQ_BITS) as usize {
                0 => slot.frame().read(),
                k => Frame {
                    header: *slot.header(),
                    payload: Payload::copy_of(std::slice::from_raw_parts(
                        slot.bytes(),
                        (k - 1).min(SHORT),
                    )),
                },
            })
        }
    }

    /// Show the oldest frame's header and inline payload to `used` where
    /// they lie (a frame whose payload is not inline is not shown), and
    /// take it out only when `used` took them (`Some(true)`): otherwise it
    /// stays the oldest, untouched (`Some(false)`). `None`: empty.
    ///
    /// # Safety
    /// Only the consumer may call it.
    #[inline]
    pub(crate) unsafe fn take_if(&self, used: impl FnOnce(&Header, &[u8]) -> bool) -> Option<bool> {
        // SAFETY: the consumer alone (contract).
        let (slot, word) = unsafe { self.front() }?;
        // SAFETY: the number says the producer finished writing the slot;
        // it is dropped (once) only when taken, and then passed.
        unsafe {
            let taken = match (word >> SEQ_BITS) as usize {
                0 => {
                    let frame = slot.frame();
                    let taken = match &(*frame).payload {
                        Payload::Inline(i) => used(&(*frame).header, i.bytes()),
                        _ => false,
                    };
                    if taken {
                        ptr::drop_in_place(frame);
                    }
                    taken
                }
                k => used(
                    &*slot.header(),
                    std::slice::from_raw_parts(slot.bytes(), (k - 1).min(SHORT)),
                ),
            };
            if taken {
                self.advance();
            }
            Some(taken)
        }
    }

    /// The oldest slot and its word, if the producer has finished one
    /// (moving on to the next segment when the head's is used up).
    ///
    /// # Safety
    /// Only the consumer may call it; the slot is the oldest until
    /// [`Spsc::advance`].
    #[inline(always)]
    unsafe fn front(&self) -> Option<(&Slot, u64)> {
        // SAFETY: the head is the consumer's alone (contract).
        let h = unsafe { &mut *self.head.get() };
        if h.seg.is_null() {
            let s = self.first.load(Ordering::Acquire);
            if s.is_null() {
                return None;
            }
            h.seg = s;
            h.index = 0;
        }
        if h.index == SEG {
            // SAFETY: h.seg is live: only this consumer frees segments.
            let next = unsafe { (*h.seg).next.load(Ordering::Acquire) };
            if next.is_null() {
                return None;
            }
            // Every slot of the old segment has been taken and the producer
            // has moved on to `next`, so nobody uses it any more: it
            // becomes the spare, or is freed.
            let old = h.seg;
            // SAFETY: live, and ours alone (above).
            unsafe { (*old).next.store(ptr::null_mut(), Ordering::Relaxed) };
            if self
                .spare
                .compare_exchange(ptr::null_mut(), old, Ordering::Release, Ordering::Relaxed)
                .is_err()
            {
                // SAFETY: as above; not handed to the producer.
                drop(unsafe { Box::from_raw(old) });
            }
            h.seg = next;
            h.index = 0;
        }
        // SAFETY: live segment, as above.
        let slot = unsafe { &(*h.seg).slots[h.index] };
        let word = slot.word.load(Ordering::Acquire);
        // The number says whether the producer finished writing this slot;
        // it will not write it again before the segment comes back to it
        // as the spare. Nothing is written back: the next body here has a
        // larger number.
        (word & SEQ_MASK == (h.pos + 1) & SEQ_MASK).then_some((slot, word))
    }

    /// Pass the oldest slot (found by [`Spsc::front`]).
    ///
    /// # Safety
    /// Only the consumer may call it, after `front` found a slot, whose
    /// body it has taken (dropped or read) or will take before the next
    /// `front`.
    #[inline(always)]
    unsafe fn advance(&self) {
        // SAFETY: the head is the consumer's alone (contract).
        let h = unsafe { &mut *self.head.get() };
        h.pos += 1;
        h.index += 1;
    }

    /// Whether a pop would find a frame (consumer only; a hint).
    ///
    /// # Safety
    /// Only the consumer may call it.
    #[inline(always)]
    pub(crate) unsafe fn is_empty(&self) -> bool {
        // SAFETY: the head is the consumer's alone.
        let h = unsafe { &*self.head.get() };
        if h.seg.is_null() {
            return self.first.load(Ordering::Acquire).is_null();
        }
        if h.index == SEG {
            // SAFETY: live segment.
            let next = unsafe { (*h.seg).next.load(Ordering::Acquire) };
            // SAFETY: a linked segment is live until the consumer frees it.
            return next.is_null()
                || unsafe { (*next).slots[0].word.load(Ordering::Acquire) } & SEQ_MASK
                    != (h.pos + 1) & SEQ_MASK;
        }
        // SAFETY: live segment.
        let word = unsafe { (*h.seg).slots[h.index].word.load(Ordering::Acquire) };
        word & SEQ_MASK != (h.pos + 1) & SEQ_MASK
    }
}

impl Drop for Spsc {
    fn drop(&mut self) {
        // Both ends are gone (we have `&mut self`): drop what is left, so
        // lenders of borrowed payloads learn the frames were not read.
        // SAFETY: exclusive access.
        while let Some(f) = unsafe { self.pop() } {
            drop(f);
        }
        let h = self.head.get_mut();
        let mut s = if h.seg.is_null() {
            *self.first.get_mut()
        } else {
            h.seg
        };
        while !s.is_null() {
            // SAFETY: we own every remaining segment; all ready slots were
            // popped above, so no frame is left inside.
            let b = unsafe { Box::from_raw(s) };
            s = b.next.load(Ordering::Acquire);
        }
        let spare = *self.spare.get_mut();
        if !spare.is_null() {
            // SAFETY: ours alone, empty (every frame in it was taken).
            drop(unsafe { Box::from_raw(spare) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Payload;
    use crate::wire::{Header, Kind};

    fn frame(i: u64) -> Frame {
        Frame {
            header: Header {
                kind: Kind::Data,
                flags: 0,
                src: 0,
                dst: 1,
                context: 0,
                tag: 0,
                id: i,
                len: 0,
            },
            payload: Payload::Bytes(vec![i as u8; (i % 50) as usize]),
        }
    }

    #[test]
    fn fifo_across_threads_and_segments() {
        let q = std::sync::Arc::new(Spsc::new());
        let q2 = q.clone();
        let n = 100_000u64;
        let t = std::thread::spawn(move || {
            for i in 0..n {
                // SAFETY: this thread is the only producer.
                unsafe { q2.push(frame(i)) };
            }
        });
        let mut next = 0;
        while next < n {
            // SAFETY: this thread is the only consumer.
            if let Some(f) = unsafe { q.pop() } {
                assert_eq!(f.header.id, next);
                assert_eq!(f.payload.len(), (next % 50) as usize);
                next += 1;
            }
        }
        t.join().unwrap();
        // SAFETY: only consumer.
        assert!(unsafe { q.pop() }.is_none());
    }

    /// Segments come back as spares: a reused one shows no stale frame
    /// and keeps the order.
    #[test]
    fn spare_segments_start_empty() {
        let q = Spsc::new();
        let mut next = 0u64;
        for round in 0..(SEG as u64 * 6) {
            // Alternately one and three frames in flight.
            let k = 1 + 2 * (round % 2);
            for i in 0..k {
                // SAFETY: single thread.
                unsafe { q.push(frame(round * 10 + i)) };
            }
            for i in 0..k {
                // SAFETY: single thread.
                let f = unsafe { q.pop() }.expect("a frame pushed");
                assert_eq!(f.header.id, round * 10 + i);
                next += 1;
            }
            // SAFETY: single thread.
            assert!(unsafe { q.pop() }.is_none(), "stale frame after {next}");
            // SAFETY: single thread.
            assert!(unsafe { q.is_empty() });
        }
        assert!(!q.spare.load(Ordering::Relaxed).is_null());
    }

    #[test]
    fn leftovers_are_dropped() {
        let q = Spsc::new();
        for i in 0..(SEG as u64 * 3 + 5) {
            // SAFETY: single thread.
            unsafe { q.push(frame(i)) };
        }
        // SAFETY: single thread.
        assert_eq!(unsafe { q.pop() }.unwrap().header.id, 0);
        drop(q);
    }

    /// Short messages (header and bytes in the slot) and whole frames
    /// interleave in order across threads and segments; a short one shown
    /// in place and used is gone, one not used comes out as a frame with
    /// the same header and bytes.
    #[test]
    fn short_messages_and_frames_interleave() {
        let q = std::sync::Arc::new(Spsc::new());
        let q2 = q.clone();
        let n = 20_000u64;
        let body = |i: u64| -> Vec<u8> {
            (0..(i % (SHORT as u64 + 1)))
                .map(|k| (i + k) as u8)
                .collect()
        };
        let t = std::thread::spawn(move || {
            for i in 0..n {
                if i % 3 == 0 {
                    // SAFETY: this thread is the only producer.
                    unsafe { q2.push(frame(i)) };
                } else {
                    let mut h = frame(i).header;
                    h.len = body(i).len() as u64;
                    // SAFETY: as above.
                    unsafe { q2.push_short(&h, &body(i)) };
                }
            }
        });
        let mut next = 0;
        while next < n {
            let mut shown = None;
            // Use every fourth message in place.
            // SAFETY: this thread is the only consumer.
            let got = unsafe {
                q.pop_unless(|h, b| {
                    shown = Some((h.id, b.to_vec()));
                    h.id % 4 == 0
                })
            };
            match got {
                Popped::Nothing => continue,
                Popped::Used => {
                    let (id, b) = shown.expect("shown before used");
                    assert_eq!(id, next);
                    assert_eq!(id % 4, 0);
                    if next % 3 != 0 {
                        assert_eq!(b, body(next));
                    }
                }
                Popped::Frame(f) => {
                    assert_eq!(f.header.id, next);
                    if next % 3 == 0 {
                        // Not inline (`frame` carries bytes): never shown.
                        assert_eq!(f.payload.len(), (next % 50) as usize);
                    } else {
                        assert_ne!(next % 4, 0, "a short message shown and used came out");
                        assert_eq!(f.header.len, body(next).len() as u64);
                        assert_eq!(f.payload.into_bytes(), body(next));
                    }
                }
            }
            next += 1;
        }
        t.join().unwrap();
        // SAFETY: only consumer.
        assert!(unsafe { q.pop() }.is_none());
    }
}
