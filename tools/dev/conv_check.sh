#!/usr/bin/env bash
# tools/dev/conv_check.sh - build and run the conv kernel tests without the rest of the project.
#   tools/dev/conv_check.sh build   compile tests/gpu/test_conv.cu + cuda/conv*.cu into build-conv/test_conv
#                                   (nvcc, sm_90a; Catch2 from the system headers, v2 or v3 single include)
#   tools/dev/conv_check.sh run     run the correctness tests, then the [.bench] timings; logs go to
#                                   $OUT (or build-conv/) and a summary is printed last
# The device machine gets the binary built here (carry build-conv/test_conv), so a call only runs.
set -u
cd "$(dirname "$0")/../.."
mode=${1:-build}
out=${OUT:-build-conv}
mkdir -p build-conv "$out"
if [ "$mode" = build ]; then
  set -e
  NVCC=${NVCC:-nvcc}
  flags=(-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -lineinfo
         -I include -I cuda -I src -I tests -DYOLO12_SOURCE_DIR='"."' -DYOLO12_BINARY_DIR='"."')
  objs=()
  for f in cuda/conv*.cu tests/gpu/test_conv.cu; do
    o=build-conv/$(basename "$f").o
    "$NVCC" "${flags[@]}" -Xptxas -v -c "$f" -o "$o" 2> "build-conv/$(basename "$f").ptxas.log"
    objs+=("$o")
  done
  # The Catch2 main and the support helpers never change here: built once.
  [ -f build-conv/test_main.o ] ||
    "$NVCC" "${flags[@]}" -DYOLO12_TEST_NEEDS_GPU=1 -x cu -c tests/test_main.cpp -o build-conv/test_main.o
  [ -f build-conv/support.o ] || "$NVCC" "${flags[@]}" -x cu -c tests/support.cpp -o build-conv/support.o
  "$NVCC" -gencode=arch=compute_90a,code=sm_90a -o build-conv/test_conv "${objs[@]}" build-conv/test_main.o build-conv/support.o
  grep -h -E "registers|spill" build-conv/conv*.ptxas.log | sort | uniq -c | sort -rn | head -20
  echo "built build-conv/test_conv"
  exit 0
fi
nvidia-smi -L
timeout 200 build-conv/test_conv "[conv]" > "$out/test.log" 2>&1
rc=$?
tail -40 "$out/test.log"
timeout 150 build-conv/test_conv "[.bench]" -s 2>&1 | grep BENCH | tee "$out/bench.log" || true
echo "==== summary"
tail -3 "$out/test.log"
echo "test rc=$rc"
