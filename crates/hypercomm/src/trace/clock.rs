//! Time sources and clock synchronisation.
//!
//! * [`TimeSource`]: where timestamps come from. [`Monotonic`] (the default)
//!   reads `Instant`; a simulated transport supplies virtual time through
//!   the same trait ([`Manual`] is a settable clock for tests and
//!   simulators).
//! * Offsets: at trace start every rank measures its clock's offset to rank
//!   0 by several ping-pong exchanges and keeps the one with the smallest
//!   round trip (Cristian's method); the measurement is repeated at exit, and
//!   timestamps are corrected by the line through the two (linear drift).
//! * Origin: then rank 0 reads its clock and sends that time to every rank,
//!   which maps it onto its own clock with its offset; each rank's
//!   `trace_start` is at that common origin (PICL's tracenode with `sync`:
//!   every node's trace starts at clock zero, and the time until its `open`
//!   was spent in that exchange, idle).
//! * [`merge`]: the per-rank record streams are corrected, normalised to a
//!   common origin, made causal (a receive is moved forward, with the rest
//!   of its rank's records, when the correction left it before its send) and
//!   merged in time order, never placing a receive before its send.
//!
//! Ranks that are threads of one process share one clock: the offsets are
//! still measured (and reported), but the applied offset is exactly zero
//! ([`TimeSource::shared`]). Ranks that are separate processes never share
//! one (each process's [`Monotonic`] counts from that process's first
//! reading): their measured offsets are always applied.
//!
//! Not done yet: a better estimator than the minimum round trip (e.g.
//! several samples' convex hull), and synchronising the host's clock when it
//! runs in a different process from node 0 (it is measured against node 0
//! like every other rank).

use super::event::{Kind, Record, Trace};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// A source of timestamps in nanoseconds.
pub trait TimeSource: Send + Sync {
    /// Now, in nanoseconds from an arbitrary fixed origin of this source.
    fn now_ns(&self) -> i64;
    /// Whether every rank that uses this source in one process (the
    /// threads of a job) reads the same clock; then no offset correction
    /// is applied between them. Ranks in separate processes are always
    /// corrected, whatever this says.
    fn shared(&self) -> bool {
        false
    }
}

fn process_epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The process's monotonic clock (`std::time::Instant`), in nanoseconds
/// from this process's first reading: shared by the process's threads, not
/// by separate processes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Monotonic;

impl TimeSource for Monotonic {
    #[inline]
    fn now_ns(&self) -> i64 {
        process_epoch().elapsed().as_nanos() as i64
    }
    fn shared(&self) -> bool {
        true
    }
}

/// A clock that only moves when told to (virtual time for simulators and
/// deterministic tests).
#[derive(Debug, Default)]
pub struct Manual {
    now: AtomicI64,
    step: i64,
}

impl Manual {
    /// A clock at 0 that advances by `step` ns on every reading (0: never).
    pub fn new(step: i64) -> Manual {
        Manual {
            now: AtomicI64::new(0),
            step,
        }
    }
    /// Set the time.
    pub fn set(&self, ns: i64) {
        self.now.store(ns, Ordering::SeqCst);
    }
}

impl TimeSource for Manual {
    fn now_ns(&self) -> i64 {
        self.now.fetch_add(self.step, Ordering::SeqCst)
    }
    fn shared(&self) -> bool {
        true
    }
}

/// One offset measurement: rank 0's clock minus ours, at our local time
/// `at`, with the round trip of the best exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offset {
    /// Our local time of the measurement (ns).
    pub at: i64,
    /// Rank 0's time minus ours (ns).
    pub offset: i64,
    /// Round trip of the exchange used (ns).
    pub rtt: i64,
}

/// Pick the best of several exchanges `(t0, t_root, t1)` (local send time,
/// root's time, local receive time): the one with the smallest round trip.
pub fn best_offset(samples: &[(i64, i64, i64)]) -> Option<Offset> {
    samples
        .iter()
        .min_by_key(|s| s.2 - s.0)
        .map(|&(t0, tr, t1)| Offset {
            at: (t0 + t1) / 2,
            offset: tr - (t0 + t1) / 2,
            rtt: t1 - t0,
        })
}

/// The clock correction of one rank: linear through the start and exit
/// measurements (constant with one of them, none without).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Correction {
    /// At trace start.
    pub start: Option<Offset>,
    /// At trace exit.
    pub end: Option<Offset>,
    /// Apply nothing (ranks share a clock).
    pub shared: bool,
}

