//! The self-contained HTML report: ParaGraph's views (space-time diagram,
//! utilisation Gantt chart, communication matrix) as inline SVG, the
//! statistics tables, and a little JavaScript for zooming.

use super::timeline::{self, esc, Axis, LEFT};
use super::{analyse, fmt_ns, matrix, op_stats, utilisation};
use crate::trace::event::{node_name, Trace, HOST_ID};
use std::fmt::Write as _;

/// The self-contained HTML report (inline SVG and a little JavaScript;
/// nothing is fetched).
pub fn html(t: &Trace) -> String {
    let a = analyse(t);
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
        fmt_ns(a.range.1 - a.range.0)
    );
    h.push_str(timeline::DEFS);
    let ax = Axis::new(&a);
    // 1. Space-time diagram; 2. utilisation Gantt chart.
    timeline::spacetime(&mut h, t, &a, &ax);
    timeline::gantt(&mut h, &a, &ax);
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
    h.push_str("</table>\n<h2>Per-node summary</h2><table id=\"nodestats\"><tr><th>node</th><th>busy</th><th>communicating</th><th>waiting</th></tr>\n");
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

/// Zoom and pan of the time views (wheel: time, shift + wheel: rows),
/// and the per-rank rows of an aggregated Gantt row on click (no
/// dependencies).
const SCRIPT: &str = r#"<script>
(function () {
  document.querySelectorAll('svg#spacetime, svg#gantt, svg#gantt-detail').forEach(function (svg) {
    var vb = svg.viewBox.baseVal, full = [vb.x, vb.width, vb.y, vb.height], drag = null;
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect();
      var k = e.deltaY > 0 ? 1.25 : 0.8;
      if (e.shiftKey) {
        var fy = vb.y + (e.clientY - r.top) / r.height * vb.height;
        var nh = Math.min(full[3], Math.max(full[3] / 200, vb.height * k));
        vb.y = fy - (fy - vb.y) * (nh / vb.height);
        vb.height = nh;
        return;
      }
      var fx = vb.x + (e.clientX - r.left) / r.width * vb.width;
      var nw = Math.min(full[1], Math.max(full[1] / 1000, vb.width * k));
      vb.x = fx - (fx - vb.x) * (nw / vb.width);
      vb.width = nw;
    }, {passive: false});
    svg.addEventListener('mousedown', function (e) { drag = [e.clientX, vb.x]; });
    window.addEventListener('mouseup', function () { drag = null; });
    svg.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var r = svg.getBoundingClientRect();
      vb.x = drag[1] - (e.clientX - drag[0]) / r.width * vb.width;
    });
    svg.addEventListener('dblclick', function () {
      vb.x = full[0]; vb.width = full[1]; vb.y = full[2]; vb.height = full[3];
    });
  });
  document.querySelectorAll('svg#gantt g.group').forEach(function (g) {
    g.addEventListener('click', function () {
      var id = g.getAttribute('data-group');
      document.querySelectorAll('svg#gantt-detail g.detail').forEach(function (d) {
        d.style.display = d.getAttribute('data-group') === id ? '' : 'none';
      });
      var t = document.getElementById('gantt-detail-title');
      if (t) t.textContent = g.getAttribute('data-label') + ', one row each:';
    });
  });
})();
</script>
"#;
