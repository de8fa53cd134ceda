//! Single-copy large messages: the sender lends its buffer, the receiver
//! reads it with `process_vm_readv`.
//!
//! Each endpoint owns [`LENDS`] lend slots in the segment. A slot's word is
//! `generation << 8 | state`; the generation makes a stale reference to a
//! reused slot harmless. Transitions:
//!
//! ```text
//! sender:   EMPTY → PENDING (lend)      final → EMPTY, generation kept (free)
//!           PENDING → REVOKED (give up; waits out COPYING)
//! receiver: PENDING → COPYING → DONE (taken bytes written first)
//!           PENDING → DROPPED (frame dropped unread)
//!           COPYING → DROPPED (the read failed: the sender is gone)
//! ```
//!
//! Every receiver transition bumps the sender's futex word and wakes it.
//!
//! Not done yet: more than [`LENDS`] buffers lent at once per process (the
//! rest go through the ring), reads split across several readers.

use super::segment::{Mapping, LENDS};
use super::sys;
use super::wake::wake_always;
use crate::transport::{RemoteBorrow, RemoteCompletion};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

pub(super) const L_EMPTY: u64 = 0;
pub(super) const L_PENDING: u64 = 1;
pub(super) const L_COPYING: u64 = 2;
pub(super) const L_DONE: u64 = 3;
pub(super) const L_DROPPED: u64 = 4;
pub(super) const L_REVOKED: u64 = 5;

const GEN_MASK: u64 = (1 << 56) - 1;

fn word(gen: u64, state: u64) -> u64 {
    (gen & GEN_MASK) << 8 | state
}

/// Take a free lend slot of endpoint `me`: `(slot, generation)`.
pub(super) fn alloc(map: &Mapping, me: usize, cursor: &mut usize) -> Option<(usize, u64)> {
    for i in 0..LENDS {
        let k = (*cursor + i) % LENDS;
        let (w, taken) = map.lend(me, k);
        let cur = w.load(Ordering::Acquire);
        if cur & 0xff == L_EMPTY {
            let gen = ((cur >> 8) + 1) & GEN_MASK;
            taken.store(0, Ordering::Relaxed);
            w.store(word(gen, L_PENDING), Ordering::Release);
            map.lends_out.fetch_add(1, Ordering::Relaxed);
            map.mark_lent(me, k, true);
            *cursor = k + 1;
            return Some((k, gen));
        }
    }
    None
}

/// The state of a lend: `Some(Ok(taken))`, `Some(Err(()))` when it ended
/// unread, `None` while pending or being copied.
pub(super) fn state(map: &Mapping, me: usize, k: usize, gen: u64) -> Option<Result<usize, ()>> {
    let (w, taken) = map.lend(me, k);
    let cur = w.load(Ordering::Acquire);
    if cur >> 8 != gen {
        return Some(Err(()));
    }
    match cur & 0xff {
        L_DONE => Some(Ok(taken.load(Ordering::Relaxed) as usize)),
        L_PENDING | L_COPYING => None,
        _ => Some(Err(())),
    }
}

/// Free a lend slot after its final state was seen.
pub(super) fn free(map: &Mapping, me: usize, k: usize, gen: u64) {
    map.lend(me, k)
        .0
        .store(word(gen, L_EMPTY), Ordering::Release);
    map.mark_lent(me, k, false);
    map.lends_out.fetch_sub(1, Ordering::Relaxed);
}