impl Correction {
    /// Offset to add to local time `t`.
    pub fn offset_at(&self, t: i64) -> i64 {
        if self.shared {
            return 0;
        }
        match (self.start, self.end) {
            (Some(a), Some(b)) if b.at != a.at => {
                let slope = (b.offset - a.offset) as f64 / (b.at - a.at) as f64;
                a.offset + ((t - a.at) as f64 * slope).round() as i64
            }
            (Some(a), _) => a.offset,
            (None, Some(b)) => b.offset,
            (None, None) => 0,
        }
    }
}

/// One rank's records in its local clock, with its correction.
#[derive(Debug, Clone, Default)]
pub struct RankStream {
    /// PICL node id.
    pub node: i32,
    /// Records in recording order, local time.
    pub records: Vec<Record>,
    /// How to map local time onto rank 0's clock.
    pub correction: Correction,
}

/// Key matching a send to its receive: (from, to, tag, length).
type MsgKey = (i32, i32, i64, i64);

fn send_key(r: &Record) -> Option<MsgKey> {
    match r.kind {
        Kind::Send { to, tag, len } => Some((r.node, to, tag, len)),
        _ => None,
    }
}

fn recv_key(r: &Record) -> Option<MsgKey> {
    match r.kind {
        Kind::Recv { from, tag, len } | Kind::RecvWaking { from, tag, len } => {
            Some((from, r.node, tag, len))
        }
        _ => None,
    }
}

/// For every receive record `(stream, index)`, its send `(stream, index)`:
/// the k-th send from a to b with a tag and length matches the k-th such
/// receive (per-pair FIFO, the non-overtaking rule).
pub fn match_messages(streams: &[Vec<Record>]) -> HashMap<(usize, usize), (usize, usize)> {
    let mut sends: HashMap<MsgKey, VecDeque<(usize, usize)>> = HashMap::new();
    for (s, recs) in streams.iter().enumerate() {
        for (i, r) in recs.iter().enumerate() {
            if let Some(k) = send_key(r) {
                sends.entry(k).or_default().push_back((s, i));
            }
        }
    }
    let mut out = HashMap::new();
    for (s, recs) in streams.iter().enumerate() {
        for (i, r) in recs.iter().enumerate() {
            if let Some(k) = recv_key(r) {
                if let Some(q) = sends.get_mut(&k) {
                    if let Some(src) = q.pop_front() {
                        out.insert((s, i), src);
                    }
                }
            }
        }
    }
    out
}

/// Correct, normalise and merge per-rank streams into one causal trace.
///
/// 1. Each rank's local times get its [`Correction`]; the origin is the
///    earliest corrected `trace_start` (or record).
/// 2. Each stream is put in time order (stable).
/// 3. Where a receive precedes its send, the receiving rank's records from
///    that receive on move forward by the difference; repeated until no
///    receive precedes its send.
/// 4. A k-way merge by time that holds back a receive until its send has
///    been emitted.
pub fn merge(streams: Vec<RankStream>) -> Trace {
    merge_from(streams, None)
}

