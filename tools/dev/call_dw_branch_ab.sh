#!/usr/bin/env bash
# tools/dev/call_dw_branch_ab.sh - one GPU call, no build there, for a change to conv2d_dw_branch_f16 (the Detect
# head's class branch in one kernel) built here: its test, its kernel cases under the sanitizers, its timing alone,
# and the network against the build it changes.
#
# Carry: .whl and .carry/prebuilt with ab.tar.xz holding three stripped binaries of CI-configuration builds (sm_90a):
#   yolo12-bench      the change
#   yolo12-bench-b    its base (main)
#   test_dw_branch    the change's test
# packed here with
#   strip -o /tmp/p/yolo12-bench CHANGE/yolo12-bench; strip -o /tmp/p/yolo12-bench-b BASE/yolo12-bench;
#   strip -o /tmp/p/test_dw_branch CHANGE/tests/test_dw_branch;
#   tar -C /tmp/p -cf - . | xz -T1 --lzma2=preset=9e,dict=320MiB > .carry/prebuilt/ab.tar.xz
# (the large dictionary lets xz find the two benches' common code: about half the size of the default's archive).
#
# Steps, each under its own time limit, logs into $OUT (tools/dev/call_prebuilt.sh's test and bench modes):
#   1. test_dw_branch (every case: the kernel on ten shapes, the rule, the whole model on the fixtures);
#   2. its [kernel] cases under compute-sanitizer memcheck, then racecheck;
#   3. test_dw_branch "[.bench]": the kernel against the five convs on yolo12n's P3 and P4 and yolo12s's P3;
#   4. yolo12-bench, base and change alternated (ROUNDS, default 3) on yolo12n and yolo12s, then the change with
#      YOLO12_CHAIN_RUN=fused (the class branch fused where the rule keeps the five convs: yolo12s's P3 at batch 32).
set -u
cd "$(dirname "$0")/../.."
export OUT=${OUT:-out/dw_branch_ab}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
date -u >> "$OUT/gpu.txt"
tar -xJf .carry/prebuilt/ab.tar.xz -C /tmp || { echo "no .carry/prebuilt/ab.tar.xz" >&2; exit 1; }
chmod +x /tmp/yolo12-bench /tmp/yolo12-bench-b /tmp/test_dw_branch
# YOLO12_CHAIN_RUN=fused as a binary of its own, so that call_prebuilt.sh's bench alternates it with the others.
printf '#!/bin/sh\nYOLO12_CHAIN_RUN=fused exec /tmp/yolo12-bench "$@"\n' > /tmp/yolo12-bench-fused
chmod +x /tmp/yolo12-bench-fused

TEST_TIMEOUT=150 tools/dev/call_prebuilt.sh test test_dw_branch
for tool in memcheck racecheck; do
  SANITIZER=$tool TEST_TIMEOUT=120 tools/dev/call_prebuilt.sh test test_dw_branch "[kernel]"
done
timeout 60 /tmp/test_dw_branch "[.bench]" > "$OUT/dw_branch_bench.log" 2>&1
grep "^dw_branch" "$OUT/dw_branch_bench.log"
ROUNDS=${ROUNDS:-3} BIN="/tmp/yolo12-bench-b /tmp/yolo12-bench" timeout 200 tools/dev/call_prebuilt.sh bench n,s
mv "$OUT/bench.txt" "$OUT/bench_ab.txt"
ROUNDS=2 BIN="/tmp/yolo12-bench /tmp/yolo12-bench-fused" timeout 90 tools/dev/call_prebuilt.sh bench s
mv "$OUT/bench.txt" "$OUT/bench_fused_s.txt"
