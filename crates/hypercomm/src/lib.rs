//! # hypercomm
//!
//! A portable, instrumented message-passing library: one SPMD program runs as
//! threads in one process (the default, no set-up: [`run`](fn@run)), as processes
//! on one machine over shared memory, or across machines over TCP (started
//! by the `hypercomm run` launcher, by Slurm, by a host program with
//! [`spawn`], or by the program itself with [`run_processes`]). It rebuilds
//! the iPSC communication utilities, Kumar's basic communication
//! operations, the SUPRENUM grid library, PICL and CMMD: point-to-point with wildcards, probes,
//! strided vectors and truncation that loses nothing; communicators; every
//! collective as a schedule with a selectable algorithm and check mode;
//! PICL tracing with Perfetto and HTML views.
//!
//! ```
//! // A token travels around a ring of 4 ranks.
//! let out = hypercomm::run(4, |comm| {
//!     let (me, n) = (comm.rank(), comm.size());
//!     if me == 0 {
//!         comm.send(&[1u64], 1 % n, 0)?;
//!         let (token, _) = comm.recv::<u64>(n - 1, 0)?;
//!         Ok::<_, hypercomm::Error>(token)
//!     } else {
//!         let (token, _) = comm.recv::<u64>(me - 1, 0)?;
//!         comm.send(&[token + 1], (me + 1) % n, 0)?;
//!         Ok(token)
//!     }
//! }).unwrap();
//! assert_eq!(out, vec![4, 1, 2, 3]);
//! ```
//!
//! ## Layers
//!
//! Data flows down on send and up on receive; each layer imports only the
//! ones below it (checked by `tests/architecture.rs`).
//!
//! ```text
//!  user program ─ grids (grid/: SUPRENUM), topologies (topology/: hypercube,
//!                 MESH, Cartesian) — on the public API below, nothing deeper
//!  user program ─ Comm: p2p (p2p.rs), requests (request.rs), communicators (comm.rs)
//!  collectives  ─ collective/: one start path for every call, the executor,
//!                 check mode, selection; algorithms are schedules in hypercomm-algo
//!  p2p engine   ─ engine/: matching, requests, progress, waits; the trace hook
//!  trace        ─ trace/: the per-rank recorder, PICL/Chrome/HTML writers
//!  transport    ─ transport/: one trait, one kind list; thread/ shm/ tcp/ sim/ mpi/
//!  wire format  ─ wire.rs: the one frame header
//!
//!  launch/      ─ processes and ranks: init, finalize, spawn, the launcher's
//!                 engine, run_processes, Slurm; run.rs: jobs of threads
//!  sim.rs       ─ the simulator: programs in virtual time (sim::run), and
//!                 schedules on a network model (hypercomm_algo::sim)
//! ```
//!
//! | what | status |
//! |---|---|
//! | ranks as threads (`run`, `run_with_host`, `run_on` for shm/tcp as threads) | done |
//! | processes over shared memory and TCP, the launcher, Slurm bootstrap, spawn | done |
//! | point-to-point, communicators, failures, abort, timeouts | done |
//! | collectives (every operation, several algorithms each, selection, check and reproducible modes) | done |
//! | tracing (PICL levels and records, verbose/compact files, Perfetto JSON, HTML report) | done |
//! | topologies (hypercube utilities, MESH, Cartesian process grids) and grids (the SUPRENUM library: halo exchange, subarrays, GLOPS, agglomeration) | done |
//! | the simulator ([`sim`]: programs in virtual time on a simulated hypercube, ring, mesh or fully connected machine; schedules of a million nodes; seed 001's closed forms) | done |
//! | the site's MPI as a transport (the `mpi` feature), remote hosts over ssh | done |
//! | C and Fortran 77 (PICL, CMMD, the iPSC utilities): the `hypercomm-c` crate | done |
//!
//! ## Cargo features
//!
//! | feature | default | what it adds | dependencies |
//! |---|---|---|---|
//! | `tcp` | on | processes: the TCP transport, the launcher's engine ([`init`] joining a job, [`spawn`], [`run_processes`], Slurm, ssh) | socket2, hmac, sha2, postcard |
//! | `shm` | on | processes on one machine over a shared segment (Linux; needs `tcp`, the launcher's channel) | rustix |
//! | `trace` | on | PICL event recording and the trace files (raw, PICL, Perfetto JSON, HTML report) | serde_json |
//! | `serde` | on | [`Comm::send_obj`] / [`Comm::recv_obj`] and serde impls of the library's value types | postcard |
//! | `derive` | on | `#[derive(Pod, Zeroable)]` for user structs ([`Pod`]) | bytemuck_derive |
//! | `mpi` | off | the site's MPI as a transport (needs `mpicc`) | cc (build) |
//! | `clap` | off | [`TransportKind`] as a clap value | clap |
//!
//! With `default-features = false` the library is ranks as threads (and
//! the simulator): hypercomm, hypercomm-algo, bytemuck, serde (no derive)
//! and libc. Jobs of processes need a unix system; on others `tcp` gives
//! the TCP transport for ranks as threads.
//!
//! ## Two things to know
//!
//! * A rank's closure returns `Result<T, E>` for any error `E` that
//!   converts into a boxed error. Rust cannot infer `E` from a bare
//!   `Ok(x)`, so name it once: `Ok::<_, hypercomm::Error>(x)`, or give
//!   the closure a return type (`|comm| -> hypercomm::Result<_> { … }`).
//! * [`Comm::rank`] is a node's index (`0..size`); on the host, which is
//!   not a node, it is `size()`. [`Comm::me`] is the [`Rank`]:
//!   `Rank::Node(i)` or `Rank::Host`.
//!
//! ## Not done yet
//!
//! Nothing in the table above; each module's docs say what it lacks.
//! Jobs of processes on Windows (the TCP transport builds there, for
//! threads); an `Equivalence`-style derive for structs with padding.

