//! Schedule simulation: every participant's [`Schedule`] run on a
//! [`Model`] in virtual time, without threads, one event per link a
//! message crosses.
//!
//! A participant starts its first round at time 0. In a round it starts
//! its Sends one after another, each when its send port is free (one port:
//! when the message before it has left; all ports: when its start-up is
//! done), and the round ends when its last Send has left and its last Recv
//! has arrived, whichever is later; the next round starts then. Local ops
//! (Reduce, Copy) take no time, as in seed 001. Messages are eager: one
//! that arrives before its Recv's round waits in a mailbox, and the k-th
//! message from q to r matches r's k-th Recv from q (FIFO per pair), even
//! where a later message overtakes an earlier one (a short one behind a
//! long one when links are not contended): each message carries its
//! ordinal among its pair's (kept beside each op by the pool).
//!
//! The events are the link requests of [`Fabric`]: a message over l links
//! costs l queue operations (plus one when its receiver's port is
//! contended); arrivals and round ends are handled when they become known,
//! since everything they start lies later. Requests at the same time are
//! served in order of the message's sender, and a sender's in the order
//! they were made.

use super::budget::{affordable, crossable, generable, hops, MAX_PARTICIPANT_MESSAGES};
use super::error::SimError;
use super::fabric::{Fabric, Flight, Next};
use super::network::{Model, MAX_COST, MAX_NODES};
use super::pool::{Cop, Pool};
use super::queue::EventQueue;
use super::shared::{alike, shared_pool};
use crate::entry::{Entry, Params};
use crate::schedule::{Op, Schedule};
use std::collections::{HashMap, VecDeque};

/// What a simulation found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// When each participant finished its schedule.
    pub finish: Vec<f64>,
    /// Messages sent.
    pub messages: u64,
    /// Words sent (each message counted once).
    pub words: f64,
    /// Events handled (link requests and contended ports).
    pub events: u64,
    /// Distinct schedules kept (see the pool's module doc).
    pub distinct_schedules: usize,
    /// The network afterwards: per-link traffic ([`Fabric::traffic`]).
    pub fabric: Fabric,
}

impl Outcome {
    /// The time the last participant finished.
    pub fn time(&self) -> f64 {
        self.finish.iter().copied().fold(0.0, f64::max)
    }
}

/// Event kinds (the top two bits of an event).
const FIRST: u64 = 0;
/// A FIRST event with this bit asks for the sender's core instead; an
/// ARRIVE event with it, for the receiver's.
const CORE: u64 = 1 << 61;
const HOP: u64 = 1 << 62;
const PORT: u64 = 2 << 62;
const ARRIVE: u64 = 3 << 62;
const KIND: u64 = 3 << 62;
const NO_SEND: u32 = u32::MAX;

/// Node flags.
const FINISHED: u32 = 1;
const WIDE: u32 = 2;
const MAIL: u32 = 4;

/// A message past its first link (or contended at its receiver).
#[derive(Debug, Clone, Copy)]
struct Msg {
    flight: Flight,
    len: u32,
    /// Its ordinal among the messages of its sender to its receiver.
    ord: u32,
}

/// A message that arrived before its Recv's round: from, ordinal,
/// length, time.
type Early = (u32, u32, u32, f64);

/// One participant's progress through its current round.
#[derive(Debug, Clone, Copy)]
struct Node {
    /// The round's latest time so far: its start, its messages' arrivals,
    /// its send port's free times.
    ready: f64,
    /// Which Recvs of the round matched (bit i: op `pos + i`).
    matched: u64,
    /// Its kept schedule.
    sched: u32,
    /// The round's first op, and the op after its last.
    pos: u32,
    end: u32,
    /// The Send being sent.
    next_send: u32,
    /// Sends and Recvs of the round not done yet.
    pending: u32,
    flags: u32,
}

/// The unmatched Recvs of a round too long for the bit mask, by peer.
type Wide = HashMap<usize, VecDeque<usize>>;

struct Sim<'a> {
    fabric: Fabric,
    pool: &'a Pool,
    queue: EventQueue<u64>,
    words_per_element: f64,
    nodes: Vec<Node>,
    finish: Vec<f64>,
    /// Early messages of nodes flagged MAIL.
    mailbox: HashMap<usize, Vec<Early>>,
    wide: HashMap<usize, Wide>,
    done: usize,
    msgs: Vec<Msg>,
    free_msgs: Vec<u32>,
    messages: u64,
    words: f64,
}

