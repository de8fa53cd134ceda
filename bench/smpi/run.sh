#!/bin/sh
# The simulator-speed comparison of BENCHMARKS.md: one collective on P
# simulated ranks in SimGrid's SMPI (Debian: apt-get install libsimgrid-dev),
# timed with /usr/bin/time. The platform is a flat cluster of P hosts
# (1 µs, 10 GB/s links, a non-blocking backbone); the point is the cost of
# simulating, not the predicted time.
#
#   bench/smpi/run.sh bcast 65536      # binomial tree broadcast of one double
#   bench/smpi/run.sh allreduce 16384  # recursive doubling (SMPI's rdb)
#
# More than about 32 000 ranks need more memory maps than Linux allows by
# default (one per rank's stack): sysctl -w vm.max_map_count=262144.
set -eu
OP=$1
P=$2
DIR=${TMPDIR:-/tmp}/hypercomm-smpi
mkdir -p "$DIR"
HERE=$(cd "$(dirname "$0")" && pwd)
smpicc -O2 -o "$DIR/coll" "$HERE/coll.c"
cat > "$DIR/plat$P.xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-$((P - 1))" speed="1Gf" bw="10GBps" lat="1us" bb_bw="10000GBps" bb_lat="0us" bb_sharing_policy="FATPIPE"/>
</platform>
XML
seq 0 $((P - 1)) | sed 's/^/node-/' > "$DIR/hosts$P"
case $OP in
bcast) ALG=--cfg=smpi/bcast:binomial_tree ;;
allreduce) ALG=--cfg=smpi/allreduce:rdb ;;
*) echo "run.sh: unknown operation $OP (bcast or allreduce)" >&2; exit 2 ;;
esac
/usr/bin/time -f "%e s wall, %U s user, %S s system, %M KiB peak" \
    smpirun -np "$P" -platform "$DIR/plat$P.xml" -hostfile "$DIR/hosts$P" \
    --cfg=smpi/privatization:no --cfg=smpi/host-speed:1Gf \
    --cfg=contexts/stack-size:128 --cfg=contexts/guard-size:0 "$ALG" \
    "$DIR/coll" "$OP" 2>&1 | grep -v 'Configuration change\|Switch to'
