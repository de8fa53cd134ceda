#!/usr/bin/env bash
# Run every fuzz target for a while with cargo-fuzz (libFuzzer), outside CI:
#   fuzz/run.sh [SECONDS per target, default 600] [target ...]
# Installs the nightly toolchain and cargo-fuzz when missing. Each target
# starts from fuzz/seeds/<target> and fuzz/corpus/<target>, writes new
# inputs to fuzz/corpus/<target> (minimised at the end: that is what is
# kept and replayed on stable by tests/fuzz_corpus.rs) and crashers to
# fuzz/artifacts/<target>. A crasher, once fixed, is copied to
# fuzz/regressions/<target>/. The last lines of each run's log (executions,
# coverage) go into FUZZING.md by hand.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(frame_decoder handshake picl_reader)
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
mkdir -p logs
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "seeds/$t"
    echo "== $t for $secs s"
    cargo +nightly fuzz run -O "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
        >"logs/$t.log" 2>&1 || { echo "$t: crashed, see logs/$t.log and artifacts/$t"; tail -40 "logs/$t.log"; exit 1; }
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ +DONE' "logs/$t.log" || true
    cargo +nightly fuzz cmin -O "$t" "corpus/$t" >"logs/$t.cmin.log" 2>&1
    echo "$t: $(ls "corpus/$t" | wc -l) corpus inputs kept"
done
