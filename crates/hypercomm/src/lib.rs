//! # hypercomm
//!
//! A portable, instrumented message-passing library: one SPMD program runs as
//! threads in one process (the default, no set-up), and — as later transports
//! land — as processes over shared memory, across machines over TCP, on a
//! cluster's MPI, or on a simulated hypercube.
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
//! ```text
//!  user program ─ Comm (p2p, communicators, requests)
//!  p2p engine   ─ engine.rs: matching, requests, progress, waits
//!  launch       ─ launch/: init, finalize, spawn, the launcher, Slurm
//!  transport    ─ transport/: one small trait; threads and TCP
//!  wire format  ─ wire.rs: the one frame header
//! ```
//!
//! ## Not done yet
//!
//! The shared-memory transport, ssh for remote hosts, the simulator, grids
//! and the C API are later work; each module's docs say what it lacks.

mod buffer;
pub mod collective;
pub mod comm;
mod engine;
pub mod error;
pub mod launch;
pub mod p2p;
pub mod rank;
pub mod request;
mod run;
pub mod trace;
pub mod transport;
pub mod wire;

pub use collective::{Algorithm, CollOpts, Collective, Topology};
pub use comm::Comm;
pub use engine::EAGER_LIMIT;
pub use error::{Error, Result};
pub use launch::{finalize, init, spawn};
pub use rank::{Partial, Rank, Source, Status, Tag, ANY_SOURCE, ANY_TAG, PICL_HOST};
pub use request::{scope, wait_all, wait_any, Request, Scope};
pub use run::{run, run_with_host, BoxError};

/// The names most programs need.
pub mod prelude {
    pub use crate::{
        finalize, init, run, run_with_host, scope, wait_all, wait_any, Comm, Error, Rank, Result,
        Status, ANY_SOURCE, ANY_TAG,
    };
}

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
