//! Transports: the one small trait that moves frames between endpoints.
//!
//! Endpoints are numbered `0..endpoints()`: the nodes `0..n` first, then the
//! host (when the job has one) as endpoint `n`. A transport knows nothing of
//! communicators, tags or matching; the p2p engine above it does all that.
//!
//! ## The boundary
//!
//! Everything the engine and the collectives need from a transport is in
//! [`Transport`]: identity ([`Transport::endpoint`],
//! [`Transport::endpoints`]), moving frames ([`Transport::send`],
//! [`Transport::try_recv`], [`Transport::wait`]; the eager fast path's
//! [`Transport::send_copied`] and [`Transport::try_recv_offer`] with its
//! [`Transport::unclaim`], and a blocking receive's
//! [`Transport::take_from`] and [`Transport::take_plain`], which have
//! defaults; `offer.rs` has the types they use), what is known of the peers
//! and of the job ([`Transport::peer_state`], [`Transport::fault`] and its
//! quick look [`Transport::faulted`]), ending
//! ([`Transport::abort`], [`Transport::close`]), what selection needs
//! ([`Transport::link`]: start-up and per-byte cost, shared memory, ranks
//! and cores per node), the shared memory of small collectives where ranks
//! share it ([`Transport::board`], [`board`]), and three diagnostics with
//! defaults
//! ([`Transport::set_waiting`], [`Transport::describe_waits`],
//! [`Transport::deadlock`]: transports that see the whole job detect a
//! deadlock with the double collect of `deadlock.rs`; TCP and MPI do it
//! with questions to the peers, `census.rs`, `tcp/deadlock.rs`,
//! `mpi/deadlock.rs`).
//!
//! A transport is made in two steps (timely's `AllocateBuilder`): a
//! [`Builder`] is `Send` and travels to the thread that will use the
//! endpoint, where [`Builder::build`] makes it; `launch::start_rank` turns
//! a builder into a rank (engine and world communicator).
//!
//! Transports report an abort and their end to whoever supervises the job
//! (a launcher) through a [`Supervisor`] they are given, and hear of other
//! endpoints' deaths and aborts through the [`Notices`] they hand back; they
//! know nothing of how a launcher talks.
//!
//! ## Kinds
//!
//! The known transports are listed once, in the `transports!` invocation
//! below: one line each makes the [`TransportKind`] (parsed from the
//! command line and the environment), the [`AnyTransport`] variant the
//! engine dispatches through (no dynamic dispatch on the fast path), and
//! the link to the transport's folder, whose `setup.rs` says how a job of
//! that kind is made (threads of this process, or processes started by a
//! launcher). Transports from outside the crate (tests, experiments) run
//! through [`AnyTransport::other`].
//!
//! | kind | folder | ranks are |
//! |---|---|---|
//! | `thread` | [`thread`] | threads of one process |
//! | `shm` | [`shm`] | processes on one machine (shared segment) |
//! | `tcp` | [`tcp`] | processes on one or several machines |
//! | `sim` | [`sim`] | threads of one process, in virtual time on a simulated machine |
//! | `mpi` | [`mpi`] | the processes of an MPI job (`mpi` feature) |
//!
//! Every transport folder uses the same file names for the same concepts
//! (gloo's `transport/{tcp,uv,ibverbs}/`): `mod.rs` (the endpoint and its
//! `Transport` impl), `setup.rs` (making a job), `liveness.rs` (peer
//! states, failures, abort), and where they apply `wake.rs` (sleeping and
//! waking) and the transport's own pieces (`segment.rs`, `ring.rs`,
//! `lend.rs` for shm; `connection.rs`, `framing.rs`, `auth.rs`, `io.rs` for
//! tcp; `spsc.rs` for threads).
//!
//! ## What may import what
//!
//! `transport/` imports only [`crate::error`] and [`crate::wire`] (and, in
//! tests, its own pieces): nothing from the engine, communicators,
//! collectives, launch or run.
//!
//! Not done yet: no other transport is planned; a new one would be one
//! folder and one line in `transports!`.

