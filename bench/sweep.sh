#!/bin/sh
# The collectives sweep of BENCHMARKS.md: every algorithm and auto of
# allreduce, bcast, allgather, alltoall and barrier on the thread transport,
# n = 2, 4, 8, in ROUNDS rounds of one run per point. Rounds go round all
# ranks counts and collectives, and each run goes round all variants, so
# drift of the machine touches every variant alike (round r starts with
# variant r, --rotate); bench/sweep_table.py
# combines the rounds (median or min per point).
#
# On a shared machine a run is only started when the other processes have
# used less than GATE of the CPUs for a second (waiting at most MAXWAIT
# seconds; the waits go to OUT/gate.log).
#
#   bench/sweep.sh target/release/hypercomm OUT ROUNDS [extra bench options]
#   bench/sweep_table.py OUT/round-*.tsv
#
# BENCHMARKS.md's sweeps pass `--repeat 15 --interleave --min-time-ms 2`:
# each run is then one job per size in which all variants take turns 15
# times (the run's figure per variant is the median of its 15), and the
# rounds repeat that in fresh jobs.
#
# With POINTS set to lines "op n bytes", each round measures only those
# points (every algorithm and auto), to re-measure them with more rounds.
set -eu
BIN=$1
OUT=$2
ROUNDS=$3
shift 3
GATE=${GATE:-0.15}
MAXWAIT=${MAXWAIT:-60}
mkdir -p "$OUT"

busy() {
    # Fraction of all CPUs busy over one second.
    set -- $(head -1 /proc/stat)
    t1=$(($2 + $3 + $4 + $5 + $6 + $7 + $8))
    i1=$(($5 + $6))
    sleep 1
    set -- $(head -1 /proc/stat)
    t2=$(($2 + $3 + $4 + $5 + $6 + $7 + $8))
    i2=$(($5 + $6))
    awk -v t=$((t2 - t1)) -v i=$((i2 - i1)) 'BEGIN { printf "%.2f", (t > 0) ? 1 - i / t : 0 }'
}

gate() {
    waited=0
    while :; do
        b=$(busy)
        if awk -v b="$b" -v g="$GATE" 'BEGIN { exit !(b < g) }'; then
            break
        fi
        waited=$((waited + 1))
        if [ "$waited" -ge "$MAXWAIT" ]; then
            echo "$(date -u +%H:%M:%S) $* : busy $b after ${MAXWAIT}s, running anyway" >>"$OUT/gate.log"
            return
        fi
    done
    [ "$waited" -eq 0 ] || echo "$(date -u +%H:%M:%S) $* : waited ${waited}s" >>"$OUT/gate.log"
}

run() {
    gate "$@"
    "$BIN" bench "$@" --all-algorithms --no-check --format tsv --rotate "$r"
}

POINTS=${POINTS:-}
for r in $(seq 1 "$ROUNDS"); do
    if [ -n "$POINTS" ]; then
        echo "$POINTS" | while read -r op n bytes; do
            [ -z "$op" ] || run "$op" -n "$n" --sizes "$bytes" "$@"
        done >"$OUT/round-$r.tsv"
        echo "$(date -u +%H:%M:%S) round $r, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/rounds.log"
        continue
    fi
    for n in 2 4 8; do
        for op in allreduce bcast; do
            run $op -n $n --sizes 8,512,4096,32768,262144,1048576,4194304 "$@"
        done
        for op in allgather alltoall; do
            run $op -n $n --sizes 8,512,4096,32768,262144,1048576 "$@"
        done
        run barrier -n $n "$@"
    done >"$OUT/round-$r.tsv"
    echo "$(date -u +%H:%M:%S) round $r, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/rounds.log"
done
