//! Sleeping and waking: a futex word per endpoint, a "sleeping" flag that
//! senders look at before they make a system call, and a doorbell per
//! endpoint in larger jobs.

use super::segment::Mapping;
use super::{lend, sys, ShmEndpoint, DOORBELL_MIN};
use std::sync::atomic::{fence, Ordering};

/// Bump `e`'s futex word and wake it if it sleeps (for rare events: the
/// bump alone makes a sleep that is about to start return at once).
pub(super) fn wake_always(map: &Mapping, e: usize) {
    map.futex(e).fetch_add(1, Ordering::SeqCst);
    if map.sleeping(e).load(Ordering::SeqCst) != 0 {
        sys::futex_wake(map.futex(e));
    }
}

/// Wake every endpoint of the job.
pub(super) fn wake_all(map: &Mapping) {
    for e in 0..map.endpoints {
        wake_always(map, e);
    }
}

impl ShmEndpoint {
    /// Raise `dst` if it sleeps (after publishing slots).
    #[inline(always)]
    pub(super) fn wake_receiver(&self, dst: usize) {
        if self.n > DOORBELL_MIN {
            self.map.doorbell(dst).fetch_add(1, Ordering::Release);
        }
        // Pairs with the fence in `wait`: either the receiver sees our slot
        // before it sleeps, or we see its sleeping flag and wake it.
        fence(Ordering::SeqCst);
        if self.map.sleeping(dst).load(Ordering::Relaxed) != 0 {
            self.map.futex(dst).fetch_add(1, Ordering::SeqCst);
            sys::futex_wake(self.map.futex(dst));
        }
    }

    /// Anything to do instead of sleeping?
    pub(super) fn ready(&self) -> bool {
        if (0..self.n).any(|s| self.slot_waiting(s)) {
            return true;
        }
        if self.map.abort().load(Ordering::Acquire) >= 2 {
            return true;
        }
        if self.queued.get() > 0 {
            let mut outs = self.out.borrow_mut();
            for (dst, o) in outs.iter_mut().enumerate() {
                if !o.queue.is_empty()
                    && (!self.receiver_open(dst) || self.has_space(dst, &mut o.ring))
                {
                    return true;
                }
            }
        }
        if self.unpulled_ready() {
            return true;
        }
        if self.map.lends_out.load(Ordering::Relaxed) > 0 {
            for k in self.map.lent_slots(self.me) {
                let s = self.map.lend(self.me, k).0.load(Ordering::Acquire) & 0xff;
                if s == lend::L_DONE || s == lend::L_DROPPED {
                    return true;
                }
            }
        }
        false
    }

    /// Is a reader copying one of our lent buffers at this moment?
    pub(super) fn copy_under_way(&self) -> bool {
        self.map.lends_out.load(Ordering::Relaxed) > 0
            && self.map.lent_slots(self.me).any(|k| {
                self.map.lend(self.me, k).0.load(Ordering::Acquire) & 0xff == lend::L_COPYING
            })
    }

    pub(super) fn wake_all(&self) {
        wake_all(&self.map);
    }
}