// Docs built with some features off still name the items those features
// add (the launcher, `run_processes`, `send_obj`, …); the links resolve
// in the default build, and are checked there.
#![cfg_attr(
    not(all(processes, feature = "serde", feature = "trace")),
    allow(rustdoc::broken_intra_doc_links)
)]

mod buffer;
pub mod collective;
pub mod comm;
mod engine;
pub mod error;
pub mod grid;
pub mod launch;
pub mod p2p;
mod primitives;
pub mod rank;
pub mod request;
mod run;
mod short;
pub mod sim;
pub mod topology;
pub mod trace;
pub mod transport;
// The frame header: not part of the API (the fuzz targets read it).
#[doc(hidden)]
pub mod wire;

pub use collective::{Algorithm, CollOpts, Collective, Topology};
pub use comm::Comm;
pub use engine::{EAGER_LIMIT, MESSAGE_COST, SENDER_CREDIT};
pub use error::{Error, Result};
pub use launch::{finalize, init, job_shape, start_rank, JobShape};
#[cfg(processes)]
pub use launch::{run_processes, spawn, Processes};
pub use primitives::{clock, MESSAGE_CHARS};
pub use rank::{Partial, Rank, Source, Status, Tag, ANY_SOURCE, ANY_TAG, PICL_HOST};
pub use request::{scope, test_all, test_any, wait_all, wait_any, wait_some, Request, Scope};
pub use run::{
    run, run_builders, run_builders_with_host, run_on, run_with_host, run_with_host_on, BoxError,
};
pub use short::{ShortSends, SHORT_MESSAGE_BYTES};
pub use transport::TransportKind;

/// The names most programs need: `use hypercomm::prelude::*;`.
pub mod prelude {
    pub use crate::collective::ops::{
        BitAnd, BitOr, BitXor, Element, LogicalAnd, LogicalOr, Max, MaxLoc, Min, MinLoc, Prod, Sum,
    };
    pub use crate::{
        finalize, init, job_shape, run, run_with_host, scope, test_all, test_any, wait_all,
        wait_any, wait_some, Comm, Error, Rank, Result, Status, ANY_SOURCE, ANY_TAG,
    };
}

/// `#[derive(Pod, Zeroable)]` for structs sent as typed slices (the
/// `derive` feature): a `#[repr(C)]` struct of plain numbers without
/// padding is an element like any number. The derive names the bytemuck
/// crate; `#[bytemuck(crate = "hypercomm::bytemuck")]` points it at ours,
/// so a program needs no dependency of its own.
///
/// ```
/// # #[cfg(feature = "derive")] {
/// use hypercomm::{Pod, Zeroable};
///
/// #[derive(Clone, Copy, Pod, Zeroable, Debug, PartialEq)]
/// #[bytemuck(crate = "hypercomm::bytemuck")]
/// #[repr(C)]
/// struct Particle {
///     pos: [f64; 3],
///     id: u64,
/// }
///
/// let got = hypercomm::run(2, |comm| {
///     let p = Particle { pos: [1.0, 2.0, 3.0], id: comm.rank() as u64 };
///     let other = 1 - comm.rank();
///     let mut back = [Particle::zeroed()];
///     comm.send_recv(&[p], other, 0, &mut back, other, 0)?;
///     Ok::<_, hypercomm::Error>(back[0].id)
/// })?;
/// assert_eq!(got, vec![1, 0]);
/// # }
/// # Ok::<(), hypercomm::Error>(())
/// ```
pub use bytemuck::{Pod, Zeroable};

/// The bytemuck crate, whose `Pod` is what typed messages carry.
pub use bytemuck;

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
