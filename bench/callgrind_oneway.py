#!/usr/bin/env python3
"""Instructions per one-way message of a ping-pong, from callgrind files.

usage: bench/callgrind_oneway.py hc|ompi FILE...

Each FILE is the callgrind output of one rank of `hypercomm bench latency`
(hc) or of `osu latency` (ompi). A rank's blocking receives cost
M*a + (P - M)*e instructions in all: M messages, P polling passes made
inside the receives (calls of the engine's `progress` and of the shared
memory's `take_next_from`, the fast path's poll, or of Open MPI's
`opal_progress` from `MPI_Recv`), `a` the receive's own work including the
pass that finds the message, `e` the cost of a pass that finds nothing.
Ranks that waited different amounts (P/M from a few to a few hundred)
give `a` and `e` by least squares. Sends do not poll: their inclusive cost
per call is taken as it is. Prints send + a, the one-way cost, and the
figures it came from.
"""
import collections
import re
import sys

PATTERNS = {
    "hc": dict(send=r"Comm>::send_bytes$", recv=r"Comm>::recv_into$",
               poll=r"Engine>::progress$|ShmEndpoint>::take_next_from$"),
    "ompi": dict(send=r"^PMPI_Send$", recv=r"^PMPI_Recv$", poll=r"^opal_progress$"),
}


def parse(path):
    """Calls and inclusive instructions per callee, over every call site."""
    names, calls, incl = {}, collections.Counter(), collections.Counter()
    cur = callee = pending = None

    def name(tok):
        m = re.match(r"\((\d+)\)(?: (.*))?", tok)
        if not m:
            return tok
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "?")

    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("fn="):
            cur = name(line[3:])
        elif line.startswith("cfn="):
            callee = name(line[4:])
        elif line.startswith("calls="):
            pending = (callee, int(line[6:].split()[0]))
        elif pending and line and (line[0].isdigit() or line[0] in "+-*"):
            parts = line.split()
            c, n = pending
            if c != cur:
                calls[c] += n
                incl[c] += int(parts[1]) if len(parts) > 1 else 0
            pending = None
    return calls, incl


def stats(path, pats):
    calls, incl = parse(path)
    out = {}
    for k in ("send", "recv", "poll"):
        fs = [n for n in calls if re.search(pats[k], n)]
        out[k] = (sum(incl[n] for n in fs), sum(calls[n] for n in fs))
    return out


def main():
    kind, files = sys.argv[1], sys.argv[2:]
    rows = [stats(f, PATTERNS[kind]) for f in files]
    rows = [r for r in rows if r["recv"][1] > 0]
    if len(rows) < 2:
        sys.exit("need the files of at least two ranks")
    xs = [(r["poll"][1] - r["recv"][1]) / r["recv"][1] for r in rows]
    ys = [r["recv"][0] / r["recv"][1] for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    e = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - e * mx
    s = sum(r["send"][0] for r in rows) / sum(r["send"][1] for r in rows)
    passes = ", ".join("%.1f" % (x + 1) for x in xs)
    print(f"{kind}: send {s:.0f} + receive {a:.0f} = {s + a:.0f} instructions per one-way message"
          f" (empty pass {e:.0f}; passes per message {passes})")


if __name__ == "__main__":
    main()
