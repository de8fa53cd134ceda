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

use super::liveness::{control, ANSWER_WITHIN};
use super::{lock, Shared, TcpEndpoint, ALIVE};
use crate::transport::{PeerState, Transport};
use crate::wire::Kind;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the asker is blocked before it first asks.
pub(super) const FIRST_LOOK: Duration = Duration::from_millis(50);
/// The longest pause between two rounds of questions.
const MAX_PAUSE: Duration = Duration::from_millis(500);

/// Frames the transport handles itself: never queued for the engine, not
/// counted for deadlock detection.
pub(super) fn handled_here(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Goodbye
            | Kind::Abort
            | Kind::WaitQuery
            | Kind::WaitReply
            | Kind::DeadlockQuery
            | Kind::DeadlockReply
            | Kind::Deadlock
    )
}

/// What an endpoint says of itself when asked.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    quiet: bool,
    /// Frames handed to the endpoints alive in its view (itself included).
    sent: u64,
    /// Frames taken from them.
    drained: u64,
    /// The endpoints that have ended, in its view, ascending.
    ended: Vec<u32>,
    /// What it waits for.
    waiting: String,
}

impl State {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(21 + 4 * self.ended.len() + self.waiting.len());
        b.push(self.quiet as u8);
        b.extend_from_slice(&self.sent.to_le_bytes());
        b.extend_from_slice(&self.drained.to_le_bytes());
        b.extend_from_slice(&(self.ended.len() as u32).to_le_bytes());
        for e in &self.ended {
            b.extend_from_slice(&e.to_le_bytes());
        }
        b.extend_from_slice(self.waiting.as_bytes());
        b
    }

    /// `None` for bytes that are not an encoded state.
    fn decode(b: &[u8]) -> Option<State> {
        let (&quiet, b) = b.split_first()?;
        let u64_at = |b: &[u8], i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
        };
        let u32_at = |b: &[u8], i: usize| -> Option<u32> {
            Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
        };
        let sent = u64_at(b, 0)?;
        let drained = u64_at(b, 8)?;
        let k = u32_at(b, 16)? as usize;
        let ended = (0..k)
            .map(|i| u32_at(b, 20 + 4 * i))
            .collect::<Option<Vec<u32>>>()?;
        let rest = b.get(20 + 4 * k..)?;
        Some(State {
            quiet: quiet == 1,
            sent,
            drained,
            ended,
            waiting: String::from_utf8_lossy(rest).into_owned(),
        })
    }
}

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
            heard: Mutex::new(Heard {
                known: vec![0; n],
                declared: None,
            }),
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

/// A peer's answer: the round it answers, and its encoded [`State`].
type Answer = (u64, Vec<u8>);

/// What an endpoint heard of deadlocks.
struct Heard {
    /// Per asker, the last round it declared a deadlock in that we know of.
    known: Vec<u64>,
    /// A deadlock declared, not yet reported.
    declared: Option<Declared>,
}

/// A deadlock this endpoint heard of.
struct Declared {
    /// The blocking call it was in ([`Census::calls`]).
    call: u64,
    /// Who found it, and in which round.
    asker: usize,
    round: u64,
    /// What every endpoint waits for, once the asker's account is here.
    text: Option<String>,
    /// Whether every peer has been told (so that this endpoint may end).
    relayed: bool,
}

