//! What TCP and MPI share of asking the other endpoints: what they wait
//! for (a timeout's message) and whether the whole job is deadlocked.
//! Their endpoints cannot read each other's state, as threads and shared
//! memory do (`deadlock.rs`), so they ask: a question frame to every live
//! peer, answered by the peer's transport (TCP's reader thread, MPI's
//! progress), and a decision over the answers.
//!
//! * [`State`]: what an endpoint says of itself when asked whether it is
//!   blocked (quiet, its counts of frames sent and taken, who ended, what
//!   it waits for), and [`deadlocked`], the decision over two rounds of
//!   such answers (a double collect).
//! * [`Heard`]: what an endpoint heard of declared deadlocks, so that each
//!   is reported once, in the blocking call it arrived in, and relayed
//!   once.
//! * [`account`] and [`endpoint_line`]: the text that tells what every
//!   endpoint waits for.
//!
//! The transports keep their own counting, asking and telling (they differ
//! in threads: TCP answers on reader threads, MPI from the blocked
//! endpoint's own polling).

use super::PeerState;
use crate::wire::Kind;
use std::time::Duration;

/// How long a question to the peers (what they wait for, whether they
/// are blocked) waits for their answers.
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_secs(1);
/// How long the asker is blocked before it first asks.
pub(crate) const FIRST_LOOK: Duration = Duration::from_millis(50);
/// The longest pause between two rounds of questions.
pub(crate) const MAX_PAUSE: Duration = Duration::from_millis(500);