impl Sim<'_> {
    #[inline]
    fn op(&self, v: usize, i: usize) -> Cop {
        self.pool.op(self.nodes[v].sched, i)
    }

    /// Participant `v` starts the round at its `pos` at time `t` (and the
    /// following ones while they end at once).
    fn enter(&mut self, v: usize, mut t: f64) -> Result<(), SimError> {
        loop {
            let n = self.nodes[v];
            let s = n.sched;
            let mut i = n.pos as usize;
            if i == self.pool.len(s) {
                self.finish[v] = t;
                self.nodes[v].flags |= FINISHED;
                self.done += 1;
                return Ok(());
            }
            let start = i;
            let (mut pending, mut first_send, mut matched) = (0u32, NO_SEND, 0u64);
            let mut ready = t;
            let mut wide: Option<Wide> = None;
            loop {
                let c = self.pool.op(s, i);
                if c.is_recv() {
                    let from = self.pool.peer(s, c, v);
                    let early = if n.flags & MAIL != 0 {
                        self.take_early(v, from, self.pool.ord(s, i), c.len())?
                    } else {
                        None
                    };
                    if let Some(at) = early {
                        ready = ready.max(at);
                        if i - start < 64 {
                            matched |= 1 << (i - start);
                        }
                    } else {
                        pending += 1;
                        if i - start >= 64 {
                            wide.get_or_insert_with(Wide::new)
                                .entry(from)
                                .or_default()
                                .push_back(i);
                        }
                    }
                } else {
                    pending += 1;
                    if first_send == NO_SEND {
                        first_send = i as u32;
                    }
                }
                i += 1;
                if c.ends_round() {
                    break;
                }
            }
            let node = &mut self.nodes[v];
            if let Some(w) = wide {
                node.flags |= WIDE;
                self.wide.insert(v, w);
            }
            node.end = i as u32;
            node.pending = pending;
            node.ready = ready;
            node.matched = matched;
            node.next_send = NO_SEND;
            if first_send != NO_SEND {
                self.launch(v, first_send as usize, t);
            }
            let node = &mut self.nodes[v];
            if node.pending > 0 {
                return Ok(());
            }
            t = node.ready;
            node.pos = node.end;
            if node.flags & WIDE != 0 {
                node.flags &= !WIDE;
                self.wide.remove(&v);
            }
        }
    }

    /// The early message from `from` of ordinal `ord` for a Recv of `len`
    /// elements, if it waits in `v`'s mailbox: its arrival time.
    fn take_early(
        &mut self,
        v: usize,
        from: usize,
        ord: u32,
        len: u32,
    ) -> Result<Option<f64>, SimError> {
        let Some(mb) = self.mailbox.get_mut(&v) else {
            return Ok(None);
        };
        let Some(k) = mb.iter().position(|e| e.0 as usize == from && e.1 == ord) else {
            return Ok(None);
        };
        let (_, _, sent, at) = mb.remove(k);
        if mb.is_empty() {
            self.mailbox.remove(&v);
            self.nodes[v].flags &= !MAIL;
        }
        if sent != len {
            return Err(SimError::Length {
                from,
                to: v,
                sent,
                expected: len,
            });
        }
        Ok(Some(at))
    }

    /// Start `v`'s Send at op `i` at time `t`; returns when the send port
    /// is free again, if that is known now.
    fn start_send(&mut self, v: usize, i: usize, t: f64) -> Option<f64> {
        let msg = self.msg(v, i);
        self.messages += 1;
        self.words += msg.flight.words;
        let started = self.fabric.start(&msg.flight, t);
        if let Next::Port(_) = started.next {
            unreachable!("a start never reaches a port");
        }
        self.follow(started.next, v, i, msg);
        started.free
    }

    /// The message of `v`'s Send at op `i`, not started.
    #[inline(always)]
    fn msg(&self, v: usize, i: usize) -> Msg {
        let s = self.nodes[v].sched;
        let (c, ord) = self.pool.op_ord(s, i);
        let to = self.pool.peer(s, c, v);
        let words = f64::from(c.len()) * self.words_per_element;
        Msg {
            flight: Flight::new(v, to, words),
            len: c.len(),
            ord,
        }
    }

    /// Queue what comes next for a message that has started: its next hop,
    /// its arrival, or the wait for its sender's core.
    #[inline]
    fn follow(&mut self, next: Next, v: usize, i: usize, msg: Msg) {
        match next {
            Next::Hop(at) => self
                .queue
                .push(at, v as u64, FIRST | (v as u64) << 32 | i as u64),
            Next::Arrive(at) => {
                let id = self.keep(msg);
                self.queue.push(at, v as u64, ARRIVE | u64::from(id));
            }
            Next::Core(at) => {
                self.queue
                    .push(at, v as u64, FIRST | CORE | (v as u64) << 32 | i as u64)
            }
            Next::Port(_) => unreachable!("only a hop reaches a port"),
        }
    }

    /// `v`'s Send at op `i` gets its core at `now`: the start-up begins.
    #[cold]
    #[inline(never)]
    fn cored(&mut self, v: usize, i: usize, now: f64) -> Result<(), SimError> {
        let msg = self.msg(v, i);
        let started = self.fabric.core(&msg.flight, now);
        if let Next::Port(_) | Next::Core(_) = started.next {
            unreachable!("a core starts the message");
        }
        self.follow(started.next, v, i, msg);
        match started.free {
            Some(free) => self.sent(v, free),
            None => Ok(()),
        }
    }

    /// Keep a message in flight; its id.
    fn keep(&mut self, msg: Msg) -> u32 {
        match self.free_msgs.pop() {
            Some(id) => {
                self.msgs[id as usize] = msg;
                id
            }
            None => {
                self.msgs.push(msg);
                (self.msgs.len() - 1) as u32
            }
        }
    }

    /// The Send of `v` after op `i` in its round, if any.
    fn send_after(&self, v: usize, i: usize) -> Option<usize> {
        let end = self.nodes[v].end as usize;
        (i + 1..end).find(|&j| !self.op(v, j).is_recv())
    }

    /// Start `v`'s Sends from op `i` at time `t`, one after another while
    /// their ports' free times are known now. Leaves ending the round to
    /// the caller.
    fn launch(&mut self, v: usize, mut i: usize, mut t: f64) {
        self.nodes[v].next_send = i as u32;
        while let Some(free) = self.start_send(v, i, t) {
            let node = &mut self.nodes[v];
            node.ready = node.ready.max(free);
            node.pending -= 1;
            match self.send_after(v, i) {
                Some(j) => (i, t) = (j, free),
                None => {
                    self.nodes[v].next_send = NO_SEND;
                    return;
                }
            }
            self.nodes[v].next_send = i as u32;
        }
    }

    /// `v`'s send port is free at `t` after its current Send (one port):
    /// start the next one, or end the round.
    fn sent(&mut self, v: usize, t: f64) -> Result<(), SimError> {
        let node = &mut self.nodes[v];
        node.ready = node.ready.max(t);
        node.pending -= 1;
        let current = node.next_send as usize;
        match self.send_after(v, current) {
            Some(j) => self.launch(v, j, t),
            None => self.nodes[v].next_send = NO_SEND,
        }
        self.round_progress(v)
    }

    #[inline]
    fn round_progress(&mut self, v: usize) -> Result<(), SimError> {
        let node = &mut self.nodes[v];
        if node.pending == 0 {
            node.pos = node.end;
            if node.flags & WIDE != 0 {
                node.flags &= !WIDE;
                self.wide.remove(&v);
            }
            return self.enter(v, self.nodes[v].ready);
        }
        Ok(())
    }

    /// `msg` arrived whole at its receiver at `t`.
    fn arrived(&mut self, msg: Msg, t: f64) -> Result<(), SimError> {
        let (v, from, len) = (msg.flight.dst as usize, msg.flight.src as usize, msg.len);
        let n = self.nodes[v];
        let s = n.sched;
        let (start, end) = (n.pos as usize, n.end as usize);
        let mut hit = None;
        if n.flags & FINISHED == 0 {
            // The unmatched Recv from `from` of the message's ordinal:
            // among the round's first 64 ops, else in the index of a
            // longer round.
            let last = end.min(start + 64);
            hit = (start..last).find(|&i| {
                let (c, ord) = self.pool.op_ord(s, i);
                c.is_recv()
                    && n.matched & (1 << (i - start)) == 0
                    && ord == msg.ord
                    && self.pool.peer(s, c, v) == from
            });
            if hit.is_none() && n.flags & WIDE != 0 {
                let pool = self.pool;
                if let Some(q) = self.wide.get_mut(&v).and_then(|w| w.get_mut(&from)) {
                    hit = q
                        .iter()
                        .position(|&i| pool.ord(s, i) == msg.ord)
                        .and_then(|k| q.remove(k));
                }
            }
        }
        let Some(i) = hit else {
            self.nodes[v].flags |= MAIL;
            self.mailbox
                .entry(v)
                .or_default()
                .push((from as u32, msg.ord, len, t));
            return Ok(());
        };
        let expected = self.pool.op(s, i).len();
        if expected != len {
            return Err(SimError::Length {
                from,
                to: v,
                sent: len,
                expected,
            });
        }
        let node = &mut self.nodes[v];
        if i - start < 64 {
            node.matched |= 1 << (i - start);
        }
        node.ready = node.ready.max(t);
        node.pending -= 1;
        self.round_progress(v)
    }

    /// On shared cores: `msg` (`id` its kept copy, if any) has arrived at
    /// `t`; its receiver's core is asked then.
    #[cold]
    #[inline(never)]
    fn wake_later(&mut self, msg: Msg, id: Option<u32>, t: f64) {
        let id = self.kept(msg, id);
        self.queue
            .push(t, u64::from(msg.flight.src), ARRIVE | CORE | u64::from(id));
    }

    /// `msg` kept with its flight as it is now: in its kept copy `id` if
    /// it has one, else in a new one; the id.
    #[inline]
    fn kept(&mut self, msg: Msg, id: Option<u32>) -> u32 {
        match id {
            Some(id) => {
                self.msgs[id as usize].flight = msg.flight;
                id
            }
            None => self.keep(msg),
        }
    }

    /// What happens after a hop of `msg` (`id` its kept copy, if any).
    fn after_hop(&mut self, msg: Msg, id: Option<u32>, next: Next) -> Result<(), SimError> {
        match next {
            Next::Arrive(at) => {
                if self.fabric.shares_cores() {
                    self.wake_later(msg, id, at);
                    return Ok(());
                }
                if let Some(id) = id {
                    self.free_msgs.push(id);
                }
                self.arrived(msg, at)
            }
            Next::Core(_) => unreachable!("a hop never asks for a core"),
            Next::Hop(at) | Next::Port(at) => {
                let id = self.kept(msg, id);
                let kind = if matches!(next, Next::Hop(_)) {
                    HOP
                } else {
                    PORT
                };
                self.queue
                    .push(at, u64::from(msg.flight.src), kind | u64::from(id));
                Ok(())
            }
        }
    }

    fn run(&mut self) -> Result<u64, SimError> {
        let mut events = 0u64;
        while let Some((now, _, ev)) = self.queue.pop() {
            events += 1;
            match ev & KIND {
                FIRST if ev & CORE != 0 => {
                    let (v, i) = ((ev >> 32) as usize & (MAX_NODES - 1), ev as u32 as usize);
                    self.cored(v, i, now)?;
                }
                FIRST => {
                    let (v, i) = ((ev >> 32) as usize, ev as u32 as usize);
                    let mut msg = self.msg(v, i);
                    let h = self.fabric.hop(&mut msg.flight, now);
                    if let Some(free) = h.free {
                        self.sent(v, free)?;
                    }
                    self.after_hop(msg, None, h.next)?;
                }
                HOP => {
                    let id = (ev & !KIND) as u32;
                    let mut msg = self.msgs[id as usize];
                    let h = self.fabric.hop(&mut msg.flight, now);
                    self.after_hop(msg, Some(id), h.next)?;
                }
                PORT => {
                    let id = (ev & !KIND) as u32;
                    let msg = self.msgs[id as usize];
                    let at = self.fabric.port(&msg.flight, now);
                    if self.fabric.shares_cores() {
                        let src = u64::from(msg.flight.src);
                        self.queue.push(at, src, ARRIVE | CORE | u64::from(id));
                        continue;
                    }
                    self.free_msgs.push(id);
                    self.arrived(msg, at)?;
                }
                _ => {
                    let id = (ev & !(KIND | CORE)) as u32;
                    let msg = self.msgs[id as usize];
                    self.free_msgs.push(id);
                    let at = if ev & CORE != 0 {
                        self.fabric.wake(&msg.flight, now)
                    } else {
                        now
                    };
                    self.arrived(msg, at)?;
                }
            }
        }
        Ok(events)
    }
}

