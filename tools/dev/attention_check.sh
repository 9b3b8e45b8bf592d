#!/usr/bin/env bash
# tools/dev/attention_check.sh - the area-attention kernels on their own, without configuring the
# whole project: builds tests/gpu/test_attention.cu + src/backends/cuda/attention.cu with nvcc, runs the
# correctness tests, then the timings ("[.bench]").
#
#   tools/dev/attention_check.sh build [BIN_DIR]   build only (here: no GPU needed)
#   tools/dev/attention_check.sh run [BIN_DIR]     run a binary built before (on the GPU machine)
#   tools/dev/attention_check.sh all [BIN_DIR]     build, then run
# BIN_DIR defaults to build-attn. Logs go to $OUT when set (device tool), else to BIN_DIR.
# Catch2: the system's v2 single header is used when no v3 is installed; where only v3 headers exist
# (compiled library unknown), put v2's catch.hpp at .carry/catch2v2/catch2/catch.hpp and it is used
# through a shim posing as catch_all.hpp.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-all}
bin=${2:-build-attn}
logs=${OUT:-$bin}
mkdir -p "$bin" "$logs"
nvcc_bin=${NVCC:-nvcc}
arch=${YOLO12_ATTN_ARCH:--gencode=arch=compute_90a,code=sm_90a}

build() {
  local catch_flags=()
  if [ -f .carry/catch2v2/catch2/catch.hpp ] && [ -f /usr/include/catch2/catch_all.hpp ]; then
    mkdir -p "$bin/shim/catch2"
    printf '#pragma once\n#ifdef YOLO12_CATCH_IMPL\n#define CATCH_CONFIG_RUNNER\n#endif\n#include "%s"\n' \
      "$PWD/.carry/catch2v2/catch2/catch.hpp" >"$bin/shim/catch2/catch_all.hpp"
    catch_flags=(-I "$bin/shim")
  fi
  local common=(-std=c++17 -O3 "$arch" "${catch_flags[@]}" -I tests -I include -I cuda -I src
                -DYOLO12_SOURCE_DIR="\"$PWD\"" -DYOLO12_BINARY_DIR="\"$PWD/$bin\"")
  "$nvcc_bin" "${common[@]}" -DYOLO12_TEST_NEEDS_GPU=1 -DYOLO12_CATCH_IMPL -c tests/test_main.cpp -o "$bin/test_main.o" &
  "$nvcc_bin" "${common[@]}" -c tests/support.cpp -o "$bin/support.o" &
  "$nvcc_bin" "${common[@]}" -c tests/gpu/test_attention.cu -o "$bin/test_attention.o" &
  # The shared reference (tests/ops) and the graph helpers it uses.
  for f in tests/ops/op_suite.cpp tests/ops/op_cases.cpp src/graph/graph.cpp; do
    "$nvcc_bin" "${common[@]}" -c "$f" -o "$bin/$(basename "$f" .cpp).o" || exit 1
  done
  "$nvcc_bin" "${common[@]}" --expt-relaxed-constexpr -lineinfo -Xptxas -v -c src/backends/cuda/attention.cu \
    -o "$bin/attention.o" 2>"$logs/attention_ptxas.log" &
  # launch.cuh's launches read the device's facts (programmatic dependent launch).
  "$nvcc_bin" "${common[@]}" -c src/backends/cuda/device.cu -o "$bin/device.o" || exit 1
  wait %1 && wait %2 && wait %3 && wait %4
  grep -E "registers|spill" "$logs/attention_ptxas.log" || true
  "$nvcc_bin" "$arch" "$bin/test_main.o" "$bin/support.o" "$bin/test_attention.o" "$bin/attention.o" \
    "$bin/op_suite.o" "$bin/op_cases.o" "$bin/graph.o" "$bin/device.o" -o "$bin/test_attention"
  echo "built $bin/test_attention"
}

run() {
  local rc=0
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader || true
  timeout 240 "$bin/test_attention" "[attention]~[bench]" 2>&1 | tee "$logs/attention_test.log" || rc=$?
  timeout 150 "$bin/test_attention" "[bench]" -s 2>&1 | grep -E "^BENCH" | tee "$logs/attention_bench.log" || true
  local san="not run"
  if [ "${ATTN_SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    san=$( (timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/test_attention" \
             "area attention fp16*" >"$logs/attention_memcheck.log" 2>&1 && echo clean) || echo "rc $? (see log)")
    grep -E "ERROR SUMMARY|Invalid" "$logs/attention_memcheck.log" | head -5 || true
  fi
  echo "---- summary"
  echo "memcheck (fp16 cases): $san"
  tail -n 3 "$logs/attention_test.log"
  echo "test exit code: $rc"
  cat "$logs/attention_bench.log"
  return $rc
}

case "$mode" in
  build) build ;;
  run) run ;;
  all) build && run ;;
  *) echo "usage: $0 build|run|all [BIN_DIR]" >&2; exit 2 ;;
esac
