//! The world's user context on MPI's own matching.
//!
//! Data messages of context 0 (the world communicator's point-to-point
//! traffic, what most programs send) are not frames: they go as MPI
//! messages on a communicator of their own (`user`), with our tag as
//! MPI's, so that a blocking receive with nothing else pending can post an
//! `MPI_Irecv` for exactly its source and tag and let MPI match it
//! ([`MpiEndpoint::take_direct`]), as a plain MPI program would; the
//! engine keeps its own semantics (truncation keeps the message, probes,
//! posted receives, synchronous sends) for everything else.
//!
//! * **Plain messages**: a payload of at most [`PLAIN`] bytes, not
//!   synchronous, with a tag below MPI's bound, is the MPI message itself,
//!   no header.
//! * **Announced messages**: anything else is announced by a message of
//!   exactly [`ANNOUNCE`] bytes (`PLAIN + 1`, so never mistaken for a plain
//!   one): our 48-byte header, an 8-byte key, and the payload's first
//!   bytes; the rest follows on a second communicator (`bulk`) with the
//!   key as its tag. The header carries what MPI's envelope cannot: the
//!   synchronous flag and its acknowledgement id, a tag at or above MPI's
//!   bound (those travel with the bound as MPI tag).
//! * **Never truncated by MPI**: every receive we post on `user` has room
//!   for [`ANNOUNCE`] bytes, so MPI hands over every message whole; a
//!   message the engine's receive cannot hold is kept by the engine as on
//!   every transport (truncation keeps the message).
//! * **Order**: MPI keeps the messages of one source on `user` in order.
//!   They reach the engine through one receive on `user` at a time
//!   ([`DirectRecv`]): posted for the blocking receive's source and tag,
//!   or for any (the general path's, which also serves a blocking
//!   receive). One posted for something else is cancelled first; what it
//!   had received after all is kept, ahead of anything later. What it
//!   receives waits in its buffer until a look with a receive to offer it
//!   to takes it (the transport's own wait only asks whether something
//!   came).
//! * **Goodbyes** travel on the frame communicator, which MPI does not
//!   order against `user`: a goodbye says how many user messages its
//!   sender sent us ([`Tally`]), and the peer counts as finished only once
//!   that many have come.
//!
//! Not done yet: other communicators' contexts (`dup`, `split`) stay
//! frames; a receive posted with `irecv` is matched by the engine, so a
//! window of them takes messages one at a time through the one receive
//! and copies each from its buffer (a long one's rest goes straight into
//! the posted receive); the fast path's own cost (about 1.4× Open MPI's
//! 8-byte round trip: the engine's layers around the receive and the
//! send, each small; not the shim's lock, nor the test loop, both
//! measured).
//!
//! A blocking receive for one source and tag takes a plain message that
//! fits straight from the receive's buffer
//! ([`MpiEndpoint::take_plain_user`]: no header built, no taker asked);
//! anything else goes through [`MpiEndpoint::take_direct`] or the general
//! path.

use super::send::{append_payload, held_bytes, hold};
use super::{protocol, sys, Handle, MpiEndpoint};
use crate::transport::{Arrival, Direct, Frame, Payload, Plain, Taker};
use crate::wire::{Header, Kind};
use std::cell::RefCell;

/// Largest payload sent as a plain MPI message on the user communicator:
/// an announcement (one byte more) must leave eagerly, and Open MPI's
/// shared memory sends eagerly up to 4 KiB with its own header (a
/// rendezvous per announcement halved the rate of 64 KiB messages, and
/// under real-time priority stalled the reader's single copy).
pub const PLAIN: usize = 4031;
/// The length of an announcement (header, key, the payload's first bytes).
pub const ANNOUNCE: usize = PLAIN + 1;
/// Where an announcement's payload bytes start.
const PREFIX_AT: usize = Header::SIZE + 8;
/// Payload bytes an announcement carries.
const PREFIX: usize = ANNOUNCE - PREFIX_AT;

/// The user context's state in the endpoint.
pub(super) struct UserSide {
    /// The user communicator and the one for the rest of announced
    /// messages.
    pub(super) user: Handle,
    pub(super) bulk: Handle,
    /// MPI's largest tag.
    pub(super) tag_ub: i32,
    /// User messages sent to and received from each peer.
    pub(super) tally: RefCell<Tally>,
    /// The last announcement key sent to each peer.
    pub(super) keys: RefCell<Vec<u64>>,
    /// The one receive on `user`.
    pub(super) direct: RefCell<DirectRecv>,
}

