//! Flow control: a bound on what a receiver holds for each sender.
//!
//! Every data frame from one endpoint to another costs the sender
//! [`MESSAGE_COST`] plus its length in bytes of *credit* at that receiver;
//! a sender starts with [`SENDER_CREDIT`] at every receiver. A frame goes
//! to the transport only while the sender's credit at its receiver covers
//! it — or, for a frame larger than the whole credit, when nothing of the
//! sender's is outstanding there. Otherwise it waits, in order, in a queue
//! of the sender (its request is not complete until it has left), and a
//! blocking send waits for it in the engine's wait loop, which keeps
//! draining the sender's own incoming frames and matching its receives.
//!
//! A receiver gives credit back when a message is *taken*: matched by a
//! posted receive on arrival, or received from the unexpected queue. It
//! sends a [`Kind::Credit`] frame (`id`: the bytes) once it owes a sender
//! [`GRANT_AT`] bytes, and whatever it owes anyone when one of its waits
//! stops spinning (so that a sender whose next frame needs more than what
//! is owed is not left waiting while the receiver waits for that frame).
//! Sender and receiver both compute the cost from the frame's length, so
//! no header field carries it; a message to oneself costs nothing.
//!
//! So the messages a receiver holds from one sender that no receive has
//! taken — in the transport's queues and in the engine's unexpected queue
//! together — never exceed `SENDER_CREDIT` bytes as counted here (length
//! plus `MESSAGE_COST` each), or one message when a single one is larger,
//! while the receiver does not wait for that sender. Messages from oneself
//! are not bounded.
//!
//! A receiver that *waits* for a message of a sender (a receive, a probe,
//! a receive request, a collective: any wait but a send's) may need one
//! that the sender has queued behind the messages the receiver holds:
//! MPI's progress rule says a started send and a matching posted receive
//! must meet, however many earlier messages of other tags or
//! communicators wait unreceived. So a wait about to block while it holds
//! at least [`STARVED`] bytes of such a sender's messages lifts the bound
//! for that sender by giving it its whole credit again, and again each
//! time it holds another `STARVED` bytes more. Memory then grows with what
//! the program leaves unreceived, as in every MPI library; a sender that
//! merely runs ahead of a busy receiver is still bounded.
//!
//! What it costs a program: ranks that only send to each other, more than
//! the credit, before either receives (which MPI calls unsafe) wait for
//! ever — the deadlock detector or the timeout then says what each rank
//! waits for ("credit to send …").
//!
//! Not done yet: messages of a withdrawn collective (a mismatch, a
//! timeout) that were never received keep their credit.

use super::requests::ReqId;
use super::Engine;
use crate::transport::{Frame, Transport};
use crate::wire::Kind;
use std::collections::VecDeque;

/// Flow control: how many bytes of messages one sender may have at one
/// receiver that no receive there has taken yet — in the transport's
/// queues and among the receiver's unexpected messages together, each
/// message counted as its length plus [`MESSAGE_COST`]; one message larger
/// than this may go when nothing else of the sender's is waiting there.
///
/// A send that would exceed it waits (a blocking send returns, and a
/// non-blocking one completes, once the receiver has taken enough of the
/// earlier messages); while it waits, the sender's own receives go on. On
/// every transport. So a root that runs ahead of its receivers cannot grow
/// their memory without bound. A receiver that waits for a later message
/// of a sender while it holds that sender's earlier ones unreceived lets
/// the sender go on past the bound (MPI's progress rule); ranks that only
/// send to each other beyond it before receiving (which MPI calls unsafe)
/// wait for ever, and the deadlock detector or the timeout says so. [`Comm::unexpected`](crate::Comm::unexpected) reports what a rank
/// holds.
pub const SENDER_CREDIT: usize = 4 << 20;
/// What a message costs besides its length, in bytes of credit (about
/// what the engine keeps per queued message).
pub const MESSAGE_COST: usize = 64;
/// A receiver gives credit back once it owes a sender this many bytes.
const GRANT_AT: u64 = (SENDER_CREDIT / 4) as u64;
/// A receiver about to block in a wait for a sender's message while it
/// holds this many bytes of that sender's messages unreceived (once more
/// for each such amount beyond) gives the sender its whole credit again
/// (see the module docs).
pub(super) const STARVED: u64 = (SENDER_CREDIT / 2) as u64;

