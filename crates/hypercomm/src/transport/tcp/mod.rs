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
//!   reports deaths it sees over the control connection.
//! * **Abort.** `abort(msg)` sends a [`Kind::Abort`] frame to every peer and
//!   tells the rendezvous, which tells everyone (and the launcher prints
//!   it).
//!
//! Not done yet: TCP keep-alive tuning for machines that vanish without a
//! reset (a powered-off host is noticed only through the launcher), lazy
//! connection set-up for very large jobs, encryption.

pub(crate) mod auth;

use super::{Frame, Inline, Payload, PeerState, Transport, INLINE_MAX};
use crate::error::{Error, Result};
use crate::launch::control::{self, Ctl};
use crate::wire::{Header, Kind};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

const ALIVE: u8 = 0;
const FINISHED: u8 = 1;
const FAILED: u8 = 2;

/// Longest single sleep in `wait`.
const MAX_SLEEP: Duration = Duration::from_millis(20);
/// How long set-up waits for every peer to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a clean close waits for the peers' goodbyes (so that no
/// connection is reset while a peer still reads what we sent).
const LINGER: Duration = Duration::from_secs(5);
/// Socket buffer sizes.
const SOCKET_BUFFER: usize = 4 << 20;
/// Payloads up to this size are copied next to the header and written with
/// one system call.
const COALESCE: usize = 16 << 10;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct PeerSlot {
    state: AtomicU8,
    why: Mutex<Option<String>>,
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
}

