//! The two time views of the HTML report: the space-time diagram and the
//! utilisation Gantt chart, on one time axis.
//!
//! * The axis starts where the work starts ([`work_start`]): the start-up
//!   before it (ranks coming up one after another, which on threads can be
//!   95 % of a short run) is squeezed into a narrow grey band at the left,
//!   labelled with its length, unless it is narrow already.
//! * Waiting is red in both views, whether in a receive or in a
//!   collective; communicating (inside a send or receive that did not
//!   block) is yellow; computing is green.
//! * Up to [`MAX_ROWS`] nodes each have a row. Beyond, the space-time
//!   diagram keeps a thin row per node (shift + wheel zooms vertically),
//!   and the Gantt chart shows rows of consecutive ranks with the share of
//!   each state over time; a click on such a row shows its ranks one per
//!   row below the chart.

use super::{fmt_ns, states, utilisation, work_start, Analysis, SpanKind, WAITING};
use crate::trace::event::{block, node_name, Kind, Trace};
use std::fmt::Write as _;

/// Drawing width of the time axis.
pub(super) const W: f64 = 1000.0;
/// Left margin (node names).
pub(super) const LEFT: f64 = 80.0;
/// Height of one node's row.
const ROW: f64 = 28.0;
/// Width of the collapsed start-up band.
const BAND: f64 = 28.0;
/// More nodes than this are aggregated (Gantt) or drawn thin (space-time).
pub const MAX_ROWS: usize = 64;
/// Time bins of an aggregated Gantt row.
const BINS: usize = 250;
/// Colours of the states busy, communicating, waiting.
const COLOUR: [&str; 3] = ["#3a3", "#eb3", "#d33"];

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The time axis: `[t0, ts)` (start-up) into `band` pixels, `[ts, t1]`
/// over the rest of the width.
pub(super) struct Axis {
    t0: i64,
    ts: i64,
    t1: i64,
    band: f64,
}

impl Axis {
    pub(super) fn new(a: &Analysis) -> Axis {
        let (t0, t1) = a.range;
        let ts = work_start(a);
        let linear = (ts - t0) as f64 / (t1 - t0).max(1) as f64 * W;
        if linear > BAND {
            Axis {
                t0,
                ts,
                t1,
                band: BAND,
            }
        } else {
            Axis {
                t0,
                ts: t0,
                t1,
                band: 0.0,
            }
        }
    }

    /// The x coordinate of time `ns`.
    pub(super) fn x(&self, ns: i64) -> f64 {
        if ns < self.ts {
            LEFT + (ns - self.t0) as f64 / (self.ts - self.t0).max(1) as f64 * self.band
        } else {
            LEFT + self.band
                + (ns - self.ts) as f64 / (self.t1 - self.ts).max(1) as f64 * (W - self.band)
        }
    }

    /// Grid lines and labels (times since the work started) from `top` to
    /// `bottom`.
    fn draw(&self, h: &mut String, top: f64, bottom: f64) {
        let span = (self.t1 - self.ts).max(1);
        let raw = span as f64 / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag)
            .max(1.0) as i64;
        let mut k = 0;
        while k * step <= span {
            let tx = self.x(self.ts + k * step);
            let label = if k == 0 {
                "0".to_string()
            } else {
                fmt_ns(k * step)
            };
            let _ = write!(
                h,
                "<line x1=\"{tx:.1}\" y1=\"{top:.1}\" x2=\"{tx:.1}\" y2=\"{bottom:.1}\" stroke=\"#ddd\"/>\
                 <text x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                bottom + 12.0,
                esc(&label)
            );
            k += 1;
        }
    }

    /// The start-up band over the rows from `top` to `bottom` (drawn after
    /// them: what happened during start-up is collapsed under it).
    fn band(&self, h: &mut String, top: f64, bottom: f64) {
        if self.band > 0.0 {
            let _ = write!(
                h,
                "<g class=\"startup\"><rect x=\"{LEFT:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                 fill=\"url(#hatch)\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" \
                 transform=\"rotate(-90 {:.1} {:.1})\">start-up {}</text>\
                 <title>start-up: {} until every rank was recording (collapsed)</title></g>",
                self.band,
                bottom - top,
                LEFT + self.band / 2.0 + 3.0,
                top + 4.0,
                LEFT + self.band / 2.0 + 3.0,
                top + 4.0,
                esc(&fmt_ns(self.ts - self.t0)),
                esc(&fmt_ns(self.ts - self.t0))
            );
        }
    }
}

