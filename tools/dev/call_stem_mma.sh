#!/usr/bin/env bash
# tools/dev/call_stem_mma.sh - the call that checks and measures the two stems on mma.sync written in the
# twenty-second session, neither yet run on a GPU (docs/kernels-conv.md, "The twenty-second session" and "Next"):
#   - f16_stem_pair_mma: conv2d_stem_pair_f16's stem on mma.sync (yolo12n's and yolo12s's 3->16->32 / 3->32->64);
#   - f16_stem_mma: conv2d_stem_mma, second version (the stem of m, l and x: 3->48, 3->64, 3->96).
# What it runs, in one `tools/gpu_check.sh perf`:
#   - ctest test_stem_pair: both stems against the double reference and the two kernels, and the whole model with the
#     pair (plain, tuned, the stem on mma.sync) within the fp16 bound;
#   - the per-op profile of yolo12n (defaults and +f16_stem_pair_mma) and of yolo12x (defaults and +f16_stem_mma);
#   - yolo12-bench on the peer's yolo12n, s and x under the defaults and each variant;
#   - compute-sanitizer memcheck and racecheck on test_conv [stem_mma] (which is also its functional test) and on
#     test_stem_pair's kernel cases, in the time PERF_BUDGET leaves;
# then test_conv "[stem_mma]" without a sanitizer, test_stem_pair "[.bench]" (both stems against the two kernels,
# 640x640, batch 1 and 32) and yolo12-bench's end to end of yolo12n on 1920x1080 frames (the twenty-third session's
# staging block, which packs a ninth of such a frame) into $OUT. ctest also runs test_preprocess (the staging block
# through the GPU letterbox, bit for bit).
# On the device machine, from the repository root, carrying .whl and .carry/catch2 (about 8-9 minutes on a fresh
# machine, estimated from the twenty-first session's calls):
#   export OUT; timeout 570 tools/dev/call_stem_mma.sh; [ -f "$OUT/logs_perf.tar.gz" ] ||
#     { tar czf /tmp/partial.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/partial.tgz "$OUT/"; }
# Turn a variant on where its kernel tests pass, the sanitizers are clean and the network is faster.
set -u
cd "$(dirname "$0")/../.." || exit 1
export PERF_BUDGET=${PERF_BUDGET:-420}
export PERF_TESTS=${PERF_TESTS:-"test_stem_pair test_conv test_preprocess"}
export CTEST_REGEX=${CTEST_REGEX:-'^test_(stem_pair|preprocess)$'}
export PERF_ALL_TESTS=${PERF_ALL_TESTS:-1}  # the fixture models for test_stem_pair's [model] case
export PERF_SAN_TAGS=${PERF_SAN_TAGS:-"stem_mma test_stem_pair:kernel"}
export PERF_SCALES=${PERF_SCALES:-n,s,x}
export PERF_VARIANTS=${PERF_VARIANTS:-"default pmma=+f16_stem_pair_mma"}
export PERF_PROFILE_SCALES=${PERF_PROFILE_SCALES:-x}
export PERF_PROFILE_SCALE_VARIANTS=${PERF_PROFILE_SCALE_VARIANTS:-"default smma=+f16_stem_mma"}
export PERF_BENCH_VARIANTS=${PERF_BENCH_VARIANTS:-"default pmma=+f16_stem_pair_mma smma=+f16_stem_mma"}
export PERF_MULTI_SCALES=${PERF_MULTI_SCALES:-none}
tools/gpu_check.sh perf
rc=$?
out=${OUT:-out/gpu_check}
bin=${BUILD:-build-check}/tests
if [ -x "$bin/test_conv" ]; then
  timeout 120 "$bin/test_conv" "[stem_mma]" > "$out/stem_mma_plain.log" 2>&1
  echo "test_conv [stem_mma]: rc=$? | $(grep -m1 -E 'All tests passed|test cases' "$out/stem_mma_plain.log")"
fi
if [ -x "$bin/test_stem_pair" ]; then
  timeout 120 "$bin/test_stem_pair" "[.bench]" > "$out/stem_pair_bench.txt" 2>&1
  echo "stem pair timings: rc=$?"
  grep "^stem_pair" "$out/stem_pair_bench.txt"
fi
bench=${BUILD:-build-check}/yolo12-bench
model=${BUILD:-build-check}/models/yolo12n_peer.y12
if [ -x "$bench" ] && [ -f "$model" ]; then
  for img in 1920x1080; do  # (1280x720: bench_yolo12n_default.log)
    timeout 60 "$bench" "$model" --batch 1,32 --precision fp16 --iters 100 --image "$img" > "$out/bench_e2e_$img.log" 2>&1
    echo "e2e $img: $(grep -F "e2e" "$out/bench_e2e_$img.log" | tr -s ' ' | sed 's/.*| pre/pre/' | tr '\n' ';')"
  done
fi
exit $rc