/// [`merge`] with a given origin (`None`: the earliest corrected
/// `trace_start`).
pub fn merge_from(mut streams: Vec<RankStream>, origin: Option<i64>) -> Trace {
    // 1. correction
    for s in &mut streams {
        let c = s.correction;
        for r in &mut s.records {
            r.time += c.offset_at(r.time);
            if let Kind::TraceFlush { finished } = &mut r.kind {
                *finished += c.offset_at(*finished);
            }
        }
    }
    let origin = origin.unwrap_or_else(|| {
        streams
            .iter()
            .flat_map(|s| {
                s.records
                    .iter()
                    .find(|r| matches!(r.kind, Kind::TraceStart(_)))
                    .or(s.records.first())
            })
            .map(|r| r.time)
            .min()
            .unwrap_or(0)
    });
    let mut recs: Vec<Vec<Record>> = streams
        .into_iter()
        .map(|s| {
            let mut v = s.records;
            for r in &mut v {
                r.time -= origin;
                if let Kind::TraceFlush { finished } = &mut r.kind {
                    *finished -= origin;
                }
            }
            // 2. time order within the rank (stable).
            v.sort_by_key(|r| r.time);
            v
        })
        .collect();
    // 3. causality
    let matches = match_messages(&recs);
    for _ in 0..=recs.len() + 1 {
        let mut moved = false;
        let mut keys: Vec<_> = matches.iter().collect();
        keys.sort();
        for (&(rs, ri), &(ss, si)) in keys {
            let (st, rt) = (recs[ss][si].time, recs[rs][ri].time);
            if rt < st {
                let d = st - rt;
                for r in &mut recs[rs][ri..] {
                    r.time += d;
                    if let Kind::TraceFlush { finished } = &mut r.kind {
                        *finished += d;
                    }
                }
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    // 4. causal k-way merge
    let total: usize = recs.iter().map(|v| v.len()).sum();
    let mut head = vec![0usize; recs.len()];
    let mut emitted: Vec<Vec<bool>> = recs.iter().map(|v| vec![false; v.len()]).collect();
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        let mut best: Option<(i64, usize)> = None;
        let mut fallback: Option<(i64, usize)> = None;
        for (s, v) in recs.iter().enumerate() {
            let Some(r) = v.get(head[s]) else { continue };
            let key = (r.time, s);
            if fallback.is_none_or(|f| key < f) {
                fallback = Some(key);
            }
            let ready = match matches.get(&(s, head[s])) {
                Some(&(ss, si)) => emitted[ss][si],
                None => true,
            };
            if ready && best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        let (_, s) = best.or(fallback).expect("records remain");
        emitted[s][head[s]] = true;
        out.push(recs[s][head[s]].clone());
        head[s] += 1;
    }
    Trace { records: out }
}

/// Check that no receive precedes its send (in time and in file order).
/// Returns the first violation as text.
pub fn check_causal(t: &Trace) -> Result<(), String> {
    let one = vec![t.records.clone()];
    let m = match_messages(&one);
    for (&(_, ri), &(_, si)) in &m {
        let (r, s) = (&t.records[ri], &t.records[si]);
        if ri < si || r.time < s.time {
            return Err(format!(
                "receive {r:?} (position {ri}) precedes its send {s:?} (position {si})"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::Levels;

    fn rec(time: i64, node: i32, kind: Kind) -> Record {
        Record { time, node, kind }
    }

    #[test]
    fn best_offset_takes_the_smallest_round_trip() {
        // True offset 1000; the second exchange is the tightest.
        let o = best_offset(&[(0, 1800, 1000), (2000, 3060, 2100), (5000, 6500, 5600)]).unwrap();
        assert_eq!(o.rtt, 100);
        assert_eq!(o.offset, 1010);
    }

    #[test]
    fn linear_drift_is_corrected() {
        let c = Correction {
            start: Some(Offset {
                at: 0,
                offset: 100,
                rtt: 1,
            }),
            end: Some(Offset {
                at: 1_000_000,
                offset: 200,
                rtt: 1,
            }),
            shared: false,
        };
        assert_eq!(c.offset_at(500_000), 150);
        assert_eq!(c.offset_at(2_000_000), 300);
    }

    #[test]
    fn merge_repairs_a_receive_before_its_send() {
        // Rank 1's clock is 5 µs behind, and its offset was not measured.
        let send = Kind::Send {
            to: 1,
            tag: 7,
            len: 8,
        };
        let recv = Kind::Recv {
            from: 0,
            tag: 7,
            len: 8,
        };
        let s0 = RankStream {
            node: 0,
            records: vec![
                rec(0, 0, Kind::TraceStart(Levels::all(3))),
                rec(10_000, 0, send),
            ],
            correction: Correction::default(),
        };
        let s1 = RankStream {
            node: 1,
            records: vec![
                rec(0, 1, Kind::TraceStart(Levels::all(3))),
                rec(6_000, 1, recv),
                rec(7_000, 1, Kind::Close),
            ],
            correction: Correction::default(),
        };
        let t = merge(vec![s0, s1]);
        check_causal(&t).unwrap();
        let close = t.records.iter().find(|r| r.kind == Kind::Close).unwrap();
        assert_eq!(
            close.time, 11_000,
            "the rest of rank 1 moved with the receive"
        );
    }

    #[test]
    fn merge_holds_back_a_receive_with_the_same_time_as_its_send() {
        let s0 = RankStream {
            node: 0,
            records: vec![rec(
                5,
                0,
                Kind::Send {
                    to: 1,
                    tag: 0,
                    len: 0,
                },
            )],
            ..Default::default()
        };
        let s1 = RankStream {
            node: 1,
            records: vec![rec(
                5,
                1,
                Kind::Recv {
                    from: 0,
                    tag: 0,
                    len: 0,
                },
            )],
            ..Default::default()
        };
        // Rank 1 listed first: the receive must still come second.
        let t = merge(vec![s1, s0]);
        assert!(matches!(t.records[0].kind, Kind::Send { .. }));
        check_causal(&t).unwrap();
    }
}