pub mod board;
// Only the transports that ask their peers (TCP, MPI) use it.
#[cfg(any(processes, feature = "mpi"))]
pub(crate) mod census;
pub(crate) mod deadlock;
mod frame;
#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(not(feature = "mpi"))]
#[path = "mpi/off.rs"]
pub mod mpi;
pub mod native;
mod off;
mod offer;
#[cfg(all(feature = "shm", target_os = "linux"))]
pub mod shm;
#[cfg(not(all(feature = "shm", target_os = "linux")))]
#[path = "shm/off.rs"]
pub mod shm;
pub mod sim;
#[cfg(processes)]
pub mod tcp;
#[cfg(not(processes))]
#[path = "tcp/off.rs"]
pub mod tcp;
pub mod thread;

pub use frame::{Borrowed, Completion, Frame, Inline, LendCount, OwnedBytes, Payload, INLINE_MAX};
pub use offer::{Arrival, Claim, Direct, Plain, Taker};
// The cross-process lending that shared memory (and MPI) build on.
#[cfg(any(all(feature = "shm", target_os = "linux"), feature = "mpi"))]
pub(crate) use frame::{Lent, RemoteBorrow, RemoteCompletion, DONE, PENDING};

use crate::error::{Error, Result};
use crate::wire::Header;
use std::net::IpAddr;
#[cfg(unix)]
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Instant;

/// What a transport knows about a peer endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerState {
    /// Running.
    Alive,
    /// Finished normally: it will send nothing more.
    Finished,
    /// Failed (panic, error, crash), with what is known.
    Failed(String),
}

/// Something that happened to the whole job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Endpoint `endpoint` aborted the job with `message`.
    Aborted {
        /// Who aborted.
        endpoint: usize,
        /// Why.
        message: String,
    },
    /// A peer sent bytes that are not our protocol: every later operation
    /// fails with [`Error::Protocol`] and this text.
    Protocol(String),
}

/// What collective selection needs to know about a transport (seed 001's
/// cost model, calibrated per transport, plus the machine's shape).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// The kind, for a built-in transport (selection's measured decision
    /// table is per kind); `None` for a transport from outside the crate.
    pub kind: Option<TransportKind>,
    /// Start-up cost of one message, seconds (ts).
    pub ts: f64,
    /// Cost per byte, seconds (tw).
    pub tw: f64,
    /// Whether this endpoint shares memory with its peers (threads, shm).
    pub shared_memory: bool,
    /// Endpoints of the job on one machine: the most on any machine of
    /// the job, the same on every endpoint (selection must choose alike
    /// everywhere).
    pub ranks_per_node: usize,
    /// Cores an endpoint's process may use: the fewest of any endpoint of
    /// the job, agreed when the job started (the same on every endpoint),
    /// or this process's where the endpoints are threads of it.
    pub cores_per_node: usize,
}

impl Link {
    /// Whether the ranks on this machine outnumber its cores.
    pub fn oversubscribed(&self) -> bool {
        self.ranks_per_node > self.cores_per_node
    }
}

/// The number of cores this process may use (asked once: the answer
/// costs system calls and file reads).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

