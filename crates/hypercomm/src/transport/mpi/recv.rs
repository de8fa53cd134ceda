//! The receiving side of [`MpiEndpoint`]: frame messages taken off the
//! posted wildcard receives in order, a data message offered to the
//! posted receive it matches (a short one copied out of the frame
//! message, a long one's pieces received straight into the receive's
//! buffer), everything else queued as a frame or acted on.

use super::{protocol, sys, Handle, MpiEndpoint, EAGER, PIECE, TAG_BULK};
use crate::transport::census::handled_here;
use crate::transport::{Arrival, Claim, Frame, Payload, Taker};
use crate::wire::{Header, Kind};

impl MpiEndpoint {
    /// Take the next frame message if one has arrived (`None`: none has),
    /// offering a data message to `taker` first; `Some(Some(_))` when the
    /// offer took it, `Some(None)` when it went to the queue (or was a
    /// control message).
    pub(super) fn arrive(&self, taker: Option<&mut dyn Taker>) -> Option<Option<Arrival>> {
        let mut posted = self.posted.borrow_mut();
        let head = posted.front_mut()?;
        // SAFETY: a receive started by `post`.
        let got = match unsafe { sys::test(&mut head.req) } {
            Ok(Some(g)) => g,
            Ok(None) => return None,
            Err(e) => {
                drop(posted);
                self.fail_protocol(format!("receiving: {e}"));
                return None;
            }
        };
        let mut p = posted.pop_front().expect("the head");
        drop(posted);
        let taken = self.take(got.0, &p.buf[..got.1], taker);
        if let Err(e) = self.post(&mut p) {
            self.fail_protocol(format!("posting a receive again: {e}"));
        }
        self.posted.borrow_mut().push_back(p);
        Some(taken)
    }

    /// Handle one arrived frame message from `src`: a data message goes
    /// into the posted receive `taker` has for it when there is one (a
    /// short one copied out, a long one received straight into its
    /// buffer), anything else to the queue.
    fn take(&self, src: usize, msg: &[u8], taker: Option<&mut dyn Taker>) -> Option<Arrival> {
        let h = match Header::decode(msg) {
            Ok(h) => h,
            Err(e) => {
                self.fail_protocol(protocol(src, e));
                return None;
            }
        };
        if h.src as usize != src || h.dst as usize != self.me {
            self.fail_protocol(protocol(
                src,
                format!(
                    "a frame from {} to {} arrived from {src} at {}",
                    h.src, h.dst, self.me
                ),
            ));
            return None;
        }
        self.census.took(src, h.kind);
        let want = h.stream_payload_len() as usize;
        let inline = &msg[Header::SIZE..];
        if let Some(t) = taker.filter(|_| h.kind == Kind::Data) {
            if inline.len() == want {
                if t.take(&h, inline) {
                    return Some(Arrival::Taken);
                }
            } else if inline.is_empty() && want > EAGER {
                if let Some(claim) = t.claim(&h) {
                    return Some(self.recv_claimed(src, h, want, claim));
                }
            }
        }
        self.queue_frame(src, h, want, inline);
        None
    }

    /// The payload of `h` (`want` bytes in pieces on [`TAG_BULK`]) straight
    /// into the posted receive's buffer `claim`.
    fn recv_claimed(&self, src: usize, h: Header, want: usize, claim: Claim) -> Arrival {
        if want > claim.len {
            // Cannot happen (a claim holds the whole message); had it, the
            // message goes the ordinary way and the receive back.
            self.queue_frame(src, h, want, &[]);
            return Arrival::Withdrawn(src);
        }
        // SAFETY: the claim lends `claim.len` >= `want` writable bytes that
        // nothing else touches until we report `Filled` or `Withdrawn`,
        // which we do before returning.
        let buf = unsafe { std::slice::from_raw_parts_mut(claim.ptr, want) };
        match self.recv_pieces(&self.comm, TAG_BULK, src, buf) {
            Ok(()) => Arrival::Filled(h),
            Err(why) => {
                self.fail_protocol(why);
                Arrival::Withdrawn(src)
            }
        }
    }

    /// Receive `buf` from `src` in pieces on `comm` with `tag` (blocking:
    /// they follow their header or announcement at once); the protocol
    /// error if one falls short.
    pub(super) fn recv_pieces(
        &self,
        comm: &Handle,
        tag: i32,
        src: usize,
        buf: &mut [u8],
    ) -> std::result::Result<(), String> {
        for piece in buf.chunks_mut(PIECE) {
            match sys::recv(comm, piece, src, tag) {
                Ok(k) if k == piece.len() => {}
                Ok(k) => {
                    return Err(protocol(
                        src,
                        format!(
                            "a payload piece of {k} bytes where {} were due",
                            piece.len()
                        ),
                    ))
                }
                Err(e) => return Err(format!("receiving from {src}: {e}")),
            }
        }
        Ok(())
    }

    /// Queue the frame of `h` (its payload `inline`, or `want` bytes to
    /// receive in pieces), or act on a control message.
    fn queue_frame(&self, src: usize, h: Header, want: usize, inline: &[u8]) {
        let payload = if inline.len() == want {
            Payload::copy_of(inline)
        } else if inline.is_empty() && want > EAGER {
            let mut v = vec![0u8; want];
            if let Err(why) = self.recv_pieces(&self.comm, TAG_BULK, src, &mut v) {
                return self.fail_protocol(why);
            }
            Payload::Bytes(v)
        } else {
            return self.fail_protocol(protocol(
                src,
                format!(
                    "{} payload bytes with a header that says {want}",
                    inline.len()
                ),
            ));
        };
        match h.kind {
            Kind::Goodbye => self.goodbye_from(src, h.id),
            Kind::Abort => {
                let origin = match h.id {
                    0 => src,
                    k if (k as usize) <= self.n => k as usize - 1,
                    _ => src,
                };
                let text = String::from_utf8_lossy(&payload.into_bytes()).into_owned();
                self.shared.set_abort(origin, &text);
            }
            // The other kinds the transport handles itself: questions,
            // answers, news (`deadlock.rs`).
            k if handled_here(k) => self.on_census(src, &h, payload.into_bytes()),
            _ => self
                .queue
                .borrow_mut()
                .push_back(Frame { header: h, payload }),
        }
    }
}