/// The hatch of the start-up band (one per page).
pub(super) const DEFS: &str = "<svg width=\"0\" height=\"0\" style=\"position:absolute;border:none\"><defs>\
<pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
<rect width=\"6\" height=\"6\" fill=\"#eee\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bbb\" stroke-width=\"2\"/>\
</pattern></defs></svg>\n";

/// An `<svg>` of the time views.
fn open_svg(h: &mut String, id: &str, height: f64) {
    let w = LEFT + W + 20.0;
    let _ = writeln!(
        h,
        "<svg id=\"{id}\" class=\"view\" width=\"{w:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {w:.0} {height:.0}\" \
         data-axis=\"{LEFT} {W}\">"
    );
}

/// The space-time diagram.
pub(super) fn spacetime(h: &mut String, t: &Trace, a: &Analysis, ax: &Axis) {
    let n = a.nodes.len();
    let thin = n > MAX_ROWS;
    let rh = if thin {
        (900.0 / n as f64).max(1.0)
    } else {
        ROW
    };
    let label_every = if thin { n.div_ceil(MAX_ROWS) } else { 1 };
    let row = |m: i32| a.nodes.iter().position(|&x| x == m).unwrap_or(0);
    let y = |m: i32| 20.0 + row(m) as f64 * rh + rh / 2.0;
    let height = 30.0 + n as f64 * rh;
    let _ = writeln!(
        h,
        "<h2>Space-time diagram</h2><p class=\"hint\">A line per node; message lines from send to receive; \
         red: waiting (blocked in a receive or in a collective); blue bands: collectives. \
         Wheel to zoom, drag to pan, shift + wheel to zoom the rows, double-click to reset.</p>"
    );
    open_svg(h, "spacetime", height + 16.0);
    ax.draw(h, 10.0, height);
    for (i, &m) in a.nodes.iter().enumerate() {
        let (lo, hi) = a.extent[&m];
        let _ = write!(h, "<g class=\"rank\" data-rank=\"{m}\">");
        if i % label_every == 0 {
            let _ = write!(
                h,
                "<text x=\"4\" y=\"{:.1}\" font-size=\"{}\">{}</text>",
                y(m) + 4.0,
                if thin { 10 } else { 12 },
                esc(&node_name(m))
            );
        }
        // The lifeline: a thin bar (it has a height, however thin the row).
        let lh = if thin { (rh * 0.4).max(0.5) } else { 1.0 };
        let _ = write!(
            h,
            "<rect x=\"{:.1}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{lh:.2}\" fill=\"#888\"/>",
            ax.x(lo),
            y(m) - lh / 2.0,
            (ax.x(hi) - ax.x(lo)).max(0.5)
        );
        for s in a.spans.iter().filter(|s| s.node == m) {
            if let SpanKind::Block(b) = s.kind {
                let inset = if thin {
                    0.0
                } else {
                    3.0 + s.depth as f64 * 2.0
                };
                let _ = write!(
                    h,
                    "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"#4a7bd0\" fill-opacity=\"0.25\"><title>{} on {}: {}</title></rect>",
                    ax.x(s.start),
                    y(m) - rh / 2.0 + inset,
                    (ax.x(s.end) - ax.x(s.start)).max(0.5),
                    (rh - 2.0 * inset).max(0.5),
                    block::name(b as i32),
                    esc(&node_name(m)),
                    fmt_ns(s.end - s.start)
                );
            }
        }
        let sw = if thin { (rh * 0.8).max(0.8) } else { 5.0 };
        for (s, e, st) in states(a, m) {
            if st == WAITING {
                let _ = write!(
                    h,
                    "<line x1=\"{:.2}\" y1=\"{:.2}\" x2=\"{:.2}\" y2=\"{:.2}\" stroke=\"{}\" stroke-width=\"{sw:.1}\"><title>waiting {}</title></line>",
                    ax.x(s),
                    y(m),
                    ax.x(e).max(ax.x(s) + 0.5),
                    y(m),
                    COLOUR[WAITING as usize],
                    fmt_ns(e - s)
                );
            }
        }
        h.push_str("</g>");
    }
    h.push_str("<g class=\"messages\">");
    for msg in &a.messages {
        let _ = write!(
            h,
            "<line x1=\"{:.2}\" y1=\"{:.2}\" x2=\"{:.2}\" y2=\"{:.2}\" stroke=\"#333\" stroke-width=\"0.8\"><title>{} → {}: {} bytes, tag {}, {}</title></line>",
            ax.x(msg.sent),
            y(msg.from),
            ax.x(msg.received),
            y(msg.to),
            esc(&node_name(msg.from)),
            esc(&node_name(msg.to)),
            msg.len,
            msg.tag,
            fmt_ns(msg.received - msg.sent)
        );
    }
    for r in &t.records {
        if let Kind::TraceMark { mark } = r.kind {
            let _ = write!(
                h,
                "<circle cx=\"{:.2}\" cy=\"{:.2}\" r=\"3\" fill=\"#f90\"><title>mark {mark} on {}</title></circle>",
                ax.x(r.time),
                y(r.node) - rh.min(16.0) / 2.0,
                esc(&node_name(r.node))
            );
        }
    }
    h.push_str("</g>");
    ax.band(h, 10.0, height);
    h.push_str("</svg>\n");
}

