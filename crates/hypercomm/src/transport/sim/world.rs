//! The job's one virtual clock: the event queue, the network's state, the
//! ranks' mailboxes, and the turn that lets one rank run at a time.
//!
//! Ranks are threads, but only the rank whose turn it is runs; the others
//! are parked. A rank gives up its turn when it must wait in virtual time —
//! for its send port after a send, for a message, for declared or measured
//! computation — by handling events in time order until one hands the turn
//! to some rank (a `Resume`). Arrivals are events too, so a rank sees
//! exactly the frames that arrived by its virtual time, and a rank that
//! waits for a message gets it at once in real time: nothing sleeps while
//! virtual time passes. Events at the same time go in order of the rank
//! they concern (the sender of a message), as in schedule simulation.

use super::config::Config;
use crate::transport::{Frame, PeerState};
use hypercomm_algo::sim::{EventQueue, Fabric, Flight, Next};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread::Thread;
use std::time::Duration;

/// An event of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ev {
    /// The rank runs again.
    Resume(u32),
    /// Message `id`'s header asks for its next link.
    Hop(u32),
    /// Message `id`'s header reached its receiver's port.
    Port(u32),
    /// Message `id` arrived whole.
    Deliver(u32),
}

/// Nobody's turn.
pub(super) const NOBODY: usize = usize::MAX;

/// The tie key of a polling rank's resumption: after everything else at
/// its time, and it wakes no other poller.
const POLL: u64 = u64::MAX;

/// A frame on its way.
struct InFlight {
    flight: Flight,
    frame: Frame,
    seq: u64,
}

/// Frames between one ordered pair: sent and delivered so far, and those
/// that arrived ahead of an earlier one (delivered in order).
#[derive(Default)]
struct Pair {
    sent: u64,
    delivered: u64,
    held: BTreeMap<u64, Frame>,
}

/// One rank as the clock sees it.
pub(super) struct RankState {
    /// What the others see: a rank that left stays alive to them until its
    /// last frame has arrived (as a real one whose frames are on the way).
    pub(super) state: PeerState,
    /// Its thread left the job (`close`), with this outcome to show once
    /// its frames have arrived.
    pub(super) gone: bool,
    pub(super) leaving: Option<PeerState>,
    /// Its frames still on the way.
    pub(super) in_flight: u32,
    pub(super) inbox: VecDeque<Frame>,
    /// Blocked in `wait` until a frame or a peer's news comes.
    pub(super) waiting: bool,
    /// A `Resume` for it is queued.
    resume_queued: bool,
    /// Blocked in `send` until its port is free (one port).
    sending: bool,
    pub(super) thread: Option<Thread>,
    pub(super) waiting_for: Option<String>,
    /// Its virtual time when it left the job.
    pub(super) end: Option<f64>,
}

/// Everything behind the job's lock.
pub(super) struct World {
    pub(super) queue: EventQueue<Ev>,
    fabric: Fabric,
    flights: Vec<Option<InFlight>>,
    free_ids: Vec<u32>,
    pairs: HashMap<(u32, u32), Pair>,
    pub(super) ranks: Vec<RankState>,
    /// Endpoints built (the job starts when all are).
    pub(super) built: usize,
    pub(super) aborted: Option<(usize, String)>,
    /// Ranks that polled with nothing there: they run again after the next
    /// event (at its time, after everything else at that time).
    pollers: Vec<usize>,
    pub(super) messages: u64,
    pub(super) words: f64,
}

/// What is read without the lock: the virtual time and who is seen alive.
pub(super) struct Visible {
    /// The virtual time, in nanoseconds (for trace clocks).
    now_ns: AtomicI64,
    /// Per endpoint: the others still see it alive (the engine asks on
    /// every wait, about every member for a wildcard).
    pub(super) alive: Box<[AtomicBool]>,
}

/// The shared state of a simulated job.
pub struct Job {
    pub(super) config: Config,
    pub(super) world: Mutex<World>,
    /// Whose turn it is ([`NOBODY`]: nobody's).
    turn: AtomicUsize,
    /// The simulator itself failed (a panic while handling events): turns
    /// are over, every rank runs on to see the job aborted.
    broken: AtomicBool,
    pub(super) visible: Visible,
}