/// Per peer: user messages sent to it and received from it, and what its
/// goodbye said it sent (MPI does not order the frame communicator, where
/// goodbyes travel, against the user one).
pub(super) struct Tally {
    pub(super) sent: Vec<u64>,
    got: Vec<u64>,
    said: Vec<Option<u64>>,
}

impl Tally {
    /// For a job of `n` endpoints.
    pub(super) fn new(n: usize) -> Tally {
        Tally {
            sent: vec![0; n],
            got: vec![0; n],
            said: vec![None; n],
        }
    }

    /// One more user message from `src`: true when that completes what
    /// its goodbye said (it has finished).
    pub(super) fn got(&mut self, src: usize) -> bool {
        self.got[src] += 1;
        self.said[src] == Some(self.got[src])
    }

    /// User messages sent to and received from `peer`.
    pub(super) fn counts(&self, peer: usize) -> (u64, u64) {
        (self.sent[peer], self.got[peer])
    }

    /// `src`'s goodbye says it sent `sent`: true when all have come.
    pub(super) fn bye(&mut self, src: usize, sent: u64) -> bool {
        self.said[src] = Some(sent);
        self.got[src] == sent
    }
}

// An announcement is one byte longer than the longest plain message, so
// its length alone tells it apart, and it has room for its header, key
// and some payload.
const _: () = assert!(ANNOUNCE == PLAIN + 1 && PREFIX > 0 && PREFIX_AT + PREFIX == ANNOUNCE);

/// The one receive posted on the user communicator (for a blocking
/// receive's source and tag, or for any): its request (boxed once: MPI
/// holds its address while it is posted), what it matches while posted,
/// and its buffer.
pub(super) struct DirectRecv {
    req: Box<Handle>,
    posted: Option<(Option<usize>, Option<u32>)>,
    /// What it received, in `buf`, until taken.
    ready: Option<sys::Found>,
    buf: Vec<u8>,
}

impl DirectRecv {
    pub(super) fn new() -> DirectRecv {
        DirectRecv {
            req: Box::new(Handle::zeroed()),
            posted: None,
            ready: None,
            buf: vec![0; ANNOUNCE],
        }
    }
}

/// What testing the receive on `user` found.
enum Polled {
    /// A message (`ready`, in the receive's buffer; the receive is free
    /// again).
    Got,
    /// Nothing yet; the receive stays posted.
    Empty,
    /// A receive posted for something else was withdrawn (what it had
    /// received after all is kept as `ready`).
    Withdrawn,
    /// MPI failed posting or testing the receive (the endpoint's fault
    /// says so): nothing more to look at.
    Failed,
}

impl MpiEndpoint {
    /// Whether a message of `len` bytes with header `h` goes plain.
    #[inline]
    fn plain(&self, h: &Header, len: usize) -> bool {
        len <= PLAIN && h.flags == 0 && h.tag < self.u.tag_ub as u32
    }

    /// The MPI tag of our `tag`: itself below MPI's bound, else the bound
    /// (the header of the announcement carries it).
    #[inline]
    fn mpi_tag(&self, tag: u32) -> i32 {
        if tag < self.u.tag_ub as u32 {
            tag as i32
        } else {
            self.u.tag_ub
        }
    }

    /// [`MpiEndpoint::send_user`] of a copy of `data`, which need not
    /// outlive the call: a short plain one straight from `data`.
    #[inline]
    pub(super) fn send_user_copied(&self, dst: usize, h: Header, data: &[u8]) -> crate::Result<()> {
        if data.len() <= super::BLOCKING_SEND && self.plain(&h, data.len()) {
            self.u.tally.borrow_mut().sent[dst] += 1;
            return sys::send(&self.u.user, data, dst, h.tag as i32);
        }
        self.send_user(dst, h, Payload::copy_of(data))
    }

