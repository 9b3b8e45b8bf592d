#!/usr/bin/env bash
# python/yolo12_torch/gpu_check.sh - yolo12_torch on one CUDA GPU in one call (at most TOTAL_BUDGET
# seconds, default 480, so under 9 minutes with the wheel install):
#   1. Ultralytics and what it imports (opencv-python(-headless), pillow, PyYAML) and ninja, for a
#      parallel build, from the wheels in .whl/ when not installed (pip --no-index: the GPU machine
#      has no network)
#   2. the extension with its CUDA kernels (sm_90a unless TORCH_CUDA_ARCH_LIST says otherwise), in place
#   3. the Python tests named by TESTS (default gpu: tests/python/test_torch_gpu.py; "gpu ops patch"
#      adds the CPU tests that CI runs)
#   4. the benchmarks (bench.py: training steps, then the per-op shapes) in the time that is left
#      (BENCH_COMPILE: the scales also trained under torch.compile; BENCH_ARGS: more bench.py options)
# Every step runs whatever the earlier ones gave (a failed build makes the tests fail at their import,
# which their logs say) under its own timeout, cut to the time left. Results go to $OUT (default
# ./out/torch_gpu_check): summary.json and summary.txt (every step's exit code and seconds, rewritten
# after each step), build.log, test_*.log, bench.json, bench.md, bench.log.
# Run from anywhere: bash python/yolo12_torch/gpu_check.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$root/out/torch_gpu_check}
mkdir -p "$out"
t0=$(date +%s)
deadline=$(( t0 + ${TOTAL_BUDGET:-480} ))
steps_json=()
summary=()
cd "$root"

# Seconds a step may take: its own limit, cut to what is left before the deadline minus `reserve`.
limit() {  # limit OWN RESERVE
  local left=$(( deadline - $(date +%s) - $2 ))
  [ "$left" -lt 10 ] && left=10
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}
# record NAME RC SECONDS NOTE: one step's result into summary.txt and summary.json.
record() {
  local note
  note=$(printf '%s' "$4" | tr -d '\000-\037' | tr '"\\' "'/")  # a JSON string without escapes
  summary+=("$1: rc=$2 in $3 s${4:+ ($4)}")
  steps_json+=("{\"step\": \"$1\", \"rc\": $2, \"seconds\": $3, \"note\": \"$note\"}")
  echo "[torch_gpu_check] ${summary[-1]}"
  printf '%s\n' "${summary[@]}" > "$out/summary.txt"
  local IFS=,
  printf '{"gpu": "%s", "total_budget_s": %d, "steps": [%s]}\n' \
    "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" "${TOTAL_BUDGET:-480}" \
    "${steps_json[*]}" > "$out/summary.json"
}

if ls .whl/*.whl >/dev/null 2>&1 && ! python3 -c "import ultralytics, ninja" 2>/dev/null; then
  s=$(date +%s)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/yolo12-torch-site \
    .whl/*.whl > "$out/pip.log" 2>&1
  rc=$?
  record wheels $rc $(( $(date +%s) - s )) "$(ls .whl | tr '\n' ' ')"
  export PYTHONPATH=/tmp/yolo12-torch-site${PYTHONPATH:+:$PYTHONPATH}
  export PATH=/tmp/yolo12-torch-site/bin:$PATH  # the ninja executable
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=$PATH:/usr/local/cuda/bin
export YOLO_OFFLINE=1 PYTHONUNBUFFERED=1

# A module left by an earlier call must not stand in for one this build failed to make.
rm -f "$here"/yolo12_torch/_C*.so
s=$(date +%s)
(cd "$here" && YOLO12_TORCH_CUDA=1 MAX_JOBS=$(nproc) timeout "$(limit "${BUILD_TIMEOUT:-300}" 120)" \
   python3 setup.py build_ext --inplace --build-temp "$root/build-torch" > "$out/build.log" 2>&1)
rc=$?
record "build (CUDA)" $rc $(( $(date +%s) - s )) "$(python3 -c 'import torch; print("torch", torch.__version__)' 2>&1)"
[ $rc -ne 0 ] && tail -30 "$out/build.log"

export YOLO12_TORCH_REQUIRED=1  # a test that cannot import the package fails, it does not skip
for t in ${TESTS-gpu}; do  # TESTS="": none
  s=$(date +%s)
  timeout "$(limit "${TEST_TIMEOUT:-240}" 90)" python3 "tests/python/test_torch_$t.py" > "$out/test_$t.log" 2>&1
  rc=$?
  record "test_torch_$t.py" $rc $(( $(date +%s) - s )) "$(tail -3 "$out/test_$t.log" | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E "^(FAIL|ERROR)|Error|assert" "$out/test_$t.log" | head -20
done

s=$(date +%s)
budget=$(( deadline - s - 30 ))  # bench.py stops starting rows at its budget; 30 s to finish one
[ "$budget" -lt 30 ] && budget=30
timeout $(( budget + 25 )) python3 "$here/bench.py" --out "$out" --budget "${BENCH_BUDGET:-$budget}" \
  --compile "${BENCH_COMPILE:-n}" ${BENCH_ARGS:-} > "$out/bench.log" 2>&1
rc=$?
record bench $rc $(( $(date +%s) - s )) "$(tail -1 "$out/bench.log")"
[ -f "$out/bench.md" ] && cat "$out/bench.md"
record total 0 $(( $(date +%s) - t0 )) ""
cat "$out/summary.txt"
