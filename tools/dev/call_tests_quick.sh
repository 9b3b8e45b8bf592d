#!/usr/bin/env bash
# tools/dev/call_tests_quick.sh TEST... - the shortest GPU call that runs some GPU tests in full (their cases that
# are not hidden): configure, build the library and the named tests only (tools/dev/bench_build.sh), export the
# repository's fixture models (tests/data/*.pt, numpy only), run each test once with them (YOLO12_TEST_MODELS).
# For a call with little device time left: about 2.5 minutes on a fresh machine for one or two tests. The whole
# suite is `tools/gpu_check.sh test`. Logs into $OUT (default out/tests_quick). Carry .carry/catch2 where the machine
# has no Catch2 package.
set -u
cd "$(dirname "$0")/../.." || exit 1
[ $# -ge 1 ] || { echo "usage: $0 TEST..." >&2; exit 2; }
out=${OUT:-out/tests_quick}
build=${BUILD:-build-quick}
mkdir -p "$out" "$build/models"
nvidia-smi -L > "$out/gpu.txt" 2>&1
. tools/dev/bench_build.sh
for t in "$@"; do dev_build "$build" "$out" "$t" ON > "$out/build_$t.txt" || { echo "build of $t FAILED"; cat "$out/build_$t.txt"; exit 1; }; done
for pt in tests/data/*.pt; do
  timeout 120 python3 exporter/export.py "$pt" -o "$build/models/$(basename "${pt%.*}").y12" >> "$out/export.log" 2>&1 ||
    echo "export of $pt FAILED"
done
export YOLO12_TEST_MODELS=$build/models
for t in "$@"; do
  timeout 150 "$build/tests/$t" > "$out/$t.log" 2>&1
  echo "$t: rc=$? $(grep -E 'All tests passed|test cases:' "$out/$t.log" | tail -1)"
  grep -B3 -A8 FAILED "$out/$t.log" | head -40
done
