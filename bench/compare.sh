#!/usr/bin/env bash
# Measure hypercomm and Open MPI side by side on this machine, with the same
# methodology (bench/osu.c mirrors `hypercomm bench`), three runs each
# alternating between the libraries (each run's figure is already the median
# of 3 measurements in both), and print the medians with their ratio.
# hypercomm runs with check mode off (`--no-check`, as Open MPI has none);
# its collectives run a second time with check mode on, the default, for
# the table's check-mode column. Writes bench/results/compare.tsv,
# bench/results/compare.md and bench/results/compare.svg.
#
# The grid layer's halo exchange (`hypercomm bench halo`) is measured
# against bench/halo.c the same way, and on threads against memcpy of the
# same bytes.
#
# usage: bench/compare.sh [--transport shm|tcp|thread] [--quick] [--halo-only|--no-halo]
set -euo pipefail
cd "$(dirname "$0")/.."
transport=shm
quick=0
halo_only=0
no_halo=0
while [ $# -gt 0 ]; do
  case "$1" in
    --transport) transport="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --halo-only) halo_only=1; shift ;;
    --no-halo) no_halo=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "installing Open MPI (openmpi-bin, libopenmpi-dev)…" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
out=bench/results
mkdir -p "$out"
mpicc -O2 -o "$out/osu" bench/osu.c
mpicc -O2 -o "$out/halo" bench/halo.c
cargo build --release -q -p hypercomm-cli
hc="${CARGO_TARGET_DIR:-target}/release/hypercomm"
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

p2p_sizes=0,8,64,512,4096,65536,1048576,4194304
coll_sizes=8,1024,65536,2097152
iters=10000
if [ "$quick" = 1 ]; then p2p_sizes=8,65536,1048576; coll_sizes=8,65536; iters=2000; fi

# op n sizes
jobs=(
  "latency 2 $p2p_sizes"
  "bw 2 $p2p_sizes"
  "bibw 2 $p2p_sizes"
  "allreduce 2 $coll_sizes"
  "allreduce 4 $coll_sizes"
  "bcast 2 $coll_sizes"
  "bcast 4 $coll_sizes"
  "reduce 2 $coll_sizes"
  "reduce 4 $coll_sizes"
  "allgather 2 $coll_sizes"
  "allgather 4 $coll_sizes"
  "alltoall 2 $coll_sizes"
  "alltoall 4 $coll_sizes"
  "barrier 2 0"
  "barrier 4 0"
  "barrier 16 0"
)
if [ "$halo_only" = 1 ]; then jobs=(); fi
# Halo exchange: dim side width fields, on 4 ranks.
halos=(
  "2 1024 1 1"
  "2 1024 1 4"
  "2 1024 3 1"
  "3 128 1 1"
  "3 128 1 4"
)
if [ "$no_halo" = 1 ]; then halos=(); fi
# One Open MPI measurement into raw.tsv: `openmpi WHAT MPIRUN-ARGS...`. A
# run that fails or hangs (Open MPI's oversubscribed spinning can starve
# itself under `chrt -f`) is named and left out, not waited on forever.
openmpi() {
  local what=$1; shift
  if timeout 120 "${mpi[@]}" "$@" > "$out/osu.tmp"; then
    sed 's/^/openmpi\t/' "$out/osu.tmp" >> "$out/raw.tsv"
  else
    echo "Open MPI $what failed or took over 120 s (exit $?); left out of this run" >&2
  fi
}
: > "$out/raw.tsv"
for run in 1 2 3; do
  for j in "${jobs[@]}"; do
    set -- $j
    op=$1 n=$2 sizes=$3
    echo "run $run: $op n=$n" >&2
    openmpi "$op on $n processes" -n "$n" "$out/osu" "$op" "$sizes" "$iters"
    if "$hc" bench "$op" -n "$n" --transport "$transport" --sizes "$sizes" --iters "$iters" \
         --repeat 3 --no-check --format tsv > "$out/hc.tmp" 2> "$out/hc.err"; then
      sed 's/^/hypercomm\t/' "$out/hc.tmp" >> "$out/raw.tsv"
    else
      echo "hypercomm bench $op failed: $(tail -n 1 "$out/hc.err")" >&2
    fi
    # Collectives again with check mode on (the default a user gets).
    case "$op" in latency|bw|bibw) continue ;; esac
    if "$hc" bench "$op" -n "$n" --transport "$transport" --sizes "$sizes" --iters "$iters" \
         --repeat 3 --format tsv > "$out/hc.tmp" 2> "$out/hc.err"; then
      sed 's/^/hypercomm-check\t/' "$out/hc.tmp" >> "$out/raw.tsv"
    else
      echo "hypercomm bench $op (check mode) failed: $(tail -n 1 "$out/hc.err")" >&2
    fi
  done
  for h in "${halos[@]}"; do
    set -- $h
    label="halo${1}d-w${3}-f${4}"
    echo "run $run: $label side $2" >&2
    openmpi "$label" -n 4 "$out/halo" "$label" "$2" "$iters"
    for t in "$transport" thread; do
      lib=hypercomm
      [ "$t" = thread ] && [ "$transport" != thread ] && lib=hypercomm-thread
      if "$hc" bench halo -n 4 --transport "$t" --dim "$1" --side "$2" --width "$3" --fields "$4" \
           --iters "$iters" --repeat 3 --format tsv > "$out/hc.tmp" 2> "$out/hc.err"; then
        sed "s/^/$lib\t/" "$out/hc.tmp" >> "$out/raw.tsv"
      else
        echo "hypercomm bench halo failed: $(tail -n 1 "$out/hc.err")" >&2
      fi
    done
  done
done
# The thread transport's own targets: latency against the processes'
# transport, and a 16-rank barrier on this machine's cores.
for run in 1 2 3; do
  [ "$halo_only" = 1 ] && break
  echo "run $run: threads" >&2
  "$hc" bench latency -n 2 --transport thread --sizes 8,1048576 --iters "$iters" \
    --repeat 3 --format tsv | sed 's/^/hypercomm-thread\t/' >> "$out/raw.tsv"
  "$hc" bench barrier -n 16 --transport thread --iters "$iters" \
    --repeat 3 --no-check --format tsv | sed 's/^/hypercomm-thread\t/' >> "$out/raw.tsv"
done
python3 bench/compare.py "$out/raw.tsv" "$out" "$transport"
cat "$out/compare.md"
