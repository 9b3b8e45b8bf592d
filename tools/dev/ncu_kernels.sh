#!/usr/bin/env bash
# tools/dev/ncu_kernels.sh - Nsight Compute counters for the network kernels whose names match a regex,
# in one short call on the GPU machine: a minimal build (the library and yolo12-bench only), a model
# exported from a checkpoint, one yolo12-bench run under ncu on one stream.
#   tools/dev/ncu_kernels.sh [KERNEL_REGEX] [CHECKPOINT]   defaults: wgmma, tests/data/yolo12n_rand.pt
# Environment: OUT (default out/ncu), BUILD (default build-ncu), BATCH (32), COUNT (kernels, 8),
# NCU_TIMEOUT (seconds for the ncu run, 150), NCU_STALLS=1 (also the warp stall reasons per issued instruction and
# the instruction mix: tools/dev/ncu_stall_metrics.txt). Writes configure.log, build.log, export.log (tools/dev/bench_build.sh)
# and ncu.txt.
set -u
cd "$(dirname "$0")/../.." || exit 1
regex=${1:-wgmma}
pt=${2:-tests/data/yolo12n_rand.pt}
out=${OUT:-out/ncu}
build=${BUILD:-build-ncu}
mkdir -p "$out"
. tools/dev/bench_build.sh
model=$build/ncu_model.y12
bench_build "$build" "$out" "$pt" "$model" || exit 1
YOLO12_CUDA_STREAMS=1 timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none --kernel-name "regex:$regex" \
  --launch-count "${COUNT:-8}" --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --section MemoryWorkloadAnalysis --section LaunchStats \
  ${NCU_STALLS:+--metrics "$(grep -v '^#' tools/dev/ncu_stall_metrics.txt | tr -s ' \n' ',' | sed 's/^,//; s/,$//')"} \
  "$build/yolo12-bench" "$model" --batch "${BATCH:-32}" --precision fp16 --iters 2 --warmup 0 > "$out/ncu.txt" 2>&1
echo "ncu: rc=$? $(grep -c 'GPU Speed Of Light' "$out/ncu.txt") kernels"
