//! The one error type of the library.
//!
//! Every fallible operation returns [`Result<T>`]. Messages name the ranks,
//! tags, sizes and operations involved so that a failed run can be understood
//! from the error alone.

use crate::rank::Rank;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Result alias used throughout hypercomm.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in hypercomm.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A peer this operation depends on has failed (panicked, returned an
    /// error, crashed) or has already finished, so the operation can never
    /// complete.
    PeerFailed {
        /// The rank (in the communicator of the operation) that is gone.
        rank: Rank,
    },
    /// Some rank called `abort(message)`; every rank's operations end with this.
    Aborted {
        /// Who aborted.
        rank: Rank,
        /// The message it gave.
        message: String,
    },
    /// A rank of [`run`](fn@crate::run) panicked or returned an error.
    RankFailed {
        /// The failing rank (in the world communicator).
        rank: Rank,
        /// Its panic message or error text.
        message: String,
        /// The error the rank's closure returned (`None` for a panic, or
        /// when the failure was reported by another process).
        source: Option<Source>,
    },
    /// A receive buffer was too small. The message was **not** consumed: probe
    /// it and receive again with a larger buffer, or use `recv_partial`.
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
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What was wrong.
        what: String,
    },
    /// A peer sent bytes that do not decode as a frame of our protocol.
    Protocol(String),
    /// Encoding or decoding a serde object failed.
    Serde {
        /// The peer.
        from: Rank,
        /// The tag.
        tag: u32,
        /// The codec's message.
        message: String,
    },
    /// Collective calls did not agree across ranks (check mode).
    CollectiveMismatch(String),
    /// One request of a [`wait_all`](crate::wait_all) or
    /// [`wait_any`](crate::wait_any) failed: which one (its index in the
    /// vector given), of how many, and why. The other requests are not
    /// affected by it.
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
    /// (detected on every transport, on by default; every blocked rank gets
    /// it; over MPI not while a rank is inside a collective handed to the
    /// MPI library). `waits` says what each rank waits for.
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
    Io {
        /// The operation.
        op: String,
        /// The OS message.
        message: String,
        /// The operating system's error, when there was one.
        source: Option<Source>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::PeerFailed { rank } => write!(
                f,
                "{rank} failed or exited, so this operation cannot complete"
            ),
            Error::Aborted { rank, message } => write!(f, "job aborted by {rank}: {message}"),
            Error::RankFailed { rank, message, .. } => write!(f, "{rank} failed: {message}"),
            Error::Truncated { from, tag, len, capacity } => write!(
                f,
                "message from {from} with tag {tag} has {len} bytes but the receive buffer holds only {capacity} bytes (the message is still available)"
            ),
            Error::BadLength { from, tag, len, elem_size } => write!(
                f,
                "message from {from} with tag {tag} has {len} bytes, not a multiple of the element size {elem_size}"
            ),
            Error::Timeout { rank, op, waiting_for, after, others } => write!(
                f,
                "{rank} timed out after {} in {op}, waiting for {waiting_for}{others}",
                seconds(*after)
            ),
            Error::InvalidRank { rank, op, size, host } => write!(
                f,
                "{op}: {rank} is not in the communicator, which has {size} node{}{host}",
                if *size == 1 { "" } else { "s" }
            ),
            Error::InvalidArgument { op, what } => write!(f, "invalid argument to {op}: {what}"),
            Error::Protocol(m) => write!(f, "protocol error: {m}"),
            Error::Serde { from, tag, message } => write!(
                f,
                "object (de)serialisation failed for the message from {from} with tag {tag}: {message}"
            ),
            Error::CollectiveMismatch(m) => write!(f, "collective mismatch: {m}"),
            Error::RequestFailed { index, count, error } => {
                write!(f, "request {index} of {count} failed: {error}")
            }
            Error::Deadlock { rank, op, waiting_for, waits } => write!(
                f,
                "deadlock: every rank of the job is blocked or has ended and no message is in flight; {rank} waits in {op} for {waiting_for}{waits}"
            ),
            Error::Io { op, message, .. } => write!(f, "I/O error in {op}: {message}"),
        }
    }
}

