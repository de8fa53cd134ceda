#!/usr/bin/env python3
"""Median of repeated runs of hypercomm and Open MPI, side by side.

Input: lines `library<TAB>op<TAB>n<TAB>bytes<TAB>value<TAB>unit`.
Writes compare.tsv, compare.md (a table with the ratio hypercomm/Open MPI)
and compare.svg (latency and bandwidth against size for both libraries).
"""
import math
import statistics
import sys
from collections import defaultdict

raw, out, transport = sys.argv[1], sys.argv[2], sys.argv[3]
vals = defaultdict(list)
units = {}
for line in open(raw):
    parts = line.rstrip("\n").split("\t")
    if len(parts) != 6:
        continue
    lib, op, n, size, value, unit = parts
    key = (op, int(n), int(size))
    vals[(lib,) + key].append(float(value))
    units[key] = unit

# The halo's memcpy baselines have no Open MPI counterpart: their own table.
keys = sorted((k for k in units if ":memcpy" not in k[0]), key=lambda k: (k[0], k[1], k[2]))
rows = []
for k in keys:
    h = vals.get(("hypercomm",) + k)
    m = vals.get(("openmpi",) + k)
    hm = statistics.median(h) if h else None
    mm = statistics.median(m) if m else None
    unit = units[k]
    ratio = hm / mm if hm is not None and mm else None
    if ratio is None:
        verdict = "missing"
    elif unit == "us":
        verdict = "met" if ratio <= 1.0 else "missed"
    else:
        verdict = "met" if ratio >= 1.0 else "missed"
    rows.append((k, unit, hm, mm, ratio, verdict))

with open(f"{out}/compare.tsv", "w") as f:
    f.write("op\tn\tbytes\tunit\thypercomm\topenmpi\tratio\n")
    for (op, n, size), unit, hm, mm, ratio, _ in rows:
        f.write(f"{op}\t{n}\t{size}\t{unit}\t{hm}\t{mm}\t{ratio}\n")

def fmt(v):
    return "—" if v is None else (f"{v:.3f}" if v < 100 else f"{v:.0f}")

def med(lib, key):
    v = vals.get((lib,) + key)
    return statistics.median(v) if v else None

with open(f"{out}/compare.md", "w") as f:
    # With check mode on (collectives only): its own value and ratio.
    f.write(f"| op | n | bytes | unit | hypercomm ({transport}) | Open MPI | ratio | ≤1 for µs, ≥1 for MB/s "
            "| check mode on | its ratio |\n")
    f.write("|---|---|---|---|---|---|---|---|---|---|\n")
    for (op, n, size), unit, hm, mm, ratio, verdict in rows:
        hc = med("hypercomm-check", (op, n, size))
        rc = hc / mm if hc is not None and mm else None
        f.write(f"| {op} | {n} | {size} | {unit} | {fmt(hm)} | {fmt(mm)} | {fmt(ratio)} | {verdict} "
                f"| {fmt(hc)} | {fmt(rc)} |\n")
    # Threads: latency no worse than the processes' transport, 1 MiB at
    # least twice its rate (half its time), 16-rank barriers under 50 µs.
    t8, p8 = med("hypercomm-thread", ("latency", 2, 8)), med("hypercomm", ("latency", 2, 8))
    t1, p1 = med("hypercomm-thread", ("latency", 2, 1 << 20)), med("hypercomm", ("latency", 2, 1 << 20))
    tb, pb = med("hypercomm-thread", ("barrier", 16, 0)), med("hypercomm", ("barrier", 16, 0))
    def verdict(ok):
        return "missing" if ok is None else ("met" if ok else "missed")
    f.write(f"\n| threads target | threads | hypercomm ({transport}) | verdict |\n|---|---|---|---|\n")
    f.write(f"| latency 8 B (µs), no worse than {transport} | {fmt(t8)} | {fmt(p8)} | "
            f"{verdict(None if None in (t8, p8) else t8 <= p8)} |\n")
    f.write(f"| latency 1 MiB (µs), at least 2× the {transport} rate | {fmt(t1)} | {fmt(p1)} | "
            f"{verdict(None if None in (t1, p1) else 2 * t1 <= p1)} |\n")
    f.write(f"| barrier, 16 ranks (µs), under 50 | {fmt(tb)} | {fmt(pb)} | "
            f"threads {verdict(None if tb is None else tb < 50)}, {transport} "
            f"{verdict(None if pb is None else pb < 50)} |\n")

    # Halo exchange on threads against memcpy of the same bytes (the
    # bytes moved at >= 70 % of memcpy speed).
    halo = sorted({k for k in units if k[0].startswith("halo") and ":memcpy" not in k[0]})
    if halo:
        f.write("\n| halo on threads | n | side | exchange µs | memcpy µs | speed vs memcpy | ≥ 70 % |\n|---|---|---|---|---|---|---|\n")
        for (op, n, size) in halo:
            for lib in ("hypercomm-thread", "hypercomm"):
                e, c = med(lib, (op, n, size)), med(lib, (op + ":memcpy", n, size))
                if e is not None and c is not None and (lib == "hypercomm-thread" or transport == "thread"):
                    f.write(f"| {op} | {n} | {size} | {fmt(e)} | {fmt(c)} | {100 * c / e:.0f} % | "
                            f"{verdict(c / e >= 0.7)} |\n")
                    break