    /// Send a data message of the user context to `dst` (another endpoint).
    pub(super) fn send_user(&self, dst: usize, h: Header, payload: Payload) -> crate::Result<()> {
        let len = payload.len();
        if self.plain(&h, len) {
            let mut buf = self.scratch_with(&[], len);
            if !append_payload(&mut buf, payload) {
                // Revoked before we started: send nothing.
                *self.scratch.borrow_mut() = buf;
                return Ok(());
            }
            self.u.tally.borrow_mut().sent[dst] += 1;
            return self.send_eager(&self.u.user, h.tag as i32, dst, buf);
        }
        self.u.tally.borrow_mut().sent[dst] += 1;
        let key = {
            let mut k = self.u.keys.borrow_mut();
            k[dst] = k[dst].wrapping_add(1);
            k[dst]
        };
        let held = hold(payload);
        let bytes = held_bytes(&held);
        let first = bytes.len().min(PREFIX);
        let mut ann = self.scratch_with(&h.encode(), ANNOUNCE);
        ann.extend_from_slice(&key.to_le_bytes());
        ann.extend_from_slice(&bytes[..first]);
        ann.resize(ANNOUNCE, 0);
        // The rest first: its envelope is then at the receiver (or on its
        // way) before the announcement that sends the receiver after it.
        if len > first {
            self.start(&self.u.bulk, dst, self.key_tag(key), held, first)?;
        }
        self.send_eager(&self.u.user, self.mpi_tag(h.tag), dst, ann)
    }

    /// The MPI tag of the rest of an announced message with `key`.
    #[inline]
    fn key_tag(&self, key: u64) -> i32 {
        (key % self.u.tag_ub as u64) as i32
    }

    /// One user message from `src` with MPI tag `tag` received into
    /// `msg`: offered to `taker` (a plain one, or an announced one whose
    /// payload came whole), or received into the buffer it claims, or
    /// queued as a frame. `Some` when the taker took it.
    pub(super) fn user_arrival(
        &self,
        src: usize,
        tag: i32,
        msg: &[u8],
        taker: Option<&mut dyn Taker>,
    ) -> Option<Arrival> {
        self.got_user_from(src);
        if msg.len() <= PLAIN {
            let h = Header {
                kind: Kind::Data,
                flags: 0,
                src: src as u32,
                dst: self.me as u32,
                context: 0,
                tag: tag as u32,
                id: 0,
                len: msg.len() as u64,
            };
            if let Some(t) = taker {
                if t.take(&h, msg) {
                    return Some(Arrival::Taken);
                }
            }
            self.queue.borrow_mut().push_back(Frame {
                header: h,
                payload: Payload::copy_of(msg),
            });
            return None;
        }
        let h = match Header::decode(msg) {
            Ok(h) if msg.len() == ANNOUNCE => h,
            Ok(_) => {
                self.fail_protocol(protocol(src, format!("a {}-byte user message", msg.len())));
                return None;
            }
            Err(e) => {
                self.fail_protocol(protocol(src, e));
                return None;
            }
        };
        if h.kind != Kind::Data
            || h.context != 0
            || h.src as usize != src
            || h.dst as usize != self.me
            || self.mpi_tag(h.tag) != tag
        {
            self.fail_protocol(protocol(
                src,
                format!("an announcement of {h:?} on tag {tag}"),
            ));
            return None;
        }
        let key = u64::from_le_bytes(msg[Header::SIZE..PREFIX_AT].try_into().expect("8 bytes"));
        let len = h.len as usize;
        let first = len.min(PREFIX);
        let prefix = &msg[PREFIX_AT..PREFIX_AT + first];
        let mut withdrawn = false;
        if let Some(t) = taker {
            if len == first {
                if t.take(&h, prefix) {
                    return Some(Arrival::Taken);
                }
            } else if let Some(claim) = t.claim(&h) {
                if claim.len >= len {
                    // SAFETY: the claim lends `claim.len` >= `len` writable
                    // bytes that nothing else touches until we report
                    // `Filled` or `Withdrawn`, which we do before returning.
                    let buf = unsafe { std::slice::from_raw_parts_mut(claim.ptr, len) };
                    buf[..first].copy_from_slice(prefix);
                    return Some(match self.recv_rest(src, key, &mut buf[first..]) {
                        Ok(()) => Arrival::Filled(h),
                        Err(why) => {
                            self.fail_protocol(why);
                            Arrival::Withdrawn(src)
                        }
                    });
                }
                // Cannot happen (a claim holds the whole message); had it,
                // the message is queued and the receive given back.
                withdrawn = true;
            }
        }
        let payload = if len == first {
            Payload::copy_of(prefix)
        } else {
            let mut v = vec![0u8; len];
            v[..first].copy_from_slice(prefix);
            if let Err(why) = self.recv_rest(src, key, &mut v[first..]) {
                self.fail_protocol(why);
                return withdrawn.then_some(Arrival::Withdrawn(src));
            }
            Payload::Bytes(v)
        };
        self.queue
            .borrow_mut()
            .push_back(Frame { header: h, payload });
        withdrawn.then_some(Arrival::Withdrawn(src))
    }