/// The transport interface. See the module docs.
pub trait Transport {
    /// This endpoint's index.
    fn endpoint(&self) -> usize;
    /// Number of endpoints (nodes plus host).
    fn endpoints(&self) -> usize;
    /// Send a frame to `frame.header.dst`. FIFO per ordered endpoint pair.
    /// A [`Payload::Borrowed`] may be kept until the receiver copies it (or
    /// written out before returning); either way its completion must be
    /// set, or it is dropped (which tells the sender).
    fn send(&self, frame: Frame) -> Result<()>;
    /// Take the next arrived frame, if any. Never blocks.
    fn try_recv(&self) -> Option<Frame>;
    /// Send a frame whose payload is a copy of `data` (`header.len` is
    /// `data.len()`), copied before this returns. `Ok(false)` when the
    /// receiver has ended and nothing was sent (the engine then reports
    /// why). The eager fast path: a transport that can write header and
    /// payload straight into its channel (shared memory writes them into
    /// one ring slot) builds no frame. Default: [`Transport::peer_state`],
    /// then [`Transport::send`] of an inline or owned copy.
    fn send_copied(&self, header: Header, data: &[u8]) -> Result<bool> {
        if self.peer_state(header.dst as usize) != PeerState::Alive {
            return Ok(false);
        }
        self.send(Frame {
            header,
            payload: Payload::copy_of(data),
        })
        .map(|()| true)
    }
    /// Take the next arrived frame, offering it first to `taker` when it
    /// is a data frame whose bytes are at hand (in a ring slot, inline): if
    /// [`Taker::take`] returns true it has consumed the message and no
    /// frame is built ([`Arrival::Taken`]; a transport may instead read on
    /// and report what follows, or [`Arrival::Nothing`]). A transport that
    /// streams a long message in parts may instead ask [`Taker::claim`]
    /// for a buffer when the first part arrives, write every part there,
    /// and report the whole message with [`Arrival::Filled`]. The eager fast path of a posted
    /// receive. Never blocks. Default: [`Transport::try_recv`], offering
    /// nothing.
    fn try_recv_offer(&self, taker: &mut dyn Taker) -> Arrival {
        let _ = taker;
        match self.try_recv() {
            Some(f) => Arrival::Frame(f),
            None => Arrival::Nothing,
        }
    }
    /// The fast path of a blocking receive from one endpoint: offer the
    /// next arrival from `src` to `taker` when it is a whole data message
    /// whose bytes are at hand, consuming it only when taken. Anything
    /// else stays where it is for [`Transport::try_recv_offer`]: no frame
    /// is built, nothing is flushed or reaped. Never blocks. With `src`
    /// `None`, from any endpoint (another than this one): the next arrival
    /// of whichever channel the transport looks at first that has one,
    /// [`Direct::Other`] as soon as one it looks at has something else at
    /// its head (or this endpoint's own channel has anything). Default:
    /// [`Direct::Other`] (no such path).
    fn take_from(&self, src: Option<usize>, taker: &mut dyn Taker) -> Direct {
        let _ = (src, taker);
        Direct::Other
    }
    /// A blocking receive's plainest path, for a transport that matches
    /// the world communicator's point-to-point messages (context 0) itself
    /// (MPI): take the next message from `src` with `tag` straight into
    /// `dst` when it is a whole data message, not synchronous, that fits,
    /// polling up to `polls` times; after [`Plain::Other`] the message
    /// that came, if one did, stays for the general path, and a receive
    /// started for this one has been withdrawn. Default:
    /// [`Plain::Unoffered`].
    fn take_plain(&self, src: usize, tag: u32, dst: &mut [u8], polls: u32) -> Plain {
        let _ = (src, tag, dst, polls);
        Plain::Unoffered
    }
    /// The receive [`Transport::take_from`] told [`Direct::Empty`] goes to
    /// the general path: withdraw a receive started for it (keeping what
    /// it received after all). Default: nothing to do.
    fn take_from_end(&self) {}
    /// True only when [`Transport::try_recv_offer`] would find nothing and
    /// have nothing of its own to do (no queued frame to flush, no lent
    /// buffer to reap): a cheap look that lets every pass of a wait skip
    /// the drain. False is always correct; the default says false.
    #[inline]
    fn idle(&self) -> bool {
        false
    }
    /// Give back the buffer claimed for the message streaming in from
    /// `src` ([`Taker::claim`]): the transport stops writing into it before
    /// this returns and keeps what it wrote and what is still to come as a
    /// frame of its own. Default: nothing (a transport that never claims).
    fn unclaim(&self, src: usize) {
        let _ = src;
    }
    /// Block until a frame may have arrived, a peer's state changed, or the
    /// deadline passed. May return early (spuriously).
    fn wait(&self, deadline: Option<Instant>);
    /// What is known about a peer.
    fn peer_state(&self, endpoint: usize) -> PeerState;
    /// A job-wide fault (an abort, a protocol violation), if any.
    fn fault(&self) -> Option<Fault>;
    /// Whether [`Transport::fault`] may have one: the cheap look every
    /// operation takes before it starts (one load of a flag where the
    /// transport keeps one). Default: asks [`Transport::fault`].
    #[inline]
    fn faulted(&self) -> bool {
        self.fault().is_some()
    }
    /// Abort the whole job: every endpoint's next operation fails with
    /// `Aborted` naming this endpoint and `message`.
    fn abort(&self, message: &str);
    /// Leave the job: `Ok` for a normal finish, `Err(msg)` for a failure.
    fn close(&self, outcome: std::result::Result<(), String>);
    /// Costs and machine shape, for collective selection.
    fn link(&self) -> Link;
    /// Publish what this endpoint is waiting for (`None`: not waiting), for
    /// other endpoints' timeout messages. Default: not published.
    fn set_waiting(&self, what: Option<&str>) {
        let _ = what;
    }
    /// Where this endpoint's lends between threads count their ends, for
    /// the deadlock detector (an ended lend wakes its lender without a
    /// frame). Default: none (nothing to count).
    fn lend_count(&self) -> Option<Arc<LendCount>> {
        None
    }
    /// Whether this endpoint's last blocked wait (one with no deadline) was
    /// part of a deadlock of the whole job: every endpoint blocked or
    /// ended and no frame in flight (`deadlock.rs`). `Some(what every
    /// endpoint waits for)`, reported once. Default: `None` (a transport
    /// that cannot see the whole job).
    fn deadlock(&self) -> Option<String> {
        None
    }
    /// What every other endpoint is waiting for, when this transport can
    /// see it (diagnostics for timeout messages).
    fn describe_waits(&self) -> String {
        "; what the other endpoints wait for is not visible over this transport".into()
    }
    /// Whether a wait should poll (spin, then yield the core) before it
    /// blocks in [`Transport::wait`]. Default: yes, frames arrive while
    /// this endpoint polls. A transport whose frames only arrive while the
    /// endpoint blocks (the simulator runs one endpoint at a time, in
    /// virtual time) answers no, and waits block at once.
    fn polls(&self) -> bool {
        true
    }
    /// The transport's own collectives (an MPI library's), when it has
    /// them. Default: none.
    fn native(&self) -> Option<&dyn native::Native> {
        None
    }
    /// The shared memory through which the nodes run small blocking
    /// collectives (`board.rs`), when this transport has it (threads, shm).
    /// Default: none.
    fn board(&self) -> Option<board::Board<'_>> {
        None
    }
}

