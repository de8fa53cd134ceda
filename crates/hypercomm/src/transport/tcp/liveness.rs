//! Peer states, failures and abort: what the reader threads and the
//! supervisor's notices learn about the peers, and the abort relayed to
//! every peer before anything else.

use super::framing::write_frame;
use super::{lock, Shared, TcpEndpoint, ALIVE, FAILED, FINISHED};
use crate::transport::{Frame, Payload, PeerState, Transport};
use crate::wire::{Header, Kind};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

pub(super) struct PeerSlot {
    pub(super) state: AtomicU8,
    pub(super) why: Mutex<Option<String>>,
}

impl Shared {
    pub(super) fn finished(&self, peer: usize) {
        let _ = self.peers[peer].state.compare_exchange(
            ALIVE,
            FINISHED,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        self.wake();
    }

    pub(super) fn failed(&self, peer: usize, why: String) {
        let slot = &self.peers[peer];
        if slot.state.load(Ordering::SeqCst) == ALIVE {
            *lock(&slot.why) = Some(why);
            slot.state.store(FAILED, Ordering::SeqCst);
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
            let f = Frame {
                header: Header {
                    kind: Kind::Abort,
                    flags: 0,
                    src: self.me as u32,
                    dst: j as u32,
                    context: 0,
                    tag: 0,
                    id: origin as u64 + 1,
                    len: bytes.len() as u64,
                },
                payload: Payload::Bytes(bytes),
            };
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

    pub(super) fn waits_of_others(&self) -> String {
        let mut out = String::new();
        for i in (0..self.n).filter(|&i| i != self.me) {
            let st = match self.peer_state(i) {
                PeerState::Alive => "running (its waits are not visible over TCP)".to_string(),
                PeerState::Finished => "finished".to_string(),
                PeerState::Failed(m) => format!("failed ({m})"),
            };
            out.push_str(&format!("; endpoint {i}: {st}"));
        }
        out
    }
}
