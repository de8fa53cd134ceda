#!/usr/bin/env python3
"""Set the simulator's predictions beside the measured collectives sweep.

For every forced algorithm of a sweep (`bench/sweep.sh`, the files
`bench/sweep_table.py` reads), run

    hypercomm sim OP --topology full -p N --words BYTES/8 --ts TS --tw TW \
        --algorithm ALG --format tsv

(fully connected, one port, seed 001's model; TS in seconds, TW in seconds
per 8-byte word, as `hypercomm sim calibrate --transport thread` prints
them; with `--cores C --switch S`, the nodes share C cores that take S
seconds to turn from one rank to another, as calibrate prints them too)
and print, per collective, measured and predicted time and their
ratio, then the ratio's spread per collective and ranks count.

    bench/sim_vs_measured.py --bin target/release/hypercomm --ts 1.9e-7 \
        --tw 3.4e-11 bench/data/collectives-thread-2026-11-22-verify3.tsv.gz

Python 3 standard library only.
"""

import argparse
import collections
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_table  # noqa: E402  (the sweep's reader, shared)


def predict(binary, op, n, size, alg, ts, tw, cores=None, switch=0.0):
    """The simulator's time for one point, in µs."""
    words = max(1, size // 8)
    shared = [] if cores is None else ["--cores", str(cores), "--switch", repr(switch)]
    out = subprocess.run(
        [binary, "sim", op, "--topology", "full", "-p", str(n),
         "--words", str(words), "--ts", repr(ts), "--tw", repr(tw),
         "--algorithm", alg, "--format", "tsv"] + shared,
        check=True, capture_output=True, text=True,
    ).stdout
    return float(out.strip().split("\t")[-1]) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="target/release/hypercomm")
    ap.add_argument("--ts", type=float, required=True, help="seconds")
    ap.add_argument("--tw", type=float, required=True, help="seconds per 8-byte word")
    ap.add_argument("--cores", type=int, help="cores the ranks share (default: one each)")
    ap.add_argument("--switch", type=float, default=0.0,
                    help="seconds a shared core takes to turn to another rank")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    points, _ = sweep_table.load(args.files, "median")
    ratios = collections.defaultdict(list)
    ops = [op for op in sweep_table.ORDER if any(k[0] == op for k in points)]
    for op in ops:
        print(f"### {op}\n")
        print("| n | bytes | algorithm | measured µs | predicted µs | measured/predicted |")
        print("|---|---:|---|---:|---:|---:|")
        for key in sorted(k for k in points if k[0] == op):
            _, n, size = key
            for alg in sweep_table.ORDER[op]:
                if alg not in points[key]:
                    continue
                measured = points[key][alg]
                predicted = predict(args.bin, op, n, size, alg, args.ts, args.tw,
                                    args.cores, args.switch)
                r = measured / predicted
                ratios[(op, n)].append((r, size, alg))
                print(f"| {n} | {size} | {alg} | {measured:.2f} | {predicted:.2f} | {r:.2f} |")
        print()
    print("### measured/predicted per collective and ranks count\n")
    print("| op | n | min | median | max | largest at |")
    print("|---|---|---:|---:|---:|---|")
    for (op, n), rs in sorted(ratios.items(), key=lambda e: (ops.index(e[0][0]), e[0][1])):
        lo, hi = min(rs), max(rs)
        med = statistics.median(r for r, _, _ in rs)
        print(f"| {op} | {n} | {lo[0]:.2f} | {med:.2f} | {hi[0]:.2f} | {hi[2]} {hi[1]} B |")


if __name__ == "__main__":
    main()