/// A job's own clock: nanoseconds since the job began.
pub type JobClock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Makes a transport endpoint on the thread that will use it (endpoints
/// need not be `Send`; their builders are).
pub trait Builder: Send {
    /// Make the endpoint.
    fn build(self: Box<Self>) -> Result<AnyTransport>;
    /// The job's clock, when time on this transport is not the machine's
    /// (the simulator's virtual time), for the job's trace. Default: none,
    /// the machine's clock.
    fn clock(&self) -> Option<JobClock> {
        None
    }
}

/// Where an endpoint reports to the job's supervisor (a launcher, a
/// spawning host, rank 0 under Slurm).
pub trait Supervisor: Send {
    /// This endpoint aborts the job with `message`.
    fn aborting(&self, message: &str);
    /// This endpoint leaves the job (`Err`: it failed, with why).
    fn finished(&self, outcome: &std::result::Result<(), String>);
}

/// How a supervisor's news reaches an endpoint (called from another thread).
pub trait Notices: Send + Sync {
    /// `endpoint` died (what the supervisor saw).
    fn peer_failed(&self, endpoint: usize, message: &str);
    /// `endpoint` aborted the job.
    fn aborted(&self, endpoint: usize, message: &str);
}

/// What a process learns when it joins a launched job, as its transport
/// needs it.
#[derive(Debug, Clone)]
pub struct JoinInfo {
    /// This endpoint's index.
    pub endpoint: usize,
    /// Endpoints of the job.
    pub endpoints: usize,
    /// The address to listen on for data connections (the launcher's
    /// `--hosts`), else `local_ip`.
    pub bind: Option<IpAddr>,
    /// This process's address on its connection to the rendezvous.
    pub local_ip: IpAddr,
    /// The per-job secret.
    pub secret: Vec<u8>,
    /// The job id.
    pub job: String,
}

/// What the processes of a job of one kind need from their launcher.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Extra environment variables for every process.
    pub env: Vec<(String, String)>,
    /// Descriptors every process inherits (their numbers are in `env`);
    /// kept open by the launcher until the job ends.
    #[cfg(unix)]
    pub inherit: Vec<OwnedFd>,
}

