//! The TCP transport: endpoints are processes, possibly on several machines.
//!
//! * **Connections.** One TCP connection per pair of endpoints, made when
//!   the job starts: endpoint `i` connects to every `j < i` and accepts from
//!   every `j > i`, using the address table of the rendezvous
//!   ([`crate::launch`]). Every connection is authenticated both ways with
//!   the per-job secret (`auth.rs`: HMAC-SHA-256 challenge-response); a
//!   connection that fails is closed and logged on stderr and does not
//!   disturb the job. The listener keeps refusing strangers while the job
//!   runs. Sockets get `TCP_NODELAY` and 4 MiB buffers (socket2).
//! * **Framing.** Exactly the frames of [`crate::wire`]: a 48-byte header,
//!   then `len` payload bytes. `send` writes the header and then the
//!   payload (`Header::stream_payload_len` bytes: a sync acknowledgement's
//!   `len` is a count, not a length) straight from the sender's buffer (a borrowed payload is
//!   written while `send` runs, so the engine lends rather than copies);
//!   short frames go out in one `write`. No size limit.
//! * **Receiving.** A reader thread per connection decodes frames into the
//!   endpoint's queue and unparks the rank's thread; `try_recv` drains the
//!   queue, `wait` parks (at most 20 ms at a time). A malformed frame
//!   (bad header, wrong source or destination) closes that connection, marks
//!   the peer failed and makes every later operation of this endpoint fail
//!   with [`Error::Protocol`] naming it — never a
//!   panic.
//! * **Failures.** A clean finish sends [`Kind::Goodbye`] to every peer and
//!   shuts the connections down; end-of-stream after a goodbye means
//!   *finished*, end-of-stream or a reset without one means *failed* (crash,
//!   `kill -9`, exit without finishing). Either is seen as soon as the
//!   kernel closes the dead process's sockets, so operations that need the
//!   peer fail with `PeerFailed` well within a second. The launcher also
//!   reports deaths it sees over the control connection; such a report
//!   waits up to 500 ms for the data connection to end by itself, so that
//!   the frames the peer sent before dying (its report of the endpoint it
//!   failed because of, if any) are read first.
//! * **Abort.** `abort(msg)` sends a [`Kind::Abort`] frame to every peer and
//!   tells the rendezvous, which tells everyone (and the launcher prints
//!   it).
//! * **What the peers wait for** (timeout messages): a
//!   [`Kind::WaitQuery`] to every peer, answered by its reader thread from
//!   what its engine published, even while that engine is blocked.
//! * **Deadlocks.** When every endpoint is blocked with no deadline, or
//!   has ended, and no frame is in flight, every blocked endpoint fails
//!   with `Deadlock`, as on threads and shared memory: the lowest live
//!   endpoint asks the others what they have sent and taken in, twice
//!   (`deadlock.rs`).
//!
//! * **Files**: `mod.rs` (the endpoint and its `Transport` impl),
//!   `connection.rs` (connecting and accepting, the listener), `auth.rs`
//!   (the handshake), `framing.rs` (frames on a byte stream), `io.rs`
//!   (reader threads, writes), `liveness.rs` (peer states, abort),
//!   `setup.rs` (joining a launched job, jobs of threads over loopback),
//!   `deadlock.rs` (deadlock detection).
//!
//! Not done yet: TCP keep-alive tuning for machines that vanish without a
//! reset (a powered-off host is noticed only through the launcher), lazy
//! connection set-up for very large jobs, encryption.

pub(crate) mod auth;
mod connection;
mod deadlock;
mod framing;
mod io;
mod liveness;
pub(crate) mod setup;
#[cfg(test)]
mod tests;

// For the fuzz targets: not part of the API.
#[doc(hidden)]
pub use auth::handshake_on_bytes;
pub(crate) use connection::tune;
#[doc(hidden)]
pub use framing::{read_frame, write_frame, ReadOutcome};
pub use setup::TcpBuilder;

use super::{Fault, Frame, Link, Payload, PeerState, Supervisor, Transport, TransportKind};
use crate::error::io_err;
use crate::error::{Error, Result};
use crate::wire::{Header, Kind};
use liveness::PeerSlot;
use std::collections::VecDeque;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

const ALIVE: u8 = 0;
const FINISHED: u8 = 1;
const FAILED: u8 = 2;

/// Longest single sleep in `wait`.
const MAX_SLEEP: Duration = Duration::from_millis(20);
/// How long a clean close waits for the peers' goodbyes (so that no
/// connection is reset while a peer still reads what we sent).
const LINGER: Duration = Duration::from_secs(5);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// State shared by the rank thread and the reader threads.
struct Shared {
    me: usize,
    queue: Mutex<VecDeque<Frame>>,
    queued: AtomicUsize,
    peers: Vec<PeerSlot>,
    abort: Mutex<Option<(usize, String)>>,
    abort_flag: AtomicBool,
    protocol: Mutex<Option<String>>,
    owner: std::thread::Thread,
    closing: AtomicBool,
    /// Writing half of the connection to each peer (`None` for ourselves),
    /// set once the job is connected.
    writers: OnceLock<Vec<Option<Mutex<TcpStream>>>>,
    /// What this endpoint waits for (empty while it runs), for the peers'
    /// questions ([`Kind::WaitQuery`]).
    waiting: Mutex<String>,
    /// The peers' answers to this endpoint's last question.
    replies: Mutex<Vec<Option<String>>>,
    /// Deadlock detection: frame counts, blocked state, answers.
    census: deadlock::Census,
}