/// Simulate `p` participants, participant `me` running `gen(me)`, on
/// `model` (participant i on endpoint i), each element `words_per_element`
/// words long. Errors: more participants than endpoints, words per element
/// that are not a number from 0 to [`MAX_COST`], schedules that send more
/// than [`MAX_MESSAGES`](super::MAX_MESSAGES) messages or hold more than
/// [`MAX_OPS`](super::MAX_OPS) operations in all (counted as they are
/// generated) or whose links on the fully connected network exceed the
/// state budget ([`MAX_STATE_BYTES`](super::MAX_STATE_BYTES)), schedules
/// that address a participant that does not exist, disagree on a
/// message's length or never finish.
pub fn simulate(
    model: &Model,
    p: usize,
    gen: &mut dyn FnMut(usize) -> Schedule,
    words_per_element: f64,
) -> Result<Outcome, SimError> {
    fits(model, p, words_per_element)?;
    let mut pool = Pool::new(p);
    let mut sched = Vec::with_capacity(p);
    let (mut sends, mut recvs, mut ops) = (0u64, 0u64, 0u64);
    for me in 0..p {
        let s = gen(me);
        let (a, b) = messages(&s);
        (sends, recvs, ops) = (sends + a, recvs + b, ops + s.ops().count() as u64);
        affordable(model, p, sends.max(recvs))?;
        generable(p, ops)?;
        sched.push(pool.add(me, &s)?);
    }
    run(model, &pool, &mut |v| sched[v], words_per_element, sends)
}