pub(super) fn lock(m: &Mutex<World>) -> MutexGuard<'_, World> {
    // A panic while the world is held leaves it as it was between events.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl World {
    fn now(&self) -> f64 {
        self.queue.now()
    }

    /// Queue `ev` at `t` with tie key `tie`. A time that is not a finite
    /// number (costs, a word size or computation so large that virtual
    /// time overflows) aborts the job with a message saying so, and the
    /// event happens now instead, so that every rank goes on to see the
    /// abort.
    fn at(&mut self, t: f64, tie: u64, ev: Ev) {
        if t.is_finite() {
            return self.queue.push(t, tie, ev);
        }
        let now = self.now();
        if self.aborted.is_none() {
            let who = usize::try_from(tie).ok().filter(|&r| r < self.ranks.len());
            self.aborted = Some((
                who.unwrap_or(0),
                format!(
                    "virtual time overflowed after {now} s (an event at {t} s): the costs \
                     (ts, tw, th), the word size or the computation are too large to simulate"
                ),
            ));
            self.wake_waiting();
        }
        self.queue.push(now, tie, ev);
    }

    /// Queue `r`'s resumption at `t` (once).
    pub(super) fn resume(&mut self, r: usize, t: f64) {
        let rk = &mut self.ranks[r];
        if !rk.resume_queued {
            rk.resume_queued = true;
            self.at(t, r as u64, Ev::Resume(r as u32));
        }
    }

    /// Rank `r` polled and found nothing: it runs again after the next
    /// event, whenever that is. Returns false when nothing is queued (then
    /// nothing but the rank itself can change anything: it polls on).
    pub(super) fn poll_later(&mut self, r: usize) -> bool {
        if self.queue.is_empty() {
            return false;
        }
        self.pollers.push(r);
        true
    }

    /// Resume the ranks that polled, after everything else at `t` (an event
    /// has happened that they may see).
    fn wake_pollers(&mut self, t: f64) {
        for r in std::mem::take(&mut self.pollers) {
            let rk = &mut self.ranks[r];
            if !rk.resume_queued {
                rk.resume_queued = true;
                self.at(t, POLL, Ev::Resume(r as u32));
            }
        }
    }

    /// Resume every rank that waits (a peer's state changed).
    pub(super) fn wake_waiting(&mut self) {
        let now = self.now();
        for r in 0..self.ranks.len() {
            if self.ranks[r].waiting {
                self.resume(r, now);
            }
        }
    }

    /// Rank `me` sends `frame` of `bytes` bytes at the current time. Returns
    /// whether `me` must wait for its port (it is resumed when free).
    pub(super) fn send(&mut self, me: usize, frame: Frame, words: f64, holder: bool) -> bool {
        let dst = frame.header.dst as usize;
        if frame.header.kind == crate::wire::Kind::Credit {
            // Flow control's bookkeeping, not a message of the program:
            // seed 001's machine has no acknowledgements, so it arrives at
            // once, occupies no port or link and costs no time.
            let now = self.now();
            let rk = &mut self.ranks[dst];
            if !rk.gone {
                rk.inbox.push_back(frame);
                if rk.waiting {
                    self.resume(dst, now);
                }
            }
            return false;
        }
        let pair = self.pairs.entry((me as u32, dst as u32)).or_default();
        let seq = pair.sent;
        pair.sent += 1;
        self.messages += 1;
        self.words += words;
        self.ranks[me].in_flight += 1;
        let flight = Flight::new(me, dst, words);
        let mut started = self.fabric.start(&flight, self.now());
        if let Next::Core(t) = started.next {
            // Ranks send at the current time, in time order: the core can
            // be asked at once.
            started = self.fabric.core(&flight, t);
        }
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None => {
                self.flights.push(None);
                (self.flights.len() - 1) as u32
            }
        };
        self.flights[id as usize] = Some(InFlight { flight, frame, seq });
        match started.next {
            Next::Hop(t) => self.at(t, me as u64, Ev::Hop(id)),
            Next::Arrive(t) => self.at(t, me as u64, Ev::Deliver(id)),
            Next::Port(_) | Next::Core(_) => unreachable!("a start never reaches a port"),
        }
        if !holder {
            return false;
        }
        match started.free {
            Some(t) => self.resume(me, t),
            None => self.ranks[me].sending = true,
        }
        true
    }

    /// Handle events until one gives a rank its turn; that rank (`None`:
    /// nothing will happen any more).
    pub(super) fn step(&mut self, visible: &Visible) -> Option<usize> {
        loop {
            let Some((now, tie, ev)) = self.queue.pop() else {
                if !self.stalled() {
                    return None;
                }
                continue;
            };
            visible
                .now_ns
                .store((now * 1e9).round() as i64, Ordering::Relaxed);
            if tie != POLL && !self.pollers.is_empty() {
                self.wake_pollers(now);
            }
            match ev {
                Ev::Resume(r) => {
                    let rk = &mut self.ranks[r as usize];
                    rk.resume_queued = false;
                    if !rk.gone {
                        rk.waiting = false;
                        return Some(r as usize);
                    }
                }
                Ev::Hop(id) => {
                    let f = self.flights[id as usize].as_mut().expect("in flight");
                    let h = self.fabric.hop(&mut f.flight, now);
                    let src = f.flight.src as usize;
                    if let Some(free) = h.free {
                        if std::mem::take(&mut self.ranks[src].sending) {
                            self.resume(src, free);
                        }
                    }
                    match h.next {
                        Next::Hop(t) => self.at(t, src as u64, Ev::Hop(id)),
                        Next::Port(t) => self.at(t, src as u64, Ev::Port(id)),
                        Next::Arrive(t) => self.at(t, src as u64, Ev::Deliver(id)),
                        Next::Core(_) => unreachable!("a hop never asks for a core"),
                    }
                }
                Ev::Port(id) => {
                    let f = self.flights[id as usize].as_ref().expect("in flight");
                    let t = self.fabric.port(&f.flight, now);
                    let src = f.flight.src as u64;
                    self.at(t, src, Ev::Deliver(id));
                }
                Ev::Deliver(id) => self.deliver(id, visible),
            }
        }
    }

    /// Message `id` has arrived: into its receiver's inbox, in order.
    fn deliver(&mut self, id: u32, visible: &Visible) {
        let InFlight { flight, frame, seq } = self.flights[id as usize].take().expect("in flight");
        self.free_ids.push(id);
        let (src, dst) = (flight.src, flight.dst as usize);
        let sender = &mut self.ranks[src as usize];
        sender.in_flight -= 1;
        if sender.in_flight == 0 {
            if let Some(st) = sender.leaving.take() {
                // Its last frame is in: now the others see it gone.
                sender.state = st;
                visible.alive[src as usize].store(false, Ordering::Release);
                self.wake_waiting();
            }
        }
        if self.ranks[dst].gone {
            return;
        }
        let pair = self.pairs.entry((src, dst as u32)).or_default();
        if seq != pair.delivered {
            pair.held.insert(seq, frame);
            return;
        }
        let rk = &mut self.ranks[dst];
        rk.inbox.push_back(frame);
        pair.delivered += 1;
        while let Some(f) = pair.held.remove(&pair.delivered) {
            rk.inbox.push_back(f);
            pair.delivered += 1;
        }
        if rk.waiting {
            let now = self.now();
            self.resume(dst, now);
        }
    }

    /// Nothing is queued. When ranks still wait, none of them can ever be
    /// woken: a deadlock, which aborts the job (returns true: they are
    /// resumed to see it).
    fn stalled(&mut self) -> bool {
        let alive: Vec<usize> = (0..self.ranks.len())
            .filter(|&r| !self.ranks[r].gone)
            .collect();
        if alive.is_empty() {
            return false;
        }
        if self.aborted.is_none() {
            let mut msg = format!(
                "deadlock in the simulated machine at virtual time {} s: every rank waits",
                self.now()
            );
            for &r in &alive {
                if let Some(w) = &self.ranks[r].waiting_for {
                    msg.push_str(&format!("; {w}"));
                }
            }
            self.aborted = Some((alive[0], msg));
        }
        let now = self.now();
        for r in alive {
            self.resume(r, now);
        }
        true
    }
}

