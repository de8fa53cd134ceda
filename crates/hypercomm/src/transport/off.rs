//! A transport kind this build does not have (its feature is off, or the
//! system lacks what it needs): the kind still exists, so `--transport`
//! and `HYPERCOMM_TRANSPORT` understand its name, and everything that would
//! need it says how to get it. [`absent!`] makes the stand-in folder.

/// Declares an absent transport in the invoking module: the uninhabited
/// endpoint type `$endpoint`, `not_built()` with `$why`, and `setup::SETUP`
/// whose every job is that error — except the launcher's `prepare` when
/// `$prepare` says the launcher needs nothing of this kind itself (MPI:
/// `mpirun` starts the ranks, and it is they that need the feature).
#[allow(unused_macros)] // every kind may be built in
macro_rules! absent {
    ($endpoint:ident, $why:expr) => {
        crate::transport::off::absent!($endpoint, $why, Err(super::not_built()));
    };
    ($endpoint:ident, $why:expr, $prepare:expr) => {
        /// An endpoint of this kind: none can exist in this build.
        pub enum $endpoint {}

        /// What every use of this kind says in this build.
        pub(crate) fn not_built() -> crate::error::Error {
            crate::error::Error::InvalidArgument {
                op: "transport",
                what: String::from($why),
            }
        }

        impl crate::transport::Transport for $endpoint {
            fn endpoint(&self) -> usize {
                match *self {}
            }
            fn endpoints(&self) -> usize {
                match *self {}
            }
            fn send(&self, _: crate::transport::Frame) -> crate::error::Result<()> {
                match *self {}
            }
            fn try_recv(&self) -> Option<crate::transport::Frame> {
                match *self {}
            }
            fn wait(&self, _: Option<std::time::Instant>) {
                match *self {}
            }
            fn peer_state(&self, _: usize) -> crate::transport::PeerState {
                match *self {}
            }
            fn fault(&self) -> Option<crate::transport::Fault> {
                match *self {}
            }
            fn abort(&self, _: &str) {
                match *self {}
            }
            fn close(&self, _: std::result::Result<(), String>) {
                match *self {}
            }
            fn link(&self) -> crate::transport::Link {
                match *self {}
            }
        }

        pub(crate) mod setup {
            use crate::error::Result;
            use crate::transport::{Builder, JoinInfo, Joining, Prepared, Setup};

            /// This kind's [`Setup`] in a build without it.
            pub(crate) struct Absent;

            /// The one instance.
            pub(crate) static SETUP: Absent = Absent;

            impl Setup for Absent {
                fn threads(&self, _endpoints: usize) -> Option<Vec<Box<dyn Builder>>> {
                    None
                }
                fn absent(&self) -> Option<crate::error::Error> {
                    Some(super::not_built())
                }
                fn prepare(&self, _endpoints: usize) -> Result<Prepared> {
                    $prepare
                }
                fn join(&self, _info: &JoinInfo) -> Result<Box<dyn Joining>> {
                    Err(super::not_built())
                }
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use absent;