impl Shared {
    fn wake(&self) {
        self.owner.unpark();
    }
    fn push(&self, f: Frame) {
        debug_assert!(
            !deadlock::handled_here(f.header.kind),
            "{:?}",
            f.header.kind
        );
        lock(&self.queue).push_back(f);
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.wake();
    }
}

/// One process's endpoint of a TCP job.
pub struct TcpEndpoint {
    me: usize,
    shared: Arc<Shared>,
    n: usize,
    /// The job's supervisor (a launcher), when there is one.
    supervisor: Mutex<Option<Box<dyn Supervisor>>>,
    listen_addr: SocketAddr,
    closed: AtomicBool,
    /// The most endpoints on one machine (sharing a listening IP), the
    /// same on every endpoint.
    local: usize,
    /// Cores an endpoint may use: the job's agreed figure.
    cores: usize,
}

impl Transport for TcpEndpoint {
    fn endpoint(&self) -> usize {
        self.me
    }
    fn endpoints(&self) -> usize {
        self.n
    }

    fn send(&self, frame: Frame) -> Result<()> {
        let dst = frame.header.dst as usize;
        if dst == self.me {
            let Frame { header, payload } = frame;
            let Some(payload) = payload.detach() else {
                // The sender withdrew the buffer: nothing to send.
                return Ok(());
            };
            self.shared.census.sending(self.me);
            self.shared.push(Frame { header, payload });
            return Ok(());
        }
        if dst >= self.n {
            return Err(Error::Protocol(format!(
                "frame for endpoint {dst}, but the job has {}",
                self.n
            )));
        }
        self.send_to(dst, frame);
        Ok(())
    }

    fn try_recv(&self) -> Option<Frame> {
        if self.shared.queued.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let f = lock(&self.shared.queue).pop_front()?;
        self.shared.queued.fetch_sub(1, Ordering::SeqCst);
        self.shared.census.took(f.header.src as usize);
        Some(f)
    }

    fn wait(&self, deadline: Option<Instant>) {
        if self.shared.queued.load(Ordering::SeqCst) > 0
            || self.shared.abort_flag.load(Ordering::SeqCst)
        {
            return;
        }
        // With no deadline this wait may be part of a deadlock.
        if deadline.is_none() && (!self.block() || self.look_for_deadlock()) {
            return;
        }
        let mut d = MAX_SLEEP;
        if let Some(dl) = deadline {
            d = d.min(dl.saturating_duration_since(Instant::now()));
        }
        if !d.is_zero() {
            std::thread::park_timeout(d);
        }
    }

    fn peer_state(&self, endpoint: usize) -> PeerState {
        if endpoint == self.me {
            return PeerState::Alive;
        }
        let Some(s) = self.shared.peers.get(endpoint) else {
            return PeerState::Failed(format!("no endpoint {endpoint} in this job"));
        };
        match s.state.load(Ordering::Acquire) {
            ALIVE => PeerState::Alive,
            FINISHED => PeerState::Finished,
            _ => PeerState::Failed(lock(&s.why).clone().unwrap_or_default()),
        }
    }

    fn fault(&self) -> Option<Fault> {
        if let Some(m) = self.protocol_error() {
            return Some(Fault::Protocol(m));
        }
        self.aborted()
            .map(|(endpoint, message)| Fault::Aborted { endpoint, message })
    }

    fn link(&self) -> Link {
        Link {
            kind: Some(TransportKind::Tcp),
            ts: 10e-6,
            tw: 0.35e-9,
            shared_memory: false,
            ranks_per_node: self.local,
            cores_per_node: self.cores,
        }
    }

    fn set_waiting(&self, what: Option<&str>) {
        *lock(&self.shared.waiting) = what.unwrap_or("").to_string();
        if what.is_none() {
            self.unblock();
        }
    }

    fn deadlock(&self) -> Option<String> {
        self.deadlock_report()
    }

    fn describe_waits(&self) -> String {
        self.waits_of_others()
    }

    fn abort(&self, message: &str) {
        // Records it and relays an Abort frame to every peer.
        self.shared.set_abort(self.me, message.to_string());
        if let Some(s) = lock(&self.supervisor).as_ref() {
            s.aborting(message);
        }
    }

    fn close(&self, outcome: std::result::Result<(), String>) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let ok = outcome.is_ok();
        if ok {
            for j in (0..self.n).filter(|&j| j != self.me) {
                self.send_to(
                    j,
                    Frame {
                        header: Header {
                            kind: Kind::Goodbye,
                            flags: 0,
                            src: self.me as u32,
                            dst: j as u32,
                            context: 0,
                            tag: 0,
                            id: 0,
                            len: 0,
                        },
                        payload: Payload::Bytes(Vec::new()),
                    },
                );
            }
        }
        for w in self.writers().iter().flatten() {
            let _ = lock(w).shutdown(Shutdown::Write);
        }
        if ok {
            let end = Instant::now() + LINGER;
            while Instant::now() < end
                && self
                    .shared
                    .peers
                    .iter()
                    .enumerate()
                    .any(|(j, p)| j != self.me && p.state.load(Ordering::SeqCst) == ALIVE)
            {
                std::thread::park_timeout(MAX_SLEEP);
            }
        }
        if let Some(s) = lock(&self.supervisor).take() {
            s.finished(&outcome);
        }
        // Stop the accept thread: flag, then wake it with a connection.
        self.shared.closing.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.listen_addr, Duration::from_millis(200));
        // Drop whatever nobody will read.
        lock(&self.shared.queue).clear();
    }
}

impl Drop for TcpEndpoint {
    fn drop(&mut self) {
        let outcome = if std::thread::panicking() {
            Err("panicked".to_string())
        } else {
            Ok(())
        };
        self.close(outcome);
    }
}