/// Give up a lend: afterwards nobody reads the buffer. Returns the final
/// state seen (`Ok` when the reader had taken it). Frees the slot.
pub(super) fn revoke(
    map: &Mapping,
    me: usize,
    k: usize,
    gen: u64,
    reader: usize,
) -> Result<usize, ()> {
    let w = map.lend(me, k).0;
    loop {
        match w.compare_exchange(
            word(gen, L_PENDING),
            word(gen, L_REVOKED),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => break,
            Err(cur) if cur == word(gen, L_COPYING) => {
                // A copy is under way: wait for it, unless the reader died.
                let pid = map.pid(reader).load(Ordering::Relaxed);
                if pid != 0 && sys::pid_exited(pid) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            Err(_) => {
                let r = state(map, me, k, gen).unwrap_or(Err(()));
                free(map, me, k, gen);
                return r;
            }
        }
    }
    free(map, me, k, gen);
    Err(())
}

/// The lending side, installed in the engine's [`crate::transport::Completion`].
pub(super) struct Lend {
    pub(super) map: Arc<Mapping>,
    pub(super) me: usize,
    pub(super) reader: usize,
    pub(super) slot: usize,
    pub(super) gen: u64,
    pub(super) result: OnceLock<Result<usize, ()>>,
}

impl RemoteCompletion for Lend {
    fn finished(&self) -> Option<Result<usize, ()>> {
        if let Some(r) = self.result.get() {
            return Some(*r);
        }
        let r = state(&self.map, self.me, self.slot, self.gen)?;
        if self.result.set(r).is_ok() {
            free(&self.map, self.me, self.slot, self.gen);
        }
        Some(r)
    }

    fn revoke(&self) -> bool {
        if let Some(r) = self.result.get() {
            return r.is_ok();
        }
        let r = revoke(&self.map, self.me, self.slot, self.gen, self.reader);
        let _ = self.result.set(r);
        r.is_ok()
    }
}

impl Drop for Lend {
    fn drop(&mut self) {
        if self.result.get().is_none() {
            RemoteCompletion::revoke(self);
        }
    }
}

/// The receiving side: a buffer of `lender` at `addr`.
pub(super) struct Remote {
    pub(super) map: Arc<Mapping>,
    pub(super) lender: usize,
    pub(super) pid: i32,
    pub(super) addr: usize,
    pub(super) len: usize,
    pub(super) slot: usize,
    pub(super) gen: u64,
    pub(super) settled: bool,
}

impl Remote {
    fn claim(&mut self) -> bool {
        let w = self.map.lend(self.lender, self.slot).0;
        let ok = w
            .compare_exchange(
                word(self.gen, L_PENDING),
                word(self.gen, L_COPYING),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if !ok {
            // Revoked or already settled: nothing more to report.
            self.settled = true;
        }
        ok
    }

    fn settle(&mut self, state: u64, taken: usize) {
        let (w, t) = self.map.lend(self.lender, self.slot);
        t.store(taken as u64, Ordering::Relaxed);
        w.store(word(self.gen, state), Ordering::Release);
        self.settled = true;
        wake_always(&self.map, self.lender);
    }
}

impl RemoteBorrow for Remote {
    fn len(&self) -> usize {
        self.len
    }

    fn copy_into(mut self: Box<Self>, dst: &mut [u8]) -> Option<usize> {
        if !self.claim() {
            return None;
        }
        let n = self.len.min(dst.len());
        match sys::read_remote(self.pid, self.addr, &mut dst[..n]) {
            Ok(()) => {
                self.settle(L_DONE, n);
                Some(n)
            }
            Err(_) => {
                self.settle(L_DROPPED, 0);
                None
            }
        }
    }

    fn with_bytes(mut self: Box<Self>, f: &mut dyn FnMut(&[u8]) -> usize) -> Option<usize> {
        if !self.claim() {
            return None;
        }
        let mut v = vec![0u8; self.len];
        if sys::read_remote(self.pid, self.addr, &mut v).is_err() {
            self.settle(L_DROPPED, 0);
            return None;
        }
        let n = f(&v);
        self.settle(L_DONE, n);
        Some(n)
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if !self.settled {
            let w = self.map.lend(self.lender, self.slot).0;
            if w.compare_exchange(
                word(self.gen, L_PENDING),
                word(self.gen, L_DROPPED),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
            {
                wake_always(&self.map, self.lender);
            }
        }
    }
}
