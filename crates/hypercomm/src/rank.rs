//! Ranks, the host, receive selectors and message status.

use std::fmt;

/// A participant of a communicator: one of the nodes `0..size`, or the host.
///
/// The host is the coordinator of the iPSC, SUPRENUM, PICL and CMMD
/// programming models. It is distinct from every node; in PICL-format traces
/// and in the C API it is written `-32768` (see [`Rank::to_picl`]).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rank {
    /// Node with this rank (`0..size`).
    Node(usize),
    /// The host.
    Host,
}

/// The host's identifier in PICL traces and in the C API.
pub const PICL_HOST: i32 = -32768;

impl Rank {
    /// The node index, or `None` for the host.
    pub fn node(self) -> Option<usize> {
        match self {
            Rank::Node(r) => Some(r),
            Rank::Host => None,
        }
    }
    /// True for [`Rank::Host`].
    pub fn is_host(self) -> bool {
        self == Rank::Host
    }
    /// PICL's numbering: nodes as themselves, the host as `-32768`.
    pub fn to_picl(self) -> i32 {
        match self {
            Rank::Node(r) => r as i32,
            Rank::Host => PICL_HOST,
        }
    }
}

impl From<usize> for Rank {
    fn from(r: usize) -> Self {
        Rank::Node(r)
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rank::Node(r) => write!(f, "rank {r}"),
            Rank::Host => f.write_str("the host"),
        }
    }
}

/// Which sender a receive accepts.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Any member of the communicator (MPI `ANY_SOURCE`, CMMD `ANY_NODE`).
    Any,
    /// Exactly this rank.
    Rank(Rank),
}

/// Accept a message from any sender.
pub const ANY_SOURCE: Source = Source::Any;

impl From<usize> for Source {
    fn from(r: usize) -> Self {
        Source::Rank(Rank::Node(r))
    }
}
impl From<Rank> for Source {
    fn from(r: Rank) -> Self {
        Source::Rank(r)
    }
}
impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Any => f.write_str("any source"),
            Source::Rank(r) => r.fmt(f),
        }
    }
}

/// Which tag a receive accepts.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tag {
    /// Any tag (MPI `ANY_TAG`, CMMD `ANY_TAG`, PICL type `-1`).
    Any,
    /// Exactly this tag.
    Is(u32),
}

/// Accept a message with any tag.
pub const ANY_TAG: Tag = Tag::Any;

impl From<u32> for Tag {
    fn from(t: u32) -> Self {
        Tag::Is(t)
    }
}
impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tag::Any => f.write_str("any tag"),
            Tag::Is(t) => write!(f, "tag {t}"),
        }
    }
}

/// What a receive or probe learned about a message.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// The sender.
    pub source: Rank,
    /// The message's tag.
    pub tag: u32,
    /// The message's length in bytes.
    pub len: usize,
}

impl Status {
    /// The message length in elements of `T` (rounded down).
    pub fn count<T>(&self) -> usize {
        match std::mem::size_of::<T>() {
            0 => 0,
            s => self.len / s,
        }
    }
}

/// The outcome of [`Comm::recv_partial`](crate::Comm::recv_partial): CMMD's
/// negotiated length, where both sides learn how much was transferred.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partial {
    /// The message's status; `status.len` is the full length that was sent.
    pub status: Status,
    /// How many bytes were copied into the buffer (`min(len, capacity)`).
    pub received: usize,
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;

    /// What a receive learned travels as a value (`Comm::send_obj`, a
    /// job's results): every form comes back as it went.
    #[test]
    fn statuses_and_selectors_round_trip_through_serde() {
        fn back<T: serde::Serialize + serde::de::DeserializeOwned>(v: &T) -> T {
            postcard::from_bytes(&postcard::to_stdvec(v).expect("encodes")).expect("decodes")
        }
        for source in [Rank::Node(0), Rank::Node(usize::MAX), Rank::Host] {
            let status = Status {
                source,
                tag: u32::MAX,
                len: 12_345,
            };
            assert_eq!(back(&status), status);
            let partial = Partial {
                status,
                received: 7,
            };
            assert_eq!(back(&partial), partial);
            assert_eq!(back(&Source::Rank(source)), Source::Rank(source));
        }
        assert_eq!(back(&Source::Any), Source::Any);
        assert_eq!(back(&Tag::Any), Tag::Any);
        assert_eq!(back(&Tag::Is(9)), Tag::Is(9));
    }
}