/// What a data frame of `len` payload bytes costs.
#[inline]
pub(super) fn cost(len: usize) -> u64 {
    (MESSAGE_COST + len) as u64
}

/// A data frame waiting for credit.
pub(super) struct Waiting {
    pub(super) frame: Frame,
    /// Its request (none for a frame whose sender waits for it in place).
    pub(super) req: ReqId,
    pub(super) cost: u64,
}

/// The flow-control state of one endpoint.
pub(super) struct Flow {
    /// Credit left at each receiver.
    credit: Vec<i64>,
    /// Bytes taken from each sender and not yet given back.
    owed: Vec<u64>,
    /// Whether anything is owed.
    owing: bool,
    /// Frames waiting for credit, per receiver, in order.
    waiting: Vec<VecDeque<Waiting>>,
    /// Frames in `waiting`, over all receivers.
    queued: usize,
    /// Credit came back while frames wait: try to send them.
    retry: bool,
    /// Messages in the unexpected queue and their cost (diagnostics).
    pub(super) unexpected: (usize, u64),
    /// The cost of each sender's messages in the unexpected queue.
    held: Vec<u64>,
    /// What `held` was when the bound was last lifted for each sender.
    lifted_at: Vec<u64>,
    /// The running wait is a send's (it lifts no bound).
    sending: bool,
}

impl Flow {
    pub(super) fn new(endpoints: usize) -> Flow {
        Flow {
            credit: vec![SENDER_CREDIT as i64; endpoints],
            owed: vec![0; endpoints],
            owing: false,
            waiting: (0..endpoints).map(|_| VecDeque::new()).collect(),
            queued: 0,
            retry: false,
            unexpected: (0, 0),
            held: vec![0; endpoints],
            lifted_at: vec![0; endpoints],
            sending: false,
        }
    }

    /// Take the credit for `cost` at `dst` if it is there and nothing is
    /// waiting before it.
    #[inline]
    fn take(&mut self, dst: usize, cost: u64) -> bool {
        if !self.waiting[dst].is_empty() {
            return false;
        }
        let c = &mut self.credit[dst];
        if *c >= cost as i64 || *c == SENDER_CREDIT as i64 {
            *c -= cost as i64;
            true
        } else {
            false
        }
    }
}

impl Engine {
    /// May a data frame of `len` bytes go to `dst` now? If so its credit
    /// is taken.
    #[inline]
    pub(super) fn take_credit(&self, dst: u32, len: usize) -> bool {
        dst == self.me || self.flow.borrow_mut().take(dst as usize, cost(len))
    }

    /// Queue `frame` (for `dst`, of request `req`) until credit comes.
    pub(super) fn wait_for_credit(&self, dst: u32, frame: Frame, req: ReqId) {
        let mut f = self.flow.borrow_mut();
        let cost = cost(frame.payload.len());
        f.waiting[dst as usize].push_back(Waiting { frame, req, cost });
        f.queued += 1;
    }

    /// Whether request `req` still waits for credit; remove it if `drop`.
    pub(super) fn unqueue(&self, req: ReqId) {
        let mut f = self.flow.borrow_mut();
        if f.queued == 0 {
            return;
        }
        let mut removed = 0;
        for q in f.waiting.iter_mut() {
            let before = q.len();
            q.retain(|w| w.req != req);
            removed += before - q.len();
        }
        f.queued -= removed;
    }

    /// A credit frame from `src`: `bytes` more may go there.
    pub(super) fn credit_back(&self, src: u32, bytes: u64) {
        let mut f = self.flow.borrow_mut();
        if let Some(c) = f.credit.get_mut(src as usize) {
            // Never more than the whole credit (a confused peer cannot
            // lift the bound).
            let back = i64::try_from(bytes).unwrap_or(i64::MAX);
            *c = (*c).saturating_add(back).min(SENDER_CREDIT as i64);
            if f.queued > 0 {
                f.retry = true;
            }
        }
    }

    /// Send what waits for credit and now has it (after credit came back).
    /// Every pass of every wait asks, so the usual answer (nothing came
    /// back) costs a flag's test, not a call.
    #[inline]
    pub(super) fn send_waiting(&self) {
        if self.flow.borrow().retry {
            self.send_waiting_now();
        }
    }

