#!/usr/bin/env bash
# tools/dev/call_stem_pair_quick.sh - the shortest GPU check of conv2d_stem_pair_f16: configure, build the library
# and test_stem_pair only, run its [kernel] cases (the kernel against the double reference of the two convs and
# against conv2d_stem_f16 + the second conv's plan, the refusals), then its "[.bench]" timings. For a call with
# little device time left (about 2 minutes on a fresh H100 after the machine's start); the full call is
# tools/dev/call_stem_pair_e2e.sh. Logs into $OUT (default out/stem_pair_quick). Carry .carry/catch2 where the
# machine has no Catch2 package.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-out/stem_pair_quick}
build=${BUILD:-build-quick}
mkdir -p "$out"
nvidia-smi -L > "$out/gpu.txt" 2>&1
args=(-DCMAKE_BUILD_TYPE=Release -DYOLO12_BUILD_CLI=OFF -DCMAKE_CUDA_ARCHITECTURES=90a-real)
if ! ls /usr/lib/cmake/Catch2/Catch2Config.cmake /usr/lib/*/cmake/Catch2/Catch2Config.cmake \
    /usr/local/lib/cmake/Catch2/Catch2Config.cmake > /dev/null 2>&1 && [ -d .carry/catch2 ]; then
  args+=(-DCatch2_DIR="$PWD/.carry/catch2/lib/cmake/Catch2")
fi
timeout 60 cmake -S . -B "$build" "${args[@]}" > "$out/configure.log" 2>&1 ||
  { echo "configure FAILED"; tail -20 "$out/configure.log"; exit 1; }
timeout "${BUILD_TIMEOUT:-200}" cmake --build "$build" -j "$(nproc)" --target test_stem_pair > "$out/build.log" 2>&1 ||
  { echo "build FAILED"; grep -E "error|Error" "$out/build.log" | head -20; exit 1; }
timeout 60 "$build/tests/test_stem_pair" "[kernel]" > "$out/kernel.txt" 2>&1
echo "test_stem_pair [kernel]: rc=$? $(grep -E 'All tests passed|test cases:' "$out/kernel.txt" | tail -1)"
grep -B2 -A8 FAILED "$out/kernel.txt" | head -40
timeout 60 "$build/tests/test_stem_pair" "[.bench]" > "$out/bench.txt" 2>&1
echo "test_stem_pair [.bench]: rc=$?"
grep "^stem_pair" "$out/bench.txt"
