//! The self-contained HTML report: ParaGraph's views (space-time diagram,
//! utilisation Gantt chart, communication matrix) as inline SVG, the
//! statistics tables, and a little JavaScript for zooming.

use super::{analyse, fmt_ns, matrix, op_stats, states, utilisation, SpanKind};
use crate::trace::event::{block, node_name, Kind, Trace, HOST_ID};
use std::fmt::Write as _;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const W: f64 = 1000.0; // drawing width of the time axis
const LEFT: f64 = 80.0;
const ROW: f64 = 28.0;

/// The self-contained HTML report (inline SVG and a little JavaScript;
/// nothing is fetched).
pub fn html(t: &Trace) -> String {
    let a = analyse(t);
    let (t0, t1) = a.range;
    let span = (t1 - t0).max(1) as f64;
    let x = |ns: i64| LEFT + (ns - t0) as f64 / span * W;
    let row = |n: i32| a.nodes.iter().position(|&m| m == n).unwrap_or(0);
    let y = |n: i32| 20.0 + row(n) as f64 * ROW + ROW / 2.0;
    let height = 30.0 + a.nodes.len() as f64 * ROW;
    let mut h = String::new();
    h.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <title>hypercomm trace report</title>\n<style>\n\
         body{font-family:system-ui,sans-serif;margin:16px;color:#222}\n\
         h2{margin-top:28px;font-size:18px} svg{border:1px solid #ccc;background:#fff}\n\
         table{border-collapse:collapse;font-size:13px} td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\n\
         th{background:#eee} td:first-child{text-align:left}\n\
         .legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}\n\
         .hint{color:#666;font-size:12px}\n</style></head><body>\n",
    );
    let _ = writeln!(
        h,
        "<h1>hypercomm trace report</h1><p>{} records · {} nodes · {} messages · {}</p>",
        t.records.len(),
        a.nodes.len(),
        a.messages.len(),
        fmt_ns(t1 - t0)
    );
    // Axis with ticks.
    let axis = |h: &mut String, y0: f64| {
        for i in 0..=5 {
            let tx = LEFT + W * i as f64 / 5.0;
            let _ = write!(
                h,
                "<line x1=\"{tx:.1}\" y1=\"{:.1}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\
                 <text x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                10.0,
                y0,
                y0 + 12.0,
                esc(&fmt_ns((span * i as f64 / 5.0) as i64))
            );
        }
    };
    // 1. Space-time diagram.
    let _ = writeln!(
        h,
        "<h2>Space-time diagram</h2><p class=\"hint\">A line per node; message lines from send to receive; \
         red: blocked in a receive; blue bands: collectives. Wheel to zoom, drag to pan, double-click to reset.</p>\n\
         <svg id=\"spacetime\" class=\"view\" width=\"{:.0}\" height=\"{:.0}\" viewBox=\"0 0 {:.0} {:.0}\">",
        LEFT + W + 20.0,
        height + 16.0,
        LEFT + W + 20.0,
        height + 16.0
    );
    axis(&mut h, height);
    for &n in &a.nodes {
        let (lo, hi) = a.extent[&n];
        let _ = write!(
            h,
            "<g class=\"rank\" data-rank=\"{n}\"><text x=\"4\" y=\"{:.1}\" font-size=\"12\">{}</text>\
             <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\"/>",
            y(n) + 4.0,
            esc(&node_name(n)),
            x(lo),
            y(n),
            x(hi),
            y(n)
        );
        for s in a.spans.iter().filter(|s| s.node == n) {
            match s.kind {
                SpanKind::Block(b) => {
                    let _ = write!(
                        h,
                        "<rect x=\"{:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"#4a7bd0\" fill-opacity=\"0.25\"><title>{} on {}: {}</title></rect>",
                        x(s.start),
                        y(n) - ROW / 2.0 + 3.0 + s.depth as f64 * 2.0,
                        (x(s.end) - x(s.start)).max(0.5),
                        ROW - 6.0 - s.depth as f64 * 4.0,
                        block::name(b as i32),
                        esc(&node_name(n)),
                        fmt_ns(s.end - s.start)
                    );
                }
                SpanKind::Blocked => {
                    let _ = write!(
                        h,
                        "<line x1=\"{:.2}\" y1=\"{:.1}\" x2=\"{:.2}\" y2=\"{:.1}\" stroke=\"#d33\" stroke-width=\"5\"><title>blocked {}</title></line>",
                        x(s.start),
                        y(n),
                        x(s.end).max(x(s.start) + 0.5),
                        y(n),
                        fmt_ns(s.end - s.start)
                    );
                }
                _ => {}
            }
        }
        h.push_str("</g>");
    }
    h.push_str("<g class=\"messages\">");
    for m in &a.messages {
        let _ = write!(
            h,
            "<line x1=\"{:.2}\" y1=\"{:.1}\" x2=\"{:.2}\" y2=\"{:.1}\" stroke=\"#333\" stroke-width=\"0.8\"><title>{} → {}: {} bytes, tag {}, {}</title></line>",
            x(m.sent),
            y(m.from),
            x(m.received),
            y(m.to),
            esc(&node_name(m.from)),
            esc(&node_name(m.to)),
            m.len,
            m.tag,
            fmt_ns(m.received - m.sent)
        );
    }
    for r in &t.records {
        if let Kind::TraceMark { mark } = r.kind {
            let _ = write!(
                h,
                "<circle cx=\"{:.2}\" cy=\"{:.1}\" r=\"3\" fill=\"#f90\"><title>mark {mark} on {}</title></circle>",
                x(r.time),
                y(r.node) - 8.0,
                esc(&node_name(r.node))
            );
        }
    }
    h.push_str("</g></svg>\n");
    // 2. Utilisation Gantt chart.
    let _ = writeln!(
        h,
        "<h2>Utilisation</h2><p class=\"legend\"><span style=\"background:#3a3\"></span>busy\
         <span style=\"background:#eb3\"></span>communication overhead<span style=\"background:#d33\"></span>idle</p>\n\
         <svg id=\"gantt\" class=\"view\" width=\"{:.0}\" height=\"{:.0}\" viewBox=\"0 0 {:.0} {:.0}\">",
        LEFT + W + 20.0,
        height + 16.0,
        LEFT + W + 20.0,
        height + 16.0
    );
    axis(&mut h, height);
    for &n in &a.nodes {
        let u = utilisation(&a, n);
        let tot = (u.busy + u.overhead + u.idle).max(1) as f64;
        let _ = write!(
            h,
            "<g class=\"rank\" data-rank=\"{n}\"><text x=\"4\" y=\"{:.1}\" font-size=\"12\">{}</text><title>{}: busy {:.1}%, overhead {:.1}%, idle {:.1}%</title>",
            y(n) + 4.0,
            esc(&node_name(n)),
            esc(&node_name(n)),
            100.0 * u.busy as f64 / tot,
            100.0 * u.overhead as f64 / tot,
            100.0 * u.idle as f64 / tot
        );
        for (s, e, st) in states(&a, n) {
            let c = ["#3a3", "#eb3", "#d33"][st as usize];
            let _ = write!(
                h,
                "<rect x=\"{:.2}\" y=\"{:.1}\" width=\"{:.3}\" height=\"{:.1}\" fill=\"{c}\"/>",
                x(s),
                y(n) - ROW / 2.0 + 4.0,
                (x(e) - x(s)).max(0.05),
                ROW - 8.0
            );
        }
        h.push_str("</g>");
    }
    h.push_str("</svg>\n");
    // 3. Communication matrix.
    let m = matrix(t);
    let cell = 28.0f64.min(560.0 / a.nodes.len().max(1) as f64).max(6.0);
    let msize = LEFT + cell * a.nodes.len() as f64 + 20.0;
    let maxb = m.values().map(|v| v.1).max().unwrap_or(0).max(1) as f64;
    let dense = a.nodes.len() <= 64;
    let _ = writeln!(
        h,
        "<h2>Communication matrix</h2><p class=\"hint\">Bytes sent from row to column (darker: more).</p>\n\
         <svg id=\"matrix\" class=\"view\" width=\"{msize:.0}\" height=\"{:.0}\" viewBox=\"0 0 {msize:.0} {:.0}\">",
        msize + 10.0,
        msize + 10.0
    );
    for (j, &to) in a.nodes.iter().enumerate() {
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            LEFT + cell * (j as f64 + 0.5),
            LEFT - 6.0,
            if to == HOST_ID {
                "H".to_string()
            } else {
                to.to_string()
            }
        );
    }
    for (i, &from) in a.nodes.iter().enumerate() {
        let yy = LEFT + cell * i as f64;
        let _ = write!(
            h,
            "<g class=\"rank\" data-rank=\"{from}\"><text x=\"4\" y=\"{:.1}\" font-size=\"11\">{}</text>",
            yy + cell / 2.0 + 4.0,
            esc(&node_name(from))
        );
        for (j, &to) in a.nodes.iter().enumerate() {
            let (cnt, bytes) = m.get(&(from, to)).copied().unwrap_or((0, 0));
            if bytes == 0 && cnt == 0 && !dense {
                // Large jobs: only the pairs that talked (a 1 024-node
                // matrix would be a million cells, mostly empty).
                continue;
            }
            let v = if bytes > 0 {
                (bytes as f64).ln_1p() / maxb.ln_1p()
            } else {
                0.0
            };
            let shade = (255.0 - v * 200.0) as u8;
            let _ = write!(
                h,
                "<rect x=\"{:.1}\" y=\"{yy:.1}\" width=\"{cell:.1}\" height=\"{cell:.1}\" fill=\"rgb({shade},{shade},255)\" stroke=\"#ccc\"><title>{} → {}: {cnt} messages, {bytes} bytes</title></rect>",
                LEFT + cell * j as f64,
                esc(&node_name(from)),
                esc(&node_name(to))
            );
        }
        h.push_str("</g>");
    }
    h.push_str("</svg>\n");
    // 4. Statistics tables.
    h.push_str("<h2>Per-operation statistics</h2><table id=\"opstats\"><tr><th>operation</th><th>count</th><th>total</th><th>mean</th><th>max</th><th>bytes</th></tr>\n");
    for (name, o) in op_stats(&a) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&name),
            o.count,
            fmt_ns(o.total),
            fmt_ns(o.total / o.count.max(1) as i64),
            fmt_ns(o.max),
            o.bytes
        );
    }
    h.push_str("</table>\n<h2>Per-node summary</h2><table id=\"nodestats\"><tr><th>node</th><th>busy</th><th>overhead</th><th>idle</th></tr>\n");
    for &n in &a.nodes {
        let u = utilisation(&a, n);
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&node_name(n)),
            fmt_ns(u.busy),
            fmt_ns(u.overhead),
            fmt_ns(u.idle)
        );
    }
    h.push_str("</table>\n");
    h.push_str(SCRIPT);
    h.push_str("</body></html>\n");
    h
}

/// Horizontal zoom and pan of the time views (no dependencies).
const SCRIPT: &str = r#"<script>
(function () {
  document.querySelectorAll('svg#spacetime, svg#gantt').forEach(function (svg) {
    var vb = svg.viewBox.baseVal, full = [vb.x, vb.width], drag = null;
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect();
      var fx = vb.x + (e.clientX - r.left) / r.width * vb.width;
      var k = e.deltaY > 0 ? 1.25 : 0.8;
      vb.width = Math.min(full[1], Math.max(full[1] / 1000, vb.width * k));
      vb.x = fx - (fx - vb.x) * (vb.width / (vb.width / k));
    }, {passive: false});
    svg.addEventListener('mousedown', function (e) { drag = [e.clientX, vb.x]; });
    window.addEventListener('mouseup', function () { drag = null; });
    svg.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var r = svg.getBoundingClientRect();
      vb.x = drag[1] - (e.clientX - drag[0]) / r.width * vb.width;
    });
    svg.addEventListener('dblclick', function () { vb.x = full[0]; vb.width = full[1]; });
  });
})();
</script>
"#;
