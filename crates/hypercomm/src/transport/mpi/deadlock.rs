//! Over MPI, what the other ranks wait for (a timeout's message) and
//! deadlock detection: the questions and answers of TCP's
//! (`transport/census.rs` holds what the two share), answered from the
//! asked endpoint's own polling, since an MPI endpoint has no reader
//! thread. A rank blocked in one of our calls polls its frame receives
//! all the time (`wait` returns every millisecond and the engine calls it
//! again), so it answers within that; a rank computing outside the
//! library, or blocked inside the MPI library's own collective, does not
//! answer (and is said not to, or the round is abandoned).
//!
//! * **Counts.** Per peer: frames sent and taken on the frame
//!   communicator (not those the transport handles itself:
//!   [`handled_here`]), and user messages sent and received on the user
//!   communicator ([`super::user::Tally`], which also serves goodbyes). A
//!   user message that MPI holds unmatched counts as in flight, so a job
//!   with one is never called deadlocked; a blocked wait keeps a receive
//!   for any source and tag posted on `user`, so every user message that
//!   reaches a blocked rank is taken.
//! * **Quiet.** Asked from inside a wait with no deadline of a blocking
//!   call (`in_wait`), with every end of a peer looked at, nothing queued,
//!   no user message waiting to be taken, no send of its own in flight nor
//!   completed since the wait began (the engine may be waiting for it; a
//!   wait returns when one completes). Asked anywhere else, an endpoint is
//!   not quiet.
//! * **Asking, deciding, telling** as over TCP: the lowest live endpoint,
//!   blocked for [`FIRST_LOOK`], asks twice; equal answers, all quiet, the
//!   same ends and as many taken as sent declare the deadlock, sent with
//!   its account to every live peer; a peer relays a notice to the others
//!   before its engine can learn of it (MPI keeps a source's frames in
//!   order, so a rank that sees that peer's goodbye has the notice first).
//!
//! Not done yet: a job whose lowest live rank waits with a deadline is not
//! looked at; collectives handed to the MPI library block inside it, where
//! nothing answers.

use super::MpiEndpoint;
use crate::transport::census::{
    census_twice, collect, gather, handled_here, waits_text, Answer, Asker, Heard, Report, State,
    ANSWER_WITHIN, FIRST_LOOK, MAX_PAUSE,
};
use crate::transport::{PeerState, Transport};
use crate::wire::{Header, Kind};
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// One endpoint's part in asking and answering (in [`MpiEndpoint`]).
pub(super) struct Census {
    /// Frames of counted kinds sent to and taken from each endpoint.
    sent: RefCell<Vec<u64>>,
    taken: RefCell<Vec<u64>>,
    /// Peers ended when the engine last looked.
    ends_seen: Cell<usize>,
    /// In a blocking call that blocked with no deadline.
    blocked: Cell<bool>,
    /// Inside such a wait now (answers are quiet only here).
    in_wait: Cell<bool>,
    /// A send of ours completed in this wait: the engine has news it has
    /// not looked at (a send it waits for may have ended).
    stirred: Cell<bool>,
    /// Blocking calls ended so far (a declaration counts for its call).
    calls: Cell<u64>,
    /// Our last round's number, and the answers to it.
    round: Cell<u64>,
    answers: RefCell<Vec<Option<Answer>>>,
    heard: RefCell<Heard>,
    /// When to ask next (`None`: not blocked yet), and the pause after.
    next: Cell<(Option<Instant>, Duration)>,
    /// What this endpoint waits for, as its engine published it.
    waiting: RefCell<String>,
    /// The peers' answers to our question of what they wait for.
    replies: RefCell<Vec<Option<String>>>,
}

impl Census {
    /// For a job of `n` endpoints.
    pub(super) fn new(n: usize) -> Census {
        Census {
            sent: RefCell::new(vec![0; n]),
            taken: RefCell::new(vec![0; n]),
            ends_seen: Cell::new(0),
            blocked: Cell::new(false),
            in_wait: Cell::new(false),
            stirred: Cell::new(false),
            calls: Cell::new(0),
            round: Cell::new(0),
            answers: RefCell::new(vec![None; n]),
            heard: RefCell::new(Heard::new(n)),
            next: Cell::new((None, FIRST_LOOK)),
            waiting: RefCell::new(String::new()),
            replies: RefCell::new(vec![None; n]),
        }
    }

    /// A frame of `kind` goes to `dst`.
    #[inline]
    pub(super) fn sending(&self, dst: usize, kind: Kind) {
        if !handled_here(kind) {
            if let Some(c) = self.sent.borrow_mut().get_mut(dst) {
                *c += 1;
            }
        }
    }

    /// A frame of `kind` came from `src`.
    #[inline]
    pub(super) fn took(&self, src: usize, kind: Kind) {
        if !handled_here(kind) {
            if let Some(c) = self.taken.borrow_mut().get_mut(src) {
                *c += 1;
            }
        }
    }

