//! The per-rank recorder: turns the engine's events into PICL records.
//!
//! One recorder per rank, in a thread-local (an engine belongs to one rank
//! thread). The engine's hook checks one global flag (are any ranks of this
//! process tracing?) and only then looks here, so untraced programs pay one
//! predictable branch per event.
//!
//! Timed operations nest (a wait inside a collective inside a receive…): a
//! small stack keeps the entry time of each. Idle time (PICL's definition:
//! all time spent in communication routines) runs while the outermost one
//! is open: a statistics record inside it counts the idle time up to its
//! own time stamp, so busy time (time stamp − idle) never goes back. A
//! blocking call whose inner messages are not traced (the shared-memory
//! board, the MPI library's own collectives) is one wait: idle.
//!
//! PICL's `message` and `sync` records come from
//! [`Comm::message`](crate::Comm::message) and
//! [`Comm::sync`](crate::Comm::sync) (event level 2, like the user's own
//! sends and receives); the barrier inside a sync0 writes no block records.

// Without the `trace` feature the hook never calls in here.
#![cfg_attr(not(feature = "trace"), allow(dead_code))]

use super::clock::{Correction, Offset, RankStream, TimeSource};
use super::config::{Config, Info, Policy};
pub(crate) use super::event::Event;
use super::event::{block, Kind, Levels, Record, HOST_ID};
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Number of ranks of this process that are recording now.
pub(crate) static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Records kept free in every buffer for the final records (close, statistics,
/// trace_exit, trace_stop).
pub(crate) const RESERVE: usize = 8;

/// Smallest buffer, in records (PICL: 208 bytes).
pub(crate) const MIN_BUFFER: usize = RESERVE + 8;

/// Where the records of a job's ranks go when flushed or finished.
#[derive(Default)]
pub(crate) struct Collector {
    pub(crate) streams: Mutex<Vec<RankStream>>,
}

impl Collector {
    fn append(&self, node: i32, records: Vec<Record>, correction: Option<Correction>) {
        let mut s = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        let i = match s.iter().position(|x| x.node == node) {
            Some(i) => i,
            None => {
                s.push(RankStream {
                    node,
                    ..Default::default()
                });
                s.len() - 1
            }
        };
        s[i].records.extend(records);
        if let Some(c) = correction {
            s[i].correction = c;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OpKind {
    Send,
    Recv,
    Wait,
    /// message0 or sync0 (a sync0 hides the blocks of its barrier).
    Primitive {
        sync: bool,
    },
}

/// A timed operation in progress.
struct Op {
    kind: OpKind,
    t0: i64,
    /// Level this operation is recorded at (2 user, 3 inside a collective).
    lvl: i32,
    /// Tag sought (receives; −1: any).
    tag: i64,
    blocked: bool,
    /// The message this receive got: (from, tag, len, time).
    got: Option<(i32, i64, i64, i64)>,
}

/// The recorder of one rank.
pub(crate) struct RankRec {
    pub(crate) node: i32,
    /// Endpoints below this are nodes; this one is the host.
    nodes: u32,
    pub(crate) levels: Levels,
    clock: Arc<dyn TimeSource>,
    buf: Vec<Record>,
    cap: usize,
    policy: Policy,
    stopped: bool,
    pub(crate) exited: bool,
    /// The one flush PICL allows after traceexit has been made.
    flushed_after_exit: bool,
    ops: Vec<Op>,
    start: i64,
    /// Idle time up to the start of the open outermost operation (all of
    /// it when none is open).
    idle: i64,
    received: i64,
    recv_volume: i64,
    sent: i64,
    sent_volume: i64,
    probed: i64,
    /// Bytes of trace data generated (PICL `space`).
    space: i64,
    pub(crate) collector: Arc<Collector>,
    pub(crate) start_offset: Option<Offset>,
}

thread_local! {
    static REC: RefCell<Option<RankRec>> = const { RefCell::new(None) };
}

/// Nominal bytes of a record (PICL stores 4-byte integers: code, two time
/// words, node, then the fields).
fn nominal(k: &Kind) -> i64 {
    let fields = match k {
        Kind::TraceStart(_) | Kind::TraceLevel(_) => 3,
        Kind::Open { allocating } => allocating.is_some() as i64,
        Kind::Load { .. } | Kind::RecvBlocking { .. } => 1,
        Kind::TraceMark { .. } | Kind::TraceExit { .. } => 1,
        Kind::Send { .. } | Kind::Recv { .. } | Kind::RecvWaking { .. } => 3,
        Kind::Message | Kind::Sync | Kind::Close | Kind::TraceStop => 0,
        Kind::Compstats { .. } | Kind::TraceFlush { .. } => 2,
        Kind::Commstats { .. } => 5,
        Kind::TraceMessage { text } => (text.len() as i64 + 3) / 4,
        Kind::BlockBegin { .. } | Kind::BlockEnd { .. } => 3,
    };
    4 * (4 + fields)
}

/// An empty buffer for `cap` records whose memory is already touched, so
/// that recording never takes a page fault (PICL allocates its trace array
/// up front too).
fn buffer(cap: usize) -> Vec<Record> {
    let mut v = Vec::with_capacity(cap);
    v.resize(
        cap,
        Record {
            time: 0,
            node: 0,
            kind: Kind::Close,
        },
    );
    v.clear();
    v
}

impl RankRec {
    pub(crate) fn new(cfg: &Config, node: i32, nodes: u32, collector: Arc<Collector>) -> RankRec {
        let cap = cfg.buffer.clamp(MIN_BUFFER, super::config::MAX_BUFFER);
        RankRec {
            node,
            nodes,
            levels: cfg.levels,
            clock: cfg.clock.clone(),
            buf: buffer(cap),
            cap,
            policy: cfg.policy,
            stopped: false,
            exited: false,
            flushed_after_exit: false,
            ops: Vec::with_capacity(8),
            start: 0,
            idle: 0,
            received: 0,
            recv_volume: 0,
            sent: 0,
            sent_volume: 0,
            probed: 0,
            space: 0,
            collector,
            start_offset: None,
        }
    }

    #[inline]
    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ns()
    }

    #[inline]
    fn picl(&self, ep: u32) -> i32 {
        if ep >= self.nodes {
            HOST_ID
        } else {
            ep as i32
        }
    }

    /// Append a record, applying the buffer policy.
    #[inline]
    fn push(&mut self, time: i64, kind: Kind) {
        if self.exited {
            return;
        }
        self.space += nominal(&kind);
        if self.stopped {
            return;
        }
        if self.buf.len() + RESERVE >= self.cap {
            match self.policy {
                Policy::Stop => {
                    self.buf.push(Record {
                        time,
                        node: self.node,
                        kind: Kind::TraceStop,
                    });
                    self.stopped = true;
                    return;
                }
                Policy::Flush => self.flush_now(),
            }
        }
        self.buf.push(Record {
            time,
            node: self.node,
            kind,
        });
    }

    /// Append one of the final records (uses the reserve).
    fn push_final(&mut self, time: i64, kind: Kind) {
        self.space += nominal(&kind);
        self.buf.push(Record {
            time,
            node: self.node,
            kind,
        });
    }

    /// Statistics records at level `lvl`.
    #[inline]
    fn stats(&mut self, t: i64, lvl: i32) {
        if self.levels.compstats >= lvl {
            self.push(
                t,
                Kind::Compstats {
                    idle: self.idle_at(t),
                },
            );
        }
        if self.levels.commstats >= lvl {
            self.push(t, self.commstats());
        }
    }

    /// Cumulative idle time at `t`: what is settled, and the time so far
    /// of the outermost operation still open (communication, so idle).
    fn idle_at(&self, t: i64) -> i64 {
        match self.ops.first() {
            Some(op) => self.idle + (t - op.t0).max(0),
            None => self.idle,
        }
    }

    fn commstats(&self) -> Kind {
        Kind::Commstats {
            received: self.received,
            recv_volume: self.recv_volume,
            sent: self.sent,
            sent_volume: self.sent_volume,
            probed: self.probed,
        }
    }

    /// Hand the buffer to the collector and record the flush.
    pub(crate) fn flush_now(&mut self) {
        if self.exited {
            // PICL: "traceflush can be called one more time before it,
            // too, is disabled", so that trace_exit is the last record.
            if !self.flushed_after_exit {
                self.flushed_after_exit = true;
                let recs = std::mem::take(&mut self.buf);
                self.collector.append(self.node, recs, None);
            }
            return;
        }
        let t0 = self.now();
        let recs = std::mem::take(&mut self.buf);
        self.collector.append(self.node, recs, None);
        self.buf = buffer(self.cap);
        self.stopped = false;
        let t1 = self.now();
        self.push_final(t0, Kind::TraceFlush { finished: t1 });
    }

    fn begin(&mut self, kind: OpKind, lvl: i32, tag: i64) -> i64 {
        let t = self.now();
        self.ops.push(Op {
            kind,
            t0: t,
            lvl,
            tag,
            blocked: false,
            got: None,
        });
        t
    }

    /// Handle an engine event.
    #[inline]
    pub(crate) fn on(&mut self, e: Event) {
        match e {
            Event::Send {
                dst,
                tag,
                len,
                coll,
            } => {
                let lvl = 2 + coll as i32;
                let t = self.begin(OpKind::Send, lvl, tag as i64);
                if self.levels.event >= lvl {
                    let to = self.picl(dst);
                    self.push(
                        t,
                        Kind::Send {
                            to,
                            tag: tag as i64,
                            len: len as i64,
                        },
                    );
                }
                self.stats(t, lvl);
                self.sent += 1;
                self.sent_volume += len as i64;
            }
            Event::RecvBegin { tag, coll } => {
                let lvl = 2 + coll as i32;
                let t = self.begin(OpKind::Recv, lvl, tag.map_or(-1, |t| t as i64));
                self.stats(t, lvl);
            }
            Event::Blocked => {
                if let Some(op) = self.ops.last_mut() {
                    if op.kind == OpKind::Recv && !op.blocked && op.got.is_none() {
                        op.blocked = true;
                        let (t0, lvl, tag) = (op.t0, op.lvl, op.tag);
                        if self.levels.event >= lvl {
                            self.push(t0, Kind::RecvBlocking { tag });
                        }
                    }
                }
            }
            Event::Recv {
                src,
                tag,
                len,
                coll,
            } => {
                self.received += 1;
                self.recv_volume += len as i64;
                let from = self.picl(src);
                let in_recv = matches!(self.ops.last(), Some(op) if op.kind == OpKind::Recv);
                // Inside a blocking receive the record takes the time of its
                // return (read once, in `Done`).
                let t = if in_recv { 0 } else { self.now() };
                let msg = (from, tag as i64, len as i64, t);
                let prev = match self.ops.last_mut() {
                    Some(op) if op.kind == OpKind::Recv => op.got.replace(msg),
                    _ => Some(msg),
                };
                let prev = match prev {
                    // A posted receive's message was delivered during this
                    // blocking receive's wait: it is older than now.
                    Some((f, g, l, 0)) if in_recv => Some((f, g, l, self.now())),
                    p => p,
                };
                // A message delivered to a posted (non-blocking) receive.
                if let Some((from, tag, len, t)) = prev {
                    if self.levels.event >= 2 + coll as i32 {
                        self.push(t, Kind::Recv { from, tag, len });
                    }
                }
            }
            Event::Wait => {
                let lvl = self.ops.last().map_or(2, |o| o.lvl);
                self.begin(OpKind::Wait, lvl, -1);
            }
            Event::Done => {
                let Some(op) = self.ops.pop() else { return };
                let t = self.now();
                if self.ops.is_empty() {
                    self.idle += t - op.t0;
                }
                match op.kind {
                    OpKind::Send | OpKind::Primitive { .. } => self.stats(t, op.lvl),
                    OpKind::Recv => {
                        if let Some((from, tag, len, _)) = op.got {
                            if self.levels.event >= op.lvl {
                                let k = if op.blocked {
                                    Kind::RecvWaking { from, tag, len }
                                } else {
                                    Kind::Recv { from, tag, len }
                                };
                                self.push(t, k);
                            }
                        }
                        self.stats(t, op.lvl);
                    }
                    OpKind::Wait => {}
                }
            }
            Event::Probe => self.probed += 1,
            Event::Message | Event::Sync => {
                let sync = matches!(e, Event::Sync);
                let t = self.begin(OpKind::Primitive { sync }, 2, -1);
                if self.levels.event >= 2 {
                    self.push(t, if sync { Kind::Sync } else { Kind::Message });
                }
                self.stats(t, 2);
            }
            Event::BlockBegin { .. } | Event::BlockEnd { .. }
                if self
                    .ops
                    .iter()
                    .any(|o| o.kind == OpKind::Primitive { sync: true }) => {}
            Event::BlockBegin { op, root, seq } | Event::BlockEnd { op, root, seq } => {
                let begin = matches!(e, Event::BlockBegin { .. });
                let t = self.now();
                let (b, l, p) = (
                    block::of_op(op) as i64,
                    seq as i64,
                    match root {
                        None => -1,
                        Some(r) => self.picl(r) as i64,
                    },
                );
                let p = if op == 1 { 0 } else { p };
                if begin {
                    self.stats(t, 2);
                }
                if self.levels.event >= 2 {
                    self.push(
                        t,
                        if begin {
                            Kind::BlockBegin {
                                block_type: b,
                                location_type: l,
                                parameter_type: p,
                            }
                        } else {
                            Kind::BlockEnd {
                                block_type: b,
                                location_type: l,
                                parameter_type: p,
                            }
                        },
                    );
                }
                if !begin {
                    self.stats(t, 2);
                }
            }
        }
    }

    /// Start: trace_start and open (always), statistics at level 1.
    /// trace_start is at the job's common `origin` (this rank's clock; now
    /// without one), where every rank's trace begins (PICL: its clock is
    /// always zero); the time from there to now was spent agreeing on the
    /// origin, which is communication: idle.
    pub(crate) fn start(&mut self, allocating: Option<i64>, load: bool, origin: Option<i64>) {
        let t = self.now();
        let t0 = origin.map_or(t, |o| o.min(t));
        self.start = t0;
        self.idle = t - t0;
        self.push(t0, Kind::TraceStart(self.levels));
        self.push(t, Kind::Open { allocating });
        if load && self.levels.event >= 1 {
            self.push(t, Kind::Load { node: -1 });
        }
        self.stats(t, 1);
    }

    /// Start in the middle of a run (PICL tracehost / tracenode called by
    /// the program): trace_start and statistics, no open record.
    pub(crate) fn start_later(&mut self) {
        let t = self.now();
        self.start = t;
        self.push(t, Kind::TraceStart(self.levels));
        self.stats(t, 1);
    }

    /// trace_mark.
    pub(crate) fn mark(&mut self, m: i32) {
        let t = self.now();
        self.stats(t, 1);
        if self.levels.event >= 1 {
            self.push(t, Kind::TraceMark { mark: i64::from(m) });
        }
    }

    /// trace_level: record the new levels (always).
    pub(crate) fn set_levels(&mut self, l: Levels) {
        self.levels = l;
        let t = self.now();
        self.push(t, Kind::TraceLevel(l));
        self.stats(t, 1);
    }

    /// trace_exit: final statistics and the exit record; recording ends.
    pub(crate) fn exit(&mut self) {
        if self.exited {
            return;
        }
        let t = self.now();
        if self.levels.compstats >= 1 {
            self.push_final(
                t,
                Kind::Compstats {
                    idle: self.idle_at(t),
                },
            );
        }
        if self.levels.commstats >= 1 {
            let k = self.commstats();
            self.push_final(t, k);
        }
        let space = self.space + nominal(&Kind::TraceExit { space: 0 });
        self.push_final(t, Kind::TraceExit { space });
        self.exited = true;
    }

    /// close (always, unless exited), then trace_exit.
    pub(crate) fn close(&mut self) {
        if !self.exited {
            let t = self.now();
            self.push_final(t, Kind::Close);
        }
        self.exit();
    }

    pub(crate) fn info(&self) -> Info {
        Info {
            remaining: if self.stopped || self.exited {
                0
            } else {
                self.cap.saturating_sub(self.buf.len() + RESERVE)
            },
            levels: self.levels,
        }
    }

    /// Hand everything to the collector with the clock correction.
    pub(crate) fn finish(mut self, end: Option<Offset>, shared: bool) {
        let recs = std::mem::take(&mut self.buf);
        let c = Correction {
            start: self.start_offset,
            end,
            shared,
        };
        self.collector.append(self.node, recs, Some(c));
    }

    /// A trace message, written at once (bypassing the buffer's policy).
    pub(crate) fn message(&mut self, text: &str) {
        if self.exited {
            return;
        }
        let t = self.now();
        let mut s: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(80)
            .collect();
        s.truncate(s.trim_end().len());
        let kind = Kind::TraceMessage { text: s };
        self.space += nominal(&kind);
        let r = Record {
            time: t,
            node: self.node,
            kind,
        };
        self.collector.append(self.node, vec![r], None);
    }
}

/// The engine's events reach here when some rank of the process traces.
#[cold]
#[inline(never)]
pub(crate) fn on_event(e: Event) {
    REC.with(|r| {
        if let Ok(mut r) = r.try_borrow_mut() {
            if let Some(r) = r.as_mut() {
                r.on(e);
            }
        }
    });
}

/// Install a recorder on this thread.
pub(crate) fn install(r: RankRec) {
    REC.with(|c| *c.borrow_mut() = Some(r));
    ACTIVE.fetch_add(1, Ordering::SeqCst);
}

/// Remove this thread's recorder.
pub(crate) fn uninstall() -> Option<RankRec> {
    let r = REC.with(|c| c.borrow_mut().take());
    if r.is_some() {
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
    }
    r
}

/// Run `f` on this thread's recorder, if any.
pub(crate) fn with<R>(f: impl FnOnce(&mut RankRec) -> R) -> Option<R> {
    REC.with(|c| c.try_borrow_mut().ok()?.as_mut().map(f))
}

/// Whether a recorder is active anywhere in this process (calls that
/// have a quicker path without events take the recorded one then).
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// Run `f` as one collective block (PICL block_begin / block_end with
/// operation code `op`, root endpoint `root` and sequence number `seq`),
/// for calls whose inner messages are not traced (the transport library's
/// own collectives, the shared-memory board).
pub(crate) fn in_block<R>(op: u8, root: Option<u32>, seq: u32, f: impl FnOnce() -> R) -> R {
    hook(Event::BlockBegin { op, root, seq });
    let r = in_wait(f);
    hook(Event::BlockEnd { op, root, seq });
    r
}

/// Run `f`, a wait whose inner messages are not traced (a call on the
/// shared-memory board, a signature exchange there), as one wait: its
/// time is idle.
pub(crate) fn in_wait<R>(f: impl FnOnce() -> R) -> R {
    hook(Event::Wait);
    let r = f();
    hook(Event::Done);
    r
}

/// Report one event. One predictable branch when tracing is off.
#[inline(always)]
pub fn hook(event: Event) {
    #[cfg(feature = "trace")]
    if ACTIVE.load(std::sync::atomic::Ordering::Relaxed) != 0 {
        on_event(event);
    }
    #[cfg(not(feature = "trace"))]
    let _ = event;
}
