//! Deadlock detection over TCP: the double collect of
//! `transport/deadlock.rs`, done with questions and answers, since the
//! endpoints cannot see each other's state.
//!
//! * **Counts.** Each endpoint counts, per peer, the frames it hands to the
//!   connection (`sent`, counted before the write) and the frames its
//!   engine takes from its queue (`drained`, per source). For a pair,
//!   drained never exceeds sent, and they are equal when nothing is in
//!   flight between the two. The frames the transport handles itself
//!   (goodbyes, aborts, questions and answers: [`handled_here`]) are not
//!   counted.
//! * **Quiet.** An endpoint is quiet while it is in a blocking call that
//!   has blocked with no deadline (from its first `wait(None)` to the
//!   call's end), its engine has looked at every end of a peer it knows of
//!   (a wait that finds a new end returns at once instead of blocking, as
//!   on threads), and nothing waits in its queue. Frames of a peer that
//!   ended were all queued before its end was seen (FIFO per connection),
//!   so a quiet endpoint has taken them all.
//! * **Asking.** The lowest endpoint alive in its own view, once blocked
//!   for [`FIRST_LOOK`], asks every live peer ([`Kind::DeadlockQuery`])
//!   twice. The peer's reader thread answers ([`Kind::DeadlockReply`])
//!   without waking its engine: whether it is quiet, which endpoints have
//!   ended, its frames sent to and taken from the endpoints still alive
//!   (itself included), and what it waits for.
//! * **Deciding.** When both rounds find every endpoint quiet, with the
//!   same ended endpoints everywhere and the same answers in both rounds,
//!   and the counts add up (sent = drained over the job), then at any
//!   moment between the rounds (after the last answer of the first, before
//!   the first of the second) every live endpoint was blocked and nothing
//!   was in flight: counts only grow, so equal answers mean nothing sent
//!   or taken in between; drained ≤ sent per pair, so equal sums mean
//!   equal pairs. Blocked endpoints with nothing in flight never move
//!   again.
//! * **Telling.** The asker sends every live peer [`Kind::Deadlock`] with
//!   what every endpoint waits for (`tag`: the asker, `id`: its round),
//!   and each reports it once, from the blocked call it was in
//!   ([`crate::transport::Transport::deadlock`]). A peer that hears of it
//!   first relays a notice (the same frame, empty) to every other peer
//!   before its engine can learn of it: a rank that sees that peer end
//!   afterwards (it reported the deadlock and finished) has heard of the
//!   deadlock first (FIFO per connection), and reports it rather than the
//!   end; its text from the asker is on its way. The engine reports it
//!   only once it is relayed and its text is here. A declaration counts for
//!   the call it arrived in only: a call that ends without reporting it (a
//!   peer that reported it went on and sent) drops it.
//!
//! A round that goes wrong (an answer not back within [`ANSWER_WITHIN`],
//! a frame arriving for the asker, an abort, an end) is abandoned, and
//! the next comes after a longer pause, up to [`MAX_PAUSE`]: a rank
//! blocked while the others compute asks twice a second at most.
//!
//! Not done yet: a job whose lowest live endpoint waits with a deadline
//! (a timeout) is not looked at, even if all the others block without one.

use super::liveness::control;
use super::{lock, Shared, TcpEndpoint, ALIVE};
pub(super) use crate::transport::census::handled_here;
use crate::transport::census::{
    census_twice, collect, gather, Answer, Asker, Heard, Report, State, ANSWER_WITHIN, FIRST_LOOK,
    MAX_PAUSE,
};
use crate::transport::{PeerState, Transport};
use crate::wire::Kind;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One endpoint's part in deadlock detection (in [`Shared`]).
pub(super) struct Census {
    /// Frames handed to each endpoint (ourselves included).
    sent: Vec<AtomicU64>,
    /// Frames taken from each endpoint's connection (or our own queue).
    drained: Vec<AtomicU64>,
    /// Peers ended (finished or failed) so far.
    pub(super) ends: AtomicU64,
    /// The count of ends this endpoint's engine has looked at.
    ends_seen: AtomicU64,
    /// In a blocking call that blocked with no deadline.
    blocked: AtomicBool,
    /// The answers to our last round, per endpoint.
    answers: Mutex<Vec<Option<Answer>>>,
    /// Blocking calls ended so far (a declaration counts for its call).
    calls: AtomicU64,
    /// What we heard of deadlocks.
    heard: Mutex<Heard>,
    /// Our last round's number.
    round: AtomicU64,
    /// When to ask next (`None`: not blocked yet), and the pause after.
    next: Mutex<(Option<Instant>, Duration)>,
}