impl Job {
    /// A job of `endpoints` endpoints on the machine `config` describes.
    pub(super) fn new(config: Config, endpoints: usize) -> crate::error::Result<Job> {
        let model = config.model(endpoints)?;
        let ranks = (0..endpoints)
            .map(|_| RankState {
                state: PeerState::Alive,
                gone: false,
                leaving: None,
                in_flight: 0,
                inbox: VecDeque::new(),
                waiting: false,
                resume_queued: false,
                sending: false,
                thread: None,
                waiting_for: None,
                end: None,
            })
            .collect();
        Ok(Job {
            world: Mutex::new(World {
                queue: EventQueue::new(),
                fabric: Fabric::new(&model),
                flights: Vec::new(),
                free_ids: Vec::new(),
                pairs: HashMap::new(),
                ranks,
                built: 0,
                aborted: None,
                pollers: Vec::new(),
                messages: 0,
                words: 0.0,
            }),
            config,
            turn: AtomicUsize::new(NOBODY),
            broken: AtomicBool::new(false),
            visible: Visible {
                now_ns: AtomicI64::new(0),
                alive: (0..endpoints).map(|_| AtomicBool::new(true)).collect(),
            },
        })
    }

    /// The virtual time in nanoseconds.
    pub(super) fn now_ns(&self) -> i64 {
        self.visible.now_ns.load(Ordering::Relaxed)
    }