# SVG: two panels, latency (µs, log-log) and bandwidth (MB/s, log-x).
W, H, PAD = 900, 360, 60
def panel(op, unit, x0, title):
    pts = {lib: sorted((size, statistics.median(v)) for (l, o, n, size), v in vals.items()
                        if l == lib and o == op and n == 2 and size > 0)
           for lib in ("hypercomm", "openmpi")}
    allp = [p for v in pts.values() for p in v]
    if not allp:
        return ""
    xs = [math.log2(s) for s, _ in allp]
    ys = [math.log10(max(v, 1e-3)) for _, v in allp]
    xmin, xmax = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    ymin, ymax = min(ys), max(ys) if max(ys) > min(ys) else min(ys) + 1
    pw, ph = W / 2 - PAD - 20, H - 2 * PAD
    def X(s): return x0 + PAD + (math.log2(s) - xmin) / (xmax - xmin) * pw
    def Y(v): return PAD + ph - (math.log10(max(v, 1e-3)) - ymin) / (ymax - ymin) * ph
    svg = [f'<text x="{x0 + PAD}" y="{PAD - 20}" font-size="14">{title}</text>',
           f'<rect x="{x0 + PAD}" y="{PAD}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for e in range(math.ceil(ymin), math.floor(ymax) + 1):
        y = Y(10 ** e)
        svg.append(f'<text x="{x0 + PAD - 5}" y="{y + 4}" font-size="10" text-anchor="end">1e{e}</text>')
    for e in range(math.ceil(xmin), math.floor(xmax) + 1, 4):
        x = X(2 ** e)
        svg.append(f'<text x="{x}" y="{PAD + ph + 15}" font-size="10" text-anchor="middle">2^{e}</text>')
    svg.append(f'<text x="{x0 + PAD + pw / 2}" y="{PAD + ph + 32}" font-size="11" text-anchor="middle">bytes</text>')
    svg.append(f'<text x="{x0 + 12}" y="{PAD + ph / 2}" font-size="11" transform="rotate(-90 {x0 + 12} {PAD + ph / 2})">{unit}</text>')
    for lib, color in (("hypercomm", "#d62728"), ("openmpi", "#1f77b4")):
        p = pts[lib]
        if p:
            path = " ".join(f"{X(s):.1f},{Y(v):.1f}" for s, v in p)
            svg.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
            svg += [f'<circle cx="{X(s):.1f}" cy="{Y(v):.1f}" r="3" fill="{color}"/>' for s, v in p]
    return "\n".join(svg)

svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif">',
       '<rect width="100%" height="100%" fill="white"/>',
       panel("latency", "µs", 0, f"ping-pong latency, 2 processes ({transport} vs Open MPI)"),
       panel("bw", "MB/s", W / 2, "bandwidth, window of 64"),
       f'<text x="{W - 250}" y="{H - 10}" font-size="12" fill="#d62728">■ hypercomm</text>',
       f'<text x="{W - 140}" y="{H - 10}" font-size="12" fill="#1f77b4">■ Open MPI</text>',
       "</svg>"]
open(f"{out}/compare.svg", "w").write("\n".join(svg))
