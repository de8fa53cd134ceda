//! The recorder hook: the one place where the engine reports send, receive
//! and wait events.
//!
//! Today the hook is a no-op that the optimiser removes; tracing (PICL
//! records, Chrome JSON, HTML reports) attaches here and will cost one
//! predictable branch when it is off.
//!
//! Not done yet: the trace recorder itself, its buffers, levels and writers.

/// An event of the point-to-point engine (endpoint numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A message was handed to the transport.
    Send {
        /// Destination endpoint.
        dst: u32,
        /// Tag.
        tag: u32,
        /// Length in bytes.
        len: usize,
    },
    /// A message was received (copied out or taken).
    Recv {
        /// Source endpoint.
        src: u32,
        /// Tag.
        tag: u32,
        /// Length in bytes.
        len: usize,
    },
    /// A rank started waiting for a request.
    Wait,
}

/// Report one event. No-op until tracing attaches.
#[inline(always)]
pub fn hook(event: Event) {
    let _ = event;
}
