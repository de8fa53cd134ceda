//! Peer states, failures and abort: what the reader threads and the
//! supervisor's notices learn about the peers, and the abort relayed to
//! every peer before anything else.

use super::framing::write_frame;
use super::{lock, Shared, TcpEndpoint, ALIVE, FAILED, FINISHED};
use crate::transport::census::{waits_text, ANSWER_WITHIN};
use crate::transport::{Frame, Payload, PeerState, Transport};
use crate::wire::{Header, Kind};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(super) struct PeerSlot {
    pub(super) state: AtomicU8,
    pub(super) why: Mutex<Option<String>>,
}

impl Shared {
    pub(super) fn finished(&self, peer: usize) {
        if self.peers[peer]
            .state
            .compare_exchange(ALIVE, FINISHED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.census.ends.fetch_add(1, Ordering::SeqCst);
        }
        self.wake();
    }

    pub(super) fn failed(&self, peer: usize, why: String) {
        let slot = &self.peers[peer];
        if slot.state.load(Ordering::SeqCst) == ALIVE {
            *lock(&slot.why) = Some(why);
            if slot
                .state
                .compare_exchange(ALIVE, FAILED, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                self.census.ends.fetch_add(1, Ordering::SeqCst);
            }
        }
        self.wake();
    }

    /// Record that `ep` aborted the job. The first time, relay the abort
    /// to every peer before anything else can happen here: a peer that sees
    /// this process exit will have seen the abort first (FIFO per
    /// connection), so it reports `Aborted` rather than `PeerFailed`.
    pub(super) fn set_abort(&self, ep: usize, message: String) {
        let first = {
            let mut a = lock(&self.abort);
            if a.is_none() {
                *a = Some((ep, message.clone()));
                true
            } else {
                false
            }
        };
        if first {
            self.relay_abort(ep, &message);
        }
        self.abort_flag.store(true, Ordering::SeqCst);
        self.wake();
    }

    pub(super) fn relay_abort(&self, origin: usize, message: &str) {
        let Some(writers) = self.writers.get() else {
            return;
        };
        for (j, w) in writers.iter().enumerate() {
            let Some(w) = w else { continue };
            if self.peers[j].state.load(Ordering::Acquire) != ALIVE {
                continue;
            }
            let bytes = message.as_bytes().to_vec();
            let f = control(self.me, j, Kind::Abort, 0, origin as u64 + 1, bytes);
            let _ = write_frame(&mut *lock(w), f);
        }
    }

    pub(super) fn protocol_error(&self, peer: usize, what: String) {
        let msg = format!(
            "endpoint {peer} sent a malformed frame to endpoint {}: {what}",
            self.me
        );
        eprintln!("hypercomm: {msg}; closing that connection");
        lock(&self.protocol).get_or_insert(msg.clone());
        self.failed(peer, msg);
    }
}

impl TcpEndpoint {
    pub(super) fn aborted(&self) -> Option<(usize, String)> {
        if self.shared.abort_flag.load(Ordering::Acquire) {
            lock(&self.shared.abort).clone()
        } else {
            None
        }
    }

    pub(super) fn protocol_error(&self) -> Option<String> {
        lock(&self.shared.protocol).clone()
    }

    /// What every other endpoint waits for, asked of them: a
    /// [`Kind::WaitQuery`] to every live peer, whose transport answers at
    /// once from what its engine published (even while the engine is
    /// blocked); a peer that does not answer within a second is said to.
    pub(super) fn waits_of_others(&self) -> String {
        let sh = &self.shared;
        let asked: Vec<usize> = (0..self.n)
            .filter(|&i| i != self.me && self.peer_state(i) == PeerState::Alive)
            .collect();
        lock(&sh.replies).iter_mut().for_each(|r| *r = None);
        for &i in &asked {
            self.send_to(i, control(self.me, i, Kind::WaitQuery, 0, 0, Vec::new()));
        }
        let end = Instant::now() + ANSWER_WITHIN;
        while Instant::now() < end
            && asked
                .iter()
                .any(|&i| lock(&sh.replies)[i].is_none() && self.peer_state(i) == PeerState::Alive)
        {
            std::thread::park_timeout(Duration::from_millis(5));
        }
        let replies = lock(&sh.replies).clone();
        waits_text(self.me, &replies, |i| self.peer_state(i))
    }
}

/// A control frame (one the transports handle themselves) from `src` to
/// `dst`, with `tag` and `id`.
pub(super) fn control(
    src: usize,
    dst: usize,
    kind: Kind,
    tag: u32,
    id: u64,
    payload: Vec<u8>,
) -> Frame {
    Frame {
        header: Header {
            kind,
            flags: 0,
            src: src as u32,
            dst: dst as u32,
            context: 0,
            tag,
            id,
            len: payload.len() as u64,
        },
        payload: Payload::Bytes(payload),
    }
}

impl Shared {
    /// Answer a peer's [`Kind::WaitQuery`] (on its reader thread): what
    /// this endpoint's engine published.
    pub(super) fn answer_wait_query(&self, peer: usize) {
        let Some(Some(w)) = self.writers.get().and_then(|w| w.get(peer)) else {
            return;
        };
        let text = lock(&self.waiting).clone().into_bytes();
        let _ = write_frame(
            &mut *lock(w),
            control(self.me, peer, Kind::WaitReply, 0, 0, text),
        );
    }
}
