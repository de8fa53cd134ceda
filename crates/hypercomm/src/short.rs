//! CMMD's non-blocking short messages (seed 004, section 4.4):
//! `send_short` and `wait_for_send`.
//!
//! A [`ShortSends`] belongs to one communicator handle. [`ShortSends::send`]
//! sends at most [`SHORT_MESSAGE_BYTES`] bytes and returns at once, unless a
//! previous short message from this rank to the same destination has not
//! been received yet: then it first waits until it has ("only one message
//! from one given node to another can be outstanding"). A message counts as
//! received when the destination's receive has matched it (an ordinary
//! [`Comm::recv_into`](crate::Comm::recv_into) or any other receive; no
//! special receive exists). [`ShortSends::wait_for`] waits for the
//! outstanding message to one destination, or to all of them with
//! [`Source::Any`] (CMMD `ANY_NODE`).
//!
//! The bytes are copied when the message starts, so the caller's buffer may
//! be reused at once. Dropping a `ShortSends` with messages still
//! outstanding stops waiting for them (they are still delivered); call
//! [`ShortSends::wait_all`] to be sure they were received.
//!
//! CMMD's `enable_short_messages` / `disable_short_messages` (synchronising
//! host and nodes, allocating buffers) have no counterpart: creating the
//! value is enough, and [`ShortSends::wait_all`] is the waiting half of
//! `disable_short_messages`.

use crate::comm::Comm;
use crate::engine::ReqId;
use crate::error::{Error, Result};
use crate::rank::{Rank, Source};

/// The longest short message, in bytes (CMMD_SHORT_MESSAGE_BYTES).
pub const SHORT_MESSAGE_BYTES: usize = 16;

/// Outstanding short messages of one rank (see the module docs).
#[must_use = "dropping it stops tracking the outstanding messages"]
pub struct ShortSends {
    comm: Comm,
    /// Per destination: the synchronous send in flight and its own copy of
    /// the bytes (kept alive until the request completes or is withdrawn).
    pending: Vec<(Rank, ReqId, Box<[u8]>)>,
}

impl std::fmt::Debug for ShortSends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShortSends")
            .field("outstanding", &self.pending.len())
            .finish()
    }
}

impl Comm {
    /// A tracker of CMMD short messages sent through this communicator.
    pub fn short_sends(&self) -> ShortSends {
        ShortSends {
            comm: self.clone(),
            pending: Vec::new(),
        }
    }
}

impl ShortSends {
    /// CMMD send_short: send `data` (at most [`SHORT_MESSAGE_BYTES`]) to
    /// `dest` with `tag`, without waiting for it to be received — unless the
    /// previous short message to `dest` is still outstanding.
    pub fn send(&mut self, dest: impl Into<Rank>, tag: u32, data: &[u8]) -> Result<()> {
        let dest = dest.into();
        if data.len() > SHORT_MESSAGE_BYTES {
            return Err(Error::InvalidArgument {
                op: "send_short",
                what: format!(
                    "{} bytes is longer than a short message ({SHORT_MESSAGE_BYTES} bytes)",
                    data.len()
                ),
            });
        }
        self.wait_for(dest)?;
        let ep = self.comm.ep(dest, "send_short")?;
        let copy: Box<[u8]> = data.into();
        let e = self.comm.engine();
        // SAFETY: `copy` is owned by `self.pending` until the request has
        // completed (`wait_for`) or been withdrawn (`Drop`).
        let id =
            unsafe { e.start_send(self.comm.group(), ep, self.comm.inner.ctx, tag, &copy, true)? };
        if let Some(id) = id {
            self.pending.push((dest, id, copy));
        }
        Ok(())
    }

    /// CMMD wait_for_send: wait until the outstanding short message to
    /// `dest` (to every destination, for [`Source::Any`]) has been received.
    pub fn wait_for(&mut self, dest: impl Into<Source>) -> Result<()> {
        let which = dest.into();
        let mut first_err = None;
        let mut i = 0;
        while i < self.pending.len() {
            let hit = match which {
                Source::Any => true,
                Source::Rank(r) => self.pending[i].0 == r,
            };
            if !hit {
                i += 1;
                continue;
            }
            let (_, id, copy) = self.pending.remove(i);
            let r = self
                .comm
                .engine()
                .wait_req(id, self.comm.timeout, "wait_for_send");
            drop(copy);
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Wait until every outstanding short message has been received.
    pub fn wait_all(&mut self) -> Result<()> {
        self.wait_for(Source::Any)
    }

    /// How many short messages have not been seen received yet.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }
}

impl Drop for ShortSends {
    fn drop(&mut self) {
        for (_, id, copy) in self.pending.drain(..) {
            self.comm.engine().withdraw(id);
            drop(copy);
        }
    }
}