/// One node's row of the Gantt chart at `y` (its middle).
fn gantt_row(h: &mut String, a: &Analysis, ax: &Axis, m: i32, y: f64) {
    let u = utilisation(a, m);
    let tot = (u.busy + u.overhead + u.idle).max(1) as f64;
    let _ = write!(
        h,
        "<g class=\"rank\" data-rank=\"{m}\"><text x=\"4\" y=\"{:.1}\" font-size=\"12\">{}</text><title>{}: busy {:.1}%, communicating {:.1}%, waiting {:.1}%</title>",
        y + 4.0,
        esc(&node_name(m)),
        esc(&node_name(m)),
        100.0 * u.busy as f64 / tot,
        100.0 * u.overhead as f64 / tot,
        100.0 * u.idle as f64 / tot
    );
    for (s, e, st) in states(a, m) {
        let _ = write!(
            h,
            "<rect x=\"{:.2}\" y=\"{:.1}\" width=\"{:.3}\" height=\"{:.1}\" fill=\"{}\"/>",
            ax.x(s),
            y - ROW / 2.0 + 4.0,
            (ax.x(e) - ax.x(s)).max(0.05),
            ROW - 8.0,
            COLOUR[st as usize]
        );
    }
    h.push_str("</g>");
}

/// Share of each state per bin of the axis, summed over `nodes`.
fn bins(a: &Analysis, ax: &Axis, nodes: &[i32]) -> Vec<[f64; 3]> {
    let bw = W / BINS as f64;
    let mut acc = vec![[0.0f64; 3]; BINS];
    for &m in nodes {
        for (s, e, st) in states(a, m) {
            let (x0, x1) = (ax.x(s) - LEFT, ax.x(e) - LEFT);
            let first = ((x0 / bw).floor().max(0.0) as usize).min(BINS - 1);
            let last = ((x1 / bw).ceil().max(1.0) as usize).min(BINS);
            for (b, cell) in acc.iter_mut().enumerate().take(last).skip(first) {
                let lo = x0.max(b as f64 * bw);
                let hi = x1.min((b + 1) as f64 * bw);
                if hi > lo {
                    cell[st as usize] += (hi - lo) / bw;
                }
            }
        }
    }
    acc
}

