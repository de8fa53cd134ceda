//! Peer states, failures and abort: the state word of every endpoint in the
//! segment, pidfd checks for processes that died without a word, and what
//! each endpoint waits for (for timeout messages).

use super::segment::{Mapping, LENDS, S_ALIVE, S_FAILED, S_FINISHED, S_MARKING, S_UNATTACHED};
use super::wake::wake_all;
use super::{lend, sys, ShmEndpoint};
use crate::transport::deadlock;
use crate::transport::PeerState;
use std::sync::atomic::Ordering;

/// Mark `ep` failed with `message` (unless it already ended) and wake all.
pub(super) fn mark_failed(map: &Mapping, ep: usize, message: &str) {
    let st = map.state(ep);
    if st
        .compare_exchange(S_ALIVE, S_MARKING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
        || st
            .compare_exchange(S_UNATTACHED, S_MARKING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        map.set_failure(ep, message);
        st.store(S_FAILED, Ordering::Release);
        map.ends().fetch_add(1, Ordering::SeqCst);
        wake_all(map);
    }
}

/// Record that `ep` aborted the job (the first abort wins) and wake all.
pub(super) fn set_abort(map: &Mapping, ep: usize, message: &str) {
    let a = map.abort();
    if a.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        map.set_abort_text(message);
        a.store(2 + ep as u32, Ordering::Release);
    }
    wake_all(map);
}

impl deadlock::JobView for ShmEndpoint {
    fn endpoints(&self) -> usize {
        self.n
    }
    fn published(&self, e: usize) -> deadlock::Published {
        let m = &self.map;
        deadlock::Published {
            ended: matches!(m.state(e).load(Ordering::SeqCst), S_FINISHED | S_FAILED),
            epoch: m.epoch(e).load(Ordering::SeqCst),
            sent: m.sent(e).load(Ordering::SeqCst),
            drained: m.drained(e).load(Ordering::SeqCst),
            ends_seen: m.ends_seen(e).load(Ordering::SeqCst),
        }
    }
    fn ends(&self) -> u64 {
        self.map.ends().load(Ordering::SeqCst)
    }
    fn aborted(&self) -> bool {
        self.map.abort().load(Ordering::SeqCst) >= 2
    }
    /// A lend slot of a live endpoint that its reader ended (taken or
    /// dropped) and its lender has not freed yet: that lender was woken
    /// without a frame.
    fn unsettled(&self) -> bool {
        let m = &self.map;
        (0..self.n).any(|e| {
            !matches!(m.state(e).load(Ordering::SeqCst), S_FINISHED | S_FAILED)
                && (0..LENDS).any(|k| {
                    let s = m.lend(e, k).0.load(Ordering::SeqCst) & 0xff;
                    s == lend::L_DONE || s == lend::L_DROPPED
                })
        })
    }
    /// A process killed while blocked looks blocked for ever: ask the
    /// kernel (and mark it failed, which ends the search).
    fn alive(&self, e: usize) -> bool {
        if e == self.me || !self.process_ended(e) {
            return true;
        }
        let pid = self.map.pid(e).load(Ordering::Relaxed);
        self.mark_failed(
            e,
            &format!("process {pid} ended without finishing (killed or crashed)"),
        );
        false
    }
}

impl ShmEndpoint {
    /// Before a wait with no deadline: `None` when an endpoint ended since
    /// this one last blocked (return, so that the engine looks at it);
    /// else publish the counts, mark this endpoint blocked and return
    /// `Some(true)`.
    pub(super) fn block(&self) -> Option<bool> {
        let m = &self.map;
        let ends = m.ends().load(Ordering::SeqCst);
        if ends != self.ends_seen.get() {
            self.ends_seen.set(ends);
            return None;
        }
        // A lent buffer streamed through a ring completes when its reader
        // takes the last slot, which wakes us without a frame: until we
        // have seen that, count it as still in flight (sent, not drained).
        let streaming = self.unpulled.borrow().len() as u64;
        m.sent(self.me)
            .store(self.sent.get() + streaming, Ordering::SeqCst);
        m.drained(self.me)
            .store(self.drained.get(), Ordering::SeqCst);
        m.ends_seen(self.me).store(ends, Ordering::SeqCst);
        let e = m.epoch(self.me).fetch_add(1, Ordering::SeqCst) + 1;
        self.last_epoch.set(e);
        Some(true)
    }

