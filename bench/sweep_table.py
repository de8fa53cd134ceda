#!/usr/bin/env python3
"""Turn `hypercomm bench <op> --all-algorithms --format tsv` output into
the markdown tables of BENCHMARKS.md, or into the rows of the decision
table in crates/hypercomm/src/collective/select/tuning.rs.

Input: one or more tsv files (`op<TAB>n<TAB>bytes<TAB>value<TAB>unit`, the
op column `op`, `op:auto=<algorithm>` or `op:<algorithm>`). When several
files (or lines of one file) hold the same point (independent rounds),
the point's value is the median (or, with --stat min, the minimum) over
them. Files ending in .gz are read compressed.

    bench/sweep_table.py sweep.tsv                  # markdown tables
    bench/sweep_table.py --rust round-*.tsv         # tuning.rs rows
    bench/sweep_table.py --doc round-*.tsv          # the crossovers, as tuning.rs's doc
    bench/sweep_table.py --cores 2 --rust ...       # oversubscription is n > cores

Python 3 standard library only.
"""

import argparse
import collections
import gzip
import math
import statistics
import sys
import textwrap

# The forced algorithms of each collective, in the order the benchmark
# printed them (which is the order of the library's algorithm registry):
# filled by load() from the data, so a newly registered algorithm needs no
# edit here.
ORDER = {}


def rust_collective(op):
    """`reduce_scatter` -> `C::ReduceScatter` (the tuning table's names)."""
    return "C::" + "".join(w.capitalize() for w in op.split("_"))


def load(paths, stat):
    """{(op, n, bytes): {variant: value}}, variant 'auto' or an algorithm;
    and {(op, n, bytes): auto's algorithm} where the label says it."""
    samples = collections.defaultdict(list)
    picked = collections.defaultdict(collections.Counter)
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 5:
                    continue
                label, n, size, value, _unit = parts
                op, _, variant = label.partition(":")
                if not variant:
                    variant = "auto"
                elif variant.startswith("auto="):
                    picked[(op, int(n), int(size))][variant[5:]] += 1
                    variant = "auto"
                else:
                    order = ORDER.setdefault(op, [])
                    if variant not in order:
                        order.append(variant)
                samples[(op, int(n), int(size), variant)].append(float(value))
    combine = min if stat == "min" else statistics.median
    points = collections.defaultdict(dict)
    for (op, n, size, variant), v in samples.items():
        points[(op, n, size)][variant] = combine(v)
    picks = {k: c.most_common(1)[0][0] for k, c in picked.items()}
    return points, picks


def best(row, op):
    forced = [(row[a], a) for a in ORDER.get(op, []) if a in row]
    return min(forced) if forced else (None, None)


def markdown(points, picks, limit):
    ops = [op for op in ORDER if any(k[0] == op for k in points)]
    total = within = 0
    above = []
    for op in ops:
        algs = [a for a in ORDER[op] if any(a in points[k] for k in points if k[0] == op)]
        print(f"### {op}\n")
        print("| n | bytes | auto | auto ran | " + " | ".join(algs) + " | auto/best |")
        print("|---|---:|---:|---|" + "---:|" * len(algs) + "---:|")
        for key in sorted(k for k in points if k[0] == op):
            row = points[key]
            b, name = best(row, op)
            cells = []
            for a in algs:
                v = row.get(a)
                if v is None:
                    cells.append("")
                elif a == name:
                    cells.append(f"**{v:.2f}**")
                else:
                    cells.append(f"{v:.2f}")
            auto = row.get("auto")
            ratio = auto / b if auto is not None and b else None
            if ratio is not None:
                total += 1
                if ratio <= limit:
                    within += 1
                else:
                    above.append((op, key[1], key[2], ratio, picks.get(key, "?"), name))
            print(
                f"| {key[1]} | {key[2]} | {auto:.2f} | {picks.get(key, '?')} | "
                + " | ".join(cells)
                + f" | {ratio:.2f} |"
            )
        print()
    print(f"{within} of {total} points within {limit:.2f} of the best forced algorithm.")
    for op, n, size, ratio, ran, name in above:
        print(f"* {op} n = {n}, {size} B: {ratio:.2f} (auto ran {ran}, best {name})")