    /// What the engine published (`None`: its blocking call ended, so
    /// this endpoint is not blocked, a declaration that came in that call
    /// is stale, and the next round comes [`FIRST_LOOK`] after the next
    /// block).
    pub(super) fn set_waiting(&self, what: Option<&str>) {
        let mut w = self.waiting.borrow_mut();
        w.clear();
        if let Some(what) = what {
            w.push_str(what);
        } else {
            self.blocked.set(false);
            self.calls.set(self.calls.get() + 1);
            self.next.set((None, FIRST_LOOK));
        }
    }

    /// A send completed: not quiet until the engine has looked.
    #[inline]
    pub(super) fn stir(&self) {
        self.stirred.set(true);
    }

    /// Whether a send completed in this wait.
    #[inline]
    pub(super) fn stirred(&self) -> bool {
        self.stirred.get()
    }

    /// A wait begins: the engine has looked at everything before it.
    #[inline]
    pub(super) fn settle(&self) {
        self.stirred.set(false);
    }

    /// Whether a deadlock was declared in this blocking call.
    pub(super) fn declared(&self) -> bool {
        self.heard.borrow().declared_in(self.calls.get())
    }
}

impl MpiEndpoint {
    /// Peers that have ended (finished or failed), as this endpoint sees.
    fn ends(&self) -> usize {
        (0..self.n)
            .filter(|&j| j != self.me && self.peer_state(j) != PeerState::Alive)
            .count()
    }

    /// Before polling with no deadline: false when a peer ended since the
    /// engine last looked (return, so that it looks); else this endpoint
    /// is blocked (until its call ends).
    pub(super) fn block(&self) -> bool {
        let c = &self.census;
        let ends = self.ends();
        if c.ends_seen.get() != ends {
            c.blocked.set(false);
            c.ends_seen.set(ends);
            return false;
        }
        c.blocked.set(true);
        true
    }

    /// Mark the span of a wait with no deadline (answers are quiet only
    /// inside it).
    pub(super) fn in_wait(&self, on: bool) {
        self.census.in_wait.set(on);
    }

    /// This endpoint's state, as an answer says it.
    fn state(&self) -> State {
        let c = &self.census;
        let ends = self.ends();
        let quiet = c.blocked.get()
            && c.in_wait.get()
            && !c.stirred.get()
            && self.in_flight.borrow().is_empty()
            && c.ends_seen.get() == ends
            && self.queue.borrow().is_empty()
            && !self.user_ready()
            && !self.shared.aborted.load(Ordering::Acquire);
        let (mut sent, mut drained, mut ended) = (0, 0, Vec::new());
        let tally = self.u.tally.borrow();
        for j in 0..self.n {
            if j == self.me || self.peer_state(j) == PeerState::Alive {
                let (us, ug) = tally.counts(j);
                sent += c.sent.borrow()[j] + us;
                drained += c.taken.borrow()[j] + ug;
            } else {
                ended.push(j as u32);
            }
        }
        State {
            quiet,
            sent,
            drained,
            ended,
            waiting: c.waiting.borrow().clone(),
        }
    }

    /// A control frame of ours (`tag` and `id` as the kind says).
    fn ask(&self, dst: usize, kind: Kind, tag: u32, id: u64, body: &[u8]) {
        let mut f = self.control(kind, dst, id, body);
        f.header.tag = tag;
        // A peer gone is found by the caller's look at its state.
        let _ = self.send_to(dst, f);
    }

    /// Act on a question, an answer or news from `src` (from progress).
    pub(super) fn on_census(&self, src: usize, h: &Header, body: Vec<u8>) {
        let c = &self.census;
        match h.kind {
            Kind::WaitQuery => {
                let text = c.waiting.borrow().clone();
                self.ask(src, Kind::WaitReply, 0, 0, text.as_bytes());
            }
            Kind::WaitReply => {
                c.replies.borrow_mut()[src] = Some(String::from_utf8_lossy(&body).into_owned());
            }
            Kind::DeadlockQuery => {
                let bytes = self.state().encode();
                self.ask(src, Kind::DeadlockReply, 0, h.id, &bytes);
            }
            Kind::DeadlockReply => c.answers.borrow_mut()[src] = Some((h.id, body)),
            Kind::Deadlock => {
                let what = (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned());
                self.deadlock_news(h.tag as usize, h.id, what);
            }
            _ => {}
        }
    }

