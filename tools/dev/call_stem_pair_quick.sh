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
. tools/dev/bench_build.sh
dev_build "$build" "$out" test_stem_pair ON || exit 1
timeout 60 "$build/tests/test_stem_pair" "[kernel]" > "$out/kernel.txt" 2>&1
echo "test_stem_pair [kernel]: rc=$? $(grep -E 'All tests passed|test cases:' "$out/kernel.txt" | tail -1)"
grep -B2 -A8 FAILED "$out/kernel.txt" | head -40
timeout 60 "$build/tests/test_stem_pair" "[.bench]" > "$out/bench.txt" 2>&1
echo "test_stem_pair [.bench]: rc=$?"
grep "^stem_pair" "$out/bench.txt"