impl Shared {
    fn wake(&self) {
        self.owner.unpark();
    }
    fn push(&self, f: Frame) {
        lock(&self.queue).push_back(f);
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.wake();
    }
    fn finished(&self, peer: usize) {
        let _ = self.peers[peer].state.compare_exchange(
            ALIVE,
            FINISHED,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        self.wake();
    }
    fn failed(&self, peer: usize, why: String) {
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
    fn set_abort(&self, ep: usize, message: String) {
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

    fn relay_abort(&self, origin: usize, message: &str) {
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
    fn protocol_error(&self, peer: usize, what: String) {
        let msg = format!(
            "endpoint {peer} sent a malformed frame to endpoint {}: {what}",
            self.me
        );
        eprintln!("hypercomm: {msg}; closing that connection");
        lock(&self.protocol).get_or_insert(msg.clone());
        self.failed(peer, msg);
    }
}

/// One process's endpoint of a TCP job.
pub(crate) struct TcpEndpoint {
    me: usize,
    shared: Arc<Shared>,
    n: usize,
    /// Connection to the rendezvous, when there is one.
    control: Option<Arc<Mutex<TcpStream>>>,
    listen_addr: SocketAddr,
    closed: AtomicBool,
    /// Run at the end of `close` (a spawning host waits for its children).
    on_close: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

/// Set TCP_NODELAY and the buffer sizes; failures here are not fatal.
pub(crate) fn tune(s: &TcpStream) {
    let r = socket2::SockRef::from(s);
    let _ = r.set_tcp_nodelay(true);
    let _ = r.set_send_buffer_size(SOCKET_BUFFER);
    let _ = r.set_recv_buffer_size(SOCKET_BUFFER);
}

fn io_err(op: &str, e: impl std::fmt::Display) -> Error {
    Error::Io {
        op: op.to_string(),
        message: e.to_string(),
    }
}

/// What set-up needs to know.
pub(crate) struct TcpSetup {
    pub(crate) me: usize,
    /// Listening address of every endpoint.
    pub(crate) addrs: Vec<SocketAddr>,
    /// This endpoint's listener (bound before the addresses were exchanged).
    pub(crate) listener: TcpListener,
    pub(crate) secret: Vec<u8>,
    pub(crate) job: String,
    /// Control connection to the rendezvous.
    pub(crate) control: Option<TcpStream>,
}

impl TcpEndpoint {
    /// Connect to every peer and start the reader threads. Must run on the
    /// thread that will use the endpoint (it is the one unparked).
    pub(crate) fn establish(setup: TcpSetup) -> Result<TcpEndpoint> {
        let TcpSetup {
            me,
            addrs,
            listener,
            secret,
            job,
            control,
        } = setup;
        let n = addrs.len();
        let listen_addr = listener.local_addr().map_err(|e| io_err("listener", e))?;
        let shared = Arc::new(Shared {
            me,
            queue: Mutex::new(VecDeque::new()),
            queued: AtomicUsize::new(0),
            peers: (0..n)
                .map(|_| PeerSlot {
                    state: AtomicU8::new(ALIVE),
                    why: Mutex::new(None),
                })
                .collect(),
            abort: Mutex::new(None),
            abort_flag: AtomicBool::new(false),
            protocol: Mutex::new(None),
            owner: std::thread::current(),
            closing: AtomicBool::new(false),
            writers: OnceLock::new(),
        });

        // Accept connections from the higher endpoints (and refuse strangers
        // for as long as the job runs).
        let (tx, rx) = mpsc::channel::<(usize, TcpStream)>();
        {
            let (secret, job, shared) = (secret.clone(), job.clone(), shared.clone());
            std::thread::Builder::new()
                .name(format!("hypercomm-accept-{me}"))
                .spawn(move || accept_loop(listener, shared, secret, job, n, tx))
                .map_err(|e| io_err("spawning the accept thread", e))?;
        }
        let mut streams: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
        for (j, addr) in addrs.iter().enumerate().take(me) {
            let s = connect_peer(*addr, &secret, &job, me, j)?;
            streams[j] = Some(s);
        }
        let deadline = Instant::now() + CONNECT_TIMEOUT;
        let mut missing = n - me - 1;
        while missing > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok((j, s)) if streams[j].is_none() => {
                    streams[j] = Some(s);
                    missing -= 1;
                }
                Ok((j, _)) => eprintln!(
                    "hypercomm: endpoint {me}: endpoint {j} connected twice; closing the second connection"
                ),
                Err(_) => {
                    let who: Vec<String> = (me + 1..n)
                        .filter(|&j| streams[j].is_none())
                        .map(|j| j.to_string())
                        .collect();
                    return Err(io_err(
                        "connecting the job",
                        format!(
                            "endpoint {me}: endpoints {} did not connect within {CONNECT_TIMEOUT:?}",
                            who.join(", ")
                        ),
                    ));
                }
            }
        }
        drop(rx);

        let mut peers = Vec::with_capacity(n);
        let mut readers = Vec::new();
        for (j, s) in streams.into_iter().enumerate() {
            match s {
                None => peers.push(None),
                Some(s) => {
                    readers.push((j, s.try_clone().map_err(|e| io_err("cloning a socket", e))?));
                    peers.push(Some(Mutex::new(s)));
                }
            }
        }
        let _ = shared.writers.set(peers);
        for (j, r) in readers {
            {
                {
                    let sh = shared.clone();
                    std::thread::Builder::new()
                        .name(format!("hypercomm-read-{me}-{j}"))
                        .spawn(move || reader(sh, j, r))
                        .map_err(|e| io_err("spawning a reader thread", e))?;
                }
            }
        }
        let control = match control {
            Some(c) => {
                let r = c.try_clone().map_err(|e| io_err("cloning a socket", e))?;
                let sh = shared.clone();
                std::thread::Builder::new()
                    .name(format!("hypercomm-control-{me}"))
                    .spawn(move || control_reader(sh, r))
                    .map_err(|e| io_err("spawning the control thread", e))?;
                Some(Arc::new(Mutex::new(c)))
            }
            None => None,
        };
        Ok(TcpEndpoint {
            me,
            shared,
            n,
            control,
            listen_addr,
            closed: AtomicBool::new(false),
            on_close: Mutex::new(None),
        })
    }

    /// Run `f` at the end of `close` (after the goodbyes).
    pub(crate) fn on_close(&self, f: Box<dyn FnOnce() + Send>) {
        *lock(&self.on_close) = Some(f);
    }

    pub(crate) fn aborted(&self) -> Option<(usize, String)> {
        if self.shared.abort_flag.load(Ordering::Acquire) {
            lock(&self.shared.abort).clone()
        } else {
            None
        }
    }

    pub(crate) fn protocol_error(&self) -> Option<String> {
        lock(&self.shared.protocol).clone()
    }

    pub(crate) fn describe_waits(&self) -> String {
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

    fn tell_control(&self, m: &Ctl) {
        if let Some(c) = &self.control {
            let _ = control::write(&mut *lock(c), m);
        }
    }

    fn writers(&self) -> &[Option<Mutex<TcpStream>>] {
        self.shared
            .writers
            .get()
            .map(|w| w.as_slice())
            .unwrap_or(&[])
    }

    fn send_to(&self, j: usize, frame: Frame) {
        let Some(Some(w)) = self.writers().get(j) else {
            return;
        };
        if self.shared.peers[j].state.load(Ordering::Acquire) != ALIVE {
            return; // dropped: a borrowed payload tells its sender
        }
        let mut w = lock(w);
        if let Err(e) = write_frame(&mut *w, frame) {
            // Mark it failed only if it had not finished cleanly meanwhile.
            self.shared
                .failed(j, format!("writing to endpoint {j} failed: {e}"));
        }
    }
}

/// Write one frame: the header, then the payload bytes.
pub(crate) fn write_frame(w: &mut impl Write, frame: Frame) -> std::io::Result<()> {
    let hdr = frame.header.encode();
    match frame.payload {
        Payload::Inline(i) => write_parts(w, &hdr, i.bytes()),
        Payload::Bytes(b) => write_parts(w, &hdr, &b),
        Payload::Vec(v) => write_parts(w, &hdr, v.bytes()),
        Payload::Borrowed(b) => {
            let mut res = Ok(());
            let taken = b.with_bytes(|bytes| {
                res = write_parts(w, &hdr, bytes);
                bytes.len()
            });
            match taken {
                Some(_) => res,
                // Revoked by the sender before we started: send nothing.
                None => Ok(()),
            }
        }
    }
}

fn write_parts(
    w: &mut impl Write,
    hdr: &[u8; Header::SIZE],
    payload: &[u8],
) -> std::io::Result<()> {
    if payload.len() <= COALESCE {
        let mut buf = [0u8; Header::SIZE + COALESCE];
        buf[..Header::SIZE].copy_from_slice(hdr);
        buf[Header::SIZE..Header::SIZE + payload.len()].copy_from_slice(payload);
        w.write_all(&buf[..Header::SIZE + payload.len()])
    } else {
        w.write_all(hdr)?;
        w.write_all(payload)
    }
}

/// Read until `buf` is full or end of stream; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// What reading one frame from a byte stream gave.
#[derive(Debug)]
pub enum ReadOutcome {
    /// A whole frame.
    Frame(Frame),
    /// The stream ended cleanly between frames.
    End,
    /// The stream ended or failed inside a frame (an I/O problem, not a
    /// protocol violation).
    Broken(String),
    /// The bytes are not a valid frame from `expect_src` to `expect_dst`.
    Malformed(Error),
}

/// Read and check one frame from `r`: the header must decode
/// ([`Header::decode`]) and name `expect_src` → `expect_dst`. The payload is
/// read into a buffer that grows as bytes arrive, so a lying length cannot
/// make us allocate memory the peer never sends. Never panics on any input.
pub fn read_frame(r: &mut impl Read, expect_src: usize, expect_dst: usize) -> ReadOutcome {
    let mut hb = [0u8; Header::SIZE];
    let got = match read_full(r, &mut hb) {
        Ok(g) => g,
        Err(e) => return ReadOutcome::Broken(format!("connection failed: {e}")),
    };
    if got == 0 {
        return ReadOutcome::End;
    }
    if got < Header::SIZE {
        return ReadOutcome::Broken(format!(
            "connection closed inside a frame header ({got} of {} bytes)",
            Header::SIZE
        ));
    }
    let h = match Header::decode(&hb) {
        Ok(h) => h,
        Err(e) => return ReadOutcome::Malformed(e),
    };
    if h.src as usize != expect_src || h.dst as usize != expect_dst {
        return ReadOutcome::Malformed(Error::Protocol(format!(
            "frame claims to go from endpoint {} to endpoint {}, but the connection is from {expect_src} to {expect_dst}",
            h.src, h.dst
        )));
    }
    let len = h.stream_payload_len();
    let payload = if len as usize <= INLINE_MAX && len <= INLINE_MAX as u64 {
        let mut b = [0u8; INLINE_MAX];
        match read_full(r, &mut b[..len as usize]) {
            Ok(g) if g == len as usize => {}
            Ok(g) => {
                return ReadOutcome::Broken(format!(
                    "connection closed inside a payload ({g} of {len} bytes)"
                ))
            }
            Err(e) => return ReadOutcome::Broken(format!("connection failed: {e}")),
        }
        Payload::Inline(Inline::new(&b[..len as usize]).expect("short payload"))
    } else {
        let mut v = Vec::new();
        // Reserve what is announced up to 256 MiB; beyond that, grow as
        // the bytes actually arrive.
        let first = len.min(256 << 20) as usize;
        if v.try_reserve_exact(first).is_err() {
            return ReadOutcome::Malformed(Error::Protocol(format!(
                "cannot allocate {first} bytes for a {len}-byte payload"
            )));
        }
        match r.take(len).read_to_end(&mut v) {
            Ok(g) if g as u64 == len => {}
            Ok(g) => {
                return ReadOutcome::Broken(format!(
                    "connection closed inside a payload ({g} of {len} bytes)"
                ))
            }
            Err(e) => return ReadOutcome::Broken(format!("connection failed: {e}")),
        }
        Payload::Bytes(v)
    };
    ReadOutcome::Frame(Frame { header: h, payload })
}

fn reader(sh: Arc<Shared>, peer: usize, mut s: TcpStream) {
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
                    let text = match &f.payload {
                        Payload::Inline(i) => String::from_utf8_lossy(i.bytes()).into_owned(),
                        Payload::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                        _ => String::new(),
                    };
                    sh.set_abort(origin, text);
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

fn control_reader(sh: Arc<Shared>, mut s: TcpStream) {
    while let Ok(Some(m)) = control::read(&mut s) {
        match m {
            Ctl::Aborted { endpoint, message } => sh.set_abort(endpoint as usize, message),
            Ctl::PeerFailed { endpoint, message } => {
                let e = endpoint as usize;
                if e < sh.peers.len() && e != sh.me {
                    sh.failed(e, message);
                }
            }
            _ => {}
        }
    }
    // The rendezvous went away: nothing to do (the data connections say
    // everything that matters).
}

fn connect_peer(
    addr: SocketAddr,
    secret: &[u8],
    job: &str,
    me: usize,
    j: usize,
) -> Result<TcpStream> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let mut s = loop {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(s) => break s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                return Err(io_err(
                    "connecting the job",
                    format!("endpoint {me} could not connect to endpoint {j} at {addr}: {e}"),
                ))
            }
        }
    };
    tune(&s);
    auth::client(&mut s, secret, job, me as u32).map_err(|e| {
        io_err(
            "authenticating",
            format!("endpoint {me} → endpoint {j} at {addr}: {e}"),
        )
    })?;
    Ok(s)
}

fn accept_loop(
    l: TcpListener,
    sh: Arc<Shared>,
    secret: Vec<u8>,
    job: String,
    n: usize,
    tx: mpsc::Sender<(usize, TcpStream)>,
) {
    let me = sh.me;
    let tx = Arc::new(Mutex::new(tx));
    for conn in l.incoming() {
        if sh.closing.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut s) = conn else { continue };
        let (secret, job, tx) = (secret.clone(), job.clone(), tx.clone());
        let _ = std::thread::Builder::new()
            .name(format!("hypercomm-auth-{me}"))
            .spawn(move || {
                let peer = s
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|_| "?".into());
                match auth::server(&mut s, &secret, &job) {
                    Ok(id) if (id as usize) > me && (id as usize) < n => {
                        tune(&s);
                        let sent = lock(&tx).send((id as usize, s));
                        if sent.is_err() {
                            eprintln!("hypercomm: endpoint {me}: late connection from endpoint {id} ({peer}) refused: the job is already connected");
                        }
                    }
                    Ok(id) => eprintln!(
                        "hypercomm: endpoint {me}: refused a connection from {peer}: it claims to be endpoint {id}, which does not connect here"
                    ),
                    Err(e) => eprintln!(
                        "hypercomm: endpoint {me}: refused a connection from {peer}: {e}"
                    ),
                }
            });
    }
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
            let payload = match payload {
                Payload::Borrowed(b) => {
                    let mut v = Vec::new();
                    if b.with_bytes(|bytes| {
                        v.extend_from_slice(bytes);
                        bytes.len()
                    })
                    .is_none()
                    {
                        return Ok(());
                    }
                    Payload::Bytes(v)
                }
                p => p,
            };
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
        let f = lock(&self.shared.queue).pop_front();
        if f.is_some() {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
        }
        f
    }

    fn wait(&self, deadline: Option<Instant>) {
        if self.shared.queued.load(Ordering::SeqCst) > 0
            || self.shared.abort_flag.load(Ordering::SeqCst)
        {
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

    fn abort(&self, message: &str) {
        // Records it and relays an Abort frame to every peer.
        self.shared.set_abort(self.me, message.to_string());
        self.tell_control(&Ctl::Abort {
            message: message.to_string(),
        });
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
        self.tell_control(&Ctl::Finished {
            ok,
            message: outcome.err().unwrap_or_default(),
        });
        if let Some(c) = &self.control {
            let _ = lock(c).shutdown(Shutdown::Write);
        }
        // Stop the accept thread: flag, then wake it with a connection.
        self.shared.closing.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.listen_addr, Duration::from_millis(200));
        // Drop whatever nobody will read.
        lock(&self.shared.queue).clear();
        if let Some(f) = lock(&self.on_close).take() {
            f();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::Comm;
    use crate::engine::Engine;
    use crate::transport::AnyTransport;
    use proptest::prelude::*;
    use std::rc::Rc;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    /// Endpoint 0 of a 2-endpoint job whose endpoint 1 is `fake`, given a
    /// connected and authenticated socket to endpoint 0.
    fn with_fake_peer(fake: impl FnOnce(TcpStream) + Send + 'static) -> Comm {
        let l0 = TcpListener::bind("127.0.0.1:0").unwrap();
        let l1 = TcpListener::bind("127.0.0.1:0").unwrap();
        let a0 = l0.local_addr().unwrap();
        let addrs = vec![a0, l1.local_addr().unwrap()];
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(a0).unwrap();
            auth::client(&mut s, SECRET, "test-job", 1).unwrap();
            fake(s);
        });
        let t = TcpEndpoint::establish(TcpSetup {
            me: 0,
            addrs,
            listener: l0,
            secret: SECRET.to_vec(),
            job: "test-job".into(),
            control: None,
        })
        .unwrap();
        let engine = Engine::new(AnyTransport::Tcp(t), Some(Duration::from_secs(10)));
        Comm::world(Rc::new(engine), 2, false)
    }

    fn header(kind: Kind, src: u32, dst: u32, len: u64) -> Header {
        Header {
            kind,
            flags: 0,
            src,
            dst,
            context: 0,
            tag: 5,
            id: 0,
            len,
        }
    }

    #[test]
    fn a_valid_frame_then_garbage_gives_the_message_then_protocol() {
        let comm = with_fake_peer(|mut s| {
            let f = Frame {
                header: header(Kind::Data, 1, 0, 8),
                payload: Payload::Bytes(42u64.to_le_bytes().to_vec()),
            };
            write_frame(&mut s, f).unwrap();
            s.write_all(&[0xAB; 100]).unwrap();
            std::thread::sleep(Duration::from_millis(500));
        });
        let (v, _) = comm.recv::<u64>(1, 5).unwrap();
        assert_eq!(v, 42);
        let e = comm.recv::<u64>(1, 5).unwrap_err();
        match e {
            Error::Protocol(m) => assert!(m.contains("magic"), "{m}"),
            e => panic!("expected a protocol error, got {e:?}"),
        }
        // It stays: every later operation says so too.
        assert!(matches!(comm.send(&[1u8], 0, 1), Err(Error::Protocol(_))));
    }

    #[test]
    fn a_frame_with_a_forged_source_is_a_protocol_error() {
        let comm = with_fake_peer(|mut s| {
            s.write_all(&header(Kind::Data, 7, 0, 0).encode()).unwrap();
            std::thread::sleep(Duration::from_millis(500));
        });
        match comm.recv::<u8>(1, 5) {
            Err(Error::Protocol(m)) => assert!(m.contains("from endpoint 7"), "{m}"),
            r => panic!("expected a protocol error, got {r:?}"),
        }
    }

    #[test]
    fn a_lying_length_then_eof_is_a_failed_peer_not_a_huge_allocation() {
        let comm = with_fake_peer(|mut s| {
            s.write_all(&header(Kind::Data, 1, 0, u64::MAX / 2).encode())
                .unwrap();
            s.write_all(&[1, 2, 3]).unwrap();
        });
        let e = comm.recv::<u8>(1, 5).unwrap_err();
        assert!(matches!(e, Error::PeerFailed { .. }), "{e:?}");
    }

    #[test]
    fn goodbye_then_eof_is_finished_and_eof_alone_is_failed() {
        let comm = with_fake_peer(|mut s| {
            s.write_all(&header(Kind::Goodbye, 1, 0, 0).encode())
                .unwrap();
        });
        let start = Instant::now();
        let e = comm.recv::<u8>(1, 5).unwrap_err();
        assert!(matches!(e, Error::PeerFailed { .. }), "{e:?}");
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(comm.engine().t.peer_state(1), PeerState::Finished);

        let comm = with_fake_peer(drop);
        let e = comm.recv::<u8>(1, 5).unwrap_err();
        assert!(matches!(e, Error::PeerFailed { .. }), "{e:?}");
        assert!(matches!(
            comm.engine().t.peer_state(1),
            PeerState::Failed(_)
        ));
    }

    #[test]
    fn strangers_are_refused_by_an_endpoint_listener() {
        let l0 = TcpListener::bind("127.0.0.1:0").unwrap();
        let a0 = l0.local_addr().unwrap();
        let addrs = vec![a0, "127.0.0.1:9".parse().unwrap()];
        std::thread::spawn(move || {
            // A stranger with the wrong secret, then the real peer.
            let mut bad = TcpStream::connect(a0).unwrap();
            assert!(auth::client(&mut bad, b"wrong", "test-job", 1).is_err());
            let mut s = TcpStream::connect(a0).unwrap();
            auth::client(&mut s, SECRET, "test-job", 1).unwrap();
            let f = Frame {
                header: header(Kind::Data, 1, 0, 1),
                payload: Payload::Bytes(vec![9]),
            };
            write_frame(&mut s, f).unwrap();
            std::thread::sleep(Duration::from_millis(300));
        });
        let t = TcpEndpoint::establish(TcpSetup {
            me: 0,
            addrs,
            listener: l0,
            secret: SECRET.to_vec(),
            job: "test-job".into(),
            control: None,
        })
        .unwrap();
        let engine = Engine::new(AnyTransport::Tcp(t), Some(Duration::from_secs(10)));
        let comm = Comm::world(Rc::new(engine), 2, false);
        assert_eq!(comm.recv::<u8>(1, 5).unwrap().0, 9);
    }

    proptest! {
        #[test]
        fn reading_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut r = &bytes[..];
            for _ in 0..4 {
                match read_frame(&mut r, 1, 0) {
                    ReadOutcome::Frame(_) => continue,
                    _ => break,
                }
            }
        }

        #[test]
        fn frames_round_trip_through_a_stream(lens in proptest::collection::vec(0usize..5000, 1..6)) {
            let mut buf = Vec::new();
            for (i, &len) in lens.iter().enumerate() {
                let data: Vec<u8> = (0..len).map(|k| (k + i) as u8).collect();
                write_frame(&mut buf, Frame { header: header(Kind::Data, 1, 0, len as u64), payload: Payload::copy_of(&data) }).unwrap();
            }
            let mut r = &buf[..];
            for (i, &len) in lens.iter().enumerate() {
                match read_frame(&mut r, 1, 0) {
                    ReadOutcome::Frame(f) => {
                        prop_assert_eq!(f.header.len, len as u64);
                        let want: Vec<u8> = (0..len).map(|k| (k + i) as u8).collect();
                        let got = match &f.payload { Payload::Inline(x) => x.bytes().to_vec(), Payload::Bytes(b) => b.clone(), _ => unreachable!() };
                        prop_assert_eq!(got, want);
                    }
                    other => prop_assert!(false, "frame {} gave {:?}", i, other),
                }
            }
            prop_assert!(matches!(read_frame(&mut r, 1, 0), ReadOutcome::End));
        }
    }
}