    /// `asker` found the job deadlocked in its round `round`: `what` every
    /// endpoint waits for, or `None` for a peer's notice of it. The first
    /// news of it is relayed to every other live peer at once.
    fn deadlock_news(&self, asker: usize, round: u64, what: Option<String>) {
        let c = &self.census;
        let new = c
            .heard
            .borrow_mut()
            .hear(asker, round, what, c.calls.get(), c.blocked.get());
        if new {
            for j in (0..self.n).filter(|&j| j != asker && j != self.me) {
                if self.peer_state(j) == PeerState::Alive {
                    self.ask(j, Kind::Deadlock, asker as u32, round, &[]);
                }
            }
            c.heard.borrow_mut().relayed(asker, round);
        }
    }

    /// The deadlock declared while this endpoint was blocked in this call,
    /// once: what every endpoint waits for (polling a little for the
    /// asker's account when a peer's notice came first).
    pub(super) fn deadlock_report(&self) -> Option<String> {
        let c = &self.census;
        if !c.declared() {
            return None;
        }
        let end = Instant::now() + ANSWER_WITHIN;
        loop {
            let asker = match c.heard.borrow_mut().report(c.calls.get()) {
                Report::None => return None,
                Report::Ready(text) => return Some(text),
                Report::Pending { asker } => asker,
            };
            if Instant::now() >= end || self.peer_state(asker) != PeerState::Alive {
                return Some(c.heard.borrow_mut().without_account(asker));
            }
            self.progress_frames();
            std::thread::yield_now();
        }
    }

    /// In a blocked wait: when this endpoint is the lowest alive and its
    /// time has come, ask the others; true when a deadlock is declared
    /// (ours to report now).
    pub(super) fn look_for_deadlock(&self) -> bool {
        let c = &self.census;
        if c.declared() {
            return true;
        }
        if (0..self.me).any(|j| self.peer_state(j) == PeerState::Alive) {
            return false;
        }
        let now = Instant::now();
        let (at, pause) = c.next.get();
        match at {
            None => {
                c.next.set((Some(now + pause), pause));
                return false;
            }
            Some(t) if now < t => return false,
            Some(_) => {}
        }
        let pause = (pause * 2).min(MAX_PAUSE);
        let declared = census_twice(self);
        c.next.set((Some(Instant::now() + pause), pause));
        declared
    }

    /// What every other endpoint is waiting for, asked of them: a
    /// [`Kind::WaitQuery`] to every live peer, answered from its polling
    /// (a peer outside the library does not answer within a second, and
    /// is said not to).
    pub(super) fn waits_of_others(&self) -> String {
        let c = &self.census;
        let asked: Vec<usize> = (0..self.n)
            .filter(|&j| j != self.me && self.peer_state(j) == PeerState::Alive)
            .collect();
        c.replies.borrow_mut().iter_mut().for_each(|r| *r = None);
        for &j in &asked {
            self.ask(j, Kind::WaitQuery, 0, 0, &[]);
        }
        let end = Instant::now() + ANSWER_WITHIN;
        while Instant::now() < end
            && asked
                .iter()
                .any(|&j| c.replies.borrow()[j].is_none() && self.peer_state(j) == PeerState::Alive)
        {
            self.progress_frames();
            std::thread::yield_now();
        }
        waits_text(self.me, &c.replies.borrow(), |i| self.peer_state(i))
    }
}

impl Asker for MpiEndpoint {
    fn me(&self) -> usize {
        self.me
    }

    fn state_of(&self, i: usize) -> PeerState {
        self.peer_state(i)
    }

    fn tell(&self, j: usize, round: u64, what: &str) {
        self.ask(j, Kind::Deadlock, self.me as u32, round, what.as_bytes());
    }

    fn declare(&self, round: u64, what: String) {
        let c = &self.census;
        c.heard
            .borrow_mut()
            .declare(self.me, round, c.calls.get(), what);
    }

    /// One round (an answer not back in time, or something that came for
    /// us meanwhile, spoils it).
    fn census_round(&self) -> Option<(u64, Vec<State>)> {
        let c = &self.census;
        let round = c.round.get() + 1;
        c.round.set(round);
        let mine = self.state();
        let asked: Vec<usize> = (0..self.n)
            .filter(|&j| j != self.me && !mine.ended.contains(&(j as u32)))
            .collect();
        for &j in &asked {
            self.ask(j, Kind::DeadlockQuery, 0, round, &[]);
        }
        let end = Instant::now() + ANSWER_WITHIN;
        let mut states: Vec<Option<State>> = vec![None; self.n];
        loop {
            self.progress_frames();
            if collect(&mut states, &asked, &c.answers.borrow(), round)? {
                break;
            }
            // Something for us (a user message too: a peer that was busy
            // may have sent instead of answering) ends the round at once.
            if self.user_waiting() || self.state() != mine || Instant::now() >= end {
                return None;
            }
            std::thread::yield_now();
        }
        // Our own state last: we were blocked throughout if it is unchanged.
        if self.state() != mine {
            return None;
        }
        Some((round, gather(states, self.me, mine)?))
    }
}
