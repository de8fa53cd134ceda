#!/usr/bin/env bash
# Instructions per one-way 8-byte message, hypercomm (shm) against Open MPI
# (vader), counted with callgrind: see bench/callgrind_oneway.py for the
# method. Each library runs a ping-pong of 20 000 iterations twice with
# both ranks under callgrind, and twice with one rank under callgrind and
# its partner native (it answers at once: that rank waits only a few
# passes), which spreads the waiting the fit needs.
#
# usage: bench/callgrind_oneway.sh   (writes bench/results/callgrind/)
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/callgrind
rm -rf "$out"; mkdir -p "$out"
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
cargo build --release -q -p hypercomm-cli
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
hc="$target_dir/release/hypercomm"
mpicc -O2 -o "$out/osu" bench/osu.c
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
vg=(valgrind --tool=callgrind)
args=(bench latency -n 2 --transport shm --sizes 8 --iters 20000 --repeat 1 --no-check)
# A rank under callgrind, the other native (`hypercomm run` starts the
# ranks; the key tells the bench's copies which measurement they are).
cat > "$out/one.sh" <<'WRAP'
#!/bin/sh
if [ "$HYPERCOMM_RANK" = "$VG_RANK" ] || [ "$OMPI_COMM_WORLD_RANK" = "$VG_RANK" ]; then
  exec valgrind --tool=callgrind --callgrind-out-file="$VG_OUT.%p" "$@"
fi
exec "$@"
WRAP
chmod +x "$out/one.sh"
for run in 1 2; do
  "${vg[@]}" --trace-children=yes --callgrind-out-file="$out/hc.both$run.%p" "$hc" "${args[@]}" >/dev/null 2>&1
  HYPERCOMM_YIELD_US=100000000 HYPERCOMM_PROCESSES_KEY=latency/8/0 VG_RANK=$((run - 1)) VG_OUT="$out/hc.one$run" \
    "$hc" run -n 2 --transport shm -- "$out/one.sh" "$hc" "${args[@]}" >/dev/null 2>&1
  mpirun --oversubscribe --bind-to none -n 2 "${vg[@]}" --callgrind-out-file="$out/ompi.both$run.%p" \
    "$out/osu" latency 8 20000 >/dev/null 2>&1
  VG_RANK=$((run - 1)) VG_OUT="$out/ompi.one$run" mpirun --oversubscribe --bind-to none -n 2 \
    -x VG_RANK -x VG_OUT "$out/one.sh" "$out/osu" latency 8 20000 >/dev/null 2>&1
done
# The launcher's own file (no receives) is ignored by the script.
python3 bench/callgrind_oneway.py hc "$out"/hc.*
python3 bench/callgrind_oneway.py ompi "$out"/ompi.*
