#!/usr/bin/env bash
# tools/dev/call_staging.sh - one GPU call (about 9 minutes on a fresh machine) for the staging block's two switches
# (docs/api.md): YOLO12_STAGING_HALVES (frames reduced by an even factor packed already resized on the host; on) and
# YOLO12_STAGING_OVERLAP (the block copied in ranges while it packs; off). It is `tools/gpu_check.sh perf` with:
# - the library, test_preprocess, test_model_gpu, yolo12-bench and yolo12-multi-bench built; both tests run in ctest
#   (the GPU letterbox against the CPU's bit for bit with the resized packing; the detections with each switch on and
#   off, bit for bit);
# - yolo12n (the peer's random weights) end to end on 1280x720 host frames at batch 1 and 32 with yolo12-bench, under
#   the defaults, the rows (halves off), the overlap, and both off-defaults together;
# - yolo12-multi-bench with one, two and three detectors on the GPU at batch 32 and 1, halves on and off;
# - compute-sanitizer memcheck and racecheck on test_preprocess's GPU cases in the time left.
# Carry .whl (the peer's weights) and .carry/catch2 where the machine lacks them. Logs into $OUT (out/staging).
set -u
cd "$(dirname "$0")/../.." || exit 1
export OUT=${OUT:-out/staging}
export PERF_BUDGET=${PERF_BUDGET:-510}
export PERF_TESTS="test_preprocess test_model_gpu" PERF_ALL_TESTS=1 CTEST_REGEX='^test_(preprocess|model_gpu)$'
export PERF_VARIANTS=default PERF_SCALES=n
export PERF_BENCH_VARIANTS="default rows:YOLO12_STAGING_HALVES=0 overlap:YOLO12_STAGING_OVERLAP=1 \
rowsoverlap:YOLO12_STAGING_HALVES=0+YOLO12_STAGING_OVERLAP=1"
export PERF_MULTI_DEVICES="0 0,0 0,0,0" PERF_MULTI_BATCHES="32 1" PERF_MULTI_VARIANTS="default rows:YOLO12_STAGING_HALVES=0"
export PERF_SAN_TAGS="test_preprocess:gpu"
exec tools/gpu_check.sh perf
