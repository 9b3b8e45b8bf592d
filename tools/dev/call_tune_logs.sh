#!/usr/bin/env bash
# tools/dev/call_tune_logs.sh - the eighteenth session's first GPU call (docs/kernels-conv.md, "The eighteenth
# session"): what the selection rules should be refitted to, after the seventeenth session's epilogue changed how
# fast the mma.sync and wgmma kernels are relative to each other. No device machine started in that session; the
# nineteenth made it (docs/results/2026-12-05-h100-session19/call1-tune-logs) and turned both variants on, so the
# second bench setting is now the defaults with both off. One `tools/gpu_check.sh perf` call:
#   - test_conv (ctest), then, in the time PERF_BUDGET leaves, compute-sanitizer memcheck and racecheck on its
#     [epi_hoist] case (every GEMM plan tuning offers, against the reference);
#   - the per-op profile of the yolo12n fixture under the defaults (the roofline table);
#   - the per-op profile of yolo12n (the peer's random weights) with kernel tuning and its log under the
#     defaults: each `tune` line's first plan is conv_select's, the others every candidate, so
#     `tools/dev/tune_log_report.py --gaps` and `yolo12-rule-replay` (tools/dev/rule_replay.cu) read where the
#     rules lose and what a changed rule would cost;
#   - yolo12-bench on yolo12n and x, batch 1 and 32, under the defaults and with variants f16_tall_1x1 and
#     f16_wgmma_fewrows off (written from the seventeenth session's H100 log, on since the nineteenth; each is
#     priced alone on this call's log by yolo12-rule-replay);
#   - end to end (yolo12-multi-bench, yolo12n): one and three detectors on the GPU, batch 32, 1280x720 frames in
#     pageable host memory.
# About 5 minutes (device machines were scarce in that session: a short call fits more chances); with time to spare,
# PERF_SCALES=n,s,m,x PERF_PROFILE_SCALES="n s x" PERF_BUDGET=560 makes it about 9.
# Run it on the device machine from the repository root with OUT set (the device tool's $OUT), carrying .whl and
# .carry/catch2. Any gpu_check variable set in the environment wins over the values here.
set -u
cd "$(dirname "$0")/../.." || exit 1
export PERF_BUDGET=${PERF_BUDGET:-300}
export PERF_TESTS=${PERF_TESTS:-test_conv}
export CTEST_REGEX=${CTEST_REGEX:-'^test_conv$'}
export PERF_SCALES=${PERF_SCALES:-n,x}
export PERF_VARIANTS=${PERF_VARIANTS:-default}
export PERF_PROFILE_SCALES=${PERF_PROFILE_SCALES:-n}
export PERF_PROFILE_SCALE_VARIANTS=${PERF_PROFILE_SCALE_VARIANTS:-"tuned:YOLO12_CONV_TUNE=1+YOLO12_CONV_TUNE_LOG=1"}
export PERF_BENCH_VARIANTS=${PERF_BENCH_VARIANTS:-"default neither=-f16_tall_1x1,-f16_wgmma_fewrows"}
export PERF_MULTI_SCALES=${PERF_MULTI_SCALES:-n}
export PERF_MULTI_DEVICES=${PERF_MULTI_DEVICES:-"0 0,0,0"}
export PERF_MULTI_BATCHES=${PERF_MULTI_BATCHES:-32}
export PERF_MULTI_INPUTS=${PERF_MULTI_INPUTS:-host}
export PERF_SAN_TAGS=${PERF_SAN_TAGS:-epi_hoist}
exec tools/gpu_check.sh perf