/// Whether `p` participants fit `model` and `words_per_element` is a
/// length.
fn fits(model: &Model, p: usize, words_per_element: f64) -> Result<(), SimError> {
    if !(0.0..=MAX_COST).contains(&words_per_element) {
        return Err(SimError::WordsPerElement {
            value: words_per_element,
        });
    }
    if p > model.endpoints() {
        return Err(SimError::TooFew {
            p,
            endpoints: model.endpoints(),
        });
    }
    Ok(())
}

/// The Sends and Recvs of a schedule.
fn messages(s: &Schedule) -> (u64, u64) {
    s.ops().fold((0, 0), |(a, b), op| match op {
        Op::Send { .. } => (a + 1, b),
        Op::Recv { .. } => (a, b + 1),
        _ => (a, b),
    })
}

/// Simulate `p` participants, participant `v` running kept schedule
/// `sched(v)` of `pool`.
/// `messages` is what they send in all, for the state budget.
fn run(
    model: &Model,
    pool: &Pool,
    sched: &mut dyn FnMut(usize) -> u32,
    words_per_element: f64,
    messages: u64,
) -> Result<Outcome, SimError> {
    let p = pool.participants();
    affordable(model, p, messages)?;
    let mut sim = Sim {
        fabric: Fabric::new(model),
        pool,
        queue: EventQueue::new(),
        words_per_element,
        nodes: (0..p)
            .map(|v| Node {
                ready: 0.0,
                matched: 0,
                sched: sched(v),
                pos: 0,
                end: 0,
                next_send: NO_SEND,
                pending: 0,
                flags: 0,
            })
            .collect(),
        finish: vec![f64::NAN; p],
        mailbox: HashMap::new(),
        wide: HashMap::new(),
        done: 0,
        msgs: Vec::new(),
        free_msgs: Vec::new(),
        messages: 0,
        words: 0.0,
    };
    for v in 0..p {
        sim.enter(v, 0.0)?;
    }
    let events = sim.run()?;
    if sim.done < p {
        let first = (0..p)
            .find(|&v| sim.finish[v].is_nan())
            .expect("one is stuck");
        let n = sim.nodes[first];
        let (start, end) = (n.pos as usize, n.end as usize);
        let waiting_for = (start..end)
            .filter(|&i| {
                let c = sim.op(first, i);
                c.is_recv() && (i - start >= 64 || n.matched & (1 << (i - start)) == 0)
            })
            .map(|i| pool.peer(n.sched, sim.op(first, i), first))
            .collect();
        return Err(SimError::Stuck {
            stuck: p - sim.done,
            first,
            waiting_for,
        });
    }
    if let Some(to) = sim.mailbox.keys().min() {
        return Err(SimError::Unreceived {
            from: sim.mailbox[to][0].0 as usize,
            to: *to,
        });
    }
    Ok(Outcome {
        finish: sim.finish,
        messages: sim.messages,
        words: sim.words,
        events,
        distinct_schedules: pool.distinct(),
        fabric: sim.fabric,
    })
}

