//! The recorder hook: the one place where the engine and the collectives
//! report what they do.
//!
//! When tracing is off (or the crate is built without the `trace` feature)
//! the hook costs one predictable branch on a relaxed atomic load (nothing
//! at all without the feature). When a rank of this process traces, events
//! go to its recorder in [`crate::trace`], which turns them into PICL
//! records.
//!
//! Events come in pairs around timed operations: [`Event::Send`],
//! [`Event::RecvBegin`] and [`Event::Wait`] open one, [`Event::Done`]
//! closes the innermost. [`Event::Recv`] reports a message delivered (to a
//! blocking receive or a posted one), [`Event::Blocked`] that a wait found
//! nothing at its first look.
//!
//! Not done yet: events of the process launcher (PICL `load`) and of
//! `message0`/`sync0`, which have no Rust API yet.

/// An event of the engine (endpoint numbering) or of a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A send starts (closed by [`Event::Done`] when it returns).
    Send {
        /// Destination endpoint.
        dst: u32,
        /// Tag.
        tag: u32,
        /// Length in bytes.
        len: usize,
        /// On a collective context (a send inside a collective).
        coll: bool,
    },
    /// A blocking receive starts (closed by [`Event::Done`]).
    RecvBegin {
        /// Tag sought (`None`: any).
        tag: Option<u32>,
        /// On a collective context.
        coll: bool,
    },
    /// The current wait found nothing at its first look and is waiting.
    Blocked,
    /// A message was delivered (copied out or taken).
    Recv {
        /// Source endpoint.
        src: u32,
        /// Tag.
        tag: u32,
        /// Length in bytes.
        len: usize,
        /// On a collective context.
        coll: bool,
    },
    /// A rank started waiting for a request or a collective (closed by
    /// [`Event::Done`]).
    Wait,
    /// The innermost send, receive or wait returned.
    Done,
    /// The message queue was probed.
    Probe,
    /// A collective call starts (PICL block_begin).
    BlockBegin {
        /// Operation code (1 barrier, 2 bcast, 3 reduce, 4 allreduce, …).
        op: u8,
        /// Root endpoint (`None`: all, or no root).
        root: Option<u32>,
        /// The call's sequence number on its communicator.
        seq: u32,
    },
    /// A collective call ends (PICL block_end).
    BlockEnd {
        /// Operation code.
        op: u8,
        /// Root endpoint.
        root: Option<u32>,
        /// Sequence number.
        seq: u32,
    },
}

/// Report one event. One predictable branch when tracing is off.
#[inline(always)]
pub fn hook(event: Event) {
    #[cfg(feature = "trace")]
    if crate::trace::recorder::ACTIVE.load(std::sync::atomic::Ordering::Relaxed) != 0 {
        crate::trace::recorder::on_event(event);
    }
    #[cfg(not(feature = "trace"))]
    let _ = event;
}