    /// If the job is deadlocked (`transport/deadlock.rs`), declare it and
    /// wake everyone: true when declared (by this endpoint or another).
    ///
    /// Several endpoints may find the same deadlock at once. One at a time
    /// declares (the segment's `declaring` lock), and only while every
    /// blocked endpoint is still in the wait it was found in: an endpoint
    /// that another declaration already woke has moved its epoch on (it
    /// does so before it clears what it waits for), and its "waiting for"
    /// text must not be read as "running" into the message the others
    /// report.
    pub(super) fn declare_deadlock(&self) -> bool {
        let Some(epochs) = deadlock::detect(self) else {
            return false;
        };
        let m = &self.map;
        if m.declaring()
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Another endpoint is declaring right now: look again soon.
            return true;
        }
        let blocked = || epochs.iter().enumerate().filter(|(_, &ep)| ep != 0);
        let declared = blocked().any(|(e, &ep)| m.deadlocked(e).load(Ordering::SeqCst) == ep);
        let mut what = self.waits_of_others();
        let mine = m.waiting(self.me);
        if !mine.is_empty() {
            what = format!("; endpoint {}: {mine}{what}", self.me);
        }
        let still = blocked().all(|(e, &ep)| m.epoch(e).load(Ordering::SeqCst) == ep);
        if still && !declared {
            m.set_deadlock_text(&what);
            for (e, epoch) in epochs.into_iter().enumerate() {
                m.deadlocked(e).store(epoch, Ordering::SeqCst);
            }
            wake_all(m);
        }
        m.declaring().store(0, Ordering::Release);
        still || declared
    }

    /// A declared deadlock this endpoint's last blocked wait was part of
    /// (reported once).
    pub(super) fn deadlock_report(&self) -> Option<String> {
        let epoch = self.last_epoch.get();
        if epoch & 1 == 0 {
            return None;
        }
        self.map
            .deadlocked(self.me)
            .compare_exchange(epoch, 0, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| self.map.deadlock_text())
    }

    /// Mark `ep` failed with `message` (unless it already ended).
    pub(super) fn mark_failed(&self, ep: usize, message: &str) {
        mark_failed(&self.map, ep, message);
    }

    /// Has the process of endpoint `ep` ended?
    pub(super) fn process_ended(&self, ep: usize) -> bool {
        let pid = self.map.pid(ep).load(Ordering::Relaxed);
        if pid == 0 {
            return false;
        }
        let mut fds = self.pidfds.borrow_mut();
        if fds[ep].is_none() {
            match sys::pidfd(pid) {
                Ok(fd) => fds[ep] = Some(fd),
                Err(e) => return e.raw_os_error() == Some(libc::ESRCH),
            }
        }
        fds[ep].as_ref().is_some_and(sys::exited)
    }

    /// Current state of `ep` as a [`PeerState`] (no liveness check).
    pub(super) fn state_of(&self, ep: usize) -> PeerState {
        match self.map.state(ep).load(Ordering::Acquire) {
            S_FINISHED => PeerState::Finished,
            S_FAILED => PeerState::Failed(self.map.failure(ep)),
            _ => PeerState::Alive,
        }
    }

    /// If some endpoint aborted the job: who and why.
    pub(super) fn aborted(&self) -> Option<(usize, String)> {
        let a = self.map.abort().load(Ordering::Acquire);
        (a >= 2).then(|| ((a - 2) as usize, self.map.abort_text()))
    }

    /// What the other endpoints are doing or waiting for.
    pub(super) fn waits_of_others(&self) -> String {
        let mut out = String::new();
        for e in (0..self.n).filter(|&e| e != self.me) {
            let st = match self.map.state(e).load(Ordering::Acquire) {
                S_UNATTACHED => "not started".to_string(),
                S_FINISHED => "finished".to_string(),
                S_FAILED => format!("failed ({})", self.map.failure(e)),
                _ => match self.map.waiting(e) {
                    w if w.is_empty() => "running".to_string(),
                    w => w,
                },
            };
            out.push_str(&format!("; endpoint {e}: {st}"));
        }
        out
    }
}
