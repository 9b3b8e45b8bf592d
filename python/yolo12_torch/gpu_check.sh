#!/usr/bin/env bash
# python/yolo12_torch/gpu_check.sh - yolo12_torch on one CUDA GPU in one call (about 7 minutes on an H200):
#   1. Ultralytics (and ninja, for a parallel build) from the wheels in .whl/ when not installed
#      (pip --no-index: the GPU machine has no network)
#   2. the extension with its CUDA kernels (sm_90a unless TORCH_CUDA_ARCH_LIST says otherwise), in place
#   3. the Python tests named by TESTS (default gpu: tests/python/test_torch_gpu.py; "gpu ops patch"
#      adds the CPU tests that CI runs)
#   4. the benchmarks (bench.py: training steps, then the per-op shapes), within BENCH_BUDGET seconds
# Results go to $OUT (default ./out/torch_gpu_check): build.log, test_*.log, bench.json, bench.md,
# summary.txt. Each step has its own timeout. Run from anywhere: bash python/yolo12_torch/gpu_check.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$root/out/torch_gpu_check}
mkdir -p "$out"
summary=()
note() { summary+=("$1"); echo "[torch_gpu_check] $1"; }
t0=$(date +%s)
cd "$root"

if ls .whl/*.whl >/dev/null 2>&1 && ! python3 -c "import ultralytics, ninja" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/yolo12-torch-site \
    .whl/*.whl > "$out/pip.log" 2>&1
  note "wheels from .whl: rc=$?"
  export PYTHONPATH=/tmp/yolo12-torch-site${PYTHONPATH:+:$PYTHONPATH}
  export PATH=/tmp/yolo12-torch-site/bin:$PATH  # the ninja executable
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=$PATH:/usr/local/cuda/bin
export YOLO_OFFLINE=1 PYTHONUNBUFFERED=1

(cd "$here" && YOLO12_TORCH_CUDA=1 MAX_JOBS=$(nproc) timeout "${BUILD_TIMEOUT:-300}" \
   python3 setup.py build_ext --inplace --build-temp "$root/build-torch" > "$out/build.log" 2>&1)
rc=$?
note "build (CUDA): rc=$rc in $(( $(date +%s) - t0 )) s"
if [ $rc -ne 0 ]; then
  tail -30 "$out/build.log"
else
  export YOLO12_TORCH_REQUIRED=1
  for t in ${TESTS:-gpu}; do
    s=$(date +%s)
    timeout "${TEST_TIMEOUT:-240}" python3 "tests/python/test_torch_$t.py" > "$out/test_$t.log" 2>&1
    rc=$?
    note "test_torch_$t.py: rc=$rc in $(( $(date +%s) - s )) s ($(tail -3 "$out/test_$t.log" | tr '\n' ' '))"
    [ $rc -ne 0 ] && grep -E "^(FAIL|ERROR)|Error|assert" "$out/test_$t.log" | head -20
  done
  s=$(date +%s)
  left=$(( ${TOTAL_BUDGET:-420} - (s - t0) ))
  [ "$left" -lt 60 ] && left=60
  timeout $(( left + 60 )) python3 "$here/bench.py" --out "$out" --budget "${BENCH_BUDGET:-$left}" \
    --compile "${BENCH_COMPILE:-n}" > "$out/bench.log" 2>&1
  note "bench: rc=$? in $(( $(date +%s) - s )) s"
  [ -f "$out/bench.md" ] && cat "$out/bench.md"
fi
note "total $(( $(date +%s) - t0 )) s"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