/// Frames the transports handle themselves: never queued for the engine,
/// not counted for deadlock detection.
pub(crate) fn handled_here(kind: Kind) -> bool {
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
pub(crate) struct State {
    /// Blocked with nothing to take: in a blocking call with no deadline,
    /// every end of a peer looked at, nothing waiting to be taken.
    pub(crate) quiet: bool,
    /// Frames handed to the endpoints alive in its view (itself included).
    pub(crate) sent: u64,
    /// Frames taken from them.
    pub(crate) drained: u64,
    /// The endpoints that have ended, in its view, ascending.
    pub(crate) ended: Vec<u32>,
    /// What it waits for.
    pub(crate) waiting: String,
}

impl State {
    /// The state of an endpoint that has ended, as an asker fills it in.
    pub(crate) fn gone(ended: &[u32]) -> State {
        State {
            quiet: true,
            sent: 0,
            drained: 0,
            ended: ended.to_vec(),
            waiting: String::new(),
        }
    }

    /// The bytes of an answer.
    pub(crate) fn encode(&self) -> Vec<u8> {
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
    pub(crate) fn decode(b: &[u8]) -> Option<State> {
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

/// Whether two rounds of answers (every endpoint's state, in order) show
/// a deadlock: the same answers twice, every endpoint quiet, everyone
/// agreeing on who ended, and as many frames taken as sent.
///
/// When both rounds find it so, then at any moment between the rounds
/// (after the last answer of the first, before the first of the second)
/// every live endpoint was blocked and nothing was in flight: counts only
/// grow, so equal answers mean nothing sent or taken in between; taken ≤
/// sent per pair, so equal sums mean equal pairs. Blocked endpoints with
/// nothing in flight never move again.
pub(crate) fn deadlocked(first: &[State], second: &[State]) -> bool {
    let Some(one) = second.first() else {
        return false;
    };
    let sent: u64 = second.iter().map(|s| s.sent).sum();
    let drained: u64 = second.iter().map(|s| s.drained).sum();
    first == second && second.iter().all(|s| s.quiet && s.ended == one.ended) && sent == drained
}

/// An endpoint that asks its peers whether the job is deadlocked (TCP,
/// MPI): what [`census_twice`] needs of it.
pub(crate) trait Asker {
    /// This endpoint.
    fn me(&self) -> usize;
    /// What this endpoint knows of endpoint `i`.
    fn state_of(&self, i: usize) -> PeerState;
    /// One round of questions: every endpoint's state (ours included, the
    /// ended ones as [`gather`] fills them in), or `None` when the round
    /// went wrong; returns with the round's number.
    fn census_round(&self) -> Option<(u64, Vec<State>)>;
    /// Tell live peer `j` of the deadlock found in `round`: `what` every
    /// endpoint waits for.
    fn tell(&self, j: usize, round: u64, what: &str);
    /// Keep our own declaration of `round`, for our report.
    fn declare(&self, round: u64, what: String);
}

/// Two rounds of questions; on a deadlock, tell every live peer and keep
/// the declaration. True when one was declared.
pub(crate) fn census_twice(a: &impl Asker) -> bool {
    let Some((_, first)) = a.census_round() else {
        return false;
    };
    if !deadlocked(&first, &first) {
        return false; // no need for a second round
    }
    let Some((round, second)) = a.census_round() else {
        return false;
    };
    if !deadlocked(&first, &second) {
        return false;
    }
    let me = a.me();
    let ended = &second[me].ended;
    let what = account(&second, ended, |i| a.state_of(i));
    for j in (0..second.len()).filter(|&j| j != me && !ended.contains(&(j as u32))) {
        a.tell(j, round, &what);
    }
    a.declare(round, what);
    true
}

/// A peer's answer: the round it answers, and its encoded [`State`].
pub(crate) type Answer = (u64, Vec<u8>);

/// Take the answers to `round` of the `asked` peers that came into
/// `states`: whether all are in (`None`: one is not a state).
pub(crate) fn collect(
    states: &mut [Option<State>],
    asked: &[usize],
    answers: &[Option<Answer>],
    round: u64,
) -> Option<bool> {
    for &j in asked {
        if states[j].is_none() {
            if let Some((r, b)) = &answers[j] {
                if *r == round {
                    states[j] = Some(State::decode(b)?);
                }
            }
        }
    }
    Some(asked.iter().all(|&j| states[j].is_some()))
}

/// A round's states in order: the peers' answers, ours (`mine`) at `me`,
/// an ended endpoint as [`State::gone`]; `None` if one is missing.
pub(crate) fn gather(
    mut answers: Vec<Option<State>>,
    me: usize,
    mine: State,
) -> Option<Vec<State>> {
    let ended = mine.ended.clone();
    answers[me] = Some(mine);
    answers
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.or_else(|| ended.contains(&(i as u32)).then(|| State::gone(&ended))))
        .collect()
}

/// The text of a timeout's question: `"; endpoint {i}: {what}"` for every
/// endpoint but `me`, from `state_of` and the `answers` that came.
pub(crate) fn waits_text(
    me: usize,
    answers: &[Option<String>],
    state_of: impl Fn(usize) -> PeerState,
) -> String {
    (0..answers.len())
        .filter(|&i| i != me)
        .map(|i| endpoint_line(i, &state_of(i), answers[i].as_deref()))
        .collect()
}

/// One endpoint's part of a waits text: `"; endpoint {i}: {what}"`, where
/// what is its end (from `state`), its answer (empty: running), or that it
/// did not answer.
pub(crate) fn endpoint_line(i: usize, state: &PeerState, answer: Option<&str>) -> String {
    let st = match state {
        PeerState::Finished => "finished".to_string(),
        PeerState::Failed(m) => format!("failed ({m})"),
        PeerState::Alive => match answer {
            Some("") => "running".to_string(),
            Some(w) => w.to_string(),
            None => format!("no answer within {} s", ANSWER_WITHIN.as_secs()),
        },
    };
    format!("; endpoint {i}: {st}")
}

/// What every endpoint waits for, from a deadlocked round's `states` (one
/// per endpoint); an ended one as `state_of` says.
pub(crate) fn account(
    states: &[State],
    ended: &[u32],
    state_of: impl Fn(usize) -> PeerState,
) -> String {
    let mut what = String::new();
    for (i, s) in states.iter().enumerate() {
        let st = if ended.contains(&(i as u32)) {
            match state_of(i) {
                PeerState::Failed(m) => PeerState::Failed(m),
                _ => PeerState::Finished,
            }
        } else {
            PeerState::Alive
        };
        what.push_str(&endpoint_line(i, &st, Some(&s.waiting)));
    }
    what
}

/// What an endpoint heard of declared deadlocks.
pub(crate) struct Heard {
    /// Per asker, the last round it declared a deadlock in that we know of.
    known: Vec<u64>,
    /// A deadlock declared, not yet reported.
    declared: Option<Declared>,
}

/// A deadlock an endpoint heard of.
struct Declared {
    /// The blocking call it was in (the transport's count of calls).
    call: u64,
    /// Who found it, and in which round.
    asker: usize,
    round: u64,
    /// What every endpoint waits for, once the asker's account is here.
    text: Option<String>,
    /// Whether every peer has been told (so that this endpoint may end).
    relayed: bool,
}

/// What [`Heard::report`] finds.
pub(crate) enum Report {
    /// No deadlock declared in this call.
    None,
    /// One was, but its account or relay is still to come (from `asker`).
    Pending { asker: usize },
    /// One was: what every endpoint waits for (reported once).
    Ready(String),
}

impl Heard {
    /// For a job of `n` endpoints.
    pub(crate) fn new(n: usize) -> Heard {
        Heard {
            known: vec![0; n],
            declared: None,
        }
    }

    /// We (the asker) declared a deadlock in `round` of `call`, with
    /// `what` every endpoint waits for.
    pub(crate) fn declare(&mut self, me: usize, round: u64, call: u64, what: String) {
        if let Some(k) = self.known.get_mut(me) {
            *k = round;
        }
        self.declared = Some(Declared {
            call,
            asker: me,
            round,
            text: Some(what),
            relayed: true,
        });
    }

    /// `asker` declared a deadlock in its `round`; `what` is its account
    /// (`None`: a peer's notice of it). We are in blocking call `call`,
    /// blocked or not. True when this is the first news of it: relay it,
    /// then say so ([`Heard::relayed`]).
    pub(crate) fn hear(
        &mut self,
        asker: usize,
        round: u64,
        what: Option<String>,
        call: u64,
        blocked: bool,
    ) -> bool {
        match self.known.get_mut(asker) {
            Some(k) if *k < round => {
                *k = round;
                if blocked {
                    self.declared = Some(Declared {
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
                if let (Some(d), Some(t)) = (self.declared.as_mut().filter(same), what) {
                    d.text.get_or_insert(t);
                }
                false
            }
            None => false,
        }
    }

    /// Every peer has been told of `asker`'s `round`.
    pub(crate) fn relayed(&mut self, asker: usize, round: u64) {
        if let Some(d) = self.declared.as_mut() {
            if d.asker == asker && d.round == round {
                d.relayed = true;
            }
        }
    }

    /// Whether a deadlock was declared in blocking call `call`.
    pub(crate) fn declared_in(&self, call: u64) -> bool {
        self.declared.as_ref().is_some_and(|d| d.call == call)
    }

    /// The deadlock declared in blocking call `call`, if any: ready (and
    /// then taken) once relayed with its account here.
    pub(crate) fn report(&mut self, call: u64) -> Report {
        match &self.declared {
            Some(d) if d.call == call => {
                if d.relayed && d.text.is_some() {
                    let text = self.declared.take().and_then(|d| d.text);
                    Report::Ready(text.unwrap_or_default())
                } else {
                    Report::Pending { asker: d.asker }
                }
            }
            _ => Report::None,
        }
    }

    /// The account of the deadlock `asker` declared did not come: report
    /// it without (taken).
    pub(crate) fn without_account(&mut self, asker: usize) -> String {
        self.declared.take();
        format!(
            "; endpoint {asker} found it, but its account of what every endpoint waits for did not arrive"
        )
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

    #[test]
    fn a_declaration_is_reported_once_in_its_call_after_its_relay_and_account() {
        let mut h = Heard::new(3);
        // A notice from peer 1 of endpoint 0's round 4, while blocked in
        // call 7: first news (relay it), pending until relayed and told.
        assert!(h.hear(0, 4, None, 7, true));
        assert!(h.declared_in(7) && !h.declared_in(8));
        assert!(matches!(h.report(7), Report::Pending { asker: 0 }));
        h.relayed(0, 4);
        assert!(matches!(h.report(7), Report::Pending { asker: 0 }));
        // The account comes: not news again, but now ready, once.
        assert!(!h.hear(0, 4, Some("; endpoint 0: in recv".into()), 7, true));
        match h.report(7) {
            Report::Ready(t) => assert_eq!(t, "; endpoint 0: in recv"),
            _ => panic!("not ready"),
        }
        assert!(matches!(h.report(7), Report::None));
        // An older round is old news; a call that ended does not take a
        // declaration for another.
        assert!(!h.hear(0, 3, Some("old".into()), 7, true));
        assert!(h.hear(0, 5, Some("new".into()), 8, true));
        h.relayed(0, 5);
        assert!(matches!(h.report(7), Report::None));
        assert!(matches!(h.report(8), Report::Ready(_)));
        // Not blocked: relayed, not kept. An asker outside the job: nothing.
        assert!(h.hear(1, 1, Some("x".into()), 9, false));
        assert!(!h.declared_in(9));
        assert!(!h.hear(5, 1, Some("x".into()), 9, true));
        assert!(h.without_account(0).contains("endpoint 0 found it"));
    }

    #[test]
    fn the_account_names_each_endpoint_by_its_state() {
        let mut states = vec![quiet(0, 0), State::gone(&[1]), quiet(0, 0)];
        states[2].waiting = String::new();
        let text = account(&states, &[1], |_| PeerState::Failed("killed".into()));
        assert_eq!(
            text,
            "; endpoint 0: in recv; endpoint 1: failed (killed); endpoint 2: running"
        );
        let text = account(&states, &[1], |_| PeerState::Alive);
        assert!(text.contains("endpoint 1: finished"), "{text}");
        assert_eq!(
            endpoint_line(4, &PeerState::Alive, None),
            "; endpoint 4: no answer within 1 s"
        );
    }
}
