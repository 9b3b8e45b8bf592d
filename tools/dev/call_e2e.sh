#!/usr/bin/env bash
# tools/dev/call_e2e.sh - the end-to-end call that issue 11's done-when needs and no session has made in full
# (docs/kernels-conv.md, "Next"): yolo12n on 1280x720 frames, batch 1 and 32, frames in pageable host memory, in
# pinned memory and already on the GPU, with one, three and four detectors on the one GPU (yolo12-multi-bench).
# The targets: 10,000 img/s at batch 32 and at most 0.6 ms per image at batch 1. The nineteenth session measured
# only host frames at batch 32: 4,656 img/s with one detector and 9,776 with three (H100).
# Also, for the record of the same machine and call: the per-op profile of the yolo12n fixture and yolo12-bench on
# the peer's yolo12n under the defaults. No tests (CTEST_REGEX matches none), no sanitizers. About 3-4 minutes.
# Run it on the device machine from the repository root with OUT set (the device tool's $OUT), carrying .whl and
# .carry/catch2. Any gpu_check variable set in the environment wins over the values here.
set -u
cd "$(dirname "$0")/../.." || exit 1
export PERF_BUDGET=${PERF_BUDGET:-0}  # the sanitizer step is skipped
export PERF_TESTS=${PERF_TESTS:-test_conv}
export CTEST_REGEX=${CTEST_REGEX:-'^no_test$'}
export PERF_SCALES=${PERF_SCALES:-n}
export PERF_VARIANTS=${PERF_VARIANTS:-default}
export PERF_BENCH_VARIANTS=${PERF_BENCH_VARIANTS:-default}
export PERF_MULTI_SCALES=${PERF_MULTI_SCALES:-n}
export PERF_MULTI_DEVICES=${PERF_MULTI_DEVICES:-"0 0,0,0 0,0,0,0"}
export PERF_MULTI_BATCHES=${PERF_MULTI_BATCHES:-"1 32"}
export PERF_MULTI_INPUTS=${PERF_MULTI_INPUTS:-"host pinned device"}
exec tools/gpu_check.sh perf
