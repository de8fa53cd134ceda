//! The one error type of the library.
//!
//! Every fallible operation returns [`Result<T>`]. Messages name the ranks,
//! tags, sizes and operations involved so that a failed run can be understood
//! from the error alone.

use crate::rank::Rank;
use std::time::Duration;

/// Result alias used throughout hypercomm.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in hypercomm.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A peer this operation depends on has failed (panicked, returned an
    /// error, crashed) or has already finished, so the operation can never
    /// complete.
    #[error("peer {rank} failed or exited, so this operation cannot complete")]
    PeerFailed {
        /// The rank (in the communicator of the operation) that is gone.
        rank: Rank,
    },
    /// Some rank called `abort(message)`; every rank's operations end with this.
    #[error("job aborted by {rank}: {message}")]
    Aborted {
        /// Who aborted.
        rank: Rank,
        /// The message it gave.
        message: String,
    },
    /// A rank of [`run`](crate::run) panicked or returned an error.
    #[error("{rank} failed: {message}")]
    RankFailed {
        /// The failing rank (in the world communicator).
        rank: Rank,
        /// Its panic message or error text.
        message: String,
    },
    /// A receive buffer was too small. The message was **not** consumed: probe
    /// it and receive again with a larger buffer, or use `recv_partial`.
    #[error("message from {from} with tag {tag} has {len} bytes but the receive buffer holds only {capacity} bytes (the message is still available)")]
    Truncated {
        /// The sender.
        from: Rank,
        /// The message tag.
        tag: u32,
        /// Length of the message in bytes.
        len: usize,
        /// Capacity of the receive buffer in bytes.
        capacity: usize,
    },
    /// A message length is not a whole number of elements of the requested type.
    #[error("message from {from} with tag {tag} has {len} bytes, not a multiple of the element size {elem_size}")]
    BadLength {
        /// The sender.
        from: Rank,
        /// The message tag.
        tag: u32,
        /// Length of the message in bytes.
        len: usize,
        /// Size of one element in bytes.
        elem_size: usize,
    },
    /// A blocking operation waited longer than its timeout.
    #[error("{rank} timed out after {after:?} in {op}, waiting for {waiting_for}{others}")]
    Timeout {
        /// The rank that timed out.
        rank: Rank,
        /// The operation (`recv`, `wait`, …).
        op: String,
        /// What it was waiting for.
        waiting_for: String,
        /// How long it waited.
        after: Duration,
        /// What the other ranks were waiting for at that moment, when known.
        others: String,
    },
    /// A rank number is outside the communicator.
    #[error("invalid rank {rank} in {op}: the communicator has {size} nodes{host}")]
    InvalidRank {
        /// The offending rank.
        rank: Rank,
        /// The operation.
        op: &'static str,
        /// Number of nodes in the communicator.
        size: usize,
        /// `" and a host"` when the communicator has one.
        host: &'static str,
    },
    /// An argument is invalid (named in the message).
    #[error("invalid argument to {op}: {what}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What was wrong.
        what: String,
    },
    /// A peer sent bytes that do not decode as a frame of our protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Encoding or decoding a serde object failed.
    #[error(
        "object (de)serialisation failed for the message from {from} with tag {tag}: {message}"
    )]
    Serde {
        /// The peer.
        from: Rank,
        /// The tag.
        tag: u32,
        /// The codec's message.
        message: String,
    },
    /// Collective calls did not agree across ranks (check mode).
    #[error("collective mismatch: {0}")]
    CollectiveMismatch(String),
    /// One request of a [`wait_all`](crate::wait_all) or
    /// [`wait_any`](crate::wait_any) failed: which one (its index in the
    /// vector given), of how many, and why. The other requests are not
    /// affected by it.
    #[error("request {index} of {count} failed: {error}")]
    RequestFailed {
        /// The request's index in the vector given to the wait.
        index: usize,
        /// How many requests the wait was given.
        count: usize,
        /// Why it failed.
        error: Box<Error>,
    },
    /// Every rank of the job is blocked — waiting with no timeout — or has
    /// ended, and no message is in flight, so no rank can ever go on
    /// (detected on the thread and shared-memory transports, on by
    /// default; every blocked rank gets it). `waits` says what each rank
    /// waits for.
    #[error("deadlock: every rank of the job is blocked or has ended and no message is in flight; {rank} waits in {op} for {waiting_for}{waits}")]
    Deadlock {
        /// The rank that reports it (in the communicator of its operation).
        rank: Rank,
        /// Its operation.
        op: String,
        /// What it waits for.
        waiting_for: String,
        /// What every endpoint of the job was doing.
        waits: String,
    },
    /// An operating-system level failure.
    #[error("I/O error in {op}: {message}")]
    Io {
        /// The operation.
        op: String,
        /// The OS message.
        message: String,
    },
}

impl Error {
    /// The error itself, or for [`Error::RequestFailed`] the failure of
    /// the request it names.
    pub fn cause(&self) -> &Error {
        match self {
            Error::RequestFailed { error, .. } => error.cause(),
            e => e,
        }
    }

    /// Whether this error is a consequence of another rank's failure or
    /// abort (`PeerFailed`, `Aborted`), not a failure of its own.
    pub fn is_consequence(&self) -> bool {
        matches!(
            self.cause(),
            Error::PeerFailed { .. } | Error::Aborted { .. }
        )
    }
}

/// The error type a rank's closure may return: anything that converts into a
/// boxed error (`hypercomm::Error`, `String`, `anyhow::Error`, `io::Error`…).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
