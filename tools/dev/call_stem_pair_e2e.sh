#!/usr/bin/env bash
# tools/dev/call_stem_pair_e2e.sh - the stem pair's call (docs/kernels-conv.md, "Next"): one `tools/gpu_check.sh perf`
# call and then the stem pair's timings. With these defaults it took 236 s on a fresh H100 (twentieth session, call
# 1; docs/results/2026-12-05-h100-session20/); narrowed by the environment (PERF_TESTS, PERF_MULTI_SCALES=none) less.
# What it runs:
#   - test_stem_pair (ctest): conv2d_stem_pair_f16 against the double reference of the stem
#     and the conv after it, and against the two kernels it would replace; the whole model (the yolo12n and narrow
#     yolo12l fixtures, exported because PERF_ALL_TESTS=1) with the pair fused under variant f16_stem_pair, plain and
#     tuned; then, in the time PERF_BUDGET leaves, compute-sanitizer memcheck and racecheck on its [kernel] cases;
#   - the per-op profile of the yolo12n fixture and yolo12-bench on the peer's yolo12n under the defaults (the
#     record of this machine and call);
#   - end to end (yolo12-multi-bench, yolo12n, 1280x720 frames): one, three and four detectors on the one GPU, at
#     batch 1 and 32, with the frames in pageable host memory and already on the GPU (PERF_MULTI_INPUTS). The
#     done-when asks for 10,000 img/s at batch 32 and at most 0.6 ms per image at batch 1 (twentieth session, H100:
#     10,056 img/s with four detectors on host frames at batch 32; 0.54 ms per image from device memory at batch 1);
#   - last, test_stem_pair "[.bench]": the fused kernel against conv2d_stem_f16 + the second conv's plan, yolo12n's
#     and yolo12s's pair at 640x640, batch 1 and 32, into $OUT/stem_pair_bench.txt; and yolo12-bench on yolo12n and
#     yolo12s (the peer's weights) with YOLO12_CONV_VARIANTS=+f16_stem_pair, and with -dw_rows_c16 (the depthwise
#     rule before the nineteenth session), beside the defaults (PERF_BENCH_VARIANTS).
# Run it on the device machine from the repository root with OUT set (the device tool's $OUT), carrying .whl and
# .carry/catch2, under a time limit that leaves room to pack what a cut run left (the device tool brings back 8 files):
#   export OUT; timeout 570 tools/dev/call_stem_pair_e2e.sh; [ -f "$OUT/logs_perf.tar.gz" ] ||
#     { tar czf /tmp/partial.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/partial.tgz "$OUT/"; }
# Any gpu_check variable set in the environment wins over the values here.
set -u
cd "$(dirname "$0")/../.." || exit 1
export PERF_BUDGET=${PERF_BUDGET:-420}  # the sanitizers get what is left of it
export PERF_TESTS=${PERF_TESTS:-test_stem_pair}
export CTEST_REGEX=${CTEST_REGEX:-'^test_stem_pair$'}
export PERF_ALL_TESTS=${PERF_ALL_TESTS:-1}  # the fixture models; PERF_TESTS still limits what is built
export PERF_SAN_TAGS=${PERF_SAN_TAGS:-test_stem_pair:kernel}
export PERF_SCALES=${PERF_SCALES:-n,s}
export PERF_VARIANTS=${PERF_VARIANTS:-default}
export PERF_BENCH_VARIANTS=${PERF_BENCH_VARIANTS:-"default pair=+f16_stem_pair rows32=-dw_rows_c16"}
export PERF_MULTI_SCALES=${PERF_MULTI_SCALES:-n}
export PERF_MULTI_DEVICES=${PERF_MULTI_DEVICES:-"0 0,0,0 0,0,0,0"}
export PERF_MULTI_BATCHES=${PERF_MULTI_BATCHES:-"1 32"}
export PERF_MULTI_INPUTS=${PERF_MULTI_INPUTS:-"host device"}
tools/gpu_check.sh perf
rc=$?
bin=${BUILD:-build-check}/tests/test_stem_pair
if [ -x "$bin" ]; then
  timeout 120 "$bin" "[.bench]" > "${OUT:-out/gpu_check}/stem_pair_bench.txt" 2>&1
  echo "stem pair timings: rc=$?"
  grep "^stem_pair" "${OUT:-out/gpu_check}/stem_pair_bench.txt"
fi
exit $rc
