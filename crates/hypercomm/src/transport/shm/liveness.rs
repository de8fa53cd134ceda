//! Peer states, failures and abort: the state word of every endpoint in the
//! segment, pidfd checks for processes that died without a word, and what
//! each endpoint waits for (for timeout messages).

use super::segment::{Mapping, S_ALIVE, S_FAILED, S_FINISHED, S_MARKING, S_UNATTACHED};
use super::wake::wake_all;
use super::{sys, ShmEndpoint};
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

impl ShmEndpoint {
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
                    w => format!("waiting for {w}"),
                },
            };
            out.push_str(&format!("; endpoint {e}: {st}"));
        }
        out
    }
}