    #[inline(never)]
    fn send_waiting_now(&self) {
        let mut sent = Vec::new();
        {
            let mut f = self.flow.borrow_mut();
            f.retry = false;
            let f = &mut *f;
            for (dst, q) in f.waiting.iter_mut().enumerate() {
                while let Some(w) = q.front() {
                    let c = &mut f.credit[dst];
                    if *c >= w.cost as i64 || *c == SENDER_CREDIT as i64 {
                        *c -= w.cost as i64;
                        sent.push(q.pop_front().expect("front"));
                        f.queued -= 1;
                    } else {
                        break;
                    }
                }
            }
        }
        for w in sent {
            let r = self.t.send(w.frame);
            self.left_queue(w.req, r);
        }
    }

    /// A message of `len` bytes from `src` was taken by a receive: give its
    /// credit back (at once when enough is owed).
    #[inline]
    pub(super) fn taken(&self, src: u32, len: usize) {
        if src == self.me {
            return;
        }
        let grant = {
            let mut f = self.flow.borrow_mut();
            let Some(o) = f.owed.get_mut(src as usize) else {
                return;
            };
            *o += cost(len);
            if *o >= GRANT_AT {
                Some(std::mem::take(o))
            } else {
                f.owing = true;
                None
            }
        };
        if let Some(bytes) = grant {
            self.control(src, Kind::Credit, bytes, Vec::new());
        }
    }

    /// Give back everything owed (a wait is about to stop spinning).
    pub(super) fn grant_owed(&self) {
        let owed: Vec<(u32, u64)> = {
            let mut f = self.flow.borrow_mut();
            if !f.owing {
                return;
            }
            f.owing = false;
            f.owed
                .iter_mut()
                .enumerate()
                .filter(|(_, o)| **o > 0)
                .map(|(src, o)| (src as u32, std::mem::take(o)))
                .collect()
        };
        for (src, bytes) in owed {
            self.control(src, Kind::Credit, bytes, Vec::new());
        }
    }

    /// A message of `len` bytes from `src` went into the unexpected queue
    /// (`true`) or left it (`false`).
    #[inline]
    pub(super) fn count_unexpected(&self, src: u32, len: usize, added: bool) {
        let mut f = self.flow.borrow_mut();
        let f = &mut *f;
        let (n, b) = &mut f.unexpected;
        let held = f.held.get_mut(src as usize);
        if added {
            *n += 1;
            *b += cost(len);
            if let Some(h) = held {
                *h += cost(len);
            }
        } else {
            *n = n.saturating_sub(1);
            *b = b.saturating_sub(cost(len));
            if let Some(h) = held {
                *h = h.saturating_sub(cost(len));
                let l = &mut f.lifted_at[src as usize];
                *l = (*l).min(*h);
            }
        }
    }

    /// Whether the running wait is a send's; returns what it was before.
    pub(super) fn set_sending(&self, sending: bool) -> bool {
        std::mem::replace(&mut self.flow.borrow_mut().sending, sending)
    }

    /// A wait for a message of `peer` (`None` or this endpoint: of anyone)
    /// is about to block: give the whole credit again to each such sender
    /// whose messages this endpoint holds unreceived, [`STARVED`] bytes
    /// or more beyond what it held when it last did (the module docs say
    /// why). Whether any credit went out.
    pub(super) fn lift_bound(&self, peer: Option<u32>) -> bool {
        let lifted: Vec<u32> = {
            let mut f = self.flow.borrow_mut();
            if f.sending || f.unexpected.1 < STARVED {
                return false;
            }
            let f = &mut *f;
            let senders = match peer {
                Some(p) if p != self.me => p as usize..p as usize + 1,
                _ => 0..f.held.len(),
            };
            senders
                .filter(|&s| {
                    let h = f.held.get(s).copied().unwrap_or(0);
                    let lift = s != self.me as usize
                        && h >= STARVED
                        && h >= f.lifted_at[s].saturating_add(STARVED);
                    if lift {
                        f.lifted_at[s] = h;
                    }
                    lift
                })
                .map(|s| s as u32)
                .collect()
        };
        for &s in &lifted {
            // The sender caps its credit at SENDER_CREDIT: this restores it
            // whole, even after one message larger than the credit.
            self.control(s, Kind::Credit, i64::MAX as u64, Vec::new());
        }
        !lifted.is_empty()
    }

    /// Messages that arrived and no receive has taken, and their bytes as
    /// flow control counts them (after taking in what has arrived).
    pub(crate) fn unexpected(&self) -> (usize, usize) {
        self.progress();
        let f = self.flow.borrow();
        (f.unexpected.0, f.unexpected.1 as usize)
    }
}