/// One aggregated row: ranks `group`, state shares stacked per bin.
fn group_row(h: &mut String, a: &Analysis, ax: &Axis, gi: usize, group: &[i32], y: f64) {
    let (first, last) = (group[0], group[group.len() - 1]);
    let name = format!("{}–{}", node_name(first), node_name(last));
    let _ = write!(
        h,
        "<g class=\"rank group\" data-ranks=\"{}\" data-label=\"{}\" data-group=\"{gi}\" style=\"cursor:pointer\">\
         <text x=\"4\" y=\"{:.1}\" font-size=\"11\">{}</text><title>{} ranks {}: click for one row per rank</title>\
         <rect x=\"{LEFT}\" y=\"{:.1}\" width=\"{W}\" height=\"{:.1}\" fill=\"#fff\"/>",
        group
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join(","),
        esc(&name),
        y + 4.0,
        esc(&name),
        group.len(),
        esc(&name),
        y - ROW / 2.0 + 2.0,
        ROW - 4.0
    );
    let bw = W / BINS as f64;
    let full = ROW - 4.0;
    // Runs of bins with the same quantised shares become one rect each.
    let q = |v: f64| (v / group.len() as f64 * 16.0).round() as i32;
    let shares = bins(a, ax, group);
    let mut b = 0;
    while b < BINS {
        let key: Vec<i32> = shares[b].iter().map(|&v| q(v)).collect();
        let mut e = b + 1;
        while e < BINS && shares[e].iter().map(|&v| q(v)).collect::<Vec<_>>() == key {
            e += 1;
        }
        let mut top = y + ROW / 2.0 - 2.0;
        for (st, &k) in key.iter().enumerate() {
            if k > 0 {
                let hh = full * k as f64 / 16.0;
                top -= hh;
                let _ = write!(
                    h,
                    "<rect x=\"{:.2}\" y=\"{top:.2}\" width=\"{:.2}\" height=\"{hh:.2}\" fill=\"{}\"/>",
                    LEFT + b as f64 * bw,
                    (e - b) as f64 * bw,
                    COLOUR[st]
                );
            }
        }
        b = e;
    }
    h.push_str("</g>");
}

/// The utilisation Gantt chart (aggregated beyond [`MAX_ROWS`] nodes,
/// with the per-rank rows of each group in a hidden detail view).
pub(super) fn gantt(h: &mut String, a: &Analysis, ax: &Axis) {
    let per = a.nodes.len().div_ceil(MAX_ROWS).max(1);
    let groups: Vec<&[i32]> = a.nodes.chunks(per).collect();
    let height = 30.0 + groups.len() as f64 * ROW;
    let _ = writeln!(
        h,
        "<h2>Utilisation</h2><p class=\"legend\"><span style=\"background:{}\"></span>busy\
         <span style=\"background:{}\"></span>communicating (in a send or receive)\
         <span style=\"background:{}\"></span>waiting (blocked in a receive or in a collective)</p>{}",
        COLOUR[0],
        COLOUR[1],
        COLOUR[2],
        if per > 1 {
            format!("<p class=\"hint\">{per} ranks per row: the height of each colour is the share of those ranks in that state. Click a row for one row per rank.</p>")
        } else {
            String::new()
        }
    );
    open_svg(h, "gantt", height + 16.0);
    ax.draw(h, 10.0, height);
    let y = |i: usize| 20.0 + i as f64 * ROW + ROW / 2.0;
    for (i, g) in groups.iter().enumerate() {
        if per == 1 {
            gantt_row(h, a, ax, g[0], y(i));
        } else {
            group_row(h, a, ax, i, g, y(i));
        }
    }
    ax.band(h, 10.0, height);
    h.push_str("</svg>\n");
    if per > 1 {
        let dh = 30.0 + per as f64 * ROW;
        h.push_str(
            "<p class=\"hint\" id=\"gantt-detail-title\">Click a row above for its ranks.</p>",
        );
        open_svg(h, "gantt-detail", dh + 16.0);
        ax.draw(h, 10.0, dh);
        for (i, g) in groups.iter().enumerate() {
            let _ = write!(
                h,
                "<g class=\"detail\" data-group=\"{i}\" style=\"display:none\">"
            );
            for (j, &m) in g.iter().enumerate() {
                gantt_row(h, a, ax, m, y(j));
            }
            h.push_str("</g>");
        }
        ax.band(h, 10.0, dh);
        h.push_str("</svg>\n");
    }
}
