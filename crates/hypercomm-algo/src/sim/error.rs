//! Why a simulation fails: the schedules do not fit the machine or each
//! other, or are more than the simulator's budget (`budget.rs`).

use super::budget::{mib, MAX_STATE_BYTES};
use super::network::MAX_COST;
use super::pool::PoolError;
use std::fmt;

/// Why a simulation failed: the schedules do not fit the machine or each
/// other.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// More participants than the machine has endpoints.
    TooFew {
        /// Participants.
        p: usize,
        /// The machine's endpoints.
        endpoints: usize,
    },
    /// A participant addresses one that does not exist.
    NoPeer {
        /// The participant.
        me: usize,
        /// The peer it names.
        peer: usize,
    },
    /// A message too long for the simulator (2^32 − 1 elements at most).
    TooLong {
        /// The sender.
        me: usize,
        /// The length in elements.
        len: usize,
    },
    /// A message's length differs from its Recv's.
    Length {
        /// Sender.
        from: usize,
        /// Receiver.
        to: usize,
        /// Elements sent.
        sent: u32,
        /// Elements the Recv expects.
        expected: u32,
    },
    /// A message that no Recv takes.
    Unreceived {
        /// Sender.
        from: usize,
        /// Receiver.
        to: usize,
    },
    /// Schedules that send (or receive) more messages than the simulator
    /// takes on ([`MAX_MESSAGES`](super::budget::MAX_MESSAGES)), or p times the segments of one
    /// participant's schedule above
    /// [`MAX_PARTICIPANT_MESSAGES`](super::budget::MAX_PARTICIPANT_MESSAGES).
    Messages {
        /// Participants.
        p: usize,
        /// The messages counted or estimated so far.
        at_least: u64,
        /// The limit exceeded.
        limit: u64,
    },
    /// Messages that would cross more links in all than the simulator
    /// takes on ([`MAX_HOPS`](super::budget::MAX_HOPS)), estimated from
    /// two participants' schedules.
    Hops {
        /// Participants.
        p: usize,
        /// The links crossed, estimated.
        at_least: u64,
        /// The limit exceeded.
        limit: u64,
    },
    /// Schedules that hold more operations (messages, copies, combines)
    /// than the simulator generates
    /// ([`MAX_OPS`](super::budget::MAX_OPS)).
    Ops {
        /// Participants.
        p: usize,
        /// The operations counted or estimated so far.
        at_least: u64,
        /// The limit exceeded.
        limit: u64,
    },
    /// One participant's schedule may send more messages than the
    /// simulator generates for one participant: p times the segments of a
    /// pipelined algorithm above
    /// [`MAX_PARTICIPANT_MESSAGES`](super::budget::MAX_PARTICIPANT_MESSAGES).
    Participant {
        /// Participants.
        p: usize,
        /// Segments per message (1 unless pipelined).
        segments: usize,
        /// The limit exceeded.
        limit: u64,
    },
    /// A machine and traffic whose state is more than
    /// [`MAX_STATE_BYTES`].
    State {
        /// Participants.
        p: usize,
        /// The estimated bytes.
        bytes: u64,
    },
    /// Words per element that are not a number from 0 to [`MAX_COST`].
    WordsPerElement {
        /// The value given.
        value: f64,
    },
    /// Participants wait for messages that never come (or never leave).
    Stuck {
        /// How many never finished.
        stuck: usize,
        /// The first of them.
        first: usize,
        /// The peers it waits for.
        waiting_for: Vec<usize>,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::TooFew { p, endpoints } => write!(
                f,
                "{p} participants do not fit a machine of {endpoints} endpoints"
            ),
            SimError::NoPeer { me, peer } => {
                write!(
                    f,
                    "participant {me} addresses participant {peer}, who does not exist"
                )
            }
            SimError::TooLong { me, len } => write!(
                f,
                "participant {me} sends {len} elements; the simulator handles up to {}",
                u32::MAX
            ),
            SimError::Length {
                from,
                to,
                sent,
                expected,
            } => write!(
                f,
                "participant {from} sends {sent} elements to {to}, whose receive expects {expected}"
            ),
            SimError::Unreceived { from, to } => write!(
                f,
                "participant {from} sends a message to {to}, which has no receive left for it"
            ),
            SimError::Messages { p, at_least, limit } => write!(
                f,
                "on p = {p} nodes the schedules would send at least {at_least} messages; \
                 the simulator takes on at most {limit}"
            ),
            SimError::Hops { p, at_least, limit } => write!(
                f,
                "on p = {p} nodes the messages would cross about {at_least} links in all; \
                 the simulator takes on at most {limit} (every link a message crosses is \
                 an event: long paths, as on a ring or a large mesh, multiply them)"
            ),
            SimError::Ops { p, at_least, limit } => write!(
                f,
                "on p = {p} nodes the schedules would hold at least {at_least} operations \
                 (messages, copies, combines); the simulator generates at most {limit}"
            ),
            SimError::Participant { p, segments, limit } => write!(
                f,
                "on p = {p} nodes{} one participant may send a message to every other{}: \
                 p{} is more than the {limit} messages per participant the simulator takes on",
                if *segments > 1 {
                    format!(" with {segments} segments")
                } else {
                    String::new()
                },
                if *segments > 1 { " per segment" } else { "" },
                if *segments > 1 { " × segments" } else { "" },
            ),
            SimError::State { p, bytes } => write!(
                f,
                "on p = {p} nodes the simulator's nodes and links would take about {} MiB; \
                 its budget is {} MiB",
                mib(*bytes),
                mib(MAX_STATE_BYTES)
            ),
            SimError::WordsPerElement { value } => write!(
                f,
                "{value} words per element is not a length: a number from 0 to {MAX_COST:e}"
            ),
            SimError::Stuck {
                stuck,
                first,
                waiting_for,
            } => write!(
                f,
                "{stuck} participants never finish: participant {first} waits for {waiting_for:?}"
            ),
        }
    }
}

impl std::error::Error for SimError {}

impl From<PoolError> for SimError {
    fn from(e: PoolError) -> Self {
        match e {
            PoolError::TooLong { me, len } => SimError::TooLong { me, len },
            PoolError::Peer { me, peer } => SimError::NoPeer { me, peer },
        }
    }
}
