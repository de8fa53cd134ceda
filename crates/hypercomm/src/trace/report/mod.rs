//! What a trace says: operation spans, messages, utilisation, statistics —
//! and the self-contained HTML report with ParaGraph's views (space-time
//! diagram, utilisation Gantt chart, communication matrix, per-operation
//! statistics).
//!
//! Spans are recovered from the records alone, so any PICL file works:
//!
//! * blocked receive: `recv_blocking` → `recv_waking` (idle);
//! * send: from the `send` record to the last statistics record written
//!   right after it (PICL writes statistics before and after the call), or
//!   an instant without statistics;
//! * immediate receive: from the statistics written right before the `recv`
//!   record to the record (when statistics follow it at the same time, as
//!   they do for a blocking receive; otherwise an instant);
//! * collective: `block_begin` → `block_end`.
//!
//! Utilisation (ParaGraph's three states, one meaning for waiting):
//! waiting = blocked in a receive, or inside a collective outside its own
//! sends and receives (the records do not say which part of a collective
//! was spent waiting for the others; the rest of its time is theirs);
//! communicating = inside a send or a receive that did not block; busy =
//! the rest. Above 64 nodes the communication matrix draws only the pairs
//! that exchanged messages (a simulated 1 024-node run would otherwise
//! need a million cells), and the Gantt chart aggregates ranks into rows
//! (see [`html`](fn@html)).
//!
//! Not done yet: ParaGraph's animated and critical-path views.

use super::clock::match_messages;
use super::event::{block, node_name, Kind, Record, Trace};
use std::collections::BTreeMap;
use std::fmt::Write as _;

mod html;
mod timeline;
pub use html::html;
pub use timeline::MAX_ROWS;

/// What a span is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanKind {
    /// A send.
    Send,
    /// A receive that found its message at once.
    Recv,
    /// A receive that blocked (idle until the message came).
    Blocked,
    /// A collective (block type).
    Block(i64),
}

impl SpanKind {
    /// Display name.
    pub fn name(&self) -> String {
        match self {
            SpanKind::Send => "send".into(),
            SpanKind::Recv => "recv".into(),
            SpanKind::Blocked => "recv (blocked)".into(),
            SpanKind::Block(b) => block::name(*b as i32).into(),
        }
    }
}

/// An operation with a duration on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Node id.
    pub node: i32,
    /// What.
    pub kind: SpanKind,
    /// Start (ns).
    pub start: i64,
    /// End (ns).
    pub end: i64,
    /// Bytes moved (sends and receives).
    pub bytes: i64,
    /// Peer (sends: destination; receives: source).
    pub peer: Option<i32>,
    /// Tag.
    pub tag: i64,
    /// Nesting depth inside collectives.
    pub depth: usize,
}

/// A message: send and receive matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// Sender.
    pub from: i32,
    /// Receiver.
    pub to: i32,
    /// Tag.
    pub tag: i64,
    /// Bytes.
    pub len: i64,
    /// Send time (ns).
    pub sent: i64,
    /// Receive time (ns).
    pub received: i64,
    /// Index of the send record in the trace.
    pub send_index: usize,
    /// Index of the receive record.
    pub recv_index: usize,
}

fn is_stats(k: &Kind) -> bool {
    matches!(k, Kind::Compstats { .. } | Kind::Commstats { .. })
}

/// Everything the views need.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// Node ids, nodes ascending then the host.
    pub nodes: Vec<i32>,
    /// Operation spans.
    pub spans: Vec<Span>,
    /// Matched messages.
    pub messages: Vec<Message>,
    /// First and last time per node (ns).
    pub extent: BTreeMap<i32, (i64, i64)>,
    /// Earliest and latest time overall.
    pub range: (i64, i64),
}

