//! What a transport offers a receive before it builds a frame: the eager
//! fast path of a posted receive ([`Transport::try_recv_offer`] with a
//! [`Taker`], which may [`Taker::claim`] a buffer for a message that
//! streams in), a blocking receive's look at one sender
//! ([`Transport::take_from`], [`Direct`]), and the plain take of a
//! transport that matches the world's messages itself
//! ([`Transport::take_plain`], [`Plain`]).

use super::Frame;
#[cfg(doc)]
use super::Transport;
use crate::wire::Header;

/// What [`Transport::try_recv_offer`] found.
pub enum Arrival {
    /// Nothing has arrived.
    Nothing,
    /// A message arrived and the offer took it.
    Taken,
    /// The message with this header, whose buffer was claimed when it began
    /// ([`Taker::claim`]), is now all in that buffer.
    Filled(Header),
    /// The sender withdrew the message streaming in from this endpoint
    /// into a claimed buffer: the rest will not come, and the buffer is
    /// free again (its contents are unspecified).
    Withdrawn(usize),
    /// A frame arrived that the offer did not take.
    Frame(Frame),
}

/// What [`Transport::take_from`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direct {
    /// The next arrival from the endpoint was a data message and the
    /// taker took it.
    Taken,
    /// Nothing from the endpoint yet.
    Empty,
    /// Something else comes first (a control frame, a message that
    /// streams in, one the taker refused) or the transport has work of
    /// its own to do: the general path must look.
    Other,
}

/// What [`Transport::take_plain`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plain {
    /// The next message from the sender with the tag was a plain one that
    /// fit: this many bytes of it are in the buffer.
    Taken(usize),
    /// Anything else (nothing came within the polls, a message that does
    /// not fit or is not plain, work of the transport's own): the general
    /// path must look; what came stays for it.
    Other,
    /// The transport has no such path ([`Transport::take_from`] serves).
    Unoffered,
}

/// What a posted receive is offered by [`Transport::try_recv_offer`]
/// before a frame is built.
pub trait Taker {
    /// A whole data message whose bytes are at hand: true when the taker
    /// copied it out (it is then consumed).
    fn take(&mut self, header: &Header, bytes: &[u8]) -> bool;
    /// A data message of `header.len` bytes begins to stream in: a buffer
    /// of at least that many bytes to write it into as it comes, or `None`
    /// to have it as a frame. Default: `None`.
    fn claim(&mut self, header: &Header) -> Option<Claim> {
        let _ = header;
        None
    }
    /// The context and tag (`None`: any) of the receive taking, for a
    /// transport that matches messages itself ([`Transport::take_from`]
    /// over MPI). Default: `None`, not said.
    fn wants(&self) -> Option<(u64, Option<u32>)> {
        None
    }
}

/// A buffer lent to a transport for one message that streams in
/// ([`Taker::claim`]).
pub struct Claim {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
}

impl Claim {
    /// Lend `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writes of `len` bytes, and nothing else may
    /// access them, until the transport reports the message
    /// ([`Arrival::Filled`]) or its withdrawal ([`Arrival::Withdrawn`]), or
    /// [`Transport::unclaim`] returns.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Claim {
        Claim { ptr, len }
    }

    /// Copy `bytes` into the buffer at offset `at`; false (nothing copied)
    /// when they would not fit.
    pub fn write(&mut self, at: usize, bytes: &[u8]) -> bool {
        if at.checked_add(bytes.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: in bounds (checked above) of a buffer this claim may
        // write (`Claim::new`'s contract); `bytes` is the caller's, not
        // part of it (the buffer is accessed by nothing else).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(at), bytes.len());
        }
        true
    }

    /// The first `n` bytes written so far, copied out.
    pub fn copy_prefix(&self, n: usize) -> Vec<u8> {
        let n = n.min(self.len);
        // SAFETY: in bounds, and the buffer is this claim's alone
        // (`Claim::new`'s contract).
        unsafe { std::slice::from_raw_parts(self.ptr, n) }.to_vec()
    }
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim").field("len", &self.len).finish()
    }
}