def threshold(lo, hi):
    """The switch point between two measured sizes: the power of two at the
    middle of their log2 (rounded down); `lo` itself when that is below it."""
    if lo == 0:
        return 0
    mid = (math.log2(lo) + math.log2(hi)) / 2
    return max(lo, 2 ** math.floor(mid))


def human(b):
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return f"{b >> 20} MiB"
    if b >= 1 << 10 and b % (1 << 10) == 0:
        return f"{b >> 10} KiB"
    return f"{b} B"


def winners_of(points, op, n, sizes, tie):
    """The algorithm for each size: the fastest forced one, except that an
    algorithm within `tie` (a fraction) of the fastest keeps its place when
    it won the size below, so that noise between near-equal algorithms
    does not become a switch."""
    out = []
    for s in sizes:
        row = points[(op, n, s)]
        b, name = best(row, op)
        if out and out[-1] in row and row[out[-1]] <= b * (1 + tie):
            name = out[-1]
        out.append(name)
    return out


def rules(points, cores, tie=0.0):
    """[(op, lo, hi, oversubscribed, [(upto or None, algorithm)])]: the
    fastest forced algorithm per measured size (see `winners_of`), merged
    into steps."""
    out = []
    ops = [op for op in ORDER if any(k[0] == op for k in points)]
    ns = sorted({k[1] for k in points})
    for op in ops:
        prev_n = 1
        for n in ns:
            sizes = sorted(k[2] for k in points if k[0] == op and k[1] == n)
            if not sizes:
                continue
            winners = winners_of(points, op, n, sizes, tie)
            steps = []
            for i, (s, w) in enumerate(zip(sizes, winners)):
                if i + 1 < len(sizes) and winners[i + 1] == w:
                    continue
                upto = threshold(s, sizes[i + 1]) if i + 1 < len(sizes) else None
                steps.append((upto, w))
            out.append((op, prev_n + 1, n, n > cores, steps))
            prev_n = n
    return out


def doc(points, cores, tie):
    for op, lo, hi, over, steps in rules(points, cores, tie):
        ranks = f"{hi} ranks" if lo == hi else f"{lo}–{hi} ranks"
        if over:
            ranks += " (oversubscribed)"
        if op == "barrier":
            print(f"//! * {op}, {ranks}: {steps[0][1]};")
            continue
        parts = []
        for u, w in steps:
            parts.append(f"{w} up to {human(u)}" if u is not None else
                         (f"{w} above" if parts else f"{w} at every size"))
        line = f"{op}, {ranks}: " + ", ".join(parts) + ";"
        for i, w in enumerate(textwrap.wrap(line, 72)):
            print(("//! * " if i == 0 else "//!   ") + w)


def rust(points, cores, tie):
    for op, lo, hi, over, steps in rules(points, cores, tie):
        body = ", ".join(
            f"({'usize::MAX' if u is None else u}, alg(\"{w}\"))" for u, w in steps
        )
        over = "true" if over else "false"
        print(f"    rule(Thread, {rust_collective(op)}, {lo}, {hi}, {over}, &[{body}]),")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--stat", choices=["median", "min"], default="median",
                    help="combine a point measured in several files (default median)")
    ap.add_argument("--rust", action="store_true", help="print tuning.rs rows")
    ap.add_argument("--doc", action="store_true",
                    help="print the crossovers as tuning.rs's module doc lists them")
    ap.add_argument("--cores", type=int, default=2,
                    help="cores of the measuring machine (oversubscribed: n > cores)")
    ap.add_argument("--tie", type=float, default=0.0,
                    help="--rust/--doc: an algorithm within this fraction of the fastest "
                         "keeps the size below's choice (default 0)")
    ap.add_argument("--limit", type=float, default=1.10,
                    help="auto/best counted as within (default 1.10)")
    a = ap.parse_args()
    points, picks = load(a.files, a.stat)
    if a.rust:
        rust(points, a.cores, a.tie)
    elif a.doc:
        doc(points, a.cores, a.tie)
    else:
        markdown(points, picks, a.limit)


if __name__ == "__main__":
    sys.exit(main())