    /// The rest of an announced message from `src` with `key`, into `buf`
    /// (blocking: it follows its announcement at once).
    fn recv_rest(&self, src: usize, key: u64, buf: &mut [u8]) -> std::result::Result<(), String> {
        self.recv_pieces(&self.u.bulk, self.key_tag(key), src, buf)
    }

    /// Count a user message from `src`; a peer whose goodbye said as many
    /// has finished.
    fn got_user_from(&self, src: usize) {
        if self.u.tally.borrow_mut().got(src) {
            self.finished.borrow_mut()[src] = true;
        }
    }

    /// `src`'s goodbye came, saying it sent us `sent` user messages.
    pub(super) fn goodbye_from(&self, src: usize, sent: u64) {
        if self.u.tally.borrow_mut().bye(src, sent) {
            self.finished.borrow_mut()[src] = true;
        }
    }

    /// Take the next user message MPI has, in MPI's order: `None` when
    /// there is none yet, `Some(Some(_))` when `taker` took it,
    /// `Some(None)` when it was queued (or a direct receive was withdrawn).
    /// The one receive on `user` is posted for any source and tag and
    /// stays posted until a message comes or a direct receive needs it.
    pub(super) fn arrive_user(&self, taker: Option<&mut dyn Taker>) -> Option<Option<Arrival>> {
        match self.poll_user(None, None) {
            Polled::Got => Some(self.take_ready(taker)),
            Polled::Empty | Polled::Failed => None,
            Polled::Withdrawn => Some(None),
        }
    }

    /// Whether a user message has come (without taking it: the engine's
    /// next look offers it to its receives; the transport's `wait`).
    pub(super) fn user_waiting(&self) -> bool {
        !matches!(self.poll_user(None, None), Polled::Empty)
    }

    /// Whether a user message waits in the receive's buffer to be taken.
    pub(super) fn user_ready(&self) -> bool {
        self.u.direct.borrow().ready.is_some()
    }

    /// The message the receive on `user` received, offered to `taker`
    /// (see [`MpiEndpoint::user_arrival`]).
    fn take_ready(&self, taker: Option<&mut dyn Taker>) -> Option<Arrival> {
        let found = self.u.direct.borrow_mut().ready.take()?;
        let d = self.u.direct.borrow();
        let msg = &d.buf[..found.bytes.min(ANNOUNCE)];
        self.user_arrival(found.source, found.tag, msg, taker)
    }

    /// Post the one receive on `user` for `src` and `tag` (`None`: any)
    /// unless it is posted for them already, and test it. One posted for
    /// something else is withdrawn instead ([`MpiEndpoint::end_direct`]).
    fn poll_user(&self, src: Option<usize>, tag: Option<u32>) -> Polled {
        let mut d = self.u.direct.borrow_mut();
        let DirectRecv {
            req,
            posted,
            ready,
            buf,
        } = &mut *d;
        if ready.is_some() {
            return Polled::Got;
        }
        match posted {
            // A receive for any source and tag (the general path's) serves
            // every look: what it gets is the next message in MPI's order.
            Some((ps, pt)) if (ps.is_none() || *ps == src) && (pt.is_none() || *pt == tag) => {}
            Some(_) => {
                drop(d);
                self.end_direct();
                return Polled::Withdrawn;
            }
            None => {
                // SAFETY: the request is boxed and the buffer is the
                // endpoint's, neither moved nor touched until the receive
                // completes or `end_direct` cancels it.
                let r = unsafe { sys::irecv(&self.u.user, buf, src, tag.map(|t| t as i32), req) };
                if let Err(e) = r {
                    drop(d);
                    self.fail_protocol(format!("posting a receive: {e}"));
                    return Polled::Failed;
                }
                *posted = Some((src, tag));
            }
        }
        // SAFETY: started above (now or on an earlier call).
        match unsafe { sys::test_tagged(req) } {
            Ok(Some(f)) => {
                *posted = None;
                *ready = Some(f);
                Polled::Got
            }
            Ok(None) => Polled::Empty,
            Err(e) => {
                *posted = None;
                drop(d);
                self.fail_protocol(format!("receiving: {e}"));
                Polled::Failed
            }
        }
    }