/// Analyse a merged trace.
pub fn analyse(t: &Trace) -> Analysis {
    let nodes = t.nodes();
    let mut spans = Vec::new();
    let mut extent: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
    for &n in &nodes {
        let recs: Vec<(usize, &Record)> = t
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.node == n)
            .collect();
        if let (Some(f), Some(l)) = (recs.first(), recs.last()) {
            extent.insert(n, (f.1.time, l.1.time));
        }
        let mut blocks: Vec<(i64, i64)> = Vec::new(); // (block type, start)
        let mut blocked_at: Option<i64> = None;
        for (j, &(_, r)) in recs.iter().enumerate() {
            let depth = blocks.len();
            match &r.kind {
                Kind::Send { to, tag, len } => {
                    let mut end = r.time;
                    let mut comp = 0;
                    for (_, s) in recs[j + 1..].iter().take_while(|(_, s)| is_stats(&s.kind)) {
                        if matches!(s.kind, Kind::Compstats { .. }) {
                            comp += 1;
                            if comp == 2 {
                                end = s.time;
                            }
                        } else if comp == 0 || comp == 2 {
                            end = end.max(s.time);
                        }
                    }
                    spans.push(Span {
                        node: n,
                        kind: SpanKind::Send,
                        start: r.time,
                        end,
                        bytes: *len,
                        peer: Some(*to),
                        tag: *tag,
                        depth,
                    });
                }
                Kind::RecvBlocking { .. } => blocked_at = Some(r.time),
                Kind::RecvWaking { from, tag, len } => {
                    spans.push(Span {
                        node: n,
                        kind: SpanKind::Blocked,
                        start: blocked_at.take().unwrap_or(r.time),
                        end: r.time,
                        bytes: *len,
                        peer: Some(*from),
                        tag: *tag,
                        depth,
                    });
                }
                Kind::Recv { from, tag, len } => {
                    // A blocking receive's statistics follow it at the same
                    // time; then the ones just before it mark its entry. A
                    // message delivered to a posted receive has none.
                    let timed = recs
                        .get(j + 1)
                        .is_some_and(|(_, n)| is_stats(&n.kind) && n.time == r.time);
                    let start = match j.checked_sub(1).map(|k| recs[k].1) {
                        Some(p) if timed && is_stats(&p.kind) => p.time,
                        _ => r.time,
                    };
                    spans.push(Span {
                        node: n,
                        kind: SpanKind::Recv,
                        start,
                        end: r.time,
                        bytes: *len,
                        peer: Some(*from),
                        tag: *tag,
                        depth,
                    });
                }
                Kind::BlockBegin { block_type, .. } => blocks.push((*block_type, r.time)),
                Kind::BlockEnd { block_type, .. } => {
                    if let Some(i) = blocks.iter().rposition(|b| b.0 == *block_type) {
                        let (b, start) = blocks.remove(i);
                        spans.push(Span {
                            node: n,
                            kind: SpanKind::Block(b),
                            start,
                            end: r.time,
                            bytes: 0,
                            peer: None,
                            tag: 0,
                            depth: i,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    let one = vec![t.records.clone()];
    let mut messages: Vec<Message> = match_messages(&one)
        .into_iter()
        .filter_map(|((_, ri), (_, si))| {
            let (r, s) = (&t.records[ri], &t.records[si]);
            match s.kind {
                Kind::Send { to, tag, len } => Some(Message {
                    from: s.node,
                    to,
                    tag,
                    len,
                    sent: s.time,
                    received: r.time,
                    send_index: si,
                    recv_index: ri,
                }),
                _ => None,
            }
        })
        .collect();
    messages.sort_by_key(|m| (m.sent, m.send_index));
    let range = (
        t.records.iter().map(|r| r.time).min().unwrap_or(0),
        t.records.iter().map(|r| r.time).max().unwrap_or(0),
    );
    Analysis {
        nodes,
        spans,
        messages,
        extent,
        range,
    }
}

/// Utilisation of one node (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Utilisation {
    /// Computing.
    pub busy: i64,
    /// Communicating: in a send or receive that did not block.
    pub overhead: i64,
    /// Waiting: blocked in a receive, or in a collective outside its own
    /// sends and receives.
    pub idle: i64,
}

/// State 0 of [`states`]: computing.
pub const BUSY: u8 = 0;
/// State 1 of [`states`]: in a send or receive that did not block.
pub const COMMUNICATING: u8 = 1;
/// State 2 of [`states`]: waiting (blocked in a receive, or inside a
/// collective outside its own sends and receives).
pub const WAITING: u8 = 2;

/// Interval states of one node, in time order: (start, end, state) with
/// state [`BUSY`], [`COMMUNICATING`] or [`WAITING`].
pub fn states(a: &Analysis, node: i32) -> Vec<(i64, i64, u8)> {
    let Some(&(lo, hi)) = a.extent.get(&node) else {
        return Vec::new();
    };
    // Sweep over change points: (time, d_blocked, d_in_call, d_collective).
    let mut ev: Vec<(i64, i32, i32, i32)> = Vec::new();
    for s in a.spans.iter().filter(|s| s.node == node) {
        let (b, c, k) = match s.kind {
            SpanKind::Blocked => (1, 0, 0),
            SpanKind::Block(_) => (0, 0, 1),
            SpanKind::Send | SpanKind::Recv => (0, 1, 0),
        };
        ev.push((s.start, b, c, k));
        ev.push((s.end, -b, -c, -k));
    }
    ev.sort();
    let mut out: Vec<(i64, i64, u8)> = Vec::new();
    let (mut b, mut c, mut k, mut t) = (0, 0, 0, lo);
    let state = |b: i32, c: i32, k: i32| {
        if b > 0 {
            WAITING
        } else if c > 0 {
            COMMUNICATING
        } else if k > 0 {
            WAITING
        } else {
            BUSY
        }
    };
    for (time, d_b, d_c, d_k) in ev {
        if time > t {
            let s = state(b, c, k);
            match out.last_mut() {
                Some(l) if l.2 == s && l.1 == t => l.1 = time,
                _ => out.push((t, time, s)),
            }
            t = time;
        }
        b += d_b;
        c += d_c;
        k += d_k;
    }
    if hi > t {
        out.push((t, hi, state(b, c, k)));
    }
    out
}

/// Where the work starts: when every node has begun recording (every rank
/// has started and, for processes, joined the job and synchronised its
/// clock), or at the first send or collective if that comes earlier (a
/// rank that starts only after the others have done their part must not
/// hide their work in the start-up). What comes before is start-up:
/// threads or processes coming up one after another.
pub fn work_start(a: &Analysis) -> i64 {
    let all_up = a.extent.values().map(|e| e.0).max().unwrap_or(a.range.0);
    let first_call = a
        .spans
        .iter()
        .filter(|s| matches!(s.kind, SpanKind::Send | SpanKind::Block(_)))
        .map(|s| s.start)
        .min()
        .unwrap_or(all_up);
    all_up.min(first_call).clamp(a.range.0, a.range.1)
}

/// Totals of [`states`].
pub fn utilisation(a: &Analysis, node: i32) -> Utilisation {
    let mut u = Utilisation::default();
    for (s, e, st) in states(a, node) {
        match st {
            BUSY => u.busy += e - s,
            COMMUNICATING => u.overhead += e - s,
            _ => u.idle += e - s,
        }
    }
    u
}

/// Statistics of one operation kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpStats {
    /// Calls.
    pub count: u64,
    /// Total time (ns).
    pub total: i64,
    /// Longest (ns).
    pub max: i64,
    /// Bytes.
    pub bytes: i64,
}

/// Per-operation statistics (name → stats), outermost and nested alike.
pub fn op_stats(a: &Analysis) -> BTreeMap<String, OpStats> {
    let mut m: BTreeMap<String, OpStats> = BTreeMap::new();
    for s in &a.spans {
        let e = m.entry(s.kind.name()).or_default();
        e.count += 1;
        e.total += s.end - s.start;
        e.max = e.max.max(s.end - s.start);
        e.bytes += s.bytes;
    }
    m
}

/// Bytes sent from each node to each node: (from, to) → (messages, bytes),
/// counted from the send records.
pub fn matrix(t: &Trace) -> BTreeMap<(i32, i32), (u64, i64)> {
    let mut m: BTreeMap<(i32, i32), (u64, i64)> = BTreeMap::new();
    for r in &t.records {
        if let Kind::Send { to, len, .. } = r.kind {
            let e = m.entry((r.node, to)).or_default();
            e.0 += 1;
            e.1 += len;
        }
    }
    m
}

/// A duration with three significant digits and no trailing zeros, in the
/// largest unit that keeps it at least 1: "9 µs", "12.5 ms", "1.23 s",
/// "640 ns".
pub(crate) fn fmt_ns(ns: i64) -> String {
    let a = ns.unsigned_abs();
    if a < 1_000 {
        return format!("{ns} ns");
    }
    // Round to three significant digits first, so that 999 999 ns reads
    // "1 ms" and not "1000 µs".
    let scale = 10u64.pow(a.ilog10() - 2);
    let r = (a + scale / 2) / scale * scale;
    let (unit, div) = match r {
        1_000_000_000.. => ("s", 1e9),
        1_000_000.. => ("ms", 1e6),
        _ => ("µs", 1e3),
    };
    let v = r as f64 / div;
    let decimals = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    let sign = if ns < 0 { "-" } else { "" };
    format!("{sign}{text} {unit}")
}

/// A plain-text summary (`hypercomm trace stats`).
pub fn stats_text(t: &Trace) -> String {
    let a = analyse(t);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} records, {} nodes, {} messages matched, span {}",
        t.records.len(),
        a.nodes.len(),
        a.messages.len(),
        fmt_ns(a.range.1 - a.range.0)
    );
    let _ = writeln!(
        s,
        "\n{:<10} {:>12} {:>13} {:>12} {:>8} {:>10} {:>8} {:>10}",
        "node", "busy", "communicating", "waiting", "sent", "bytes", "recvd", "bytes"
    );
    for &n in &a.nodes {
        let u = utilisation(&a, n);
        let (mut sn, mut sb, mut rn, mut rb) = (0, 0, 0, 0);
        for r in t.records.iter().filter(|r| r.node == n) {
            match r.kind {
                Kind::Send { len, .. } => {
                    sn += 1;
                    sb += len;
                }
                Kind::Recv { len, .. } | Kind::RecvWaking { len, .. } => {
                    rn += 1;
                    rb += len;
                }
                _ => {}
            }
        }
        let _ = writeln!(
            s,
            "{:<10} {:>12} {:>13} {:>12} {:>8} {:>10} {:>8} {:>10}",
            node_name(n),
            fmt_ns(u.busy),
            fmt_ns(u.overhead),
            fmt_ns(u.idle),
            sn,
            sb,
            rn,
            rb
        );
    }
    let _ = writeln!(
        s,
        "\n{:<16} {:>8} {:>12} {:>12} {:>12} {:>12}",
        "operation", "count", "total", "mean", "max", "bytes"
    );
    for (name, o) in op_stats(&a) {
        let _ = writeln!(
            s,
            "{:<16} {:>8} {:>12} {:>12} {:>12} {:>12}",
            name,
            o.count,
            fmt_ns(o.total),
            fmt_ns(o.total / o.count.max(1) as i64),
            fmt_ns(o.max),
            o.bytes
        );
    }
    let marks: Vec<String> = t
        .records
        .iter()
        .filter_map(|r| match r.kind {
            Kind::TraceMark { mark } => Some(format!("{}@{}", mark, fmt_ns(r.time))),
            _ => None,
        })
        .take(20)
        .collect();
    if !marks.is_empty() {
        let _ = writeln!(s, "\nmarks: {}", marks.join(" "));
    }
    if t.records.iter().any(|r| r.kind == Kind::TraceStop) {
        let _ = writeln!(
            s,
            "\nnote: some buffers filled up (trace_stop): records are missing"
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::picl;

    #[test]
    fn spans_and_utilisation_from_picl_records() {
        let text = "\
trace_start clock 0 0 node 0 event 3 compstats 3 commstats 3
send clock 0 10 node 0 to 1 type 5 lth 8
compstats clock 0 10 node 0 busy 0 10 idle 0 0
compstats clock 0 20 node 0 busy 0 10 idle 0 10
close clock 0 100 node 0
trace_start clock 0 0 node 1 event 3 compstats 3 commstats 3
recv_blocking clock 0 5 node 1 type 5
recv_waking clock 0 30 node 1 from 0 type 5 lth 8
close clock 0 100 node 1
";
        let mut t = picl::parse(text).unwrap();
        t.records.sort_by_key(|r| r.time);
        let a = analyse(&t);
        assert_eq!(a.messages.len(), 1);
        let send = a.spans.iter().find(|s| s.kind == SpanKind::Send).unwrap();
        assert_eq!((send.start, send.end), (10_000, 20_000));
        let u1 = utilisation(&a, 1);
        assert_eq!(u1.idle, 25_000);
        let u0 = utilisation(&a, 0);
        assert_eq!(u0.overhead, 10_000);
        assert_eq!(u0.busy + u0.overhead + u0.idle, 100_000);
        let html = html(&t);
        assert!(html.contains("id=\"spacetime\"") && html.contains("id=\"matrix\""));
        assert!(!html.contains("http"), "nothing fetched");
    }

    #[test]
    fn durations_have_three_significant_digits() {
        for (ns, text) in [
            (0, "0 ns"),
            (640, "640 ns"),
            (9_000, "9 µs"),
            (9_500, "9.5 µs"),
            (12_345, "12.3 µs"),
            (100_000, "100 µs"),
            (999_999, "1 ms"),
            (12_500_000, "12.5 ms"),
            (1_234_567_890, "1.23 s"),
            (120_000_000_000, "120 s"),
            (-1_500, "-1.5 µs"),
        ] {
            assert_eq!(fmt_ns(ns), text, "{ns} ns");
        }
    }

    /// Waiting in a collective is waiting, as in a blocked receive; the
    /// collective's own sends are communication.
    #[test]
    fn waiting_in_a_collective_is_waiting() {
        let text = "\
trace_start clock 0 0 node 0 event 3 compstats 3 commstats 3
block_begin clock 0 10 node 0 block_type -1 location_type 1 parameter_type 0
send clock 0 20 node 0 to 1 type 5 lth 8
compstats clock 0 20 node 0 busy 0 20 idle 0 0
compstats clock 0 25 node 0 busy 0 20 idle 0 5
block_end clock 0 60 node 0 block_type -1 location_type 1 parameter_type 0
close clock 0 100 node 0
";
        let t = picl::parse(text).unwrap();
        let a = analyse(&t);
        assert_eq!(
            states(&a, 0),
            [
                (0, 10_000, BUSY),
                (10_000, 20_000, WAITING),
                (20_000, 25_000, COMMUNICATING),
                (25_000, 60_000, WAITING),
                (60_000, 100_000, BUSY)
            ]
        );
        let u = utilisation(&a, 0);
        assert_eq!((u.busy, u.overhead, u.idle), (50_000, 5_000, 45_000));
    }
}
