#!/usr/bin/env bash
# tools/dev/call_halo_pair.sh - the call that checks and measures the twenty-fourth session's conv2d_halo_pair_f16
# (variant f16_halo_pair: a bottleneck's two 3x3 convs in one kernel) and, in the same call, the twenty-second
# session's two stems on mma.sync (f16_stem_pair_mma, f16_stem_mma); none has run on a GPU yet (docs/kernels-conv.md,
# "Next"). What it runs, in one `tools/gpu_check.sh perf`:
#   - ctest test_halo_pair (the kernel against the double reference and the two convs, slices, edges, refusals; the
#     whole model with the pairs, plain and tuned), test_stem_pair (both stems; the whole model with the pair) and
#     test_preprocess (the selective staging block through the GPU letterbox, bit for bit);
#   - the per-op profile of yolo12n with the defaults and with +f16_halo_pair;
#   - yolo12-bench on the peer's yolo12n, s and x under the defaults and each variant;
#   - compute-sanitizer memcheck and racecheck on test_halo_pair's and test_stem_pair's kernel cases and on test_conv
#     [stem_mma], in the time PERF_BUDGET leaves;
# then test_halo_pair "[.bench]" (yolo12n's four kinds of pair against the two convs, batch 1 and 32), test_stem_pair
# "[.bench]" and test_conv "[stem_mma]" without a sanitizer into $OUT.
# On the device machine, from the repository root, carrying .whl and .carry/catch2 (about 9 minutes on a fresh
# machine, estimated from the twenty-first session's calls):
#   export OUT; timeout 570 tools/dev/call_halo_pair.sh; [ -f "$OUT/logs_perf.tar.gz" ] ||
#     { tar czf /tmp/partial.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/partial.tgz "$OUT/"; }
# Turn a variant on where its kernel tests pass, the sanitizers are clean and the network is faster.
set -u
cd "$(dirname "$0")/../.." || exit 1
export PERF_BUDGET=${PERF_BUDGET:-440}
export PERF_TESTS=${PERF_TESTS:-"test_halo_pair test_stem_pair test_conv test_preprocess"}
export CTEST_REGEX=${CTEST_REGEX:-'^test_(halo_pair|stem_pair|preprocess)$'}
export PERF_ALL_TESTS=${PERF_ALL_TESTS:-1}  # the fixture models for the [model] cases
export PERF_SAN_TAGS=${PERF_SAN_TAGS:-"test_halo_pair:kernel test_stem_pair:kernel stem_mma"}
export PERF_SCALES=${PERF_SCALES:-n,s,x}
export PERF_VARIANTS=${PERF_VARIANTS:-"default hpair=+f16_halo_pair"}
export PERF_PROFILE_SCALES=${PERF_PROFILE_SCALES:-" "}
export PERF_BENCH_VARIANTS=${PERF_BENCH_VARIANTS:-"default hpair=+f16_halo_pair pmma=+f16_stem_pair_mma smma=+f16_stem_mma"}
export PERF_MULTI_SCALES=${PERF_MULTI_SCALES:-none}
tools/gpu_check.sh perf
rc=$?
out=${OUT:-out/gpu_check}
bin=${BUILD:-build-check}/tests
if [ -x "$bin/test_halo_pair" ]; then
  timeout 90 "$bin/test_halo_pair" "[.bench]" > "$out/halo_pair_bench.txt" 2>&1
  echo "halo pair timings: rc=$?"
  grep "^halo_pair" "$out/halo_pair_bench.txt"
fi
if [ -x "$bin/test_stem_pair" ]; then
  timeout 60 "$bin/test_stem_pair" "[.bench]" > "$out/stem_pair_bench.txt" 2>&1
  echo "stem pair timings: rc=$?"
  grep "^stem_pair" "$out/stem_pair_bench.txt"
fi
if [ -x "$bin/test_conv" ]; then
  timeout 90 "$bin/test_conv" "[stem_mma]" > "$out/stem_mma_plain.log" 2>&1
  echo "test_conv [stem_mma]: rc=$? | $(grep -m1 -E 'All tests passed|test cases' "$out/stem_mma_plain.log")"
fi
exit $rc
