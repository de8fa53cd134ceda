//! Chrome Trace Event Format (JSON object form) for Perfetto and
//! chrome://tracing.
//!
//! * one process ("hypercomm"), a thread (track) per rank, named and
//!   sorted (nodes by number, the host last);
//! * complete events (`ph: "X"`) for sends, receives, blocked receives and
//!   collectives (category `p2p` or `collective`);
//! * flow events (`ph: "s"` at the send, `ph: "f"`, `bp: "e"` at the
//!   receive, category `message`) so that each message is an arrow;
//! * instant events (`ph: "i"`) for marks, trace messages, trace_stop and
//!   flushes; counter events (`ph: "C"`) for the bytes sent and received.
//!
//! Times are microseconds (fractional: the recorder keeps nanoseconds).
//!
//! Not done yet: reading Chrome JSON back (PICL and raw files are the
//! lossless formats).

use super::event::{node_name, Kind, Trace, HOST_ID};
use super::report::{analyse, SpanKind};
use serde_json::{json, Value};

/// Track id of a node (the host after every node).
fn tid(node: i32, nodes: &[i32]) -> i64 {
    if node == HOST_ID {
        nodes.iter().filter(|&&n| n != HOST_ID).count() as i64
    } else {
        node as i64
    }
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// The trace as Chrome Trace Event Format JSON.
pub fn write(t: &Trace) -> String {
    serde_json::to_string(&to_value(t)).expect("JSON")
}

/// The trace as a JSON value (`{"traceEvents": [...], ...}`).
pub fn to_value(t: &Trace) -> Value {
    let a = analyse(t);
    let nodes = a.nodes.clone();
    let mut ev: Vec<Value> = Vec::new();
    ev.push(
        json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "ts": 0,
        "args": {"name": "hypercomm"}}),
    );
    for &n in &nodes {
        let id = tid(n, &nodes);
        ev.push(
            json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": id, "ts": 0,
            "args": {"name": node_name(n)}}),
        );
        ev.push(
            json!({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": id, "ts": 0,
            "args": {"sort_index": id}}),
        );
    }
    for s in &a.spans {
        let (cat, mut args) = match s.kind {
            SpanKind::Block(_) => ("collective", json!({})),
            _ => (
                "p2p",
                json!({"peer": s.peer.map(node_name), "tag": s.tag, "bytes": s.bytes}),
            ),
        };
        if let SpanKind::Block(b) = s.kind {
            args = json!({"block_type": b});
        }
        ev.push(json!({
            "name": s.kind.name(), "cat": cat, "ph": "X",
            "ts": us(s.start), "dur": us(s.end - s.start).max(0.001),
            "pid": 1, "tid": tid(s.node, &nodes), "args": args
        }));
    }
    for (i, m) in a.messages.iter().enumerate() {
        let name = format!("{} bytes", m.len);
        ev.push(json!({"name": name, "cat": "message", "ph": "s", "id": i,
            "ts": us(m.sent), "pid": 1, "tid": tid(m.from, &nodes),
            "args": {"tag": m.tag}}));
        ev.push(
            json!({"name": name, "cat": "message", "ph": "f", "bp": "e", "id": i,
            "ts": us(m.received), "pid": 1, "tid": tid(m.to, &nodes)}),
        );
    }
    for r in &t.records {
        let id = tid(r.node, &nodes);
        let instant = |name: String, args: Value| {
            json!({"name": name, "cat": "trace", "ph": "i", "s": "t",
                "ts": us(r.time), "pid": 1, "tid": id, "args": args})
        };
        match &r.kind {
            Kind::TraceMark { mark } => {
                ev.push(instant(format!("mark {mark}"), json!({"type": mark})))
            }
            Kind::TraceMessage { text } => ev.push(instant(text.clone(), json!({}))),
            Kind::TraceStop => ev.push(instant("trace_stop".into(), json!({}))),
            Kind::TraceFlush { finished } => ev.push(json!({
                "name": "trace_flush", "cat": "trace", "ph": "X", "ts": us(r.time),
                "dur": us(finished - r.time).max(0.001), "pid": 1, "tid": id, "args": {}
            })),
            Kind::Commstats {
                recv_volume,
                sent_volume,
                ..
            } => ev.push(json!({
                "name": format!("{} bytes", node_name(r.node)), "ph": "C", "ts": us(r.time),
                "pid": 1, "tid": id, "args": {"sent": sent_volume, "received": recv_volume}
            })),
            _ => {}
        }
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ns",
        "otherData": {"generator": "hypercomm", "format": "Trace Event Format"}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::picl;

    #[test]
    fn every_event_has_the_required_fields() {
        let t = picl::parse(
            "trace_start clock 0 0 node 0 event 3 compstats 3 commstats 3\n\
             send clock 0 10 node 0 to -32768 type 5 lth 8\n\
             recv clock 0 30 node -32768 from 0 type 5 lth 8\n\
             trace_mark clock 0 40 node 0 type 9\n",
        )
        .unwrap();
        let v = to_value(&t);
        let evs = v["traceEvents"].as_array().unwrap();
        for e in evs {
            for k in ["name", "ph", "pid", "tid", "ts"] {
                assert!(e.get(k).is_some(), "{k} missing in {e}");
            }
        }
        assert!(evs.iter().any(|e| e["ph"] == "s"));
        assert!(evs.iter().any(|e| e["ph"] == "f" && e["tid"] == 1));
    }
}