    /// Whether it is `me`'s turn.
    pub(super) fn is_turn(&self, me: usize) -> bool {
        self.turn.load(Ordering::Acquire) == me
    }

    /// Whether the simulator failed and the job is over (see [`Job::pass`]).
    pub(super) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// Rank `me` (whose turn it is, or nobody's) has nothing to do before
    /// some event: handle events until one gives a rank the turn, hand it
    /// over, and return when it is `me`'s turn again — at once when the
    /// turn comes straight back. With `leaving`, `me` does not wait for it.
    ///
    /// A panic while handling events (a bug of the simulator) must not
    /// leave the other ranks parked for a turn that never comes: the job
    /// is aborted with the panic's message, turns end, and every rank is
    /// woken to fail with it.
    pub(super) fn pass(&self, me: usize, mut w: MutexGuard<'_, World>, leaving: bool) {
        if self.is_broken() {
            return;
        }
        let stepped =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.step(&self.visible)));
        let next = match stepped {
            Ok(next) => next.unwrap_or(NOBODY),
            Err(p) => {
                // (Not launch's panic_message: a transport imports nothing
                // from the launch layer.)
                let what = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                if w.aborted.is_none() {
                    let now = w.now();
                    w.aborted = Some((
                        me,
                        format!("the simulator failed at virtual time {now} s: {what}"),
                    ));
                }
                self.broken.store(true, Ordering::Release);
                self.turn.store(NOBODY, Ordering::Release);
                let threads: Vec<Thread> =
                    w.ranks.iter().filter_map(|r| r.thread.clone()).collect();
                drop(w);
                for t in threads {
                    t.unpark();
                }
                return;
            }
        };
        self.turn.store(next, Ordering::Release);
        if next == me {
            return;
        }
        let wake = (next != NOBODY)
            .then(|| w.ranks[next].thread.clone())
            .flatten();
        drop(w);
        if let Some(t) = wake {
            t.unpark();
        }
        if !leaving {
            self.await_turn(me);
        }
    }

    /// Park until it is `me`'s turn.
    pub(super) fn await_turn(&self, me: usize) {
        while !self.is_turn(me) && !self.is_broken() {
            // Unparked when the turn comes; the timeout only bounds the cost
            // of a lost wake-up.
            std::thread::park_timeout(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::sim::SimBuilder;
    use crate::transport::{Builder, Fault, Transport};
    use std::sync::mpsc;

    /// A panic while the simulator handles events (here: an event for a
    /// message that does not exist) aborts the job with its message, and
    /// every rank, parked or not, gets to see it instead of waiting for a
    /// turn that never comes.
    #[test]
    fn a_panic_in_the_simulator_fails_every_rank_instead_of_hanging() {
        let (job, builders) = SimBuilder::job(Config::default(), 3).unwrap();
        lock(&job.world).queue.push(1e-3, 0, Ev::Hop(999));
        let (tx, rx) = mpsc::channel();
        for b in builders {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let t = Box::new(b).build().unwrap();
                let fault = loop {
                    if let Some(f) = t.fault() {
                        break f;
                    }
                    t.wait(None);
                };
                t.close(Err("aborted".into()));
                let _ = tx.send(fault);
            });
        }
        for _ in 0..3 {
            let f = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("every rank sees the failure");
            let Fault::Aborted { message, .. } = f else {
                panic!("{f:?}")
            };
            assert!(message.contains("the simulator failed"), "{message}");
            assert!(message.contains("index out of bounds"), "{message}");
        }
    }
}
