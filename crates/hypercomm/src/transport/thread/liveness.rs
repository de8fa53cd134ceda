//! Peer states, failures and abort of a job of threads, and what each
//! endpoint waits for (for timeout messages).

use super::{lock, ThreadEndpoint, ThreadJob, ALIVE, FAILED, FINISHED};
use crate::transport::{deadlock, PeerState};
use std::sync::atomic::Ordering;

impl ThreadJob {
    /// Mark `ep` failed from outside its thread (e.g. after it panicked).
    pub fn mark_failed(&self, ep: usize, message: String) {
        let slot = &self.slots[ep];
        if slot.state.load(Ordering::Acquire) == ALIVE {
            *lock(&slot.failure) = Some(message);
            slot.state.store(FAILED, Ordering::Release);
            self.ends.fetch_add(1, Ordering::SeqCst);
            self.wake_all();
        }
    }

    /// If the job is deadlocked (`transport/deadlock.rs`), declare it and
    /// wake everyone: true when declared.
    pub(super) fn declare_deadlock(&self) -> bool {
        let Some(epochs) = deadlock::detect(self) else {
            return false;
        };
        let what = self.describe_waits(usize::MAX);
        *lock(&self.deadlock) = Some((epochs, what));
        self.wake_all();
        true
    }

    /// What endpoint `ep`, whose last blocked wait had epoch `epoch`, was
    /// part of: a declared deadlock (once).
    pub(super) fn deadlock_of(&self, ep: usize, epoch: u64) -> Option<String> {
        let mut d = lock(&self.deadlock);
        let (epochs, what) = d.as_mut()?;
        if epoch & 1 == 1 && epochs.get(ep) == Some(&epoch) {
            epochs[ep] = 0;
            Some(what.clone())
        } else {
            None
        }
    }

    /// Who aborted the job, and why.
    pub fn abort_info(&self) -> Option<(usize, String)> {
        lock(&self.aborted).clone()
    }

    /// Endpoint `me` aborts the job (the first abort wins).
    pub(super) fn abort(&self, me: usize, message: &str) {
        {
            let mut a = lock(&self.aborted);
            if a.is_none() {
                *a = Some((me, message.to_string()));
            }
        }
        self.abort_flag.store(true, Ordering::Release);
        self.wake_all();
    }

    /// What is known about endpoint `ep`.
    pub(super) fn peer_state(&self, ep: usize) -> PeerState {
        let s = &self.slots[ep];
        match s.state.load(Ordering::Acquire) {
            ALIVE => PeerState::Alive,
            FINISHED => PeerState::Finished,
            _ => PeerState::Failed(lock(&s.failure).clone().unwrap_or_default()),
        }
    }

    /// What every endpoint but `me` is doing or waiting for.
    pub(super) fn describe_waits(&self, me: usize) -> String {
        let mut out = String::new();
        for (i, s) in self.slots.iter().enumerate() {
            if i == me {
                continue;
            }
            let st = match s.state.load(Ordering::Acquire) {
                FINISHED => "finished".to_string(),
                FAILED => format!("failed ({})", lock(&s.failure).clone().unwrap_or_default()),
                _ => lock(&s.waiting)
                    .clone()
                    .unwrap_or_else(|| "running".to_string()),
            };
            out.push_str(&format!("; endpoint {i}: {st}"));
        }
        out
    }
}

impl deadlock::JobView for ThreadJob {
    fn endpoints(&self) -> usize {
        self.slots.len()
    }
    fn published(&self, e: usize) -> deadlock::Published {
        let s = &self.slots[e];
        deadlock::Published {
            ended: s.state.load(Ordering::SeqCst) != ALIVE,
            epoch: s.epoch.load(Ordering::SeqCst),
            sent: s.sent.load(Ordering::SeqCst),
            drained: s.drained.load(Ordering::SeqCst),
            ends_seen: s.ends_seen.load(Ordering::SeqCst),
        }
    }
    fn ends(&self) -> u64 {
        self.ends.load(Ordering::SeqCst)
    }
    fn aborted(&self) -> bool {
        self.abort_flag.load(Ordering::SeqCst)
    }
    fn unsettled(&self) -> bool {
        self.lends.unsettled()
    }
    fn may_be_quiet(&self) -> bool {
        let quiet = self.blocked.load(Ordering::SeqCst) + self.ends.load(Ordering::SeqCst);
        quiet >= self.slots.len() as u64
    }
}

impl ThreadEndpoint {
    /// Before a wait with no deadline: `None` when an endpoint ended since
    /// this one last blocked (return, so that the engine looks at it);
    /// else publish the counts, mark this endpoint blocked and return
    /// `Some(true)`.
    pub(super) fn block(&self) -> Option<bool> {
        let slot = &self.job.slots[self.me];
        let ends = self.job.ends.load(Ordering::SeqCst);
        if ends != self.ends_seen.get() {
            self.ends_seen.set(ends);
            return None;
        }
        slot.sent.store(self.sent.get(), Ordering::SeqCst);
        slot.drained.store(self.drained.get(), Ordering::SeqCst);
        slot.ends_seen.store(ends, Ordering::SeqCst);
        self.job.blocked.fetch_add(1, Ordering::SeqCst);
        let e = slot.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        self.last_epoch.set(e);
        Some(true)
    }

    /// If some endpoint aborted the job: who and why.
    pub(super) fn aborted(&self) -> Option<(usize, String)> {
        if self.job.abort_flag.load(Ordering::Acquire) {
            lock(&self.job.aborted).clone()
        } else {
            None
        }
    }
}
