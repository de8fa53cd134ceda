//! An unbounded single-producer single-consumer queue of frames: linked
//! segments of slots, each slot with its own ready flag, so that a push and
//! the pop that takes it touch one slot's cache lines and nothing shared
//! besides (no counter, no lock).
//!
//! The producer writes a slot and sets its flag (release); the consumer
//! sees the flag (acquire) and moves the frame out. When the producer fills
//! a segment it links a new one; the consumer frees a segment after taking
//! its last slot and following the link. The first segment is allocated on
//! the first push, so idle pairs cost one small struct. A finished segment
//! is handed back to the producer for its next link (one spare), so a
//! steady stream allocates nothing: allocating a segment of 64 slots and
//! freeing it on the other thread cost every 64th message a few
//! microseconds.

use super::CachePadded;
use super::Frame;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

const SEG: usize = 64;

struct Slot {
    ready: AtomicBool,
    frame: UnsafeCell<MaybeUninit<Frame>>,
}

struct Segment {
    slots: [Slot; SEG],
    next: AtomicPtr<Segment>,
}

impl Segment {
    fn new() -> *mut Segment {
        Box::into_raw(Box::new(Segment {
            slots: std::array::from_fn(|_| Slot {
                ready: AtomicBool::new(false),
                frame: UnsafeCell::new(MaybeUninit::uninit()),
            }),
            next: AtomicPtr::new(ptr::null_mut()),
        }))
    }
}

struct End {
    seg: *mut Segment,
    index: usize,
}

/// The queue. `push` must only be called by one thread at a time (the
/// producer), `pop` by one thread at a time (the consumer).
pub(crate) struct Spsc {
    first: AtomicPtr<Segment>,
    /// A finished segment, its slots not ready and its link null, for the
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
            })),
            head: CachePadded::new(UnsafeCell::new(End {
                seg: ptr::null_mut(),
                index: 0,
            })),
        }
    }

    /// Append a frame (producer only).
    ///
    /// # Safety
    /// Only one thread may push at a time.
    #[inline]
    pub(crate) unsafe fn push(&self, f: Frame) {
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
        // this slot is not yet ready, so the consumer does not read it.
        let slot = unsafe { &(*t.seg).slots[t.index] };
        // SAFETY: exclusive access to an empty slot, as above.
        unsafe { (*slot.frame.get()).write(f) };
        slot.ready.store(true, Ordering::Release);
        t.index += 1;
    }

    /// Take the oldest frame (consumer only).
    ///
    /// # Safety
    /// Only one thread may pop at a time.
    #[inline]
    pub(crate) unsafe fn pop(&self) -> Option<Frame> {
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
            // Every slot of the old segment has been taken (and marked not
            // ready again) and the producer has moved on to `next`, so
            // nobody uses it any more: it becomes the spare, or is freed.
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
        if !slot.ready.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: the flag says the producer finished writing this slot, and
        // it will not write it again before the segment comes back to it as
        // the spare; we take the frame exactly once.
        let f = unsafe { (*slot.frame.get()).assume_init_read() };
        // Not ready for when the segment comes back as the spare (the
        // producer does not write it before then).
        slot.ready.store(false, Ordering::Relaxed);
        h.index += 1;
        Some(f)
    }

    /// Whether a pop would find a frame (consumer only; a hint).
    ///
    /// # Safety
    /// Only the consumer may call it.
    #[inline]
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
            return next.is_null() || !unsafe { (*next).slots[0].ready.load(Ordering::Acquire) };
        }
        // SAFETY: live segment.
        !unsafe { (*h.seg).slots[h.index].ready.load(Ordering::Acquire) }
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
}