/// A duration as people write it: `250 ms`, `2 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{} ms", (s * 1e4).round() / 10.0)
    } else {
        format!("{} s", (s * 100.0).round() / 100.0)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::RankFailed { source, .. } | Error::Io { source, .. } => {
                source.as_ref().map(|s| s.0.as_ref() as _)
            }
            Error::RequestFailed { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// The error underneath an [`Error`], shared so that the error stays
/// `Clone`; two sources are equal when they print the same.
#[derive(Clone)]
pub struct Source(pub Arc<dyn std::error::Error + Send + Sync>);

impl Source {
    /// Keep `e` as a source.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Source {
        Source(Arc::new(e))
    }
}

impl From<BoxError> for Source {
    fn from(e: BoxError) -> Source {
        Source(Arc::from(e))
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl PartialEq for Source {
    fn eq(&self, other: &Source) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Error {
    /// An operating-system failure in `op`, keeping `e` as the source.
    pub fn io(op: impl Into<String>, e: std::io::Error) -> Error {
        Error::Io {
            op: op.into(),
            message: e.to_string(),
            source: Some(Source::new(e)),
        }
    }

    /// A failure in `op` with `e` as its source (an I/O error, or any
    /// error met while doing I/O).
    pub fn other_io(op: impl Into<String>, e: impl Into<BoxError>) -> Error {
        let e: BoxError = e.into();
        Error::Io {
            op: op.into(),
            message: e.to_string(),
            source: Some(Source::from(e)),
        }
    }

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

/// [`Error::other_io`] under the short name the library's I/O code uses.
#[cfg(processes)]
pub(crate) fn io_err(op: &str, e: impl Into<BoxError>) -> Error {
    Error::other_io(op, e)
}

/// The error type a rank's closure may return: anything that converts into a
/// boxed error (`hypercomm::Error`, `String`, `anyhow::Error`, `io::Error`…).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant with the text it prints. The `match` has no wildcard
    /// arm, so a new variant does not compile until it is listed here.
    fn every_variant() -> Vec<(Error, &'static str)> {
        let all = vec![
            (
                Error::PeerFailed { rank: Rank::Node(3) },
                "rank 3 failed or exited, so this operation cannot complete",
            ),
            (
                Error::PeerFailed { rank: Rank::Host },
                "the host failed or exited, so this operation cannot complete",
            ),
            (
                Error::Aborted {
                    rank: Rank::Node(1),
                    message: "bad input".into(),
                },
                "job aborted by rank 1: bad input",
            ),
            (
                Error::RankFailed {
                    rank: Rank::Host,
                    message: "panicked: no file".into(),
                    source: None,
                },
                "the host failed: panicked: no file",
            ),
            (
                Error::Truncated {
                    from: Rank::Node(2),
                    tag: 7,
                    len: 32,
                    capacity: 8,
                },
                "message from rank 2 with tag 7 has 32 bytes but the receive buffer holds only 8 bytes (the message is still available)",
            ),
            (
                Error::BadLength {
                    from: Rank::Node(0),
                    tag: 1,
                    len: 5,
                    elem_size: 4,
                },
                "message from rank 0 with tag 1 has 5 bytes, not a multiple of the element size 4",
            ),
            (
                Error::Timeout {
                    rank: Rank::Node(0),
                    op: "recv".into(),
                    waiting_for: "a message from rank 1 with tag 2".into(),
                    after: Duration::from_millis(1500),
                    others: String::new(),
                },
                "rank 0 timed out after 1.5 s in recv, waiting for a message from rank 1 with tag 2",
            ),
            (
                Error::Timeout {
                    rank: Rank::Node(2),
                    op: "wait".into(),
                    waiting_for: "request 0".into(),
                    after: Duration::from_millis(250),
                    others: String::new(),
                },
                "rank 2 timed out after 250 ms in wait, waiting for request 0",
            ),
            (
                Error::InvalidRank {
                    rank: Rank::Node(5),
                    op: "send",
                    size: 4,
                    host: "",
                },
                "send: rank 5 is not in the communicator, which has 4 nodes",
            ),
            (
                Error::InvalidRank {
                    rank: Rank::Host,
                    op: "recv",
                    size: 1,
                    host: "",
                },
                "recv: the host is not in the communicator, which has 1 node",
            ),
            (
                Error::InvalidArgument {
                    op: "split",
                    what: "colour -2 is negative".into(),
                },
                "invalid argument to split: colour -2 is negative",
            ),
            (
                Error::Protocol("frame of 3 bytes".into()),
                "protocol error: frame of 3 bytes",
            ),
            (
                Error::Serde {
                    from: Rank::Node(1),
                    tag: 4,
                    message: "unexpected end".into(),
                },
                "object (de)serialisation failed for the message from rank 1 with tag 4: unexpected end",
            ),
            (
                Error::CollectiveMismatch("rank 1 differs from rank 0: element type f32 vs f64".into()),
                "collective mismatch: rank 1 differs from rank 0: element type f32 vs f64",
            ),
            (
                Error::RequestFailed {
                    index: 0,
                    count: 2,
                    error: Box::new(Error::PeerFailed { rank: Rank::Node(1) }),
                },
                "request 0 of 2 failed: rank 1 failed or exited, so this operation cannot complete",
            ),
            (
                Error::Deadlock {
                    rank: Rank::Node(0),
                    op: "recv".into(),
                    waiting_for: "a message from rank 1".into(),
                    waits: "".into(),
                },
                "deadlock: every rank of the job is blocked or has ended and no message is in flight; rank 0 waits in recv for a message from rank 1",
            ),
            (
                Error::io(
                    "connecting to the rendezvous",
                    std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused"),
                ),
                "I/O error in connecting to the rendezvous: refused",
            ),
        ];
        for (e, _) in &all {
            match e {
                Error::PeerFailed { .. }
                | Error::Aborted { .. }
                | Error::RankFailed { .. }
                | Error::Truncated { .. }
                | Error::BadLength { .. }
                | Error::Timeout { .. }
                | Error::InvalidRank { .. }
                | Error::InvalidArgument { .. }
                | Error::Protocol(_)
                | Error::Serde { .. }
                | Error::CollectiveMismatch(_)
                | Error::RequestFailed { .. }
                | Error::Deadlock { .. }
                | Error::Io { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_error_text() {
        for (e, want) in every_variant() {
            assert_eq!(e.to_string(), want, "{e:?}");
        }
    }

    #[test]
    fn no_codes_and_no_doubled_words() {
        for (e, _) in every_variant() {
            let text = e.to_string();
            assert!(!text.contains("code"), "a code in: {text}");
            let words: Vec<&str> = text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            for pair in words.windows(2) {
                assert!(
                    !pair[0].eq_ignore_ascii_case(pair[1]) || pair[0].parse::<f64>().is_ok(),
                    "doubled word {:?} in: {text}",
                    pair[0]
                );
            }
        }
    }

    #[test]
    fn sources_are_kept() {
        use std::error::Error as _;
        let io = Error::io(
            "reading",
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        );
        let src = io.source().expect("an I/O error keeps its source");
        assert_eq!(src.to_string(), "no such file");
        assert!(src.downcast_ref::<std::io::Error>().is_some());
        let boxed: BoxError = "disk full".into();
        let failed = Error::RankFailed {
            rank: Rank::Node(0),
            message: "disk full".into(),
            source: Some(Source::from(boxed)),
        };
        assert_eq!(failed.source().unwrap().to_string(), "disk full");
        let req = Error::RequestFailed {
            index: 1,
            count: 3,
            error: Box::new(io.clone()),
        };
        assert_eq!(req.source().unwrap().to_string(), io.to_string());
        assert_eq!(req.cause(), &io);
        assert!(Error::PeerFailed { rank: Rank::Host }.source().is_none());
    }
}
