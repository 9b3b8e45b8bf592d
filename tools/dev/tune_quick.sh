#!/usr/bin/env bash
# tools/dev/tune_quick.sh - the per-conv tuning log of one model in the shortest GPU call: a minimal build (the
# library and yolo12-bench only), a model exported from a checkpoint, one yolo12-bench run with kernel tuning and its
# log (every candidate's time per conv; tools/dev/tune_log_report.py reads it).
#   tools/dev/tune_quick.sh [VARIANTS] [CHECKPOINT]   defaults: the library's variants, tests/data/yolo12n_rand.pt
# VARIANTS is a YOLO12_CONV_VARIANTS value ("" for the defaults). Environment: OUT (default out/tune), BUILD
# (default build-tune), BATCH (32). Writes the build's logs (tools/dev/bench_build.sh) and tune.log into OUT, the
# log as it goes (a call cut short still brings back what it measured).
set -u
cd "$(dirname "$0")/../.." || exit 1
variants=${1:-}
pt=${2:-tests/data/yolo12n_rand.pt}
out=${OUT:-out/tune}
build=${BUILD:-build-tune}
mkdir -p "$out"
. tools/dev/bench_build.sh
start=$SECONDS
model=$build/tune_model.y12
bench_build "$build" "$out" "$pt" "$model" || exit 1
env ${variants:+YOLO12_CONV_VARIANTS=$variants} YOLO12_CONV_TUNE=1 YOLO12_CONV_TUNE_LOG=1 timeout 150 \
  "$build/yolo12-bench" "$model" --batch "${BATCH:-32}" --precision fp16 --iters 20 --warmup 5 > "$out/tune.log" 2>&1
echo "tune: rc=$? ($(grep -c '^tune ' "$out/tune.log") convs, $((SECONDS - start)) s)"
grep -F "net(graph)" "$out/tune.log"
