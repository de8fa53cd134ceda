//! I/O: a reader thread per connection decodes frames into the endpoint's
//! queue (and turns goodbyes, aborts, ends of stream and malformed bytes
//! into peer states); writes go straight to the peer's socket.

use super::deadlock::handled_here;
use super::framing::{read_frame, write_frame, ReadOutcome};
use super::{lock, Shared, TcpEndpoint, ALIVE};
use crate::error::Error;
use crate::transport::{Frame, Payload};
use crate::wire::Kind;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

pub(super) fn reader(sh: Arc<Shared>, peer: usize, mut s: TcpStream) {
    let mut goodbye = false;
    loop {
        match read_frame(&mut s, peer, sh.me) {
            ReadOutcome::Frame(f) => match f.header.kind {
                Kind::Goodbye => {
                    goodbye = true;
                    sh.finished(peer);
                }
                Kind::Abort => {
                    // `id` is 0 when the sender itself aborted, else 1 + the
                    // endpoint whose abort it relays.
                    let origin = match f.header.id {
                        0 => peer,
                        k if (k as usize) <= sh.peers.len() => k as usize - 1,
                        _ => peer,
                    };
                    sh.set_abort(origin, text(&f.payload));
                }
                Kind::WaitQuery => sh.answer_wait_query(peer),
                Kind::WaitReply => {
                    if let Some(r) = lock(&sh.replies).get_mut(peer) {
                        *r = Some(text(&f.payload));
                    }
                    sh.wake();
                }
                Kind::DeadlockQuery => sh.answer_census(peer, f.header.id),
                Kind::DeadlockReply => {
                    sh.census_answer(peer, f.header.id, bytes(&f.payload).to_vec())
                }
                Kind::Deadlock => {
                    let what = (!bytes(&f.payload).is_empty()).then(|| text(&f.payload));
                    sh.deadlock_news(f.header.tag as usize, f.header.id, what)
                }
                _ if goodbye => {
                    sh.protocol_error(peer, "a frame after its goodbye".into());
                    let _ = s.shutdown(Shutdown::Both);
                    return;
                }
                _ => sh.push(f),
            },
            ReadOutcome::End => {
                if !goodbye {
                    sh.failed(
                        peer,
                        format!("endpoint {peer} closed its connection without finishing (process died?)"),
                    );
                }
                return;
            }
            ReadOutcome::Broken(why) => {
                if !goodbye {
                    sh.failed(peer, format!("endpoint {peer}: {why}"));
                }
                return;
            }
            ReadOutcome::Malformed(e) => {
                let what = match e {
                    Error::Protocol(m) => m,
                    e => e.to_string(),
                };
                sh.protocol_error(peer, what);
                let _ = s.shutdown(Shutdown::Both);
                return;
            }
        }
    }
}

/// A frame's payload bytes as read from a connection (empty for a payload
/// that a reader never makes).
fn bytes(p: &Payload) -> &[u8] {
    match p {
        Payload::Inline(i) => i.bytes(),
        Payload::Bytes(b) => b,
        _ => &[],
    }
}

/// A payload as text (what a control frame carries).
fn text(p: &Payload) -> String {
    String::from_utf8_lossy(bytes(p)).into_owned()
}

impl TcpEndpoint {
    pub(super) fn writers(&self) -> &[Option<Mutex<TcpStream>>] {
        self.shared
            .writers
            .get()
            .map(|w| w.as_slice())
            .unwrap_or(&[])
    }

    pub(super) fn send_to(&self, j: usize, frame: Frame) {
        let Some(Some(w)) = self.writers().get(j) else {
            return;
        };
        if self.shared.peers[j].state.load(Ordering::Acquire) != ALIVE {
            return; // dropped: a borrowed payload tells its sender
        }
        if !handled_here(frame.header.kind) {
            self.shared.census.sending(j);
        }
        let mut w = lock(w);
        if let Err(e) = write_frame(&mut *w, frame) {
            // Mark it failed only if it had not finished cleanly meanwhile.
            self.shared
                .failed(j, format!("writing to endpoint {j} failed: {e}"));
        }
    }
}
