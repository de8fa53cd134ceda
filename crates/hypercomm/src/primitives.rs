//! PICL's low-level primitives that are not already point-to-point or
//! collective calls (seed 003, section 3): `clock0`, `message0`, `sync0`.
//!
//! * [`clock`] reads the clock the traces use, in seconds (PICL clock0). It
//!   works before any job exists and after it ends.
//! * [`Comm::message`] writes one line of at most 80 characters on the
//!   standard output (PICL message0). PICL routed it to the host's
//!   standard output; here every rank's output already reaches the
//!   launcher's terminal (prefixed `[rank]` when ranks are processes), so
//!   the line is written where the rank runs. Traced, it is a `message`
//!   record.
//! * [`Comm::sync`] synchronises the nodes (PICL sync0): a barrier of the
//!   nodes, traced as one `sync` record instead of a barrier's block.

use crate::comm::Comm;
use crate::error::Result;
use crate::trace::event::Event;
use crate::trace::recorder::hook;
use crate::trace::TimeSource;
use std::io::Write;

/// The most characters [`Comm::message`] writes.
pub const MESSAGE_CHARS: usize = 80;

/// The clock in seconds (PICL clock0): monotonic, the clock of the traces
/// (shared by all processes of one machine), valid with or without a job.
pub fn clock() -> f64 {
    crate::trace::Monotonic.now_ns() as f64 * 1e-9
}

impl Comm {
    /// Write `text` (its first [`MESSAGE_CHARS`] characters, cut at the
    /// first newline) as one line on the standard output (PICL message0).
    pub fn message(&self, text: &str) -> Result<()> {
        hook(Event::Message);
        let line: String = text
            .split('\n')
            .next()
            .unwrap_or("")
            .chars()
            .take(MESSAGE_CHARS)
            .collect();
        let r = {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}").and_then(|()| out.flush())
        };
        hook(Event::Done);
        r.map_err(|e| crate::Error::InvalidArgument {
            op: "message",
            what: format!("writing to the standard output failed: {e}"),
        })
    }

    /// Synchronise the nodes (PICL sync0): no node returns before every node
    /// has called it. The host does not take part.
    pub fn sync(&self) -> Result<()> {
        hook(Event::Sync);
        let r = self.barrier();
        hook(Event::Done);
        r
    }
}