/// A process half-way into a job: it has announced itself (its address, if
/// any, goes into the rendezvous's table) and waits for the others.
pub trait Joining {
    /// The address to announce (empty when the transport needs none).
    fn address(&self) -> String;
    /// Finish joining with what the rendezvous told every endpoint.
    fn complete(self: Box<Self>, table: &JoinTable, sup: Box<dyn Supervisor>) -> Result<Joined>;
}

/// What the rendezvous tells every endpoint of a job once all have joined
/// (the same for all of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinTable {
    /// Every endpoint's announced address, by endpoint.
    pub addrs: Vec<String>,
    /// The fewest cores any endpoint's process may use (each announces its
    /// own): [`Link::cores_per_node`], so that every endpoint's collective
    /// selection works from the same facts.
    pub cores: usize,
}

/// A joined endpoint and the handle for its supervisor's news.
pub struct Joined {
    /// The endpoint.
    pub transport: AnyTransport,
    /// Where the supervisor's notices go.
    pub notices: Arc<dyn Notices>,
}

/// How a job of one kind of transport is made (each transport folder's
/// `setup.rs`).
#[cfg_attr(not(processes), allow(dead_code))] // only launchers make process jobs
pub(crate) trait Setup: Sync {
    /// Builders for a job of `endpoints` endpoints that are threads of this
    /// process; `None` when this kind runs only as processes.
    fn threads(&self, endpoints: usize) -> Option<Vec<Box<dyn Builder>>>;
    /// Launcher side of a job of processes (made before they start).
    fn prepare(&self, endpoints: usize) -> Result<Prepared>;
    /// Process side: begin joining a launched job.
    fn join(&self, info: &JoinInfo) -> Result<Box<dyn Joining>>;
    /// Why this kind is missing from this build (`transport/off.rs`), if it is.
    fn absent(&self) -> Option<Error> {
        None
    }
}

/// The error of a kind that has no process jobs, or no thread jobs.
pub(crate) fn not_for(kind: TransportKind, what: &str) -> Error {
    Error::InvalidArgument {
        op: "transport",
        what: format!("the {kind} transport cannot {what}"),
    }
}

