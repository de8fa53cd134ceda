//! Peer states, failures and abort of a job of threads, and what each
//! endpoint waits for (for timeout messages).

use super::{lock, ThreadEndpoint, ThreadJob, ALIVE, FAILED, FINISHED};
use crate::transport::PeerState;
use std::sync::atomic::Ordering;

impl ThreadJob {
    /// Mark `ep` failed from outside its thread (e.g. after it panicked).
    pub fn mark_failed(&self, ep: usize, message: String) {
        let slot = &self.slots[ep];
        if slot.state.load(Ordering::Acquire) == ALIVE {
            *lock(&slot.failure) = Some(message);
            slot.state.store(FAILED, Ordering::Release);
            self.wake_all();
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
                _ => match lock(&s.waiting).clone() {
                    Some(w) => format!("waiting for {w}"),
                    None => "running".to_string(),
                },
            };
            out.push_str(&format!("; endpoint {i}: {st}"));
        }
        out
    }
}

impl ThreadEndpoint {
    /// If some endpoint aborted the job: who and why.
    pub(super) fn aborted(&self) -> Option<(usize, String)> {
        if self.job.abort_flag.load(Ordering::Acquire) {
            lock(&self.job.aborted).clone()
        } else {
            None
        }
    }
}