/// Simulate a registered algorithm: `entry`'s schedules for `params` with
/// `me` set to each participant `0..params.p`. Where the algorithm's
/// participants are declared alike ([`alike`]), participant 0's schedule
/// is generated and relabelled for the others (after a spot check of a few
/// of theirs), instead of generating p schedules. Errors: those of
/// [`simulate`](fn@simulate), and p times the segments of a pipelined
/// algorithm above [`MAX_PARTICIPANT_MESSAGES`] (one participant's
/// schedule may address every other once per segment); a sampled
/// participant's messages times p above
/// [`MAX_MESSAGES`](super::MAX_MESSAGES), or its operations times p above
/// [`MAX_OPS`](super::MAX_OPS), are refused before the others' schedules
/// are generated.
pub fn simulate_entry(
    model: &Model,
    entry: &Entry,
    params: &Params<'_>,
    words_per_element: f64,
) -> Result<Outcome, SimError> {
    let p = params.p;
    fits(model, p, words_per_element)?;
    let segments = if entry.pipelined {
        params.count.div_ceil(params.segment.max(1)).max(1)
    } else {
        1
    };
    if (p as u64).saturating_mul(segments as u64) > MAX_PARTICIPANT_MESSAGES {
        return Err(SimError::Participant {
            p,
            segments,
            limit: MAX_PARTICIPANT_MESSAGES,
        });
    }
    let mut gen = |me: usize| entry.generate(&Params { me, ..*params });
    // The middle and last participants' messages, operations and the
    // links their messages cross, as many for each of the p (on the
    // networks simulated every node sees alike distances): refuse at once
    // what would exceed the budget, rather than after generating
    // schedules up to it. Links last: counting them walks every path.
    if p > 1 {
        let sample = [p / 2, p - 1].map(|me| (me, gen(me)));
        // The fewer of the two, for each of the p.
        let each = |f: &dyn Fn(usize, &Schedule) -> u64| {
            let [a, b] = &sample;
            f(a.0, &a.1).min(f(b.0, &b.1)).saturating_mul(p as u64)
        };
        affordable(
            model,
            p,
            each(&|_, s| {
                let (a, b) = messages(s);
                a.max(b)
            }),
        )?;
        generable(p, each(&|_, s| s.ops().count() as u64))?;
        crossable(p, each(&|me, s| hops(model, me, s)))?;
    }
    if let Some(alike) = alike(entry, params) {
        if let Some((pool, i)) = shared_pool(entry, params, alike)? {
            let sends = (0..pool.len(i)).filter(|&j| !pool.op(i, j).is_recv());
            let sends = (sends.count() as u64).saturating_mul(p as u64);
            return run(model, &pool, &mut |_| i, words_per_element, sends);
        }
    }
    simulate(model, p, &mut gen, words_per_element)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{Costs, Network, Routing};

    #[test]
    fn smoke() {
        let c = Costs {
            ts: 100.0,
            tw: 3.0,
            th: 7.0,
        };
        let m = Model::new(Network::Hypercube, 8, c).unwrap();
        let o = simulate(&m, 8, &mut |me| crate::bcast_binomial(me, 8, 0, 10), 1.0).unwrap();
        assert_eq!(o.time(), 3.0 * (100.0 + 30.0 + 7.0));
        let o = simulate(
            &m,
            8,
            &mut |me| crate::allreduce_recursive_doubling(me, 8, 10),
            1.0,
        )
        .unwrap();
        assert_eq!(o.time(), 3.0 * (100.0 + 30.0 + 7.0));
        let mut r = Model::new(Network::Ring, 8, c).unwrap();
        r.routing = Routing::CutThrough;
        let o = simulate(
            &r,
            8,
            &mut |me| crate::bcast_recursive_doubling(me, 8, 0, 10),
            1.0,
        )
        .unwrap();
        assert_eq!(o.time(), 3.0 * 130.0 + 7.0 * 7.0);
    }
}