impl Census {
    pub(super) fn new(n: usize) -> Census {
        Census {
            sent: (0..n).map(|_| AtomicU64::new(0)).collect(),
            drained: (0..n).map(|_| AtomicU64::new(0)).collect(),
            ends: AtomicU64::new(0),
            ends_seen: AtomicU64::new(0),
            blocked: AtomicBool::new(false),
            answers: Mutex::new(vec![None; n]),
            calls: AtomicU64::new(0),
            heard: Mutex::new(Heard::new(n)),
            round: AtomicU64::new(0),
            next: Mutex::new((None, FIRST_LOOK)),
        }
    }

    /// A frame of a counted kind is about to go to `dst`.
    #[inline]
    pub(super) fn sending(&self, dst: usize) {
        if let Some(c) = self.sent.get(dst) {
            c.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The engine took a frame from `src`.
    #[inline]
    pub(super) fn took(&self, src: usize) {
        if let Some(c) = self.drained.get(src) {
            c.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Shared {
    /// This endpoint's state, as an answer says it.
    fn state(&self) -> State {
        let c = &self.census;
        let ends = c.ends.load(Ordering::SeqCst);
        let quiet = c.blocked.load(Ordering::SeqCst)
            && c.ends_seen.load(Ordering::SeqCst) == ends
            && self.queued.load(Ordering::SeqCst) == 0
            && !self.abort_flag.load(Ordering::SeqCst);
        let live = |j: usize| j == self.me || self.peers[j].state.load(Ordering::SeqCst) == ALIVE;
        let (mut sent, mut drained, mut ended) = (0, 0, Vec::new());
        for j in 0..self.peers.len() {
            if live(j) {
                sent += c.sent[j].load(Ordering::SeqCst);
                drained += c.drained[j].load(Ordering::SeqCst);
            } else {
                ended.push(j as u32);
            }
        }
        State {
            // An end seen while we looked: the next round will tell.
            quiet: quiet && ended.len() as u64 == ends,
            sent,
            drained,
            ended,
            waiting: lock(&self.waiting).clone(),
        }
    }

    /// Answer a peer's [`Kind::DeadlockQuery`] of round `round` (on its
    /// reader thread, without waking the engine).
    pub(super) fn answer_census(&self, peer: usize, round: u64) {
        let Some(Some(w)) = self.writers.get().and_then(|w| w.get(peer)) else {
            return;
        };
        let bytes = self.state().encode();
        let f = control(self.me, peer, Kind::DeadlockReply, 0, round, bytes);
        let _ = super::framing::write_frame(&mut *lock(w), f);
    }

    /// A peer's answer to our round `round`.
    pub(super) fn census_answer(&self, peer: usize, round: u64, bytes: Vec<u8>) {
        if let Some(a) = lock(&self.census.answers).get_mut(peer) {
            *a = Some((round, bytes));
        }
        self.wake();
    }

    /// `asker` found the job deadlocked in its round `round`: `what` every
    /// endpoint waits for, or `None` for a peer's notice of it. The first
    /// news of it is relayed to every other peer before anything else.
    pub(super) fn deadlock_news(&self, asker: usize, round: u64, what: Option<String>) {
        let c = &self.census;
        // The call first: a call that ends meanwhile, and the next that
        // blocks, do not take it for theirs.
        let new = {
            let call = c.calls.load(Ordering::SeqCst);
            let blocked = c.blocked.load(Ordering::SeqCst);
            lock(&c.heard).hear(asker, round, what, call, blocked)
        };
        if new {
            if let Some(writers) = self.writers.get() {
                for (j, w) in writers.iter().enumerate() {
                    let Some(w) = w else { continue };
                    if j == asker || self.peers[j].state.load(Ordering::SeqCst) != ALIVE {
                        continue;
                    }
                    let f = control(self.me, j, Kind::Deadlock, asker as u32, round, Vec::new());
                    let _ = super::framing::write_frame(&mut *lock(w), f);
                }
            }
            lock(&c.heard).relayed(asker, round);
        }
        self.wake();
    }
}

impl TcpEndpoint {
    /// Before a wait with no deadline: false when a peer ended since the
    /// engine last looked (return, so that it looks: not blocked until its
    /// next wait); else this endpoint is blocked (until its call ends).
    pub(super) fn block(&self) -> bool {
        let c = &self.shared.census;
        let ends = c.ends.load(Ordering::SeqCst);
        if c.ends_seen.load(Ordering::SeqCst) != ends {
            c.blocked.store(false, Ordering::SeqCst);
            c.ends_seen.store(ends, Ordering::SeqCst);
            return false;
        }
        c.blocked.store(true, Ordering::SeqCst);
        true
    }

    /// A blocking call ended: not blocked, a declaration that came in it
    /// is stale, and the next round comes [`FIRST_LOOK`] after the next
    /// block.
    pub(super) fn unblock(&self) {
        let c = &self.shared.census;
        c.blocked.store(false, Ordering::SeqCst);
        c.calls.fetch_add(1, Ordering::SeqCst);
        *lock(&c.next) = (None, FIRST_LOOK);
    }

    /// Whether a deadlock was declared in this blocked call.
    fn declared(&self) -> bool {
        let c = &self.shared.census;
        let call = c.calls.load(Ordering::SeqCst);
        lock(&c.heard).declared_in(call)
    }

    /// The deadlock declared while this endpoint was blocked in this call,
    /// once: what every endpoint waits for (waiting a little for the
    /// asker's account when a peer's notice came first, and for the relay
    /// to the peers to be written). Also after a peer's end made its last
    /// wait return unblocked: that peer may have ended after reporting the
    /// deadlock.
    pub(super) fn deadlock_report(&self) -> Option<String> {
        let c = &self.shared.census;
        if !self.declared() {
            return None;
        }
        let end = Instant::now() + ANSWER_WITHIN;
        loop {
            let call = c.calls.load(Ordering::SeqCst);
            let asker = match lock(&c.heard).report(call) {
                Report::None => return None,
                Report::Ready(text) => return Some(text),
                Report::Pending { asker } => asker,
            };
            if Instant::now() >= end || self.peer_state(asker) != PeerState::Alive {
                return Some(lock(&c.heard).without_account(asker));
            }
            std::thread::park_timeout(Duration::from_millis(5));
        }
    }

    /// In a blocked wait: when this endpoint is the lowest alive and its
    /// time has come, ask the others; true when a deadlock is declared
    /// (ours to report now).
    pub(super) fn look_for_deadlock(&self) -> bool {
        let sh = &self.shared;
        if self.declared() {
            return true;
        }
        let lowest = (0..self.me).all(|j| sh.peers[j].state.load(Ordering::SeqCst) != ALIVE);
        if !lowest {
            return false;
        }
        let now = Instant::now();
        {
            let mut next = lock(&sh.census.next);
            let (at, pause) = &mut *next;
            match at {
                None => {
                    *at = Some(now + *pause);
                    return false;
                }
                Some(t) if now < *t => return false,
                Some(_) => {
                    *pause = (*pause * 2).min(MAX_PAUSE);
                }
            }
        }
        let declared = census_twice(self);
        let mut next = lock(&sh.census.next);
        next.0 = Some(Instant::now() + next.1);
        declared
    }
}

impl Asker for TcpEndpoint {
    fn me(&self) -> usize {
        self.me
    }

    fn state_of(&self, i: usize) -> PeerState {
        self.peer_state(i)
    }

    fn tell(&self, j: usize, round: u64, what: &str) {
        let what = what.as_bytes().to_vec();
        self.send_to(
            j,
            control(self.me, j, Kind::Deadlock, self.me as u32, round, what),
        );
    }

    fn declare(&self, round: u64, what: String) {
        let c = &self.shared.census;
        let call = c.calls.load(Ordering::SeqCst);
        lock(&c.heard).declare(self.me, round, call, what);
    }

    /// One round (an answer not back in time, a frame arriving for us, an
    /// abort, an end spoil it).
    fn census_round(&self) -> Option<(u64, Vec<State>)> {
        let sh = &self.shared;
        let c = &sh.census;
        let round = c.round.fetch_add(1, Ordering::SeqCst) + 1;
        let mine = sh.state();
        let asked: Vec<usize> = (0..self.n)
            .filter(|&j| j != self.me && !mine.ended.contains(&(j as u32)))
            .collect();
        for &j in &asked {
            self.send_to(
                j,
                control(self.me, j, Kind::DeadlockQuery, 0, round, Vec::new()),
            );
        }
        let end = Instant::now() + ANSWER_WITHIN;
        let mut states: Vec<Option<State>> = vec![None; self.n];
        loop {
            if collect(&mut states, &asked, &lock(&c.answers), round)? {
                break;
            }
            let moved = sh.queued.load(Ordering::SeqCst) > 0
                || sh.abort_flag.load(Ordering::SeqCst)
                || c.ends.load(Ordering::SeqCst) != mine.ended.len() as u64;
            if moved || Instant::now() >= end {
                return None;
            }
            std::thread::park_timeout(Duration::from_millis(5));
        }
        // Our own state last: we were blocked throughout if it is unchanged.
        if sh.state() != mine {
            return None;
        }
        Some((round, gather(states, self.me, mine)?))
    }
}
