#!/usr/bin/env bash
# tools/dev/ncu_kernels.sh - Nsight Compute counters for the network kernels whose names match a regex,
# in one short call on the GPU machine: a minimal build (the library and yolo12-bench only), a model
# exported from a checkpoint, one yolo12-bench run under ncu on one stream.
#   tools/dev/ncu_kernels.sh [KERNEL_REGEX] [CHECKPOINT]   defaults: wgmma, tests/data/yolo12n_rand.pt
# Environment: OUT (default out/ncu), BUILD (default build-ncu), BATCH (32), COUNT (kernels, 8),
# NCU_TIMEOUT (seconds for the ncu run, 150). Writes configure.log, build.log, export.log and ncu.txt.
set -u
cd "$(dirname "$0")/../.." || exit 1
regex=${1:-wgmma}
pt=${2:-tests/data/yolo12n_rand.pt}
out=${OUT:-out/ncu}
build=${BUILD:-build-ncu}
mkdir -p "$out"
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
timeout 120 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DYOLO12_BUILD_CLI=OFF -DYOLO12_BUILD_TESTS=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90a-real > "$out/configure.log" 2>&1 || { echo "configure FAILED"; exit 1; }
start=$SECONDS
timeout 300 cmake --build "$build" -j"$(nproc)" --target yolo12-bench > "$out/build.log" 2>&1 ||
  { echo "build FAILED"; grep -m5 error "$out/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s"
model=$build/ncu_model.y12
timeout 120 python3 exporter/export.py "$pt" -o "$model" > "$out/export.log" 2>&1 || { echo "export FAILED"; exit 1; }
YOLO12_CUDA_STREAMS=1 timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none --kernel-name "regex:$regex" \
  --launch-count "${COUNT:-8}" --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --section MemoryWorkloadAnalysis --section LaunchStats \
  "$build/yolo12-bench" "$model" --batch "${BATCH:-32}" --precision fp16 --iters 2 --warmup 0 > "$out/ncu.txt" 2>&1
echo "ncu: rc=$? $(grep -c 'GPU Speed Of Light' "$out/ncu.txt") kernels"