/// Declares the known transports: `Kind = "name" => folder::Endpoint`.
macro_rules! transports {
    ($( $(#[$doc:meta])* $kind:ident = $name:literal => $folder:ident :: $endpoint:ident, )*) => {
        /// The kinds of transport this library has (`--transport`,
        /// `HYPERCOMM_TRANSPORT`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
        pub enum TransportKind {
            $( $(#[$doc])* #[cfg_attr(feature = "clap", value(name = $name))] $kind, )*
        }

        impl TransportKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [TransportKind] = &[$(TransportKind::$kind),*];

            /// The name used on the command line and in the environment.
            pub fn name(self) -> &'static str {
                match self { $(TransportKind::$kind => $name,)* }
            }

            pub(crate) fn setup(self) -> &'static dyn Setup {
                match self { $(TransportKind::$kind => &$folder::setup::SETUP,)* }
            }
        }

        /// An endpoint of any transport: the known ones by enum dispatch,
        /// others boxed.
        pub enum AnyTransport {
            $( $(#[$doc])* $kind($folder::$endpoint), )*
            /// A transport from outside this crate.
            Other(Box<dyn Transport>),
        }

        $(impl From<$folder::$endpoint> for AnyTransport {
            fn from(t: $folder::$endpoint) -> AnyTransport {
                AnyTransport::$kind(t)
            }
        })*

        macro_rules! dispatch {
            ($self:ident, $t:ident => $e:expr) => {
                match $self {
                    $(AnyTransport::$kind($t) => $e,)*
                    AnyTransport::Other($t) => $e,
                }
            };
        }
    };
}

transports! {
    /// Ranks as threads of one process (the embedded default).
    Thread = "thread" => thread::ThreadEndpoint,
    /// Processes on one machine, over a shared memory segment.
    Shm = "shm" => shm::ShmEndpoint,
    /// Processes on one or several machines, over TCP.
    Tcp = "tcp" => tcp::TcpEndpoint,
    /// Threads of one process in virtual time on a simulated machine.
    Sim = "sim" => sim::SimEndpoint,
    /// The processes of an MPI job, over the site's MPI library (the `mpi`
    /// feature).
    Mpi = "mpi" => mpi::MpiEndpoint,
}

impl TransportKind {
    /// Builders for a job of `endpoints` endpoints as threads of this
    /// process (an error for kinds whose ranks are processes).
    pub fn thread_builders(self, endpoints: usize) -> Result<Vec<Box<dyn Builder>>> {
        if let Some(e) = self.setup().absent() {
            return Err(e);
        }
        self.setup()
            .threads(endpoints)
            .ok_or_else(|| not_for(self, "run ranks as threads of one process"))
    }
}

impl std::str::FromStr for TransportKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        TransportKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = TransportKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown transport {s:?} (expected {})", names.join(", "))
            })
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl AnyTransport {
    /// A transport from outside this crate.
    pub fn other(t: impl Transport + 'static) -> AnyTransport {
        AnyTransport::Other(Box::new(t))
    }
}

impl Transport for AnyTransport {
    #[inline]
    fn endpoint(&self) -> usize {
        dispatch!(self, t => t.endpoint())
    }
    #[inline]
    fn endpoints(&self) -> usize {
        dispatch!(self, t => t.endpoints())
    }
    #[inline]
    fn send(&self, frame: Frame) -> Result<()> {
        dispatch!(self, t => t.send(frame))
    }
    #[inline]
    fn try_recv(&self) -> Option<Frame> {
        dispatch!(self, t => t.try_recv())
    }
    #[inline]
    fn send_copied(&self, header: Header, data: &[u8]) -> Result<bool> {
        dispatch!(self, t => t.send_copied(header, data))
    }
    #[inline]
    fn try_recv_offer(&self, taker: &mut dyn Taker) -> Arrival {
        dispatch!(self, t => t.try_recv_offer(taker))
    }
    #[inline]
    fn take_from(&self, src: Option<usize>, taker: &mut dyn Taker) -> Direct {
        dispatch!(self, t => t.take_from(src, taker))
    }
    #[inline]
    fn take_plain(&self, src: usize, tag: u32, dst: &mut [u8], polls: u32) -> Plain {
        dispatch!(self, t => t.take_plain(src, tag, dst, polls))
    }
    #[inline]
    fn take_from_end(&self) {
        dispatch!(self, t => t.take_from_end())
    }
    #[inline]
    fn idle(&self) -> bool {
        dispatch!(self, t => t.idle())
    }
    #[inline]
    fn unclaim(&self, src: usize) {
        dispatch!(self, t => t.unclaim(src))
    }
    #[inline]
    fn wait(&self, deadline: Option<Instant>) {
        dispatch!(self, t => t.wait(deadline))
    }
    #[inline]
    fn peer_state(&self, endpoint: usize) -> PeerState {
        dispatch!(self, t => t.peer_state(endpoint))
    }
    #[inline]
    fn fault(&self) -> Option<Fault> {
        dispatch!(self, t => t.fault())
    }
    #[inline]
    fn faulted(&self) -> bool {
        dispatch!(self, t => t.faulted())
    }
    fn abort(&self, message: &str) {
        dispatch!(self, t => t.abort(message))
    }
    fn close(&self, outcome: std::result::Result<(), String>) {
        dispatch!(self, t => t.close(outcome))
    }
    fn link(&self) -> Link {
        dispatch!(self, t => t.link())
    }
    fn set_waiting(&self, what: Option<&str>) {
        dispatch!(self, t => t.set_waiting(what))
    }
    fn lend_count(&self) -> Option<Arc<LendCount>> {
        dispatch!(self, t => t.lend_count())
    }
    fn deadlock(&self) -> Option<String> {
        dispatch!(self, t => t.deadlock())
    }
    fn describe_waits(&self) -> String {
        dispatch!(self, t => t.describe_waits())
    }
    #[inline]
    fn polls(&self) -> bool {
        dispatch!(self, t => t.polls())
    }
    fn native(&self) -> Option<&dyn native::Native> {
        dispatch!(self, t => t.native())
    }
    #[inline]
    fn board(&self) -> Option<board::Board<'_>> {
        dispatch!(self, t => t.board())
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn endpoint(&self) -> usize {
        (**self).endpoint()
    }
    fn endpoints(&self) -> usize {
        (**self).endpoints()
    }
    fn send(&self, frame: Frame) -> Result<()> {
        (**self).send(frame)
    }
    fn try_recv(&self) -> Option<Frame> {
        (**self).try_recv()
    }
    fn send_copied(&self, header: Header, data: &[u8]) -> Result<bool> {
        (**self).send_copied(header, data)
    }
    fn try_recv_offer(&self, taker: &mut dyn Taker) -> Arrival {
        (**self).try_recv_offer(taker)
    }
    fn take_from(&self, src: Option<usize>, taker: &mut dyn Taker) -> Direct {
        (**self).take_from(src, taker)
    }
    fn take_plain(&self, src: usize, tag: u32, dst: &mut [u8], polls: u32) -> Plain {
        (**self).take_plain(src, tag, dst, polls)
    }
    fn take_from_end(&self) {
        (**self).take_from_end()
    }
    fn unclaim(&self, src: usize) {
        (**self).unclaim(src)
    }
    fn wait(&self, deadline: Option<Instant>) {
        (**self).wait(deadline)
    }
    fn peer_state(&self, endpoint: usize) -> PeerState {
        (**self).peer_state(endpoint)
    }
    fn fault(&self) -> Option<Fault> {
        (**self).fault()
    }
    fn faulted(&self) -> bool {
        (**self).faulted()
    }
    fn abort(&self, message: &str) {
        (**self).abort(message)
    }
    fn close(&self, outcome: std::result::Result<(), String>) {
        (**self).close(outcome)
    }
    fn link(&self) -> Link {
        (**self).link()
    }
    fn set_waiting(&self, what: Option<&str>) {
        (**self).set_waiting(what)
    }
    fn deadlock(&self) -> Option<String> {
        (**self).deadlock()
    }
    fn describe_waits(&self) -> String {
        (**self).describe_waits()
    }
    fn polls(&self) -> bool {
        (**self).polls()
    }
    fn native(&self) -> Option<&dyn native::Native> {
        (**self).native()
    }
    fn board(&self) -> Option<board::Board<'_>> {
        (**self).board()
    }
}