    /// The blocking receive's fast path on the user context: post (once)
    /// an `MPI_Irecv` for exactly the receive's source and tag, and test
    /// it. Nothing else is taken from the user communicator while it is
    /// posted, so what it receives is the next message of that source
    /// the receive matches.
    pub(super) fn take_direct(
        &self,
        src: Option<usize>,
        tag: Option<u32>,
        taker: &mut dyn Taker,
    ) -> Direct {
        if tag.is_some_and(|t| t >= self.u.tag_ub as u32) {
            self.end_direct();
            return Direct::Other;
        }
        match self.poll_user(src, tag) {
            // What came (for this receive, or earlier for any) is the next
            // message in MPI's order: offered whole, else queued.
            Polled::Got => match self.take_ready(Some(&mut super::Whole(taker))) {
                Some(Arrival::Taken) => Direct::Taken,
                _ => Direct::Other,
            },
            Polled::Empty => Direct::Empty,
            Polled::Withdrawn | Polled::Failed => Direct::Other,
        }
    }

    /// [`Transport::take_plain`](crate::transport::Transport::take_plain)
    /// on the user context: [`MpiEndpoint::take_direct`] for a receive
    /// that takes only a plain message that fits, straight from the
    /// receive's buffer (no header built, no taker asked), polling up to
    /// `polls` times.
    pub(super) fn take_plain_user(
        &self,
        src: usize,
        tag: u32,
        dst: &mut [u8],
        polls: u32,
    ) -> Plain {
        if tag >= self.u.tag_ub as u32 {
            self.end_direct();
            return Plain::Other;
        }
        for _ in 0..polls {
            match self.poll_user(Some(src), Some(tag)) {
                Polled::Got => {
                    let mut d = self.u.direct.borrow_mut();
                    // What came may be another's (a receive for any was
                    // posted): then it stays for the general path.
                    let n = match d.ready {
                        Some(f) if f.source == src && f.tag == tag as i32 => f.bytes,
                        _ => return Plain::Other,
                    };
                    if n > PLAIN || n > dst.len() {
                        return Plain::Other;
                    }
                    d.ready = None;
                    dst[..n].copy_from_slice(&d.buf[..n]);
                    drop(d);
                    self.got_user_from(src);
                    return Plain::Taken(n);
                }
                Polled::Empty => std::hint::spin_loop(),
                Polled::Withdrawn | Polled::Failed => return Plain::Other,
            }
        }
        self.end_take();
        Plain::Other
    }

    /// The blocking receive's fast path is over: withdraw a receive posted
    /// for its source and tag (one for any stays: it serves the general
    /// path as well).
    pub(super) fn end_take(&self) {
        if self.u.direct.borrow().posted != Some((None, None)) {
            self.end_direct();
        }
    }

    /// Withdraw the receive on `user`, if one is posted: cancel it, and
    /// keep what it received if it had matched a message after all (the
    /// next look takes it).
    pub(super) fn end_direct(&self) {
        let mut d = self.u.direct.borrow_mut();
        let DirectRecv {
            req, posted, ready, ..
        } = &mut *d;
        if posted.take().is_none() {
            return;
        }
        // SAFETY: started by `poll_user` on this boxed request and buffer.
        match unsafe { sys::cancel_recv(req) } {
            Ok(None) => {}
            Ok(Some(found)) => *ready = Some(found),
            Err(e) => {
                drop(d);
                self.fail_protocol(format!("withdrawing a receive: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer has finished once its goodbye has come and as many user
    /// messages as it said, in either order.
    #[test]
    fn a_goodbye_waits_for_the_messages_it_counts() {
        let mut t = Tally::new(3);
        // The goodbye overtakes two of three messages.
        assert!(!t.got(1));
        assert!(!t.bye(1, 3));
        assert!(!t.got(1));
        assert!(t.got(1));
        // All came first; another peer's count is its own.
        assert!(!t.got(2));
        assert!(t.bye(2, 1));
        assert!(t.bye(0, 0));
    }
}