/// Whether two rounds of answers (every endpoint's state, in order) show
/// a deadlock: the same answers twice, every endpoint quiet, everyone
/// agreeing on who ended, and as many frames taken as sent.
fn deadlocked(first: &[State], second: &[State]) -> bool {
    let Some(one) = second.first() else {
        return false;
    };
    let sent: u64 = second.iter().map(|s| s.sent).sum();
    let drained: u64 = second.iter().map(|s| s.drained).sum();
    first == second && second.iter().all(|s| s.quiet && s.ended == one.ended) && sent == drained
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
        let new = {
            let mut h = lock(&c.heard);
            let h = &mut *h;
            match h.known.get_mut(asker) {
                Some(k) if *k < round => {
                    *k = round;
                    // The call first: a call that ends meanwhile, and the
                    // next that blocks, do not take it for theirs.
                    let call = c.calls.load(Ordering::SeqCst);
                    if c.blocked.load(Ordering::SeqCst) {
                        h.declared = Some(Declared {
                            call,
                            asker,
                            round,
                            text: what,
                            relayed: false,
                        });
                    }
                    true
                }
                Some(_) => {
                    let same = |d: &&mut Declared| d.asker == asker && d.round == round;
                    if let (Some(d), Some(t)) = (h.declared.as_mut().filter(same), what) {
                        d.text.get_or_insert(t);
                    }
                    false
                }
                None => return,
            }
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
            let mut h = lock(&c.heard);
            if let Some(d) = h.declared.as_mut() {
                if d.asker == asker && d.round == round {
                    d.relayed = true;
                }
            }
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
        lock(&c.heard)
            .declared
            .as_ref()
            .is_some_and(|d| d.call == call)
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
            let asker = {
                let mut h = lock(&c.heard);
                let d = h.declared.as_ref()?;
                if d.relayed && d.text.is_some() {
                    return h.declared.take()?.text;
                }
                d.asker
            };
            if Instant::now() >= end || self.peer_state(asker) != PeerState::Alive {
                lock(&c.heard).declared.take();
                return Some(format!(
                    "; endpoint {asker} found it, but its account of what every endpoint waits for did not arrive"
                ));
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
        let declared = self.census_twice();
        let mut next = lock(&sh.census.next);
        next.0 = Some(Instant::now() + next.1);
        declared
    }

    /// Two rounds of questions; on a deadlock, tell everyone.
    fn census_twice(&self) -> bool {
        let Some(first) = self.census_round() else {
            return false;
        };
        if !deadlocked(&first, &first) {
            return false; // no need for a second round
        }
        let Some(second) = self.census_round() else {
            return false;
        };
        if !deadlocked(&first, &second) {
            return false;
        }
        let ended = &second[self.me].ended;
        let mut what = String::new();
        for (i, s) in second.iter().enumerate() {
            let st = if ended.contains(&(i as u32)) {
                match self.peer_state(i) {
                    PeerState::Failed(m) => format!("failed ({m})"),
                    _ => "finished".to_string(),
                }
            } else if s.waiting.is_empty() {
                "running".to_string()
            } else {
                s.waiting.clone()
            };
            what.push_str(&format!("; endpoint {i}: {st}"));
        }
        let c = &self.shared.census;
        let round = c.round.load(Ordering::SeqCst);
        lock(&c.heard).known[self.me] = round;
        for j in (0..self.n).filter(|&j| j != self.me && !ended.contains(&(j as u32))) {
            let me = self.me as u32;
            let f = control(
                self.me,
                j,
                Kind::Deadlock,
                me,
                round,
                what.clone().into_bytes(),
            );
            self.send_to(j, f);
        }
        lock(&c.heard).declared = Some(Declared {
            call: c.calls.load(Ordering::SeqCst),
            asker: self.me,
            round,
            text: Some(what),
            relayed: true,
        });
        true
    }

    /// One round: every endpoint's state (ours included, the ended ones
    /// as we know them), or `None` when the round went wrong.
    fn census_round(&self) -> Option<Vec<State>> {
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
            {
                let answers = lock(&c.answers);
                for &j in &asked {
                    if states[j].is_none() {
                        if let Some((r, b)) = &answers[j] {
                            if *r == round {
                                states[j] = Some(State::decode(b)?);
                            }
                        }
                    }
                }
            }
            if asked.iter().all(|&j| states[j].is_some()) {
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
        let now = sh.state();
        if now != mine {
            return None;
        }
        states[self.me] = Some(now);
        (0..self.n)
            .map(|i| {
                states[i].take().or_else(|| {
                    mine.ended.contains(&(i as u32)).then(|| State {
                        quiet: true,
                        sent: 0,
                        drained: 0,
                        ended: mine.ended.clone(),
                        waiting: String::new(),
                    })
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(sent: u64, drained: u64) -> State {
        State {
            quiet: true,
            sent,
            drained,
            ended: vec![],
            waiting: "in recv".into(),
        }
    }

    #[test]
    fn blocked_everywhere_with_nothing_in_flight_twice_is_a_deadlock() {
        let job = vec![quiet(2, 1), quiet(0, 1), quiet(1, 1)];
        assert!(deadlocked(&job, &job));
        // A frame in flight (sent, not yet taken).
        let flying = vec![quiet(2, 1), quiet(0, 0), quiet(1, 1)];
        assert!(!deadlocked(&flying, &flying));
        // One endpoint running.
        let mut running = job.clone();
        running[1].quiet = false;
        assert!(!deadlocked(&running, &running));
        // One endpoint moved between the rounds (took a frame, sent one):
        // the sums still agree, the answers do not.
        let moved = vec![quiet(2, 1), quiet(1, 2), quiet(1, 1)];
        assert!(deadlocked(&moved, &moved));
        assert!(!deadlocked(&job, &moved));
        // Endpoints that disagree on who ended.
        let mut ended = job.clone();
        ended[2].ended = vec![3];
        assert!(!deadlocked(&ended, &ended));
        for s in &mut ended {
            s.ended = vec![3];
        }
        assert!(deadlocked(&ended, &ended));
        assert!(!deadlocked(&[], &[]));
    }

    #[test]
    fn a_state_survives_its_encoding_and_short_bytes_are_refused() {
        let s = State {
            quiet: true,
            sent: 7,
            drained: 1 << 40,
            ended: vec![2, 9],
            waiting: "rank 1 is in recv, waiting for ümlauts".into(),
        };
        let b = s.encode();
        assert_eq!(State::decode(&b), Some(s.clone()));
        for cut in [0, 1, 9, 17, 21, 24] {
            assert_eq!(State::decode(&b[..cut]), None, "cut at {cut}");
        }
        let empty = State {
            quiet: false,
            ended: vec![],
            waiting: String::new(),
            ..s
        };
        assert_eq!(State::decode(&empty.encode()), Some(empty));
    }
}
